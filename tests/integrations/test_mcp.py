"""MCP over stdio, with the SDK's own clients against ``mua-gym serve --protocol mcp --transport stdio``: the model
sees the domain's tools and send_message_to_user, the oracle's play pays 1.0 and a play without its writes 0.0 (read
from the result file, never from a tool), and a bad call is an error result that changes nothing."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import pytest

import mua_gym

mcp = pytest.importorskip("mcp")
from mcp import Client, ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from integrations.mcp_play import oracle, plain  # noqa: E402

#: The two kinds of client: a ClientSession that makes the initialize handshake, and a Client on 2026-07-28.
KINDS = ("handshake", "2026-07-28")

ROOT = Path(__file__).resolve().parents[2]


def _server(env_id: str, task_id: str, result: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "mua_gym.cli", "serve", "--protocol", "mcp", "--transport", "stdio", "--env", env_id,
        "--env-arg", "split=test", "--env-arg", "user=scenario", "--task-id", task_id, "--result", str(result)])


@contextlib.asynccontextmanager
async def _connect(kind: str, params: StdioServerParameters) -> AsyncIterator[Any]:
    """A client of ``kind`` (:data:`KINDS`) on the server ``params`` launches."""
    if kind == "handshake":
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    else:
        async with Client(stdio_client(params)) as client:
            assert client.protocol_version == "2026-07-28"
            yield client


async def _play(env_id: str, task: mua_gym.Task, result: Path, drop_writes: bool = False,
                extra: list[tuple[str, Any]] = (), kind: str = "handshake") -> list[Any]:
    """Plays the oracle's actions over MCP (tool calls as calls, messages through send_message_to_user), first the
    ``extra`` calls; returns every call result."""
    writes = mua_gym.get_domain(task.domain).tools.names_of("write")
    answers = []
    async with _connect(kind, _server(env_id, task.id, result)) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        assert listed == {t["function"]["name"] for t in mua_gym.make_async(env_id).tool_schemas} | \
            {"send_message_to_user"}
        for name, arguments in extra:
            answers.append(await session.call_tool(name, arguments))
        answers += await oracle(session, task, writes if drop_writes else frozenset())
    return answers


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("domain", ["retail", "airline", "telecom", "mock"])
def test_the_oracle_pays_one_and_the_result_file_holds_the_trajectory(tmp_path, domain, kind):
    task = plain(domain)
    result = tmp_path / "result.json"
    answers = anyio.run(_play, mua_gym.env_id(domain), task, result, False, (), kind)
    assert not any(a.is_error for a in answers)
    out = json.loads(result.read_text())
    assert out["done"] and out["reward"] == 1.0 and out["task_id"] == task.id
    assert out["opening"] and out["trajectory"]["task_id"] == task.id
    assert out["termination_reason"] == "user_stop"


def test_a_play_without_its_writes_pays_nothing(tmp_path):
    task = plain("airline")
    result = tmp_path / "result.json"
    anyio.run(_play, "mua/Airline-v0", task, result, True)
    out = json.loads(result.read_text())
    assert out["done"] and out["reward"] == 0.0


def test_bad_calls_are_error_results_and_change_nothing(tmp_path):
    task = plain("retail")
    write = next(a for a in task.gold_actions if a.name in {"cancel_pending_order", "modify_pending_order_address",
                                                            "modify_pending_order_items", "modify_user_address",
                                                            "return_delivered_order_items",
                                                            "exchange_delivered_order_items",
                                                            "modify_pending_order_payment"})
    bad = [("no_such_tool", {}), (write.name, {**write.arguments, "order_id": 12}),
           (write.name, {}), ("send_message_to_user", {"message": ["not", "text"]}),
           ("get_order_details", {"order_id": "#W0000000"})]
    result = tmp_path / "result.json"
    answers = anyio.run(_play, "mua/Retail-v0", task, result, False, bad)
    assert [a.is_error for a in answers[:len(bad)]] == [True] * len(bad)
    assert "unknown tool" in answers[0].content[0].text and "order_id" in answers[1].content[0].text
    assert json.loads(result.read_text())["reward"] == 1.0  # the bad calls changed nothing the gold play needed


def test_a_client_that_leaves_early_gets_the_world_scored_as_it_stands(tmp_path):
    task = plain("retail")
    result = tmp_path / "result.json"

    async def leave() -> None:
        async with stdio_client(_server("mua/Retail-v0", task.id, result)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                opening = json.loads(result.read_text())
                assert not opening["done"] and opening["opening"]

    anyio.run(leave)
    out = json.loads(result.read_text())
    assert out["done"] and out["reward"] == 0.0 and out["termination_reason"] == "stopped_by_client"


def test_the_command_refuses_an_unknown_task_and_stdio_options_over_http(capsys):
    from mua_gym.cli import main

    assert main(["serve", "--protocol", "mcp", "--env", "mua/Retail-v0", "--task-id", "x"]) == 2
    assert "are for --transport stdio" in capsys.readouterr().err
    assert main(["serve", "--protocol", "mcp", "--transport", "stdio", "--env", "mua/Retail-v0",
                 "--task-id", "retail-train-0-0000"]) == 2
    assert "no task 'retail-train-0-0000'" in capsys.readouterr().err
    assert main(["serve", "--protocol", "mcp", "--transport", "stdio", "--env", "mua/Retail-v0",
                 "--result", "/no/such/folder/result.json"]) == 2
    assert "its folder does not exist" in capsys.readouterr().err


def test_the_readme_config_serves_its_task_to_a_client(tmp_path):
    """The README's MCP config block, launched as written (the mua-gym console script), serves its task; the
    oracle's play through it pays 1.0 in the result file it names."""
    import re
    import shutil

    block = re.search(r"```json\n(\{\"mcpServers\".*?)\n```", (ROOT / "README.md").read_text(), re.S)
    assert block, "the README has no MCP config block"
    [server] = json.loads(block.group(1))["mcpServers"].values()
    script = shutil.which(server["command"], path=str(Path(sys.executable).parent)) or shutil.which(server["command"])
    assert script, f"{server['command']} is not installed beside {sys.executable}"
    args = server["args"]
    task_id = args[args.index("--task-id") + 1]
    task = next(t for t in mua_gym.get_domain("retail").tasks("test") if t.id == task_id)

    async def play() -> None:
        params = StdioServerParameters(command=script, args=args, cwd=str(tmp_path))
        async with _connect("handshake", params) as session:
            await oracle(session, task)

    anyio.run(play)
    out = json.loads((tmp_path / args[args.index("--result") + 1]).read_text())
    assert out["reward"] == 1.0 and out["task_id"] == task_id
