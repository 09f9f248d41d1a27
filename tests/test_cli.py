import json
import os
import subprocess
import sys
import time

import pytest

from mua_gym.cli import main

from error_llm_server import error_llm_server


def test_cli_runs_oracle_episodes(capsys, tmp_path):
    out = tmp_path / "t.jsonl"
    assert main(["run", "--env", "mua/Mock-v0", "--agent", "oracle", "--user", "scripted", "--episodes", "4",
                 "--jsonl", str(out)]) == 0
    text = capsys.readouterr().out
    assert "[user]" in text and "-- ended: user_stop; reward 1.0" in text
    assert "4 episodes, mean reward 1.000" in text
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["reward"] == 1.0 for line in lines)


def test_cli_random_agent_and_list(capsys):
    assert main(["run", "--agent", "random", "--episodes", "2", "--quiet", "--max-turns", "5"]) == 0
    assert "2 episodes" in capsys.readouterr().out
    assert main(["list"]) == 0
    assert "mua/Mock-v0" in capsys.readouterr().out


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "mua_gym.cli", "run", "--episodes", "1", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "mean reward 1.000" in result.stdout


# -- exit statuses, one-line errors, secrets ---------------------------------------------------------------------
KEY = "AbC123xyzQQQ"  # no known key shape: only the configuration says it is a secret


@pytest.fixture(scope="module")
def api_base():
    with error_llm_server() as base:
        yield base


@pytest.mark.parametrize("argv, message", [
    (["--agent", "bogus"], "unknown agent 'bogus': use oracle, fair, fair-retry, random or litellm:<model>"),
    (["--agent", "oracle", "--agent-arg", "api_key=1"], "the oracle agent takes no keywords (got api_key)"),
    (["--user-arg", "novalue"], "--user-arg expects KEY=VALUE, got 'novalue'"),
    (["--env", "mua/Nope-v0"], "Environment `Nope` doesn't exist"),
    (["--user", "telepathy"], "unknown user simulator 'telepathy'"),
    (["--task", "no-such-task"], "no task 'no-such-task'"),
    (["--env-arg", 'world_params={"no_such_param": 1}'], "no_such_param"),
    (["--episodes", "0"], "--episodes must be at least 1"),
    (["--max-turns", "0"], "--max-turns must be at least 1, got 0"),
    (["--env-arg", "max_trns=5"], "--env-arg max_trns: no env takes this keyword (did you mean 'max_turns'?)"),
    (["--split", "tset"], "--split: split must be train, dev or test, not 'tset' (did you mean 'test'?)"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, message):
    assert main(["run", "--quiet", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("mua-gym: error: ") and message in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize("argv, message", [
    (["--trials", "0"], "--trials must be at least 1, got 0"),
    (["--num-tasks", "0"], "--num-tasks must be at least 1, got 0"),
    (["--concurrency", "0"], "--concurrency must be at least 1, got 0"),
    (["--split", "tset"], "--split: split must be train, dev or test, not 'tset' (did you mean 'test'?)"),
    (["--perturb", "no_such_perturbation"], "no_such_perturbation"),
])
def test_bad_eval_arguments_exit_2_with_one_line_and_no_progress_bar(capsys, tmp_path, argv, message):
    """One line on stderr naming the flag and what it takes: no pydantic dump, no progress-bar line before it."""
    assert main(["eval", "--env", "mua/Mock-v0", "--out", str(tmp_path / "run"), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("mua-gym: error: ") and message in captured.err, captured.err
    assert captured.err.count("\n") == 1 and "pydantic" not in captured.err and captured.out == ""
    assert not (tmp_path / "run").exists()


def test_errors_found_while_planning_an_eval_print_no_progress_bar_line(capsys, tmp_path):
    """An unknown task id, or a folder of another run, is found once the envs are built: still one line, with no
    progress bar drawn before it (the bar is made when the plan is known)."""
    assert main(["eval", "--env", "mua/Mock-v0", "--task-ids", "no-such-task", "--out", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err == "mua-gym: error: mua/Mock-v0 has no task 'no-such-task'\n"
    assert main(["eval", "--env", "mua/Mock-v0", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["eval", "--env", "mua/Mock-v0", "--out", str(tmp_path / "b"), "--max-turns", "9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mua-gym: error: ") and "different run" in err


def test_a_bad_agent_fails_before_any_world_is_built(capsys):
    start = time.perf_counter()
    assert main(["run", "--env", "mua/Retail-v0", "--agent", "litellm:", "--episodes", "3"]) == 2
    assert time.perf_counter() - start < 0.5  # building retail's worlds and 2,000 tasks takes seconds
    assert "unknown agent 'litellm:'" in capsys.readouterr().err


def test_user_errors_exit_1_and_print_no_key(capsys, api_base, tmp_path):
    out = tmp_path / "runs.jsonl"
    argv = ["run", "--user", "litellm:openai/badkey", "--user-arg", f"api_base={api_base}", "--user-arg",
            f"api_key={KEY}", "--episodes", "2", "--quiet", "--jsonl", str(out)]
    assert main([*argv, "--no-check"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("user error: UserSimulatorError: user model call failed (not retried") == 2
    assert "2 episodes, mean reward 0.000" in captured.out and "2 ended on an agent or user error" in captured.out
    assert KEY not in captured.out + captured.err + out.read_text() and "[redacted]" in captured.err
    # With the probe (the default) the misconfiguration is caught before any episode, in one line.
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == ("mua-gym: error: user model: authentication failed for openai/badkey: set "
                            "OPENAI_API_KEY or pass user_kwargs={'api_key': ...}\n") and captured.out == ""


def test_agent_errors_exit_1_and_print_no_key(capsys, api_base):
    argv = ["run", "--agent", "litellm:openai/badkey", "--agent-arg", f"api_base={api_base}", "--agent-arg",
            f"api_key={KEY}", "--quiet"]
    assert main([*argv, "--no-check"]) == 1
    captured = capsys.readouterr()
    assert ("agent error: AgentError: agent model call failed (not retried: it cannot heal): AuthenticationError"
            in captured.err)
    assert "(agent_error, " in captured.out and KEY not in captured.out + captured.err
    assert main(argv) == 2
    assert "mua-gym: error: agent model: authentication failed for openai/badkey" in capsys.readouterr().err


def test_a_password_in_an_api_base_is_never_printed(capsys, api_base):
    password = "s3cretPassw0rd"
    refused = f"api_base=http://bob:{password}@127.0.0.1:9/v1"
    assert main(["run", "--user", "litellm:openai/x", "--user-arg", refused, "--user-arg", "api_key=x"]) == 2
    assert capsys.readouterr().err == ("mua-gym: error: user model: cannot reach http://[redacted]@127.0.0.1:9/v1 "
                                       "for openai/x: is the server running?\n")
    # Unprobed, the agent's calls fail on the busy server, which echoes the basic-auth header (bob:password).
    with_password = api_base.replace("http://", f"http://bob:{password}@")
    argv = ["run", "--agent", "litellm:openai/busy", "--agent-arg", f"api_base={with_password}", "--agent-arg",
            "api_key=x", "--agent-arg", "max_retries=0", "--quiet", "--no-check"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "agent error: AgentError: agent model call failed after 1 try: ServiceUnavailableError" in captured.err
    assert "request from key [redacted]" in captured.err and password not in captured.out + captured.err
    assert "Ym9iOnMzY3JldFBhc3N3MHJk" not in captured.err  # bob:s3cretPassw0rd in base64


def test_console_script_exit_status_and_environment_key_redaction(api_base):
    env = dict(os.environ, OPENAI_API_KEY=KEY)  # the key comes from the environment, as litellm reads it
    result = subprocess.run([sys.executable, "-m", "mua_gym.cli", "run", "--user", "litellm:openai/badkey",
                             "--user-arg", f"api_base={api_base}", "--no-check", "--quiet"],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 1, result.stderr
    assert "user error:" in result.stderr and "Traceback" not in result.stderr and "Give Feedback" not in result.stdout
    assert KEY not in result.stdout + result.stderr
    bad = subprocess.run([sys.executable, "-m", "mua_gym.cli", "run", "--agent", "nope"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr == "mua-gym: error: unknown agent 'nope': use oracle, fair, " \
                                                 "fair-retry, random or litellm:<model>\n"


def test_tasks_lists_each_task_of_a_split_and_the_python_call_agrees(capsys):
    import json as json_module

    import mua_gym

    assert main(["tasks", "--env", "mua/Retail-v0", "--split", "dev", "--width", "60"]) == 0
    lines = capsys.readouterr().out.splitlines()
    env = mua_gym.make("mua/Retail-v0", split="dev")
    tasks = env.unwrapped.tasks()
    assert lines[0].split() == ["id", "category", "level", "summary"] and len(lines) == len(tasks) + 1
    first = lines[1].split()
    assert first[:3] == [tasks[0].id, tasks[0].category, str(tasks[0].difficulty)]
    assert all(len(line.split("  ")[-1].strip()) <= 60 for line in lines[1:])
    assert main(["tasks", "--env", "mua/Retail-v0", "--split", "dev", "--json"]) == 0
    rows = [json_module.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [t.id for t in tasks] and rows[0]["summary"] == tasks[0].summary(10_000)
    assert rows[0]["summary"]  # every generated task says what its user wants
    obs, info = env.reset(options={"task_id": tasks[3].id})
    assert info["task_id"] == tasks[3].id


def test_tasks_of_an_unknown_split_is_one_line(capsys):
    assert main(["tasks", "--env", "mua/Retail-v0", "--split", "tset"]) == 2
    assert capsys.readouterr().err == ("mua-gym: error: split must be train, dev or test, not 'tset' "
                                       "(did you mean 'test'?)\n")


def test_an_agent_served_on_this_machine_gets_a_reply_cap_unless_it_sets_one():
    from mua_gym.eval.agents import LOCAL_MAX_TOKENS, LiteLLMAgent

    assert LiteLLMAgent("openai/smollm2", api_base="http://127.0.0.1:8080/v1").kwargs["max_tokens"] == LOCAL_MAX_TOKENS
    assert LiteLLMAgent("openai/m", api_base="http://localhost:9/v1", max_tokens=64).kwargs["max_tokens"] == 64
    assert "max_tokens" not in LiteLLMAgent("openai/m", api_base="https://api.example.com/v1").kwargs
    assert "max_tokens" not in LiteLLMAgent("gpt-4o-mini").kwargs


def test_serve_model_bad_arguments_are_one_line(capsys, tmp_path):
    assert main(["serve-model", "--port", "0"]) == 2
    assert capsys.readouterr().err == "mua-gym: error: --port must be between 1 and 65535, got 0\n"
    assert main(["serve-model", "--model", str(tmp_path / "none.gguf")]) == 2
    assert "no such file" in capsys.readouterr().err
