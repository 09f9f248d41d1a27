"""The episode module: a task's preparation is made once and kept for its domain; an episode's own state."""

import gc

from mua_gym import MuaEnv
from mua_gym.env.episode import EpisodeState, prepare_task
from mua_gym.domain.registry import get_domain
from mua_gym.domain.state import state_of


def test_a_task_is_prepared_once_and_kept_for_its_domain_while_it_lives():
    mock = get_domain("mock")
    task = mock.tasks("train")[0].model_copy(deep=True)  # an object no other test holds
    first = prepare_task(mock, task)
    assert prepare_task(mock, task) is first
    assert state_of(mock).prepared[id(task)][1] is first
    again = prepare_task(mock, task, fresh=True)
    assert again is not first and prepare_task(mock, task) is again
    assert (again.gold_hash, again.gold_changes, again.start) == (first.gold_hash, first.gold_changes, first.start)
    twin = task.model_copy(deep=True)  # equal, but its own object: its own preparation, the same content
    assert prepare_task(mock, twin) is not again and prepare_task(mock, twin).gold_hash == again.gold_hash
    key = id(task)
    del task
    gc.collect()
    assert key not in state_of(mock).prepared  # dropped with the task: a discarded task list frees its preparations


def test_the_gold_agent_calls_are_counted_for_shaping():
    mock = get_domain("mock")
    for task in mock.tasks("train"):
        prepared = prepare_task(mock, task)
        agent = [r for a, r in zip(task.gold_actions, prepared.gold_results) if a.requestor == "assistant"]
        assert prepared.gold_agent_calls == len(agent) and prepared.gold_agent_errors == sum(r.error for r in agent)


def test_episode_state_ends_terminated_to_be_scored_or_truncated_at_zero():
    state = EpisodeState()
    assert not state.done and state.reward is None
    state.end(True, "user_stop")
    assert (state.done, state.terminated, state.truncated, state.reason, state.reward) == (
        True, True, False, "user_stop", None)
    cut = EpisodeState(turns=3)
    cut.end(False, "max_turns")
    assert (cut.done, cut.terminated, cut.truncated, cut.reason, cut.reward) == (True, False, True, "max_turns", 0.0)


def test_each_reset_starts_the_counts_again():
    env = MuaEnv("mock", max_turns=1)
    env.reset(seed=1)
    env.step({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}}]})
    ended = env.trajectory()
    assert (ended.turns, ended.tool_calls, ended.tool_errors, ended.truncated, ended.reward) == (1, 1, 1, True, 0.0)
    env.reset(seed=2)
    fresh = env.trajectory()
    assert (fresh.turns, fresh.tool_calls, fresh.tool_errors, fresh.truncated, fresh.reward) == (0, 0, 0, False, None)
    assert fresh.termination_reason is None and not env.core.done
