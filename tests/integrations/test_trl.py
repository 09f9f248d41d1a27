"""TRL: a real GRPOTrainer drives mua_gym through environment_factory, on the CPU.

The policy is a tiny random Llama (real weights, real training step) whose sampling is steered onto scripted
replies (tests/integrations/steered_llama.py), so that what the rollouts do is known and the rewards can be
checked exactly: the oracle's play of a retail task through TRL's own tool loop earns 1.0, a play that only
claims success earns 0.0.
"""

from __future__ import annotations

import sys
import time

import pytest

import mua_gym
from mua_gym.integrations import MissingTrainerError

trl = pytest.importorskip("trl")
pytest.importorskip("transformers")

from mua_gym.integrations import trl as mua_trl  # noqa: E402
from integrations.trl_scripts import GOODBYE, oracle_turns, say  # noqa: E402

ENV = "mua/Retail-v0"






def recording(factory: type) -> type:
    """The factory's class, also noting each rollout's task, reward and trajectory."""

    class Recorded(factory):  # type: ignore[misc, valid-type]
        rollouts: list = []

        def get_reward(self) -> float:
            reward = super().get_reward()
            Recorded.rollouts.append((self.env.core.task.id, reward, self.env.trajectory()))
            return reward

    Recorded.__name__ = factory.__name__
    return Recorded


def grpo(tokenizer, model, dataset, factory, output_dir, steps: int, completion: int = 6144):
    from trl import GRPOConfig, GRPOTrainer

    config = GRPOConfig(
        output_dir=str(output_dir), max_steps=steps, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=completion, max_tool_calling_iterations=40, learning_rate=1e-3, beta=0.0,
        logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False, seed=0,
        dataloader_num_workers=0, temperature=1.0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                          environment_factory=factory)
    trainer.train()
    return trainer


@pytest.mark.slow
def test_a_scripted_policy_earns_one_through_trls_tool_loop_and_a_false_claim_zero(tokenizer, tmp_path):
    from integrations.steered_llama import tiny_llama

    full = mua_trl.dataset(ENV, split="test")
    solved, claimed = full[0]["task_id"], full[1]["task_id"]
    opening_solved, play = oracle_turns(ENV, solved, seed=7)
    opening_claimed, _ = oracle_turns(ENV, claimed, seed=7)
    scripts = {opening_solved: play,
               opening_claimed: [say("I have taken care of everything."),
                                 GOODBYE]}
    model = tiny_llama(tokenizer).steer(tokenizer, scripts, after=GOODBYE)
    dataset = full.select([0, 1]).add_column("seed", [7, 7])
    factory = recording(mua_trl.environment_factory(ENV, split="test", max_turns=60))
    trainer = grpo(tokenizer, model, dataset, factory, tmp_path, steps=1)

    rewards = sorted((task, reward) for task, reward, _ in factory.rollouts)
    assert rewards == sorted([(solved, 1.0)] * 2 + [(claimed, 0.0)] * 2)
    for task, reward, trajectory in factory.rollouts:
        if task == solved:  # every gold call reached the world through TRL's tool calls, and the user stopped
            assert trajectory.termination_reason == "user_stop" and trajectory.tool_errors == 0
            assert trajectory.tool_calls == sum(1 for t in play if mua_trl.SEND_MESSAGE not in t and t != GOODBYE)
        else:  # TRL ended the rollout at the goodbye; the untouched world was scored as it stood
            assert trajectory.termination_reason == "stopped_by_trainer" and trajectory.tool_calls == 0
    logged = trainer.state.log_history[0]
    assert logged[f"rewards/{factory.__name__}/mean"] == pytest.approx(0.5)


@pytest.mark.slow
def test_grpo_trains_two_steps_with_tool_calls_reaching_the_world_and_rewards_flowing(tokenizer, tmp_path):
    """Two real GRPO steps on mock tasks. In each group one rollout plays the oracle's calls and one only says
    goodbye, so the group's rewards differ, its advantages are not zero and the weights move."""
    from integrations.steered_llama import tiny_llama

    env_id = "mua/Mock-v0"
    full = mua_trl.dataset(env_id, split="train")
    dataset = full.select([0, 1]).add_column("seed", [1, 2])
    quits = [say("Goodbye for now."), GOODBYE]
    scripts, plays = {}, {}
    for row in dataset:
        opening, play = oracle_turns(env_id, row["task_id"], row["seed"])
        scripts[opening], plays[row["task_id"]] = [play, quits], play
    model = tiny_llama(tokenizer, seed=1).steer(tokenizer, scripts, after=GOODBYE)
    before = [p.detach().clone() for p in model.parameters()]
    factory = recording(mua_trl.environment_factory(env_id))
    started = time.perf_counter()
    trainer = grpo(tokenizer, model, dataset, factory, tmp_path, steps=2, completion=2048)
    print(f"2 GRPO steps: {time.perf_counter() - started:.1f} s", file=sys.stderr)

    assert trainer.state.global_step == 2 and len(factory.rollouts) == 8
    for task_id in plays:
        rewards = sorted(r for t, r, _ in factory.rollouts if t == task_id)
        assert rewards == [0.0, 0.0, 1.0, 1.0]  # one of each per group, in both steps
    for _, reward, trajectory in factory.rollouts:
        assert (trajectory.tool_calls > 0) == (reward == 1.0)  # the oracle's calls reached the world
    for entry in trainer.state.log_history[:2]:
        assert entry[f"rewards/{factory.__name__}/mean"] == pytest.approx(0.5)
        assert entry[f"rewards/{factory.__name__}/std"] > 0
    assert any((b != a.detach()).any() for b, a in zip(before, model.parameters()))  # the weights moved


def test_a_row_without_task_id_and_a_missing_trl_are_named(monkeypatch):
    env = mua_trl.environment_factory("mua/Mock-v0")()
    with pytest.raises(KeyError, match="task_id"):
        env.reset(prompt=[])
    assert env.get_reward() == 0.0
    monkeypatch.setitem(sys.modules, "trl", None)
    with pytest.raises(MissingTrainerError, match=r'pip install "mua_gym\[trl\]"'):
        mua_trl.environment_factory("mua/Mock-v0")


def test_reset_leaves_nothing_of_the_last_episode():
    """TRL pools instances and reuses them across batches."""
    env = mua_trl.environment_factory("mua/Mock-v0")()
    first = env.reset(task_id="mock-cancel-card", seed=0)
    assert "Error" in env.cancel_order(order_id="O9999", reason="no longer needed")
    env.send_message_to_user(message="Goodbye")
    assert env.get_reward() == 0.0
    again = env.reset(task_id="mock-cancel-card", seed=0)
    assert again == first and env.env.core.trajectory().tool_calls == 0 and env.env.core.done is False
    state = env.env.world.state_hash()
    env.reset(task_id="mock-cancel-card", seed=0)
    assert env.env.world.state_hash() == state


def test_the_tools_are_the_domains_plus_talking_and_bad_calls_come_back_as_errors():
    import inspect

    factory = mua_trl.environment_factory("mua/Mock-v0")
    public = {n for n, _ in inspect.getmembers(factory, predicate=inspect.isfunction) if not n.startswith("_")}
    domain_tools = {s["function"]["name"] for s in mua_gym.AsyncMuaEnv("mock").tool_schemas}
    assert public == domain_tools | {"send_message_to_user", "reset", "get_reward"}
    env = factory()
    env.reset(task_id="mock-cancel-card")
    assert env.find_customer_by_email(email="ana@example.com") == "C001"
    assert env.find_customer_by_email(email=["not", "a", "string"]).startswith("Error")
    assert env.find_customer_by_email(wrong_name="x").startswith("Error")
    prompt = mua_trl.dataset("mua/Mock-v0", split="train")[0]["prompt"]
    assert prompt[0]["role"] == "system" and mua_trl.SEND_MESSAGE in prompt[0]["content"]
    assert prompt[1] == {"role": "user", "content": ""}


def test_action_perturbations_are_static_tools_of_the_class_and_other_families_still_vary():
    import inspect

    factory = mua_trl.environment_factory("mua/Mock-v0", perturb="action+typos")
    methods = {n: f for n, f in inspect.getmembers(factory, predicate=inspect.isfunction) if not n.startswith("_")}
    clean = {s["function"]["name"] for s in mua_gym.AsyncMuaEnv("mock").tool_schemas}
    env = factory()
    rates, refusals = set(), 0
    for seed in range(4):
        env.reset(task_id="mock-cancel-card", seed=seed)
        core = env.env.core
        drawn = {d["name"]: d for d in env.env.trajectory().perturbations["drawn"]}
        offered = {s["function"]["name"]: s["function"]["description"] for s in core.episode_tools}
        assert set(methods) == set(offered) | {"send_message_to_user", "reset", "get_reward"}  # every episode
        assert drawn["distractor_tools"]["static"] == 0 and "static" not in drawn["typos"]
        rates.add(drawn["typos"]["episode_rate"])
        for name, description in offered.items():  # the model reads what the episode offers
            assert inspect.getdoc(methods[name]).startswith(description.split("\n")[0].strip()[:40])
        added = drawn["distractor_tools"]["added"]
        assert added and set(added) <= set(methods) - clean
        state = env.env.world.state_hash()
        for name in added:
            reply = getattr(env, name)(**{p: "O1001" for p in inspect.signature(methods[name]).parameters
                                          if p != "self"})
            refusals += reply.startswith("Error")
        assert env.env.world.state_hash() == state  # a distractor never reaches the world
        assert env.find_customer_by_email(email="ana@example.com") == "C001"
    assert refusals == 4 * len(added) and len(rates) > 1  # typos drew per episode; the tools did not


@pytest.mark.slow
def test_the_readme_block_trains_a_step(tokenizer, tmp_path, monkeypatch):
    """The README's TRL code, as written, on a tiny random model saved where a hub name would go."""
    from integrations.readme import readme_block
    from integrations.steered_llama import tiny_llama

    model_dir = tmp_path / "tiny-llama"
    from transformers import LlamaForCausalLM

    tiny_llama(tokenizer, kind=LlamaForCausalLM).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    namespace = {"__name__": "readme"}
    exec(readme_block("Train with TRL"), namespace)
    monkeypatch.chdir(tmp_path)
    trainer = namespace["train"](model=str(model_dir), env_id="mua/Mock-v0", max_steps=1, num_generations=2,
                                 per_device_train_batch_size=2, max_completion_length=32, use_cpu=True, bf16=False)
    assert trainer.state.global_step == 1
    assert any(key.startswith("rewards/MuaMockEnv") for key in trainer.state.log_history[0])


def breaking(monkeypatch, how: str, at: int, task_id: str | None = None) -> None:
    """Every env ``mua_gym.make`` builds from now on gets its own :class:`Breaks` user; ``on_user_fault="void"``."""
    from integrations.void_users import Breaks

    real = mua_gym.make

    def make(env_id, **kwargs):
        env = real(env_id, **{**kwargs, "on_user_fault": "void"})
        env.unwrapped.core.user = Breaks(how, at, task_id)
        return env

    monkeypatch.setattr(mua_gym, "make", make)


@pytest.mark.parametrize("how", ["fault", "error"])
@pytest.mark.parametrize("at", [0, 1])
def test_a_void_episode_has_no_reward_for_trl_to_train_on(monkeypatch, how, at):
    breaking(monkeypatch, how, at)
    env = mua_trl.environment_factory("mua/Mock-v0")()
    try:
        opening = env.reset(task_id="mock-cancel-card", seed=0)
        if at == 0:  # void from the opening: the episode is over before the model speaks
            assert opening.startswith("(the conversation could not start: user_")
        reply = env.send_message_to_user(message="Which order would you like to cancel?")
        assert "conversation is over" in reply
        assert env.void.startswith("user_fault: invented_fact" if how == "fault" else "user_error: RuntimeError")
        assert env.get_reward() is None and env.env.trajectory().void == env.void
        env.reset(task_id="mock-cancel-card", seed=0)  # TRL reuses the instance: the next episode is its own
        assert env.void is (None if at else env.void)
    finally:
        env.env.close()


@pytest.mark.slow
def test_trls_trainer_leaves_void_rollouts_out_of_the_group_statistics(tokenizer, tmp_path, monkeypatch):
    """A real GRPO step: one task's user faults mid-episode (void), the other task is solved. TRL turns the void
    rollouts' None rewards into NaN and leaves them out: the step's logged reward is the solved ones' 1.0, not 0.5."""
    from integrations.steered_llama import tiny_llama

    full = mua_trl.dataset(ENV, split="test")
    solved, voided = full[0]["task_id"], full[1]["task_id"]
    opening_solved, play = oracle_turns(ENV, solved, seed=7)
    opening_voided, _ = oracle_turns(ENV, voided, seed=7)
    scripts = {opening_solved: play, opening_voided: [say("Could you confirm your order number?"), GOODBYE]}
    model = tiny_llama(tokenizer).steer(tokenizer, scripts, after=GOODBYE)
    dataset = full.select([0, 1]).add_column("seed", [7, 7])
    breaking(monkeypatch, "fault", 1, voided)
    factory = recording(mua_trl.environment_factory(ENV, split="test", max_turns=60))
    trainer = grpo(tokenizer, model, dataset, factory, tmp_path, steps=1)

    rewards = sorted((task, str(reward)) for task, reward, _ in factory.rollouts)
    assert rewards == sorted([(solved, "1.0")] * 2 + [(voided, "None")] * 2)
    assert all(t.void.startswith("user_fault") for task, _, t in factory.rollouts if task == voided)
    logged = trainer.state.log_history[0]
    assert logged["reward"] == pytest.approx(1.0)  # the void rollouts entered no mean (with them: 0.5)
    assert logged[f"rewards/{factory.__name__}/mean"] == pytest.approx(1.0)
