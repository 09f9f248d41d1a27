"""mua-gym eval: tasks x trials, pass^k as tau2 computes it, results written as episodes end, resumable."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from mua_gym.eval.evaluate import (
    Z95, EpisodeResult, EvalConfig, evaluate, flip_stats, noise_floor, pass_hat_k, read_results, read_run, summarise,
    summary_notes, tokens_and_cost,
)

MOCK = "mua/Mock-v0"


def test_every_task_times_every_trial_and_the_policy_written_once(tmp_path):
    summary = evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=3, concurrency=4), out=tmp_path)
    results = read_results(tmp_path)
    tasks = {r.task_id for r in results}
    assert summary.episodes == len(results) == 3 * len(tasks) and summary.tasks == len(tasks) >= 4
    assert Counter(r.task_id for r in results) == {t: 3 for t in tasks}  # trials, not seed draws
    assert summary.pass_hat_k == {1: 1.0, 2: 1.0, 3: 1.0} and summary.mean_reward == 1.0
    categories = {f"{MOCK} {r.category}" for r in results}
    assert len(categories) >= 3 and summary.by_category == {c: {1: 1.0, 2: 1.0, 3: 1.0} for c in categories}
    run = json.loads((tmp_path / "run.json").read_text())
    policy = run["envs"][MOCK]["policy"]
    assert len(policy) > 200 and run["envs"][MOCK]["tools"] and run["config"]["trials"] == 3
    lines = (tmp_path / "episodes.jsonl").read_text()
    assert policy[:200] not in lines and '"parameters"' not in lines  # neither the policy nor the schemas repeat
    played = []
    again = evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=3, concurrency=1, seed=0),
                     on_episode=lambda result, done, total: played.append(result))
    assert sorted((r.task_id, r.trial, r.seed) for r in results) == sorted(
        (r.task_id, r.trial, r.seed) for r in played)  # seeds depend on the episode's place in the run only
    assert again.pass_hat_k == summary.pass_hat_k and len({r.seed for r in played}) == len(played)


def test_pass_hat_k_is_tau2s_estimator():
    agent_metrics = pytest.importorskip("tau2.metrics.agent_metrics")
    rng = random.Random(0)
    for trials in (1, 2, 4, 5):
        results = []
        for task in range(12):
            p = rng.random()
            for trial in range(trials):
                reward = 1.0 if rng.random() < p else rng.choice([0.0, 0.5, 1.0 - 1e-3])
                results.append(EpisodeResult(env_id=MOCK, task_id=f"t{task}", trial=trial, seed=0, reward=reward,
                                             success=agent_metrics.is_successful(reward), terminated=True,
                                             truncated=False, termination_reason="user_stop", turns=1,
                                             tool_calls=0, tool_errors=0))
        ours = summarise(results).pass_hat_k
        for k in range(1, trials + 1):
            per_task = Counter()
            for r in results:
                per_task[r.task_id] += agent_metrics.is_successful(r.reward)
            theirs = sum(agent_metrics.pass_hat_k(trials, c, k) for c in per_task.values()) / len(per_task)
            assert ours[k] == pytest.approx(theirs, abs=1e-12)
            assert pass_hat_k(trials, per_task["t0"], k) == agent_metrics.pass_hat_k(trials, per_task["t0"], k)


def test_a_failing_user_is_counted_listed_and_fails_the_command(tmp_path):
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "mua_gym.cli", "eval", "--env", MOCK, "--agent", "oracle", "--quiet",
         "--user", "litellm:openai/none", "--user-arg", "api_base=http://127.0.0.1:9/v1", "--user-arg", "api_key=x",
         "--user-arg", "max_retries=0", "--num-tasks", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "2 user errors" in result.stdout and result.stderr.count("user error") == 2
    assert all(r.error_kind == "user" and r.reward == 0.0 for r in read_results(out))


def test_a_folder_of_another_run_is_refused(tmp_path):
    evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path)
    result = subprocess.run([sys.executable, "-m", "mua_gym.cli", "eval", "--env", MOCK, "--max-turns", "9",
                             "--quiet", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "different run (max_turns 100 there, 9 here)" in result.stderr


def test_a_run_grows_by_more_trials_and_refuses_fewer(tmp_path):
    """Resuming with a larger K plays only the new trials (the held ones are kept); a smaller K is refused."""
    first = evaluate(EvalConfig(env_ids=[MOCK], trials=2, num_tasks=3), out=tmp_path)
    held = _lines(tmp_path)
    grown = evaluate(EvalConfig(env_ids=[MOCK], trials=3, num_tasks=3), out=tmp_path)
    assert (first.episodes, grown.episodes, grown.trials) == (6, 9, 3)
    assert _lines(tmp_path)[:6] == held  # the first six episodes were kept, not replayed
    assert json.loads((tmp_path / "run.json").read_text())["config"]["trials"] == 3
    with pytest.raises(ValueError, match=r"holds 3 trials per task, 2 asked here: resume with --trials 3 or more"):
        evaluate(EvalConfig(env_ids=[MOCK], trials=2, num_tasks=3), out=tmp_path)


def test_a_changed_setting_whose_name_holds_token_or_key_is_refused_not_redacted(tmp_path):
    """max_tokens is a setting, not a secret: written down as it is, so a resume that changes it is refused."""
    config = EvalConfig(env_ids=[MOCK], agent="litellm:gpt-4o-mini", num_tasks=1,
                        agent_kwargs={"mock_response": "Goodbye.", "max_tokens": 128, "top_k": 5})
    evaluate(config, out=tmp_path)
    assert json.loads((tmp_path / "run.json").read_text())["config"]["agent_kwargs"]["max_tokens"] == 128
    changed = config.model_copy(update={"agent_kwargs": {**config.agent_kwargs, "max_tokens": 4096}})
    with pytest.raises(ValueError, match=r"different run \(agent_kwargs .*'max_tokens': 128.* there, .*4096"):
        evaluate(changed, out=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_stopped_run_resumes_without_losing_or_repeating_an_episode(tmp_path, stop):
    """Stopped mid-run (kill -9 or Ctrl-C), a half-written last line, then the same command again: every
    episode exactly once."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "mua_gym.cli", "eval", "--env", "mua/Retail-v0", "--agent", "oracle",
               "--num-tasks", "60", "--trials", "2", "--concurrency", "1", "--quiet", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 10):
        time.sleep(0.01)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=60)
    before = results.read_text().count("\n")
    assert 10 <= before < 120, "the run must be stopped mid-way"
    if stop == signal.SIGINT:
        assert process.returncode == 130 and "interrupted; rerun the same command" in stderr, stderr
        assert "Traceback" not in stderr
    with open(results, "a") as f:
        f.write('{"env_id": "mua/Retail-v0", "task_id": "half')  # the line a killed writer left
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    keys = [(r.task_id, r.trial) for r in read_results(out)]
    assert len(keys) == 120 and len(set(keys)) == 120
    assert "120 episodes over 60 tasks x 2 trials: pass^1 1.000, pass^2 1.000" in finished.stdout


def test_a_failing_agent_ends_its_episodes_unpaid_and_fails_the_command(tmp_path):
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "mua_gym.cli", "eval", "--env", MOCK, "--agent", "litellm:openai/none", "--quiet",
         "--agent-arg", "api_base=http://127.0.0.1:9/v1", "--agent-arg", "api_key=x", "--agent-arg", "max_retries=0",
         "--no-check", "--num-tasks", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "2 agent and 0 user errors" in result.stdout
    for r in read_results(out):
        assert r.error_kind == "agent" and r.reward == 0.0 and r.termination_reason == "agent_error" and r.truncated


def test_tokens_and_cost_are_counted_per_side_and_the_run_reads_back_whole(tmp_path):
    config = EvalConfig(env_ids=[MOCK], agent="litellm:gpt-4o-mini", num_tasks=2, trials=2,
                        agent_kwargs={"mock_response": "Goodbye, have a nice day."},
                        user="litellm:gpt-4o-mini", user_kwargs={"mock_response": "###STOP###"})
    summary = evaluate(config, out=tmp_path)
    assert summary.episodes == 4
    for side in ("agent", "user"):  # litellm's offline double reports tokens; its price map prices them
        assert summary.usage[f"{side}_total_tokens"] > 0 and summary.usage[f"{side}_cost"] > 0
    tokens, cost = tokens_and_cost(summary.usage)
    assert tokens == summary.usage["agent_total_tokens"] + summary.usage["user_total_tokens"]
    assert cost == pytest.approx(summary.usage["agent_cost"] + summary.usage["user_cost"])
    run = read_run(tmp_path)
    assert run.config == config and run.summary().usage == summary.usage
    trajectory = run.trajectory(run.results[0])
    system = trajectory.entries[0].message
    assert system.role == "system" and system.content == run.envs[MOCK].policy
    assert trajectory.tools == run.envs[MOCK].tools and trajectory.to_chat().messages[0]["role"] == "system"
    with pytest.raises(FileNotFoundError, match="no evaluation run"):
        read_run(tmp_path / "nothing")


def test_the_progress_bar_and_summary_show_tokens_and_cost(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mua_gym.cli", "eval", "--env", MOCK, "--num-tasks", "2", "--trials", "2",
         "--agent", "litellm:gpt-4o-mini", "--agent-arg", "mock_response=Goodbye, have a nice day.",
         "--user", "litellm:gpt-4o-mini", "--user-arg", "mock_response=###STOP###", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    tokens, cost = tokens_and_cost(read_run(tmp_path / "run").summary().usage)
    assert tokens > 0 and cost > 0
    assert f"tokens {tokens:.0f}, ${cost:.4f}" in result.stderr  # the bar's last refresh: the whole run
    assert "4/4" in result.stderr and "pass 0.00, errors 0" in result.stderr
    assert f"{tokens:.0f} tokens, ${cost:.4f}" in result.stdout
    summary = read_run(tmp_path / "run").summary()
    assert "\n  by role: agent " in result.stdout and ", user " in result.stdout and "judge" not in result.stdout
    assert f"pass^1 differences under {summary.noise_floor:.3f} are within noise (95%)" in result.stdout


def test_report_compare_and_export_commands_read_eval_folders(tmp_path, capsys):
    from mua_gym.cli import main

    fair, oracle = tmp_path / "fair", tmp_path / "oracle"
    retail = ["--env", MOCK, "--env", "mua/Retail-v0", "--num-tasks", "12", "--trials", "2", "--quiet",
              "--user", "scripted"]  # (with it the fair agent fails some tasks)
    assert main(["eval", *retail, "--agent", "fair", "--out", str(fair)]) == 0
    assert main(["eval", *retail, "--agent", "oracle", "--out", str(oracle)]) == 0
    capsys.readouterr()
    assert main(["report", str(fair), "--out", str(tmp_path / "fair.html")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "fair.html")
    page = (tmp_path / "fair.html").read_text()
    assert f"{read_run(fair).summary().pass_hat_k[1]:.3f}" in page and "retail-test-0-00004" in page
    assert main(["compare", str(fair), str(oracle), "--json", "--resamples", "2000"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    gap = read_run(oracle).summary().pass_hat_k[1] - read_run(fair).summary().pass_hat_k[1]
    assert comparison["overall"]["tasks"] == 16 and comparison["overall"]["diff"] == pytest.approx(gap) and gap > 0
    assert comparison["overall"]["low"] <= gap <= comparison["overall"]["high"]
    assert main(["compare", str(fair), str(oracle)]) == 0 and "16 tasks in common" in capsys.readouterr().out
    out = tmp_path / "sft.jsonl"
    assert main(["export", str(fair), "--format", "sft", "--min-reward", "1", "--out", str(out)]) == 0
    won = sum(r.reward >= 1 for r in read_run(fair).results)
    assert capsys.readouterr().out.startswith(f"{won} episodes written") and len(out.read_text().splitlines()) == won
    for command in (["report", str(tmp_path / "none")], ["compare", str(fair), str(tmp_path / "none")],
                    ["export", str(tmp_path / "none"), "--format", "sft", "--out", str(out)]):
        assert main(command) == 2  # a folder that holds no run: one line, no traceback
        assert "holds no evaluation run" in capsys.readouterr().err


def _lines(folder):
    return (folder / "episodes.jsonl").read_text().splitlines()


def test_a_folder_holds_each_planned_episode_once_whatever_its_file_says(tmp_path):
    evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=2), out=tmp_path)
    lines = _lines(tmp_path)
    ghost = json.loads(lines[0]) | {"task_id": "ghost-task", "success": False, "reward": 0.0}
    failed_copy = json.loads(lines[1]) | {"success": False, "reward": 0.0}  # a second line for a played episode
    with open(tmp_path / "episodes.jsonl", "a") as f:
        f.write(json.dumps(ghost) + "\n" + json.dumps(failed_copy) + "\n")
    run = read_run(tmp_path)
    assert len(run.results) == len(lines) and "ghost-task" not in {r.task_id for r in run.results}
    assert run.summary().pass_hat_k == {1: 1.0, 2: 1.0}  # the first line of an episode counts, once
    assert [r.task_id for r in run.results] == [t for t in run.plan[MOCK] for _ in range(2)]  # plan order
    resumed = evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=2), out=tmp_path)
    assert resumed.episodes == len(lines) and resumed.pass_hat_k == {1: 1.0, 2: 1.0}


def test_one_eval_at_a_time_writes_a_folder(tmp_path):
    import fcntl

    evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path)
    with open(tmp_path / ".lock", "a") as held:  # what a running eval holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path / "other").episodes == 4  # free
        with pytest.raises(ValueError, match="being written by another mua-gym eval"):
            evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path)
    assert evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path).episodes == 4  # released: it resumes


def test_a_run_whose_tasks_changed_is_refused_naming_what_changed(tmp_path):
    evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path)
    run = json.loads((tmp_path / "run.json").read_text())
    run["plan"][MOCK] = run["plan"][MOCK][::-1]  # what another mua_gym version's task list would look like
    (tmp_path / "run.json").write_text(json.dumps(run))
    with pytest.raises(ValueError, match=f"the tasks of {MOCK} are not those .* began with"):
        evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path)
    with pytest.raises(ValueError, match=r"different run \(max_turns 100 there, 12 here\)"):
        evaluate(EvalConfig(env_ids=[MOCK], trials=2, max_turns=12), out=tmp_path)


def test_no_credential_is_written_to_the_run_and_a_rotated_key_resumes(tmp_path):
    secret, rotated, password = "sk-SECRETSECRET123456", "sk-ROTATEDKEY9876543", "hunter22pw"
    config = EvalConfig(env_ids=[MOCK], agent="litellm:gpt-4o-mini", num_tasks=2, concurrency=2,
                        agent_kwargs={"mock_response": "Goodbye.", "api_key": secret,
                                      "api_base": f"http://bob:{password}@127.0.0.1:9/v1"})
    evaluate(config, out=tmp_path / "a")
    written = (tmp_path / "a" / "run.json").read_text() + (tmp_path / "a" / "episodes.jsonl").read_text()
    assert secret not in written and password not in written and "[redacted]" in written
    rotated_config = config.model_copy(update={"agent_kwargs": {**config.agent_kwargs, "api_key": rotated}})
    assert evaluate(rotated_config, out=tmp_path / "a").episodes == 2  # same run: nothing replayed, no error
    assert len(_lines(tmp_path / "a")) == 2
    evaluate(rotated_config.model_copy(update={"trials": 2}), out=tmp_path / "b")
    from mua_gym.eval.compare import compare_runs, format_comparison

    comparison = compare_runs(tmp_path / "a", tmp_path / "b")
    shown = format_comparison(comparison) + comparison.model_dump_json()
    assert "trials" in comparison.settings and "agent_kwargs" not in comparison.settings
    assert secret not in shown and rotated not in shown and password not in shown
    assert read_run(tmp_path / "a").config.concurrency == 2  # the session's, recorded outside the key


def test_files_that_are_not_a_runs_give_one_line_errors(tmp_path, capsys):
    from mua_gym.cli import main

    evaluate(EvalConfig(env_ids=[MOCK], trials=1), out=tmp_path / "good")
    cases = {"no-config": ("{}", None), "not-json": ("{", None), "bad-line": (None, '{"env_id": 3}\n')}
    for name, (run_text, line) in cases.items():
        folder = tmp_path / name
        shutil.copytree(tmp_path / "good", folder)
        if run_text is not None:
            (folder / "run.json").write_text(run_text)
        if line is not None:
            with open(folder / "episodes.jsonl", "a") as f:
                f.write(line)
        for command in (["report", str(folder)], ["compare", str(folder), str(tmp_path / "good")],
                        ["export", str(folder), "--format", "sft", "--out", str(tmp_path / "x.jsonl")]):
            assert main(command) == 2, (name, command)
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "Traceback" not in err
            assert ("line 5 is not an episode record" if name == "bad-line" else "is not a mua-gym eval run") in err
    assert main(["report", str(tmp_path / "good"), "--out", str(tmp_path)]) == 0  # a folder: report.html in it
    assert (tmp_path / "report.html").exists()


def test_success_is_the_task_reward_whatever_the_env_shaped():
    import asyncio

    import mua_gym
    from mua_gym.eval.evaluate import _play

    config = EvalConfig(env_ids=["mua/Retail-v0"], agent="fair", user="scripted")
    shaped = mua_gym.make_async("mua/Retail-v0", split="test", reward="partial+validity+efficiency", user="scripted")
    plain = mua_gym.make_async("mua/Retail-v0", split="test", user="scripted")
    outcomes = set()
    for task in shaped.tasks("test")[:12]:
        a = asyncio.run(_play(shaped, config, "mua/Retail-v0", task, 0))
        b = asyncio.run(_play(plain, config, "mua/Retail-v0", task, 0))
        assert (a.reward, a.success) == (b.reward, b.success) and a.reward in (0.0, 1.0)  # judged on the task
        assert b.shaped_reward == b.reward and (a.shaped_reward < 1.0 if not a.success else True)
        outcomes.add(a.success)
    assert outcomes == {True, False}  # the fair agent fails some of these: both kinds were compared


def test_an_agent_factory_plays_in_place_of_the_spec_and_world_params_reach_the_envs(tmp_path):
    from mua_gym.eval.agents import OracleAgent, RandomAgent

    built = []

    def factory(task, seed):
        built.append((task.id, seed, task.difficulty))
        return OracleAgent(task) if task.id.endswith(("0", "2", "4")) else RandomAgent(seed)

    config = EvalConfig(env_ids=["mua/Retail-v0"], agent="my-model", num_tasks=6, trials=2,
                        world_params={"difficulty": 1})
    summary = evaluate(config, out=tmp_path, agent_factory=factory)
    assert len(built) == 12 and {d for _, _, d in built} == {1}  # every task of level 1
    assert summary.pass_hat_k[1] == pytest.approx(0.5) and read_run(tmp_path).config.agent == "my-model"
    assert sorted((t, s) for t, s, _ in built) == sorted((r.task_id, r.seed) for r in read_run(tmp_path).results)


def test_an_agent_that_stops_has_the_world_scored_as_it_stands(tmp_path):
    from mua_gym.eval.agents import OracleAgent

    class StopsBeforeGoodbye(OracleAgent):  # ends the episode itself, as TRL ends a rollout with no tool call
        def act(self, observation):
            action = super().act(observation)
            if (action.get("content") or "").startswith("Thank you"):
                self.stopped, self.stop_reason = True, "no_tool_call"
            return action

    class StopsAtOnce(OracleAgent):
        def act(self, observation):
            self.stopped = True
            return super().act(observation)

    config = EvalConfig(env_ids=[MOCK], agent="stopping", trials=1)
    done = evaluate(config, out=tmp_path, agent_factory=lambda task, seed: StopsBeforeGoodbye(task))
    stopped = [r for r in read_run(tmp_path).results if r.termination_reason == "no_tool_call"]
    assert len(stopped) >= 3 and all(r.components["DB"] == 1.0 for r in stopped)  # scored: every gold call made
    assert 0 < done.pass_hat_k[1] < 1  # a task whose goodbye carried what to communicate is lost, as it should be
    idle = evaluate(config, agent_factory=lambda task, seed: StopsAtOnce(task))
    assert idle.pass_hat_k[1] == 0.0 and idle.mean_turns == 0  # nothing done, nothing stepped, nothing paid


def test_an_agent_that_asks_is_told_when_its_user_is_the_scripted_one(capsys):
    from mua_gym.cli import main

    def note(*args):
        assert main(["eval", "--num-tasks", "2", "--quiet", *args]) == 0
        return [line for line in capsys.readouterr().err.splitlines() if "note:" in line]

    told = note("--env", "mua/Retail-v0", "--env", "mua/Airline-v0", "--agent", "fair", "--user", "scripted")
    assert len(told) == 1 and "mua/Retail-v0, mua/Airline-v0 plays the scripted user" in told[0]
    assert "--user scenario" in told[0]
    assert note("--env", "mua/Retail-v0", "--env", "mua/Telecom-v0", "--agent", "fair") == []  # the default user
    assert note("--env", "mua/Retail-v0", "--agent", "oracle", "--user", "scripted") == []  # the oracle: replays
    assert note("--env", "mua/Retail-v0", "--agent", "oracle") == []  # the oracle never asks


# -- error bars, the cost ledger, user faults -----------------------------------------------------------------------

def outcome(task: str, trial: int, success: bool, **fields) -> EpisodeResult:
    return EpisodeResult(env_id=MOCK, task_id=task, trial=trial, seed=0, reward=float(success), success=success,
                         terminated=True, truncated=False, termination_reason="user_stop", turns=1, tool_calls=0,
                         tool_errors=0, **fields)


def test_the_noise_floor_is_zero_where_trials_agree_and_computed_where_they_flip():
    steady = summarise([outcome(t, k, t == "a") for t in "ab" for k in range(4)])
    assert (steady.flip_tasks, steady.flip_rate, steady.noise_floor) == (0.0, 0.0, 0.0)
    # a: 4 of 4; b: 2 of 4, whose trials disagree in 2*2*2 / (4*3) = 2/3 of the pairs
    mixed = summarise([outcome("a", k, True) for k in range(4)] + [outcome("b", k, k < 2) for k in range(4)])
    assert mixed.flip_tasks == 0.5 and mixed.flip_rate == pytest.approx(1 / 3)
    # V = (0 + (2/3) / 2 / 4) / 2**2; floor = 1.96 sqrt(2 V) = 1.96 sqrt(1/6) / 2
    assert mixed.noise_floor == pytest.approx(Z95 * (1 / 6) ** 0.5 / 2) and round(mixed.noise_floor, 3) == 0.4
    assert flip_stats([[True, False]]) == (1.0, 1.0) and flip_stats([[True]]) == (None, None)
    # one trial a task: no flip can be seen; the floor takes the overall rate's p(1 - p) for every task
    single = summarise([outcome(f"t{i}", 0, i < 3) for i in range(10)])
    assert single.flip_rate is None and single.flip_tasks is None
    assert single.noise_floor == pytest.approx(Z95 * (2 * 0.3 * 0.7 / 10) ** 0.5)
    assert summarise([]).noise_floor is None
    notes = summary_notes(mixed)
    assert notes == ["noise: 50% of tasks flip across trials, mean flip rate 0.333; pass^1 differences under 0.400 "
                     "are within noise (95%)"]


def test_the_noise_floor_holds_a_reruns_difference_about_95_percent_of_the_time():
    """Many reruns of the same agent (fixed per-task pass rates): |pass^1 A - pass^1 B| tops A's floor ~5% of the
    time (a seeded simulation; the normal approximation and the floor's own estimate make it ~5%, not exactly)."""
    import numpy as np

    rng = np.random.default_rng(0)
    tasks, trials, pairs = 60, 4, 1500
    p = rng.uniform(0, 1, tasks)
    above = 0
    for _ in range(pairs):
        a = rng.random((tasks, trials)) < p[:, None]
        b = rng.random((tasks, trials)) < p[:, None]
        above += abs(a.mean() - b.mean()) > noise_floor(a.tolist())
    assert 0.02 < above / pairs < 0.09, above / pairs


def test_void_episodes_count_as_failures_or_are_left_out_and_faults_are_rated_per_kind():
    leak = {"kind": "goal_leak", "turn": 1, "evidence": "told the agent the answer"}
    results = [outcome("a", 0, True), outcome("a", 1, False, void="user_fault: goal_leak", user_faults=[leak]),
               outcome("a", 2, True, user_faults=[leak, {"kind": "off_script", "turn": 3, "evidence": "x"}]),
               outcome("b", 0, False, error_kind="user", error="down"),  # a line from before void was written
               outcome("b", 1, False, void="user_error: down", error_kind="user", error="down"),
               outcome("c", 0, False), outcome("c", 1, True), outcome("c", 2, True)]
    s = summarise(results)
    assert s.pass_hat_k[1] == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)  # void counted as failures, as before
    assert s.pass_hat_k_void_failed == s.pass_hat_k
    # left out: a is 2 of 2, b has no trial left (dropped), c 2 of 3 (k up to the run's trials, b's 2)
    assert s.pass_hat_k_void_excluded == {1: pytest.approx((1 + 2 / 3) / 2), 2: pytest.approx((1 + 1 / 3) / 2)}
    assert summarise(results[:3]).pass_hat_k_void_excluded == {1: 1.0, 2: 1.0}  # k = 3: no task has 3 left
    assert s.void_episodes == 3 and s.void_reasons == {"user_error": 2, "user_fault": 1}
    assert s.user_faults["goal_leak"].model_dump() == {"faults": 2, "per_episode": 0.25, "episode_share": 0.25}
    assert s.user_faults["off_script"].model_dump() == {"faults": 1, "per_episode": 0.125, "episode_share": 0.125}
    notes = summary_notes(s)
    assert "user faults: goal_leak 0.25/episode (25% of episodes), off_script 0.12/episode (12% of episodes)" in notes
    assert any(n.startswith("3 void episodes (user_error 2, user_fault 1): left out, pass^1 0.833") for n in notes)
    # a void episode the env paid (a fault after the goal was met) is a failure in the counted figure
    paid = summarise([outcome("a", 0, True, void="user_fault: off_script"), outcome("a", 1, True)])
    assert paid.pass_hat_k[1] == 1.0 and paid.pass_hat_k_void_failed[1] == 0.5
    assert paid.pass_hat_k_void_excluded == {1: 1.0}


def test_the_judges_tokens_and_cost_reach_the_episode_as_judge_counters(tmp_path):
    """The offline scripted judge (tests/scripted_llm.py, priced per token) through the env's judging into an
    eval episode's usage, its summary's ledger, and the CLI's notes."""
    import asyncio

    import mua_gym
    from mua_gym import EvaluationSpec, Task
    from mua_gym.eval.agents import make_agent
    from mua_gym.eval.evaluate import _play
    from scripted_llm import price, script

    judge = script("eval-judge", ['{"verdicts": [{"statement": 1, "true": true, "reason": "it greets"}]}'])
    one_call = price("eval-judge")
    agent = script("eval-agent", ["Hello! We sell coffee gear."])
    task = Task(id="nl", domain="mock", script=["Hi, what do you sell?"],
                evaluation=EvaluationSpec(reward_basis=["DB", "NL_ASSERTION"], nl_assertions=["It greets."]))
    config = EvalConfig(env_ids=[MOCK], user="scripted", judge=f"litellm:{judge}")
    assert config.env_kwargs()["judge"] == f"litellm:{judge}"
    assert "judge" not in EvalConfig(env_ids=[MOCK]).run_key()  # a folder from before judges resumes

    async def play() -> EpisodeResult:
        env = mua_gym.make_async(MOCK, **config.env_kwargs(), tasks=[task])
        try:
            return await _play(env, config, MOCK, task, 0, lambda task, seed: make_agent(f"litellm:{agent}"))
        finally:
            await env.aclose()

    result = asyncio.run(play())
    assert result.success and result.components["NL_ASSERTION"] == 1.0
    assert result.usage["judge_total_tokens"] == 15 and result.usage["judge_prompt_tokens"] == 10
    assert result.usage["judge_cost"] == pytest.approx(one_call)
    assert result.usage["agent_total_tokens"] == 15 and "user_total_tokens" not in result.usage  # scripted user
    assert result.trajectory["reward_info"]["judge_usage"]["total_tokens"] == 15
    summary = summarise([result])
    assert summary.ledger["judge"].tokens == 15 and summary.ledger["judge"].token_share == 0.5
    assert summary.ledger["judge"].cost_share == pytest.approx(one_call / tokens_and_cost(summary.usage)[1])
    assert any(n.startswith("by role: agent 15 tokens") and "; the judge 50% of tokens" in n
               for n in summary_notes(summary))
    # the line reads back; an unjudged episode's reward_info carries no judge_usage at all
    line = EpisodeResult.model_validate_json(result.model_dump_json())
    assert line.usage == result.usage and line == result
    oracle = evaluate(EvalConfig(env_ids=[MOCK], num_tasks=1), out=tmp_path)
    assert "judge_usage" not in read_results(tmp_path)[0].trajectory["reward_info"] and not oracle.ledger


def test_a_folder_written_before_faults_and_error_bars_reads_back(tmp_path):
    evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=2, num_tasks=2), out=tmp_path)
    path = tmp_path / "episodes.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for x in lines:
        for key in ("user_faults", "void"):
            x.pop(key, None)
        x["trajectory"].pop("user_faults", None)
        x["trajectory"].pop("void", None)
    lines[0].update(error_kind="user", error="down", reward=0.0, success=False)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = read_run(tmp_path)
    assert all(r.user_faults == [] and r.void is None for r in run.results)
    summary = run.summary()
    assert summary.void_episodes == 1 and summary.void_reasons == {"user_error": 1}
    assert summary.pass_hat_k[1] == 0.75 and summary.pass_hat_k_void_excluded[1] == 1.0
    assert summary.flip_tasks == 0.5 and summary.noise_floor > 0
