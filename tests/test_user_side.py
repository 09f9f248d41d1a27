"""User-side envs: the policy plays the customer against the fair agent, and the fidelity reward pays a faithful
play only. The scenario user scores 1.0 on every generated test task; users that say "ok" to everything, read out
their scenario, invent an id or stop early score 0.0."""

from __future__ import annotations

import asyncio
import json

import gymnasium
import pytest

import mua_gym
from mua_gym.env.fidelity import COMPONENTS
from mua_gym.eval.user_side import AsyncUserEnv
from mua_gym.eval.user_players import REFERENCE_USERS, make_player, play_episode

DOMAINS = ("retail", "airline", "telecom", "mock")


def _scores(domain: str, spec: str, tasks: list[mua_gym.Task]) -> list[tuple[str, float, dict]]:
    async def run() -> list[tuple[str, float, dict]]:
        env = AsyncUserEnv(domain, split="test")
        out = []
        for task in tasks:
            reward, info = await play_episode(env, make_player(spec), seed=0, options={"task_id": task.id})
            out.append((task.id, reward, info))
        await env.aclose()
        return out

    return asyncio.run(run())


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_scenario_user_scores_one_on_every_generated_test_task(domain):
    tasks = mua_gym.get_domain(domain).tasks("test")
    for task_id, reward, info in _scores(domain, "scenario", tasks):
        evidence = info["reward_info"]
        assert reward == 1.0, (task_id, evidence, info.get("user_faults"))
        assert set(evidence["components"]) == set(COMPONENTS)


@pytest.mark.parametrize("spec", [s for s in REFERENCE_USERS if s != "scenario"])
def test_a_reference_user_that_breaks_its_scenario_is_not_paid(spec):
    tasks = [t for t in mua_gym.get_domain("retail").tasks("test")[:20]]
    scores = _scores("retail", spec, tasks)
    assert all(reward == 0.0 for _, reward, _ in scores), [(t, i["reward_info"]) for t, r, i in scores if r]
    failed = {name for _, _, info in scores for name, value in info["reward_info"]["components"].items() if not value}
    expected = {"ok": {"outcome"}, "dump": {"no_leak"}, "invent": {"facts"}, "early_stop": {"stop"}}[spec]
    assert expected <= failed, failed


def test_the_observation_is_the_customers_side_and_the_chat_flips_roles():
    env = mua_gym.make("mua/Retail-User-v0", split="test")
    task = mua_gym.get_domain("retail").tasks("test")[0]
    observation, info = env.reset(options={"task_id": task.id})
    assert [m["role"] for m in observation] == ["system"]
    assert task.user_scenario.instructions in observation[0]["content"]
    assert info["task_id"] == task.id and info["tools"] == [] and info["agent"] == "fair"
    observation, reward, terminated, truncated, info = env.step(task.user_scenario.intents[0]["says"])
    assert observation and all(m["role"] == "user" for m in observation) and reward == 0.0
    assert not terminated and not truncated
    chat = env.unwrapped.to_chat()
    assert [m["role"] for m in chat[:3]] == ["system", "assistant", "user"]
    env.close()


def test_telecom_shows_the_phone_tools_and_their_results():
    async def run() -> tuple[dict, list[list[dict]]]:
        env = AsyncUserEnv("telecom", split="test")
        task = next(t for t in mua_gym.get_domain("telecom").tasks("test")
                    if any(a.requestor == "user" for a in t.gold_actions))
        observation, info = await env.reset(options={"task_id": task.id})
        player = make_player("scenario")
        action = await player.start(env.core.task, info, 0)
        seen = []
        while True:
            observation, reward, terminated, truncated, step_info = await env.step(action)
            seen.append(observation)
            if terminated or truncated:
                break
            action = await player.act(observation)
        await env.aclose()
        return info, seen, reward

    info, seen, reward = asyncio.run(run())
    assert info["tools"] and reward == 1.0
    assert any(m["role"] == "tool" for observation in seen for m in observation)


def test_bad_actions_change_nothing_and_too_many_end_the_episode():
    env = mua_gym.make("mua/Mock-User-v0", max_errors=3)
    env.reset(seed=1)
    for bad in (42, {"content": 7}, {"tool_calls": [{"function": {}}]}):
        observation, reward, terminated, truncated, info = env.step(bad)
        if truncated:
            break
        assert observation == [] and reward == 0.0 and "unreadable action" in info["error"]
    assert truncated and not terminated and info["reward_info"]["components"]["stop"] == 0.0
    observation, reward, terminated, truncated, info = env.step("hello")
    assert "reset" in info["error"]
    with pytest.raises(KeyError):
        env.reset(options={"task_id": "no-such-task"})
    env.reset(seed=1)  # a refused reset leaves the env usable
    env.close()


def test_the_customers_turn_limit_ends_the_episode_unpaid():
    env = mua_gym.make("mua/Mock-User-v0", max_turns=3)
    env.reset(seed=0)
    for _ in range(3):
        observation, reward, terminated, truncated, info = env.step("ok")
    assert truncated and reward == 0.0 and info["termination_reason"] == "max_turns"
    env.close()


def test_an_agent_that_fails_makes_the_episode_void(monkeypatch):
    import mua_gym.eval.agents as agents

    class Failing(agents.Agent):
        def act(self, observation):
            raise RuntimeError("the agent's model is down")

    monkeypatch.setattr(agents, "make_agent", lambda *a, **k: Failing())
    env = mua_gym.make("mua/Mock-User-v0")
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("Hi, I need help with my order.")
    assert truncated and reward == 0.0 and info["void"].startswith("agent_error: RuntimeError")
    env.close()


def test_the_same_seed_gives_the_same_task_and_play():
    def play() -> list[dict]:
        env = mua_gym.make("mua/Airline-User-v0", split="test")
        observation, info = env.reset(seed=7)
        player = make_player("scenario")
        action = asyncio.run(player.start(env.unwrapped.core.core.task, info, 7))
        while True:
            observation, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
            action = asyncio.run(player.act(observation))
        chat = env.unwrapped.to_chat()
        env.close()
        return chat

    assert play() == play()


def test_user_envs_are_registered_for_every_domain():
    for name in mua_gym.available_domains():
        spec = gymnasium.spec(mua_gym.domain.registry.user_env_id(name))
        assert spec.entry_point == "mua_gym.eval.user_side:UserEnv"
    with pytest.raises(ValueError, match="the policy is the user"):
        mua_gym.make("mua/Mock-User-v0", user="scenario")
    with pytest.raises(ValueError, match="is a user-side env"):
        mua_gym.make_async("mua/Mock-User-v0")


def test_eval_side_user_reports_fidelity_per_component_and_resumes(tmp_path, capsys):
    from mua_gym.cli import main

    out = tmp_path / "run"
    assert main(["eval", "--side", "user", "--user-model", "invent", "--env", "mua/Retail-v0", "--num-tasks", "3",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "invent as the customer of retail (test, agent fair): 3 episodes, 0 void" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reward"] == 0.0 and summary["components"]["facts"] == 0.0
    assert summary["faults_per_episode"]["invented_fact"] >= 1.0
    assert main(["eval", "--side", "user", "--user-model", "invent", "--env", "mua/Retail-v0", "--num-tasks", "4",
                 "--out", str(out)]) == 0  # resumed: the three played are kept, one more is played
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 4
    assert main(["eval", "--side", "user", "--env", "mua/Retail-v0"]) == 2
    assert "--side user needs --user-model" in capsys.readouterr().err
    assert main(["eval", "--user-model", "scenario", "--env", "mua/Retail-v0"]) == 2
    assert "goes with --side user" in capsys.readouterr().err
    assert main(["list"]) == 0
    assert "mua/Retail-User-v0" in capsys.readouterr().out


def test_a_user_model_that_fails_voids_its_episode_not_the_run():
    from mua_gym.eval.user_players import SimulatorPlayer
    from mua_gym.user_sims.base import UserSimulatorError
    from mua_gym.user_sims.scenario import ScenarioUser

    class Breaks(ScenarioUser):
        async def respond(self, view):
            raise UserSimulatorError("user model call failed after 2 tries: Connection error.")

    async def run():
        env = AsyncUserEnv("mock")
        reward, info = await play_episode(env, SimulatorPlayer(Breaks()), seed=0)
        again, _ = await play_episode(env, make_player("scenario"), seed=0)
        await env.aclose()
        return reward, info, again

    reward, info, again = asyncio.run(run())
    assert reward == 0.0 and info["void"].startswith("user_error: UserSimulatorError") and again == 1.0
