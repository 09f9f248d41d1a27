"""``mua-gym serve``: mua_gym as an OpenEnv server, played by OpenEnv's own WebSocket clients.

OpenEnv cannot share this environment (its fastmcp needs mcp < 2, verifiers mcp == 2.0), so the server and
the client script run in a side venv built from this checkout's ``openenv`` extra (tests/sidevenv.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

import mua_gym
from integrations.readme import readme_block
from mua_gym.cli import main
from sidevenv import side_venv

HERE = Path(__file__).resolve().parent
WORLD = 'world_params={"count": 20}'  # a small task set: the server is ready in ~2 s, not ~8 s

def _played_tasks() -> list[str]:
    """The first four tasks of the small set that write and hand nothing off: skipping their writes is a wrong play."""
    retail = mua_gym.get_domain("retail")
    writes = {name for name in retail.tools.tools if retail.tools[name].kind == "write"}
    return [t.id for t in retail.tasks("train", count=20)
            if writes & {a.name for a in t.gold_actions} and "transfer_to_human_agents" not in
            {a.name for a in t.gold_actions}][:4]


TASKS = _played_tasks()


@pytest.mark.skipif(importlib.util.find_spec("openenv") is not None, reason="openenv is installed here")
def test_serve_without_openenv_exits_2_with_the_extra_named(capsys):
    assert main(["serve", "--env", "mua/Retail-v0", "--port", "8123"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'pip install "mua_gym[openenv]"' in err


@pytest.mark.parametrize("argv, message", [
    (["--port", "0"], "--port must be between"),
    (["--env", "mua/Nope-v0"], "mua-gym list shows the envs"),  # the later --env wins
    (["--max-sessions", "0"], "--max-sessions must be at least 1"),
    (["--env-arg", "world_params"], "--env-arg expects KEY=VALUE"),
])
def test_serve_refuses_bad_arguments_in_one_line(capsys, argv, message):
    assert main(["serve", "--env", "mua/Retail-v0", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def venv() -> Path:
    """The OpenEnv venv's python (built on first use: a few minutes, then cached)."""
    return Path(side_venv("openenv", "openenv,test"))


@pytest.fixture(scope="module")
def server(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``mua-gym serve`` subprocess on a free loopback port; its base URL. Stopped after the module."""
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(venv.parent / "mua-gym"), "serve", "--env", "mua/Retail-v0", "--port", str(port),
                                 "--env-arg", WORLD, "--max-sessions", "16"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                    if json.load(reply)["status"] == "healthy":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server never became healthy:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.load(reply)


@pytest.fixture(scope="module")
def client_run(venv: Path, server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of openenv_client.py: the concurrent episodes, then the README's block (one OpenEnv import)."""
    block = tmp_path_factory.mktemp("readme") / "openenv_block.py"
    try:
        block.write_text(readme_block("Train with OpenEnv"))
        extra = ["--run", str(block)]
    except AssertionError as exc:  # a README without the section fails its own test, not the episodes'
        missing, extra = str(exc), []
    run = subprocess.run([str(venv), str(HERE / "openenv_client.py"), "--url", server, "--env-arg", WORLD,
                          *[a for t in TASKS for a in ("--task", t)], *extra],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    if not extra:
        out["readme_missing"] = missing
    return out


@pytest.mark.slow
def test_concurrent_websocket_episodes_score_honestly(client_run):
    episodes = client_run["episodes"]
    assert len(episodes) == 2 * len(TASKS)
    for ep in episodes:
        assert ep["writes"] > 0  # skipping them is then a wrong play
        assert ep["done"] and ep["reward"] == (0.0 if ep["wrong"] else 1.0), ep
        assert ep["reset_task_id"] == ep["task_id"] == ep["state"]["task_id"]
        assert ep["opening_roles"] == ["system", "user"] and ep["tools"] == 16
        assert ep["state"]["step_count"] == ep["steps"] and ep["state"]["reward"] == ep["reward"]
        assert ep["termination_reason"] == "user_stop"
        late = ep["late"]  # a step after done: the env says so, and the episode's score and count stand
        assert late["done"] and late["messages"] == [] and "reset" in late["error"]
        assert late["reward"] == ep["reward"] and late["state"] == ep["state"]
    wrong = [ep for ep in episodes if ep["wrong"]]
    assert all(len(ep["errors"]) == 2 and all("unreadable action" in e for e in ep["errors"]) for ep in wrong)
    assert len({ep["state"]["episode_id"] for ep in episodes}) == len(episodes)  # one session each
    assert max(ep["started"] for ep in episodes) < min(ep["ended"] for ep in episodes)  # all were open at once


@pytest.mark.slow
def test_readme_block_runs_as_written(client_run):
    assert "run_stdout" in client_run, client_run.get("readme_missing")
    opening, stepped = client_run["run_stdout"].strip().splitlines()[-2:]
    assert opening and stepped.startswith("Error") and stepped.endswith("0.0 False")


@pytest.mark.slow
def test_schema_task_api_and_stateless_http(server):
    with urllib.request.urlopen(f"{server}/schema", timeout=10) as reply:
        schema = json.load(reply)
    assert {"content", "tool_calls", "text"} <= set(schema["action"]["properties"])
    assert {"messages", "tools", "task_id", "done", "reward"} <= set(schema["observation"]["properties"])
    assert _post(f"{server}/mua_retail/num_tasks", {"split": "train"}) == {"num_tasks": 20}
    assert _post(f"{server}/mua_retail/task", {"split": "test", "index": 3})["task"]["id"] == "retail-test-0-00003"
    opened = _post(f"{server}/reset", {"task_id": TASKS[1]})
    assert opened["observation"]["task_id"] == TASKS[1] and opened["observation"]["messages"][0]["role"] == "system"
    # plain HTTP gets a fresh env per request (OpenEnv's rule): a step there has no episode, and says so
    step = _post(f"{server}/step", {"action": {"text": "hello"}})
    assert step["done"] is False and step["reward"] == 0.0 and "reset" in step["observation"]["error"]



VOID_PLAY = """
import json, sys
from void_users import Breaks
from mua_gym.integrations.openenv import MuaAction, MuaEnvironment
out = {}
for how, at in (("fault", 1), ("error", 1), ("fault", 0)):
    env = MuaEnvironment("mua/Mock-v0", user=Breaks(how, at), on_user_fault="void")
    first = env.reset(task_id="mock-cancel-card")
    last = env.step(MuaAction(content="Which order would you like to cancel?"))
    out[f"{how}{at}"] = [first.void, last.done, last.reward, last.void, last.metadata.get("void"), env.state.void]
    env.close()
print(json.dumps(out))
"""


def test_a_void_episode_says_so_in_the_observation_and_state(venv):
    run = subprocess.run([str(venv), "-c", VOID_PLAY], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(HERE)})
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    for key, kind in (("fault1", "user_fault: invented_fact"), ("error1", "user_error: RuntimeError"),
                      ("fault0", "user_fault: invented_fact")):
        at_reset, done, reward, void, in_metadata, in_state = out[key]
        assert (at_reset is not None) == key.endswith("0")  # void from the opening: the reset says so
        assert done and reward == 0.0 and void.startswith(kind) and in_metadata == void == in_state


@pytest.fixture(scope="module")
def mcp_run(venv: Path, server: str) -> dict[str, Any]:
    """One run of openenv_mcp_client.py: OpenEnv's MCP client on two tasks, gold and wrong, all at once."""
    run = subprocess.run([str(venv), str(HERE / "openenv_mcp_client.py"), "--url", server,
                          *[a for t in TASKS[:2] for a in ("--task", t)]], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(HERE)})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_openenv_mcp_client_plays_our_tools_and_the_state_holds_the_reward(mcp_run):
    schemas = mua_gym.make_async("mua/Retail-v0").tool_schemas
    expected = sorted([t["function"]["name"] for t in schemas] + ["send_message_to_user"])
    for ep in mcp_run["episodes"]:
        assert ep["reset_task_id"] == ep["task_id"] == ep["state"]["task_id"] and ep["tools"] == expected
        assert ep["ended"] and ep["state"]["done"] and ep["state"]["reward"] == (0.0 if ep["wrong"] else 1.0), ep
        # every call is a turn but the send without text, which never reaches the env
        assert ep["state"]["step_count"] == ep["calls"] - (1 if ep["wrong"] else 0)
        if ep["wrong"]:
            assert [b.split(":")[0] for b in ep["bad"]] == ["Error"] * 3
            assert "unknown tool" in ep["bad"][0] and "message" in ep["bad"][1] and "order_id" in ep["bad"][2]
    assert mcp_run["sessionless_tools"] == expected
    assert "reset" in mcp_run["sessionless_call"]["error"]["message"]


MCP_STEPS = """
import json
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from mua_gym.integrations.openenv import MuaAction, MuaEnvironment
env = MuaEnvironment("mua/Mock-v0")
out = {"listed": [t.name for t in env.step(ListToolsAction()).tools]}
out["before"] = env.step(CallToolAction(tool_name="send_message_to_user", arguments={"message": "hi"})).error.message
env.reset(task_id="mock-cancel-card")
said = env.step(CallToolAction(tool_name="send_message_to_user", arguments={"message": "How can I help?"}))
out["said"] = [said.result["data"], said.result["is_error"], said.done, env.state.step_count]
bad = env.step(MuaAction(type="call_tool", tool_name="send_message_to_user", arguments="hi"))
out["bad"] = [bad.result["data"], bad.result["is_error"], env.state.step_count]
out["kind"] = env.step(MuaAction(type="sing")).error.error_type.value
print(json.dumps(out))
"""


def test_mcp_style_actions_step_the_episode_in_process(venv):
    run = subprocess.run([str(venv), "-c", MCP_STEPS], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    tools = [t["function"]["name"] for t in mua_gym.make_async("mua/Mock-v0").tool_schemas]
    assert out["listed"] == tools + ["send_message_to_user"]
    assert "reset" in out["before"]
    reply, is_error, done, steps = out["said"]
    assert reply and not reply.startswith("Error") and not is_error and not done and steps == 1
    assert out["bad"] == ["Error: arguments must be a JSON object", True, 1]
    assert out["kind"] == "invalid_args"
