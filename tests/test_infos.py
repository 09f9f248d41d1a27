"""The info dicts hold to their TypedDicts (mua_gym.env.infos): every key declared, every required key there, each
value of its declared type, on every kind of step an episode can take."""

import types
import typing

import pytest
from typing_extensions import is_typeddict

import mua_gym
from mua_gym.eval.agents import OracleAgent
from mua_gym.env.infos import ResetInfo, StepInfo
from mua_gym.user_sims.base import UserSimulator


def conforms(value, kind, where="info"):
    """Raises AssertionError naming the first place where ``value`` is not of ``kind``."""
    if is_typeddict(kind):
        assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
        hints = typing.get_type_hints(kind)
        undeclared = set(value) - set(hints)
        assert not undeclared, f"{where}: keys {sorted(undeclared)} are not declared in {kind.__name__}"
        missing = set(kind.__required_keys__) - set(value)
        assert not missing, f"{where}: required keys {sorted(missing)} are missing"
        for key, item in value.items():
            conforms(item, hints[key], f"{where}[{key!r}]")
        return
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        failures = []
        for option in args:
            try:
                return conforms(value, option, where)
            except AssertionError as exc:
                failures.append(str(exc))
        raise AssertionError(f"{where}: {value!r:.80} is none of {args}: {failures}")
    if kind is type(None):
        assert value is None, f"{where}: {value!r:.80} is not None"
    elif kind is typing.Any:
        return
    elif kind is float:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{where}: {value!r} is no float"
    elif origin is list:
        assert isinstance(value, list), f"{where}: {type(value).__name__}, not a list"
        for i, item in enumerate(value):
            conforms(item, args[0], f"{where}[{i}]")
    elif origin is dict:
        assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
        for key, item in value.items():
            conforms(key, args[0], f"{where} key")
            conforms(item, args[1], f"{where}[{key!r}]")
    else:
        assert isinstance(value, kind) and not (kind is int and isinstance(value, bool)), \
            f"{where}: {value!r:.80} is not {kind.__name__}"


def play_oracle(env, task):
    obs, info = env.reset(options={"task": task})
    conforms(info, ResetInfo)
    agent, infos = OracleAgent(task), []
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        conforms(info, StepInfo)
        infos.append(info)
        if terminated or truncated:
            return infos


@pytest.mark.parametrize("env_id", ["mua/Mock-v0", "mua/Retail-v0", "mua/Airline-v0", "mua/Telecom-v0"])
def test_solved_episodes_info_holds_to_the_contract_in_every_reward_mode(env_id):
    for reward in ("task", "partial+validity+efficiency"):
        env = mua_gym.make(env_id, reward=reward)
        for task in env.unwrapped.core.tasks()[:3]:
            last = play_oracle(env, task)[-1]
            assert last["termination_reason"] is not None and "reward_info" in last
            assert (last["reward_info"]["validity"] is None) == (reward == "task")


def test_truncated_unreadable_and_late_steps_hold_to_the_contract():
    env = mua_gym.make("mua/Mock-v0", max_turns=2)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"role": "user", "content": "wrong role"})
    conforms(info, StepInfo)
    assert "error" in info
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step("Could you say that again?")
        conforms(info, StepInfo)
    assert truncated and info["termination_reason"] == "max_turns" and "reward_info" not in info
    obs, reward, terminated, truncated, info = env.step("hello?")
    conforms(info, StepInfo)
    assert "error" in info


class _FailingUser(UserSimulator):
    name = "failing"
    immediate = True

    async def start(self, task, *, seed=None, tools=None):
        raise RuntimeError("no user today")

    async def respond(self, view):
        raise RuntimeError("no user today")


def test_a_user_that_fails_to_open_is_reported_by_the_contract():
    env = mua_gym.make("mua/Mock-v0", user=_FailingUser())
    obs, info = env.reset(seed=0)
    conforms(info, ResetInfo)
    assert info["user_error"] == "RuntimeError: no user today"
    obs, reward, terminated, truncated, info = env.step("Hello")
    conforms(info, StepInfo)
    assert truncated and info["termination_reason"] == "user_error" and "user_error" in info


def test_the_checker_fails_on_an_undeclared_key_a_missing_key_and_a_wrong_type():
    good = {"turn": 1, "tool_calls": 0, "tool_errors": 0, "termination_reason": None}
    conforms(good, StepInfo)
    for bad in ({**good, "surprise": 1}, {k: v for k, v in good.items() if k != "turn"}, {**good, "turn": "1"}):
        with pytest.raises(AssertionError):
            conforms(bad, StepInfo)
