"""A curriculum's narrowing of an env: ``policy=`` replaces the policy text and ``tools=`` offers a subset of the
agent's tools, and the env then plays only the tasks those tools solve (so every task it plays stays fair)."""

import pytest

import mua_gym
from mua_gym.eval.evaluate import EvalConfig, evaluate, read_run

LOOKUPS = ["find_user_id_by_email", "find_user_id_by_name_zip", "get_order_details"]
SHORT = "You help customers with their orders. Identify them first; answer only from the tools."


def test_an_env_offers_only_the_named_tools_and_plays_the_tasks_they_solve():
    full = mua_gym.make_async("mua/Retail-v0", world_params={"difficulty": 1})
    narrow = mua_gym.make_async("mua/Retail-v0", world_params={"difficulty": 1}, tools=LOOKUPS, policy=SHORT)
    assert [t["function"]["name"] for t in narrow.tool_schemas] == sorted(LOOKUPS, key=[
        t["function"]["name"] for t in full.tool_schemas].index)
    assert narrow.policy == SHORT and full.policy != SHORT
    kept, all_dev = narrow.tasks("dev"), full.tasks("dev")
    assert 0 < len(kept) < len(all_dev)
    solvable = [t for t in all_dev if {a.name for a in t.gold_actions if a.requestor == "assistant"} <= set(LOOKUPS)]
    assert [t.id for t in kept] == [t.id for t in solvable]


def test_a_task_the_offered_tools_cannot_solve_is_refused_by_name():
    env = mua_gym.make("mua/Retail-v0", world_params={"difficulty": 1}, tools=LOOKUPS).unwrapped
    full = mua_gym.make_async("mua/Retail-v0", world_params={"difficulty": 1})
    cancel = next(t for t in full.tasks("dev") if t.category == "cancel")
    with pytest.raises(ValueError, match="cancel_pending_order"):
        env.reset(seed=0, options={"task": cancel})
    with pytest.raises(KeyError, match="offered tools can solve"):
        env.reset(seed=0, options={"task_id": cancel.id})


@pytest.mark.parametrize("tools", [["no_such_tool"], []])
def test_unknown_or_no_tools_are_refused(tools):
    with pytest.raises(ValueError, match="tools must name some of retail's agent tools"):
        mua_gym.make_async("mua/Retail-v0", tools=tools)


def test_a_call_to_a_tool_not_offered_runs_nothing():
    env = mua_gym.make("mua/Retail-v0", world_params={"difficulty": 1}, tools=LOOKUPS).unwrapped
    observation, info = env.reset(seed=0, options={"task_id": env.core.tasks("train")[0].id})
    before = env.world.state_hash()
    order = next(iter(env.world.raw.execute("SELECT order_id FROM orders WHERE status = 'pending'")))[0]
    observation, reward, terminated, truncated, info = env.step(
        {"name": "cancel_pending_order", "arguments": {"order_id": order, "reason": "no longer needed"}})
    assert observation[0]["content"] == "Error: tool 'cancel_pending_order' is not offered in this env"
    assert env.world.state_hash() == before and info["tool_errors"] == 1


def test_the_fair_agent_solves_a_narrowed_env_and_eval_records_the_narrowing(tmp_path):
    config = EvalConfig(env_ids=["mua/Retail-v0"], agent="fair", split="dev", num_tasks=6, concurrency=2,
                        world_params={"difficulty": 1}, policy=SHORT, tools=LOOKUPS)
    summary = evaluate(config, out=tmp_path / "run")
    assert summary.pass_hat_k[1] == 1.0
    run = read_run(tmp_path / "run")
    assert run.config.policy == SHORT and run.config.tools == LOOKUPS
    trajectory = run.trajectory(run.results[0])
    assert trajectory.entries[0].message.content == SHORT
    assert {c.function.name for e in trajectory.entries for c in (getattr(e.message, "tool_calls", None) or [])
            } <= set(LOOKUPS)


def test_the_fair_agent_knows_the_narrowed_policy_and_tools_not_the_domains():
    """What the fair agent may use unasked is what the episode showed it: a value only the domain's own policy or
    an unoffered tool's schema holds is not known, so its play checks the narrowed env's fairness."""
    from mua_gym.eval.agents import FairAgent

    env = mua_gym.make("mua/Retail-v0", world_params={"difficulty": 1}, tools=LOOKUPS, policy=SHORT).unwrapped
    full = mua_gym.make("mua/Retail-v0", world_params={"difficulty": 1}).unwrapped
    try:
        task_id = env.core.tasks("train")[0].id
        for which, expect in ((env, False), (full, True)):
            _, info = which.reset(seed=0, options={"task_id": task_id})
            agent = FairAgent(which.core.task)
            agent.reset(info)
            assert agent.seen.knows("answer only from the tools") is not expect
            assert agent.seen.knows("cancel_pending_order") is expect  # the full policy and schemas name it
            assert agent.seen.knows("find_user_id_by_email")
    finally:
        env.close()
        full.close()
