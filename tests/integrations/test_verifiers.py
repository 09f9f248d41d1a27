"""verifiers 0.4: the real ``vf-eval`` CLI plays mua_gym episodes, simulated user in the loop, against a scripted
OpenAI-compatible server on 127.0.0.1 (:mod:`integrations.openai_stub`); rewards are read from vf-eval's own
``traces.jsonl``."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mua_gym import AsyncMuaEnv, get_domain
from mua_gym.integrations import MissingTrainerError
from mua_gym.task import Task

from integrations.openai_stub import Reply, ScriptedOpenAI, by_opening, gold_play, play, without_writes
from mua_gym.env.parsing import MAX_TOOL_CALLS
from integrations.readme import readme_block

TASKSET_ID = "mua-gym-verifiers"
#: Tasks of one request each (level 1): the first test tasks then change something, told straight, in four turns.
ONE_REQUEST = {"difficulty": 1}


def test_missing_verifiers_is_one_line_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "verifiers" or m.startswith("verifiers.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "verifiers", None)  # None in sys.modules: the import fails as if absent
    monkeypatch.delitem(sys.modules, "mua_gym.integrations.verifiers", raising=False)
    with pytest.raises(MissingTrainerError) as caught:
        importlib.import_module("mua_gym.integrations.verifiers")
    message = str(caught.value)
    assert "\n" not in message
    assert 'pip install "mua_gym[verifiers]"' in message and "needs verifiers" in message


vf = pytest.importorskip("verifiers.v1")
adapter = pytest.importorskip("mua_gym.integrations.verifiers")


def test_the_documented_taskset_id_is_installed() -> None:
    module = importlib.import_module("mua_gym_verifiers")
    assert sorted(module.__all__) == sorted(adapter.__all__) and module.MuaTaskset is adapter.MuaTaskset


@pytest.fixture(scope="module")
def taskset_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An empty PYTHONPATH folder: vf-eval must find the installed ``mua_gym_verifiers`` module on its own."""
    assert importlib.util.find_spec("mua_gym_verifiers") is not None
    return str(tmp_path_factory.mktemp("taskset"))


def test_taskset_carries_task_ids_policy_and_config() -> None:
    config = adapter.MuaTasksetConfig(id=TASKSET_ID, env_id="mua/Mock-v0", split="test", user="scenario", max_turns=7)
    tasks = list(adapter.MuaTaskset(config))
    expected = [t.id for t in get_domain("mock").tasks("test")]
    assert [t.data.id for t in tasks] == [t.key for t in tasks] == expected
    assert all(t.data.prompt is None and "support" in (t.data.system_prompt or "").lower() for t in tasks)
    env = adapter.open_env(config)
    assert (env.user.name, env.max_turns, env.split) == ("scenario", 7, "test")
    with pytest.raises(ValueError, match="mua/Retail-v0"):
        adapter.open_env(adapter.MuaTasksetConfig(id=TASKSET_ID, env_id="mua/Nope-v0"))


def garbage(body: dict[str, Any]) -> dict[str, Any]:
    """Unreadable play: arguments that are not JSON, a tool that does not exist, a list as arguments, then words."""
    turn = sum(m.get("role") == "assistant" for m in body["messages"])
    calls = [("get_order_details", "{not json"), ("drop_all_tables", "{}"), ("get_order_details", "[1, 2]")]
    if turn < len(calls):
        name, arguments = calls[turn]
        return {"tool_calls": [{"id": f"bad_{turn}", "type": "function",
                                "function": {"name": name, "arguments": arguments}}]}
    return {"content": "" if turn == len(calls) else "Goodbye."}


@pytest.fixture(scope="module")
def retail_plays() -> tuple[list[Task], Reply]:
    """Three retail test tasks and one reply function: the gold play, a play without its writes, garbage."""
    env = AsyncMuaEnv("retail", split="test", world_params=ONE_REQUEST)
    tasks = env.tasks()[:3]

    async def openings() -> list[str]:
        return [(await env.reset(options={"task": t}))[0][-1]["content"] for t in tasks]

    writes = {name for name, tool in get_domain("retail").tools.tools.items() if tool.kind == "write"}
    assert any(a.name in writes for a in tasks[1].gold_actions)  # so skipping the writes must fail the task
    plays = [gold_play(tasks[0]), play(tasks[1], without_writes(writes)), garbage]
    return tasks, by_opening(dict(zip(asyncio.run(openings()), plays)))


def console_script(name: str) -> str:
    """The console script ``name`` of the interpreter running the tests (``venv/bin/vf-eval`` beside
    ``venv/bin/python``), found without PATH: a venv run as ``venv/bin/python -m pytest`` is not activated."""
    import sysconfig

    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / name).is_file():
            return str(folder / name)
    raise FileNotFoundError(f"{name} is not installed beside {sys.executable}: pip install 'mua_gym[verifiers]'")


def test_console_scripts_are_found_beside_the_interpreter_without_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    found = Path(console_script("vf-eval"))
    assert found.is_file() and os.access(found, os.X_OK)


@pytest.mark.slow
def test_vf_eval_scores_the_gold_play_1_and_wrong_plays_0(tmp_path: Path, taskset_path: str,
                                                          retail_plays: tuple[list[Task], Reply]) -> None:
    tasks, reply = retail_plays
    with ScriptedOpenAI(reply) as server:
        done = subprocess.run(
            [console_script("vf-eval"), TASKSET_ID, "--no-push", "--no-rich", "-n", "3", "-r", "2",
             "-o", str(tmp_path / "out"),
             "--model", "scripted", "--client.base-url", server.url, "--env.agent.runtime.type", "subprocess",
             "--env.taskset.env-id", "mua/Retail-v0", "--env.taskset.split", "test",
             "--env.taskset.user", "scripted", "--env.taskset.max-turns", "30",
             "--env.taskset.world-params", json.dumps(ONE_REQUEST)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join([taskset_path, os.environ.get("PYTHONPATH", "")])},
            cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    [results] = (tmp_path / "out").glob("*/traces.jsonl")
    traces = [t for line in results.read_text().splitlines() for t in json.loads(line)["traces"]]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for trace in traces:
        by_task.setdefault(trace["task"]["key"], []).append(trace)
    assert {k: len(v) for k, v in by_task.items()} == {t.id: 2 for t in tasks}  # -r 2: a group per task
    scores = {k: [t["rewards"]["reward"]["score"] for t in v] for k, v in by_task.items()}
    assert scores == {tasks[0].id: [1.0, 1.0], tasks[1].id: [0.0, 0.0], tasks[2].id: [0.0, 0.0]}
    for trace in traces:
        assert trace["ok"] and trace["task"]["data"]["id"] == trace["info"]["mua_task_id"] == trace["task"]["key"]
        assert trace["info"]["termination_reason"] == "user_stop"
    assert all(t["metrics"]["tool_errors"] == 3 for t in by_task[tasks[2].id])
    assert all(t["metrics"]["tool_calls"] > 0 and t["metrics"]["tool_errors"] == 0 for t in by_task[tasks[0].id])
    # what the model saw: streamed requests with the env's tools, the policy, the user's own words
    tool_names = {s["function"]["name"] for s in AsyncMuaEnv("retail").tool_schemas}
    assert all(r["stream"] and {t["function"]["name"] for t in r["tools"]} == tool_names for r in server.requests)
    first = server.requests[0]["messages"]
    assert first[0]["role"] == "system" and first[1]["role"] == "user" and len(first) == 2
    gold = [t for t in by_task[tasks[0].id][0]["nodes"] if t["message"]["role"] == "tool"]
    assert len(gold) == len([a for a in tasks[0].gold_actions if a.requestor == "assistant"])


@pytest.mark.slow
def test_readme_block_runs_as_written(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                      taskset_path: str) -> None:
    monkeypatch.syspath_prepend(taskset_path)
    first = AsyncMuaEnv("retail", split="test").tasks()[0]
    with ScriptedOpenAI(gold_play(first)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        exec(compile(readme_block("Train with verifiers"), "README.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.split() == [first.id, "1.0", "user_stop"]


@pytest.mark.slow
@pytest.mark.parametrize(("max_turns", "reward"), [(2, 0.0), (4, 1.0)])
def test_a_run_cut_by_verifiers_turn_limit_scores_the_world_as_it_stands(
        monkeypatch: pytest.MonkeyPatch, taskset_path: str, max_turns: int, reward: float) -> None:
    # the gold play of this task: two reads, a confirmation, the one write (turn 4), then words to the user
    monkeypatch.syspath_prepend(taskset_path)
    first = AsyncMuaEnv("retail", split="test", world_params=ONE_REQUEST).tasks()[0]
    config = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "split": "test", "world_params": ONE_REQUEST},
                                    "agent": {"max_turns": max_turns}})
    env = vf.load_environment(config)
    task = next(iter(env.taskset))
    assert task.key == first.id

    trace, server = gold_trace(env, task, first)
    assert trace.stop_condition == "max_turns" and trace.num_turns == max_turns
    assert trace.rewards["reward"].score == reward and trace.info["termination_reason"] == "stopped_by_trainer"
    assert len(server.requests) == max_turns  # the next call was refused by the interception: it never reached us


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "domain", "reason"), [("mua/Mock-v0", "mock", "agent_stop"),
                                                           ("mua/Telecom-v0", "telecom", "user_stop")])
def test_gold_play_scores_1_on_a_terminal_tool_and_on_a_user_who_acts(
        monkeypatch: pytest.MonkeyPatch, taskset_path: str, env_id: str, domain: str, reason: str) -> None:
    # mock's first test task ends on the agent's terminal tool; telecom's user runs tools on their phone
    monkeypatch.syspath_prepend(taskset_path)
    first = AsyncMuaEnv(domain, split="test").tasks()[0]
    env = vf.load_environment(vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "env_id": env_id}}))
    task = next(iter(env.taskset))

    trace, server = gold_trace(env, task, first)
    assert (task.key, trace.rewards["reward"].score, trace.info["termination_reason"]) == (first.id, 1.0, reason)


def gold_trace(env: Any, task: Any, first: Task) -> tuple[Any, ScriptedOpenAI]:
    """One episode of ``task`` in the verifiers env, the model playing ``first``'s gold actions: (its trace,
    the stub that served the model)."""
    async def episode(server: ScriptedOpenAI) -> Any:
        async with env.serving():
            return await env.run_episode(task, vf.ModelContext(model="scripted",
                                                               client=vf.EvalClientConfig(base_url=server.url)))

    with ScriptedOpenAI(gold_play(first)) as server:
        return asyncio.run(episode(server)).traces[0], server


def closed_envs(monkeypatch: pytest.MonkeyPatch) -> list[AsyncMuaEnv]:
    """The AsyncMuaEnvs closed from now on (aclose still runs)."""
    closed: list[AsyncMuaEnv] = []
    real = AsyncMuaEnv.aclose

    async def aclose(self: AsyncMuaEnv) -> None:
        closed.append(self)
        await real(self)

    monkeypatch.setattr(AsyncMuaEnv, "aclose", aclose)
    return closed


@pytest.mark.parametrize("in_a_loop", [False, True])
def test_the_taskset_closes_the_env_it_reads_the_tasks_from(monkeypatch: pytest.MonkeyPatch, in_a_loop: bool) -> None:
    closed = closed_envs(monkeypatch)
    config = adapter.MuaTasksetConfig(id=TASKSET_ID, env_id="mua/Mock-v0", split="test")

    async def in_loop() -> list[Any]:  # verifiers may load a taskset with its loop running
        return list(adapter.MuaTaskset(config))

    tasks = asyncio.run(in_loop()) if in_a_loop else list(adapter.MuaTaskset(config))
    assert len(tasks) == len(get_domain("mock").tasks("test")) and len(closed) == 1


def messy_then_gold(task: Task) -> Reply:
    """Two turns the env must mend, then the gold play: first more calls than the env reads (unique ids), then
    two calls with one id between them and one without any, then the oracle's play."""
    many = [{"id": f"many_{i}", "type": "function", "function": {"name": "list_all_product_types", "arguments": "{}"}}
            for i in range(MAX_TOOL_CALLS + 1)]
    look = {"type": "function", "function": {"name": "list_all_product_types", "arguments": "{}"}}
    clashing = [{**look, "id": "same"}, {**look, "id": "same"}, {**look, "id": ""}]
    gold = gold_play(task)

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        turn = sum(m.get("role") == "assistant" for m in body["messages"])
        if turn < 2:
            return {"tool_calls": many if turn == 0 else clashing}
        skipped = [m for m in body["messages"] if m.get("role") == "assistant"][:2]
        return gold({**body, "messages": [m for m in body["messages"] if not any(m is a for a in skipped)]})

    return reply


@pytest.mark.slow
def test_every_call_is_answered_under_its_own_id_and_serving_closes_the_pooled_envs(
        monkeypatch: pytest.MonkeyPatch, taskset_path: str) -> None:
    closed = closed_envs(monkeypatch)
    monkeypatch.syspath_prepend(taskset_path)
    first = AsyncMuaEnv("retail", split="test").tasks()[0]
    env = vf.load_environment(vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "split": "test"}}))
    task = next(iter(env.taskset))
    closed.clear()  # the taskset's own env

    async def episode() -> Any:
        async with env.serving():
            result = await env.run_episode(task, vf.ModelContext(model="scripted",
                                                                 client=vf.EvalClientConfig(base_url=server.url)))
            open_while_serving = list(closed)
        return result, open_while_serving

    with ScriptedOpenAI(messy_then_gold(first)) as server:
        result, open_while_serving = asyncio.run(episode())
    trace = result.traces[0]
    assert trace.rewards["reward"].score == 1.0 and trace.info["termination_reason"] == "user_stop"
    for body in server.requests:  # every call the model made is answered, under an id it carries, once
        messages = body["messages"]
        for i, message in enumerate(messages):
            if message.get("role") != "assistant" or not message.get("tool_calls"):
                continue
            ids = [c["id"] for c in message["tool_calls"]]
            answers = [m["tool_call_id"] for m in messages[i + 1:i + 1 + len(ids)] if m.get("role") == "tool"]
            assert answers == ids and len(set(ids)) == len(ids) and all(ids), (i, ids, answers)
    third = server.requests[2]["messages"]
    refused = [m for m in third if m.get("role") == "tool" and m["tool_call_id"].startswith("many_")]
    assert len(refused) == MAX_TOOL_CALLS + 1 and all(m["content"].startswith("Error:") for m in refused)
    # the pooled env stays open while verifiers serves, and is closed when serving ends
    assert open_while_serving == [] and len(closed) == 1 and closed[0].world is None


@pytest.mark.slow
@pytest.mark.parametrize(("how", "at"), [("fault", 1), ("error", 1), ("fault", 0), ("error", 0)])
def test_a_void_episode_is_a_failed_rollout_that_verifiers_leaves_out(
        monkeypatch: pytest.MonkeyPatch, taskset_path: str, how: str, at: int) -> None:
    # the gold play, whose user breaks at its first reply (at=1) or its opening (at=0): a fault under
    # on_user_fault="void", or an error
    from integrations.void_users import Breaks
    from verifiers.v1.utils.format import format_mean

    monkeypatch.syspath_prepend(taskset_path)
    real = adapter.open_env
    monkeypatch.setattr(adapter, "open_env", lambda config: _breaking(real(config), Breaks(how, at)))
    first = AsyncMuaEnv("retail", split="test").tasks()[0]
    env = vf.load_environment(vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "split": "test"}}))
    task = next(iter(env.taskset))

    trace, server = gold_trace(env, task, first)
    kind = "user_fault: invented_fact" if how == "fault" else "user_error: RuntimeError"
    assert not trace.ok and trace.has_error and trace.stop_condition == "voidrollout_error"
    assert trace.info["void"].startswith(kind) and trace.errors[-1].type == "VoidRollout"
    assert trace.rewards["reward"] is None and trace.reward == 0.0  # no score: scoring did not run
    assert format_mean([trace], lambda t: t.reward) == "—"  # verifiers' own means leave it out
    assert (len(server.requests) > 0) == (at == 1)  # midway: after the model's first turn; at the opening: none


def _breaking(env: AsyncMuaEnv, user: Any) -> AsyncMuaEnv:
    """``env`` with ``user`` as its simulated user, voiding the episode at a user fault."""
    env.user, env.on_user_fault = user, "void"
    return env
