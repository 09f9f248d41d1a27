"""Defaults that work: a dual-control domain plays a user that can act, and bad settings fail at ``make``."""

from __future__ import annotations

import pytest

import mua_gym
from mua_gym.env import AsyncMuaEnv
from mua_gym.user_sims import ScenarioUser, ScriptedUser


def test_telecom_defaults_to_a_user_that_acts_and_the_oracle_scores():
    env = mua_gym.make("mua/Telecom-v0", split="test")
    core = env.unwrapped.core
    assert isinstance(core.user, ScenarioUser) and core.user.acts
    from episodes import run_oracle

    rewards = [run_oracle(env, task)[0] for task in core.tasks("test")[:5]]
    assert rewards == [1.0] * 5
    env.close()


def test_a_user_that_cannot_act_is_refused_for_a_dual_control_domain():
    with pytest.raises(ValueError, match="cannot act.*dual-control.*scenario"):
        mua_gym.make("mua/Telecom-v0", user="scripted")
    with pytest.raises(ValueError, match="cannot act"):
        AsyncMuaEnv("telecom", user=ScriptedUser())


def test_explicit_tasks_without_user_actions_may_use_a_scripted_user():
    telecom = mua_gym.get_domain("telecom")
    task = telecom.tasks("test")[0]
    no_user_gold = task.model_copy(update={"gold_actions": [a for a in task.gold_actions if a.requestor != "user"],
                                           "script": ["Hi, my phone has no service."]})
    AsyncMuaEnv("telecom", user="scripted", tasks=[no_user_gold])  # allowed: nothing needs the user to act
    with pytest.raises(ValueError, match="cannot act"):
        AsyncMuaEnv("telecom", user="scripted", tasks=[task])


@pytest.mark.parametrize("env_id, source, key, hint", [
    ("mua/Retail-v0", "generated", "cout", "did you mean 'count'"),
    ("mua/Airline-v0", "generated", "difficulties", "did you mean 'difficulty'"),
    ("mua/Telecom-v0", "tau2", "subsets", "did you mean 'subset'"),
    ("mua/Mock-v0", "generated", "count", "valid keys: none"),
])
def test_unknown_world_params_fail_at_make_with_the_valid_keys(env_id, source, key, hint):
    with pytest.raises(ValueError) as caught:
        mua_gym.make(env_id, world=source, world_params={key: 1})
    message = str(caught.value)
    assert "\n" not in message and repr(key) in message and hint in message
    assert not isinstance(caught.value, TypeError)


def test_valid_world_params_are_accepted_and_listed():
    with pytest.raises(ValueError, match=r"valid keys: count, difficulty, seed, size, verify"):
        AsyncMuaEnv("retail", world_params={"nope": 1})
    core = AsyncMuaEnv("retail", world_params={"count": 3, "seed": 1, "difficulty": 1})
    assert len(core.tasks("test")) == 3


def test_an_unknown_world_source_fails_at_make():
    with pytest.raises(ValueError, match=r"no world source 'tau3'.*\['generated', 'tau2'\]"):
        mua_gym.make("mua/Retail-v0", world="tau3")


def test_world_params_may_not_name_the_source():
    with pytest.raises(ValueError, match="may not hold 'source'.*world="):
        mua_gym.make("mua/Airline-v0", world_params={"source": "tau2"})


def test_the_cli_plays_telecom_with_the_domains_default_user(capsys):
    from mua_gym.cli import main

    assert main(["run", "--env", "mua/Telecom-v0", "--split", "test", "--agent", "oracle", "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "user scenario" in out and "2 episodes, mean reward 1.000" in out


@pytest.mark.parametrize("domain", ["mock", "retail", "airline", "telecom"])
def test_every_domain_defaults_to_the_user_any_agent_is_judged_with(domain):
    """The scenario user answers what the agent asks; the scripted one (lines in order) only suits replays, and
    stays the default only on TAU2's prose-scenario retail and airline tasks."""
    assert isinstance(AsyncMuaEnv(domain).user, ScenarioUser)
    if domain in ("retail", "airline"):  # (telecom refuses the scripted user: it cannot act on the phone)
        assert isinstance(AsyncMuaEnv(domain, user="scripted").user, ScriptedUser)
        assert mua_gym.get_domain(domain).default_user("tau2") == "scripted"


def test_eval_without_out_keeps_its_results_in_a_folder_the_same_command_resumes(tmp_path, monkeypatch, capsys):
    from mua_gym.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["eval", "--env", "mua/Mock-v0", "--agent", "fair", "--quiet"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    folders = list((tmp_path / "runs").iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("Mock-v0-fair-test-")
    assert f"results go to runs/{folders[0].name}" in err
    assert main([*argv, "--trials", "2"]) == 0  # more trials: the same folder, grown
    assert "4 tasks x 2 trials" in capsys.readouterr().out and list((tmp_path / "runs").iterdir()) == folders
    assert main([*argv, "--max-turns", "9"]) == 0  # another setting: another folder
    assert len(list((tmp_path / "runs").iterdir())) == 2


def test_run_and_eval_play_the_same_split_by_default(capsys):
    from mua_gym.cli import main

    assert main(["run", "--env", "mua/Retail-v0", "--agent", "oracle", "--quiet"]) == 0
    task_id = capsys.readouterr().out.split("task ")[1].split()[0]
    assert any(t.id == task_id for t in AsyncMuaEnv("retail").tasks("test"))
