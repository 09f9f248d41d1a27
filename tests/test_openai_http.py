"""The fast client of OpenAI-compatible servers (``openai:<model>@<base_url>``): episodes, failures, secrets."""

from __future__ import annotations

import asyncio
import socket

import pytest
from episodes import run_oracle
from error_llm_server import FLAKY_REPLY, REQUESTS, error_llm_server

import mua_gym
from mua_gym import EvaluationSpec, Task
from mua_gym.env.gym_env import MuaEnv
from mua_gym.llm.judge import JudgeError, make_judge
from mua_gym.llm.client import JudgeModelError
from mua_gym.llm.openai_http import parse_spec
from mua_gym.user_sims import UserModelError, UserSimulatorError, make_user

KEY = "sk-fast-client-secret-0123456789"


@pytest.fixture(scope="module")
def server():
    with error_llm_server() as base:
        yield base


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_the_spec_names_a_model_and_a_server():
    assert parse_spec("Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1/") == ("Qwen/Qwen2.5-7B", "http://127.0.0.1:8000/v1")
    assert parse_spec("me@org/model@https://host/v1") == ("me@org/model", "https://host/v1")
    for bad in ("model", "model@", "@http://host/v1", "model@ftp://host", "model@http://"):
        with pytest.raises(ValueError, match="openai:<model>@<base_url>"):
            parse_spec(bad)
    with pytest.raises(ValueError, match="openai:<model>@<base_url>"):
        make_user("openai:model-without-server")


def test_an_episode_with_a_user_served_over_http(server):
    env = MuaEnv("mock", user=f"openai:user-2@{server}", user_kwargs={"api_key": KEY, "temperature": 0})
    task = env.core.tasks()[0]
    reward, terminated, truncated, info = run_oracle(env, task)
    assert env.unwrapped.trajectory().messages[1].content == "Please help me with my order."
    trajectory = env.unwrapped.trajectory()
    assert reward == 1.0 and info["termination_reason"] == "user_stop"
    assert trajectory.user == "openai:user-2"
    calls = REQUESTS["user-2"]
    assert trajectory.usage["total_tokens"] == 4 * calls and calls >= 2  # the server's usage, summed
    assert KEY not in trajectory.model_dump_json()
    env.close()


def test_failures_are_retried_as_the_litellm_path_retries_them(server):
    async def start(spec: str, **kwargs):
        user = make_user(spec, backoff=0.0, max_retries=2, **kwargs)
        try:
            return await user.start(Task(id="t", domain="mock", script=["Hi."]))
        finally:
            await user.aclose()

    REQUESTS.clear()
    assert asyncio.run(start(f"openai:flaky-2@{server}")).content == FLAKY_REPLY  # two 503s, then an answer
    assert REQUESTS["flaky-2"] == 3
    with pytest.raises(UserSimulatorError, match="after 3 tries") as busy:
        asyncio.run(start(f"openai:busy@{server}", api_key=KEY))
    assert REQUESTS["busy"] == 3 and KEY not in str(busy.value)
    with pytest.raises(UserSimulatorError, match="not retried") as denied:
        asyncio.run(start(f"openai:badkey@{server}", api_key=KEY))  # the server echoes the key it was sent
    assert REQUESTS["badkey"] == 1 and KEY not in str(denied.value) and "401" in str(denied.value)
    with pytest.raises(UserSimulatorError, match="after 2 tries"):  # a refused connection: retried once
        asyncio.run(start(f"openai:any@{closed_port_url()}"))


def test_an_episode_whose_user_server_fails_ends_as_a_user_error(server):
    env = MuaEnv("mock", user=f"openai:missing@{server}", user_kwargs={"max_retries": 0})
    obs, info = env.reset()
    assert "HTTP 404" in info["user_error"] and "not retried" in info["user_error"]
    *_, reward, terminated, truncated, info = env.step("Hello")
    assert truncated and reward == 0.0 and info["termination_reason"] == "user_error"
    env.close()


def test_the_probe_names_the_fix_in_one_line(server):
    with pytest.raises(UserModelError, match="authentication failed") as denied:
        make_user(f"openai:badkey@{server}", api_key=KEY).check()
    assert KEY not in str(denied.value) and "\n" not in str(denied.value)
    with pytest.raises(UserModelError, match="not found"):
        make_user(f"openai:missing@{server}").check()
    with pytest.raises(UserModelError, match="cannot reach"):
        make_user(f"openai:ok@{closed_port_url()}").check()
    make_user(f"openai:ok@{server}").check()
    with pytest.raises(JudgeModelError, match="not found"):
        make_judge(f"openai:missing@{server}").check()


def test_a_judge_served_over_http(server):
    task = Task(id="nl", domain="mock", script=["Hi."],
                evaluation=EvaluationSpec(reward_basis=["NL_ASSERTION"], nl_assertions=["greets"]))
    env = MuaEnv("mock", judge=f"openai:flaky-0@{server}", user="scripted")
    env.reset(options={"task": task})
    *_, reward, terminated, truncated, info = env.step("Hello!")
    assert terminated and reward == 1.0 and info["reward_info"]["nl_assertions"] == [True]
    env.close()
    judge = make_judge(f"openai:busy@{server}", max_retries=0, api_key=KEY)

    async def ask() -> None:
        try:
            await judge([{"role": "user", "content": "Hi"}], ["greets"])
        finally:
            await judge.aclose()

    with pytest.raises(JudgeError) as failed:
        asyncio.run(ask())
    assert KEY not in str(failed.value)


def test_make_accepts_the_spec(server):
    env = mua_gym.make("mua/Mock-v0", user=f"openai:user-1@{server}")
    obs, info = env.reset(seed=0)
    assert obs[-1]["content"] == "Please help me with my order."
    env.close()
