"""PolicyAgent: a local model plays a mua_gym env in the TRL adapter's protocol, for the eval engine.

The model is a tiny random Llama, steered onto scripted replies where a test needs to know what it says
(tests/integrations/steered_llama.py), under the real SmolLM2 tokenizer with Qwen 2.5's template. The key
check is conformance: the tokens the agent feeds the model are those TRL's own loop feeds it, taken from a real
GRPOTrainer's generations on the same task and seed.
"""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest


trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mua_gym.integrations import trl as mua_trl  # noqa: E402
from integrations.trl_scripts import GOODBYE, hermes, oracle_turns, play, say  # noqa: E402

MOCK, RETAIL = "mua/Mock-v0", "mua/Retail-v0"








@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """A 64-wide model gains nothing from more threads, and on a busy 2-core runner they wait on each other (4x)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def steered(tokenizer, scripts, seed: int = 0):
    from integrations.steered_llama import tiny_llama

    return tiny_llama(tokenizer, seed=seed).steer(tokenizer, scripts, after=GOODBYE)


def trl_prompt_ids(tokenizer, env_id: str, task_id: str, seed: int, split: str = "train") -> list[int]:
    """The first prompt TRL's loop renders for the task: the dataset row's prompt with what the TRL class's reset
    returns appended to its user message, and the instance's public methods as tools (GRPOTrainer's own steps)."""
    rows = mua_trl.dataset(env_id, split=split)
    row = dict(rows[rows["task_id"].index(task_id)], seed=seed)
    env = mua_trl.environment_factory(env_id)()
    opening = env.reset(**row)
    prompt = row["prompt"][:-1] + [{**row["prompt"][-1], "content": row["prompt"][-1]["content"] + opening}]
    tools = [getattr(env, name) for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
             if name not in ("reset", "get_reward") and not name.startswith("_")]
    rendered = tokenizer.apply_chat_template(conversation=[prompt], tools=tools, add_generation_prompt=True,
                                             tokenize=True, return_dict=True)
    env.env.close()
    return list(rendered["input_ids"][0])


@pytest.mark.parametrize("env_id", [MOCK, pytest.param(RETAIL, marks=pytest.mark.slow)])
def test_the_first_prompt_is_the_one_trls_loop_renders_from_the_dataset_row_and_reset(tokenizer, env_id):
    task_id = mua_trl.dataset(env_id, split="train")[0]["task_id"]
    model = steered(tokenizer, {})
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=4, seed=0)
    play(env_id, agent, task_id, seed=11)
    assert agent.prompt_ids == trl_prompt_ids(tokenizer, env_id, task_id, seed=11)
    text = tokenizer.decode(agent.prompt_ids)
    assert mua_trl.TALKING.strip() in text and '"name": "send_message_to_user"' in text
    assert agent.messages[0]["content"].endswith(mua_trl.TALKING)


def test_a_scripted_policy_earns_one_and_a_false_claim_or_a_wrong_call_earns_zero(tokenizer):
    rows = mua_trl.dataset(MOCK, split="train")
    solved, claimed, wrong = rows[0]["task_id"], rows[1]["task_id"], rows[2]["task_id"]
    opening, play_turns = oracle_turns(MOCK, solved, seed=3)
    claim_opening, _ = oracle_turns(MOCK, claimed, seed=3)
    wrong_opening, wrong_gold = oracle_turns(MOCK, wrong, seed=3)
    gold_calls = [t for t in wrong_gold if "<tool_call>" in t and mua_trl.SEND_MESSAGE not in t]
    first = json.loads(gold_calls[0].split("<tool_call>\n")[1].split("\n</tool_call>")[0])
    bad_args = {k: ("Z-0000" if isinstance(v, str) else v) for k, v in first["arguments"].items()}
    scripts = {opening: play_turns,
               claim_opening: [say("I have taken care of everything."), GOODBYE],
               wrong_opening: [hermes((first["name"], bad_args)), say("All done."), GOODBYE]}
    assert len({opening, claim_opening, wrong_opening}) == 3
    model = steered(tokenizer, scripts)

    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=4096, temperature=0.0)
    done = play(MOCK, agent, solved, seed=3)
    assert done.reward == 1.0 and done.termination_reason == "user_stop" and done.tool_errors == 0
    assert done.tool_calls == sum(1 for t in play_turns if "<tool_call>" in t and mua_trl.SEND_MESSAGE not in t)
    replies = [m for m in agent.messages if m["role"] == "tool" and m["name"] == mua_trl.SEND_MESSAGE]
    users = [e.message.content for e in done.entries if e.message.role == "user"]
    assert [m["content"] for m in replies] == users[1:-1]  # later user turns arrive as the tool's results (the
    # last one stopped the episode)

    claim = play(MOCK, agent, claimed, seed=3)
    assert claim.reward == 0.0 and agent.stopped and agent.stop_reason == "no_tool_call"
    assert claim.termination_reason == "stopped_by_trainer" and claim.tool_calls == 0

    miss = play(MOCK, agent, wrong, seed=3)
    assert miss.reward == 0.0 and miss.tool_calls == 1 and agent.stop_reason == "no_tool_call"


def test_a_random_models_garbage_never_raises_and_earns_nothing(tokenizer):
    from integrations.steered_llama import tiny_llama

    task_ids = mua_trl.dataset(MOCK, split="train")["task_id"][:2]
    model = tiny_llama(tokenizer, seed=3)
    for seed in range(2):
        agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=16, seed=seed)
        for task_id in task_ids:
            trajectory = play(MOCK, agent, task_id, seed=seed)
            assert trajectory.reward == 0.0 and agent.stopped and trajectory.termination_reason == "stopped_by_trainer"
            assert 0 < len(agent.token_ids) - len(agent.prompt_ids) <= 16
            assert agent.act([]) == {"role": "assistant", "content": agent.messages[-1]["content"]}


def test_the_same_seed_plays_the_same_episode_and_sampling_leaves_the_global_rng_alone(tokenizer):
    from integrations.steered_llama import tiny_llama

    model = tiny_llama(tokenizer, seed=0)
    task_id = mua_trl.dataset(MOCK, split="train")[0]["task_id"]
    runs = []
    for seed in (5, 5, 6):
        agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=12, seed=seed)
        torch.manual_seed(123)
        play(MOCK, agent, task_id, seed=1)
        runs.append((agent.token_ids, torch.rand(1).item()))
    assert runs[0] == runs[1] and runs[0][0] != runs[2][0]
    assert runs[0][1] == runs[2][1]  # the global RNG draws as if no sampling had happened
    greedy = [mua_trl.PolicyAgent(model, tokenizer, max_completion_length=12, temperature=0.0, seed=s) for s in (1, 2)]
    for agent in greedy:
        play(MOCK, agent, task_id, seed=1)
    assert greedy[0].token_ids == greedy[1].token_ids


def test_calls_trl_answers_itself_never_reach_the_env_and_calls_in_one_reply_run_in_order(tokenizer):
    task_id = mua_trl.dataset(MOCK, split="train")[0]["task_id"]
    opening, _ = oracle_turns(MOCK, task_id, seed=2)
    reply = hermes(("no_such_tool", {}), ("find_customer_by_email", {"email": "ana@example.com"}),
                   (mua_trl.SEND_MESSAGE, {"wrong": "x"}), (mua_trl.SEND_MESSAGE, {"message": "Hello there."}))
    model = steered(tokenizer, {opening: [reply, GOODBYE]})
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=2048, temperature=0.0)
    trajectory = play(MOCK, agent, task_id, seed=2)
    answers = [m for m in agent.messages if m["role"] == "tool"]
    assert [m["name"] for m in answers] == ["no_such_tool", "find_customer_by_email", mua_trl.SEND_MESSAGE,
                                            mua_trl.SEND_MESSAGE]
    assert answers[0]["content"] == str({"error": "Tool no_such_tool not found."})
    assert answers[1]["content"] == "C001"
    assert "unexpected keyword argument 'wrong'" in answers[2]["content"]
    assert trajectory.tool_calls == 1 and trajectory.tool_errors == 0  # only the domain call reached the world
    said = [e.message.content for e in trajectory.entries if e.message.role == "assistant"]
    assert said[-1] == "Hello there." and answers[3]["content"] == trajectory.entries[-1].message.content
    assert agent.stop_reason == "no_tool_call" and agent.messages[-1]["content"] == "Goodbye!"


def test_trls_budgets_end_the_episode_where_trl_would(tokenizer):
    task_id = mua_trl.dataset(MOCK, split="train")[0]["task_id"]
    opening, _ = oracle_turns(MOCK, task_id, seed=2)
    lookup = hermes(("find_customer_by_email", {"email": "ana@example.com"}))
    model = steered(tokenizer, {opening: [lookup] * 6})
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=4096, max_tool_calling_iterations=2,
                                 temperature=0.0)
    trajectory = play(MOCK, agent, task_id, seed=2)
    # TRL runs the calls of the first reply and of the replies of rounds 1..limit-1; the last reply's stay unrun
    assert agent.stop_reason == "max_tool_calling_iterations" and trajectory.tool_calls == 2
    assert trajectory.termination_reason == "stopped_by_trainer"

    one_turn = len(tokenizer.encode(lookup, add_special_tokens=False))
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=one_turn + 3, temperature=0.0)
    trajectory = play(MOCK, agent, task_id, seed=2)
    assert agent.stop_reason == "max_completion_length" and trajectory.tool_calls == 1
    assert len(agent.token_ids) - len(agent.prompt_ids) == one_turn  # the answer that did not fit is dropped
    assert agent.messages[-1]["role"] == "assistant"

    # a cap per reply (GRPOTrainer's generation_kwargs max_new_tokens): a reply that reaches it unended is cut there
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=4096, max_new_tokens=one_turn - 4,
                                 temperature=0.0)
    trajectory = play(MOCK, agent, task_id, seed=2)
    assert agent.stop_reason == "max_new_tokens" and trajectory.tool_calls == 0
    assert len(agent.token_ids) - len(agent.prompt_ids) == one_turn - 4
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=4096, max_new_tokens=one_turn,
                                 max_tool_calling_iterations=2, temperature=0.0)
    assert play(MOCK, agent, task_id, seed=2).tool_calls == 2  # replies within the cap run as before
    with pytest.raises(ValueError, match="max_new_tokens"):
        mua_trl.PolicyAgent(model, tokenizer, max_new_tokens=0)


def recording_llama(tokenizer, scripts):
    """A steered tiny Llama that also keeps every generation's prompt: the rows of each prefill made without
    gradients, left padding cut off."""
    from integrations.steered_llama import SteeredLlama, tiny_llama

    class Recording(SteeredLlama):
        def forward(self, input_ids=None, logits_to_keep=0, **kwargs):
            if input_ids is not None and input_ids.shape[1] > 1 and not torch.is_grad_enabled():
                pad = tokenizer.pad_token_id
                for row in input_ids.tolist():
                    start = next((i for i, token in enumerate(row) if token != pad), len(row))
                    self.prompts.append(row[start:])
            return super().forward(input_ids=input_ids, logits_to_keep=logits_to_keep, **kwargs)

    model = tiny_llama(tokenizer, kind=Recording).steer(tokenizer, scripts, after=GOODBYE)
    model.prompts = []
    return model


@pytest.mark.slow
def test_every_prompt_the_agent_feeds_the_model_is_the_one_trls_grpo_loop_feeds_it(tokenizer, tmp_path):
    """The conformance check: a real GRPOTrainer step and the agent play the same task with the same seed and
    the same scripted model (a lookup, a write, talk); the token sequences of their generations agree one for one.
    TRL generates once more at the end (the goodbye after the user's stop), which the eval's episode is over for."""
    from trl import GRPOConfig, GRPOTrainer

    rows = mua_trl.dataset(MOCK, split="train")
    task_id = rows[0]["task_id"]
    opening, turns = oracle_turns(MOCK, task_id, seed=4)
    assert sum("<tool_call>" in t and mua_trl.SEND_MESSAGE not in t for t in turns) >= 1
    trained = recording_llama(tokenizer, {opening: turns})
    config = GRPOConfig(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=2048, learning_rate=1e-3, beta=0.0, logging_steps=1, report_to="none",
        save_strategy="no", use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=trained, processing_class=tokenizer, args=config,
                          train_dataset=rows.select([0]).add_column("seed", [4]),
                          environment_factory=mua_trl.environment_factory(MOCK))
    trainer.train()
    trl_prompts = trained.prompts[::2]  # each generation's two rows (the group) play the same script
    assert trained.prompts[1::2] == trl_prompts

    evaluated = recording_llama(tokenizer, {opening: turns})
    agent = mua_trl.PolicyAgent(evaluated, tokenizer, max_completion_length=2048, seed=0)
    trajectory = play(MOCK, agent, task_id, seed=4)
    assert trajectory.reward == 1.0 and len(evaluated.prompts) == len(turns) - 1
    assert evaluated.prompts == trl_prompts[:len(evaluated.prompts)] and len(trl_prompts) == len(turns)
    assert trainer.state.log_history[0]["rewards/MuaMockEnv/mean"] == 1.0


def test_the_eval_engine_plays_the_agent_through_agent_factory(tokenizer):
    """``aevaluate(..., agent_factory=...)``: the scripted play succeeds under the eval's own episode seed, a blind
    random model does not, and each episode gets its own agent, seeded by the episode's seed."""
    from integrations.steered_llama import tiny_llama

    from mua_gym.eval.evaluate import EvalConfig, aevaluate, episode_seed

    task_id = mua_trl.dataset(MOCK, split="train")[0]["task_id"]
    opening, turns = oracle_turns(MOCK, task_id, seed=episode_seed(0, MOCK, task_id, 0))
    config = EvalConfig(env_ids=[MOCK], agent="trl-policy:tiny", split="train", task_ids=[task_id], concurrency=1,
                        max_turns=8)
    made = []

    def factory(model, **kwargs):
        inner = mua_trl.agent_factory(model, tokenizer, **kwargs)

        def make(task, seed):
            made.append(inner(task, seed))
            return made[-1]
        return make

    solved = asyncio.run(aevaluate(config, agent_factory=factory(steered(tokenizer, {opening: turns}),
                                                                    temperature=0.0, max_completion_length=4096)))
    assert solved.pass_hat_k == {1: 1.0} and made[-1].seed == episode_seed(0, MOCK, task_id, 0)
    ended = []
    blind = asyncio.run(aevaluate(config.model_copy(update={"trials": 2}), agent_factory=factory(
        tiny_llama(tokenizer, seed=1), max_completion_length=16), on_episode=lambda r, *_: ended.append(r)))
    assert blind.pass_hat_k[1] == 0.0 and blind.episodes == 2 and made[-1].seed != made[-2].seed
    # the engine scored the untouched world where the agent stopped, as TRL's get_reward does: nothing stepped
    assert [(r.termination_reason, r.turns) for r in ended] == [(a.stop_reason, 0) for a in made[-2:]]
    assert {a.stop_reason for a in made[-2:]} <= {"no_tool_call", "max_completion_length"}
