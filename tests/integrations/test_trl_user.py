"""TRL on a user-side env: the model being trained is the customer. A real GRPOTrainer, on the CPU, with a tiny
Llama steered onto scripted turns: in each group one rollout plays the scenario user's faithful customer (the
fidelity reward pays 1.0) and one only says "ok" and leaves (0.0), so the group's advantages differ and the
weights move."""

from __future__ import annotations

import pytest

import mua_gym

trl = pytest.importorskip("trl")
pytest.importorskip("transformers")

from mua_gym.integrations import trl as mua_trl  # noqa: E402
from integrations.test_trl import grpo, recording  # noqa: E402
from integrations.trl_scripts import GOODBYE, customer_turns, hermes  # noqa: E402

ENV = "mua/Mock-User-v0"


def test_the_user_side_class_has_the_agent_tool_and_pays_fidelity():
    factory = mua_trl.environment_factory(ENV)
    env = factory()
    task_id = mua_trl.dataset(ENV, split="train")[0]["task_id"]
    assert hasattr(env, "send_message_to_agent") and not hasattr(env, "send_message_to_user")
    assert env.reset(task_id=task_id).startswith("(You are connected")
    reply = env.send_message_to_agent("ok")
    assert reply and "conversation is over" not in reply
    assert env.get_reward() == 0.0  # a rollout that ends before the customer stops fails "stop"
    row = mua_trl.dataset(ENV, split="train")[0]
    task = next(t for t in mua_gym.get_domain("mock").tasks("train") if t.id == row["task_id"])
    assert task.user_scenario.instructions in row["prompt"][0]["content"]
    assert mua_trl.SEND_TO_AGENT in row["prompt"][0]["content"]
    env.env.close()


@pytest.mark.slow
def test_grpo_trains_the_customer_two_steps_on_the_fidelity_reward(tokenizer, tmp_path):
    from integrations.steered_llama import tiny_llama

    full = mua_trl.dataset(ENV, split="train")
    dataset = full.select([0, 1]).add_column("seed", [1, 2])
    leaves = [hermes((mua_trl.SEND_TO_AGENT, {"message": "ok"})), GOODBYE]
    scripts = {}
    for row in dataset:
        key, play = customer_turns(ENV, row["task_id"], row["seed"])
        scripts[key] = [play, leaves]
    model = tiny_llama(tokenizer, seed=1).steer(tokenizer, scripts, after=GOODBYE)
    before = [p.detach().clone() for p in model.parameters()]
    factory = recording(mua_trl.environment_factory(ENV))
    trainer = grpo(tokenizer, model, dataset, factory, tmp_path, steps=2, completion=2048)

    assert trainer.state.global_step == 2 and len(factory.rollouts) == 8
    for row in dataset:
        rewards = sorted(r for t, r, _ in factory.rollouts if t == row["task_id"])
        assert rewards == [0.0, 0.0, 1.0, 1.0]
    for entry in trainer.state.log_history[:2]:
        assert entry[f"rewards/{factory.__name__}/mean"] == pytest.approx(0.5)
    assert any((b != a.detach()).any() for b, a in zip(before, model.parameters()))
