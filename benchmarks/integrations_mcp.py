"""MCP serving, measured: what a tool call costs over stdio and Streamable HTTP against a bare env step, what an
episode held by the HTTP server costs in memory, how 16 concurrent episodes fare, and the oracle's and a wrong
play's rewards over every transport and client kind.

    python benchmarks/integrations_mcp.py overhead --domain retail --repeat 300
    python benchmarks/integrations_mcp.py held --domain retail --episodes 200
    python benchmarks/integrations_mcp.py concurrent --domain retail --episodes 16
    python benchmarks/integrations_mcp.py rewards --tasks 3

``overhead``: a bare :class:`mua_gym.AsyncMuaEnv`, an ``mua-gym serve --protocol mcp --transport stdio`` process and
an HTTP server process play the same task; the same read call (the task's first gold look-up, which changes
nothing) is made on each in turn (bare, stdio with a handshake ``ClientSession``, HTTP with a ``ClientSession``,
HTTP with a 2026-07-28 ``Client``), so all see the same machine load. Medians in microseconds, and each ratio to
the bare step. ``held``: the server's resident memory before and with N episodes started and left, and the median
time of ``POST /episodes``. ``concurrent``: N episodes played by the oracle at once against one at a time on the
same server (wall time). ``rewards``: per domain, the first T plain test tasks, the oracle's play (1.0 expected) and
the play without its writes (0.0 expected), over stdio and HTTP with both client kinds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio

ROOT = Path(__file__).resolve().parents[1]
ENDED = "(The conversation has ended.)"
DOMAINS = ("retail", "airline", "telecom", "mock")


@contextlib.contextmanager
def http_server(env_id: str, *extra: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """An ``mua-gym serve --protocol mcp`` process on a free loopback port, ready; its base URL."""
    import httpx2

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "mua_gym.cli", "serve", "--protocol", "mcp", "--env", env_id,
                                "--split", "test", "--user", "scenario", "--port", str(port), *extra], cwd=str(ROOT),
                               env={k: v for k, v in os.environ.items() if k != "MUA_GYM_SERVE_TOKEN"})
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError("the server exited")
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{base}/episodes", timeout=5).status_code == 200:
                    break
            time.sleep(0.2)
        yield process, base
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def stdio_params(env_id: str, task_id: str, *extra: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "mua_gym.cli", "serve", "--protocol", "mcp", "--transport", "stdio", "--env", env_id,
        "--split", "test", "--user", "scenario", "--task-id", task_id, *extra])


@contextlib.asynccontextmanager
async def connect(transport: str, kind: str, target: Any) -> AsyncIterator[Any]:
    """A client session: ``transport`` stdio (``target``: server parameters) or http (``target``: the MCP URL);
    ``kind`` handshake (a ``ClientSession``) or 2026-07-28 (a ``Client``)."""
    from mcp import Client, ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    opened = stdio_client(target) if transport == "stdio" else streamable_http_client(target)
    if kind == "handshake":
        async with opened as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    else:
        async with Client(opened) as client:
            yield client


def start(base: str, **body: Any) -> dict[str, Any]:
    import httpx2

    answer = httpx2.post(f"{base}/episodes", json=body, timeout=60)
    answer.raise_for_status()
    return answer.json()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def overhead(domain: str, repeat: int) -> dict[str, Any]:
    import mua_gym

    task = next(t for t in mua_gym.get_domain(domain).tasks("test")
                if any(a.name.startswith(("get_", "find_")) for a in t.gold_actions))
    look = next(a for a in task.gold_actions if a.name.startswith(("get_", "find_")))
    turns = 10 * repeat + 10  # (every call is a turn: no episode may end before the last)
    env_id = mua_gym.env_id(domain)
    env = mua_gym.make_async(env_id, split="test", user="scenario", max_turns=turns)
    await env.reset(options={"task_id": task.id})
    times: dict[str, list[float]] = {"bare": [], "stdio": [], "http handshake": [], "http 2026-07-28": []}
    with http_server(env_id, "--env-arg", f"max_turns={turns}") as (_, base):
        urls = [start(base, task_id=task.id)["mcp_url"] for _ in range(2)]
        async with connect("stdio", "handshake", stdio_params(env_id, task.id, "--env-arg", f"max_turns={turns}")) \
                as stdio, connect("http", "handshake", urls[0]) as old, connect("http", "2026-07-28", urls[1]) as new:
            for _ in range(repeat):
                t0 = time.perf_counter()
                await env.step({"name": look.name, "arguments": look.arguments})
                times["bare"].append(time.perf_counter() - t0)
                for label, session in (("stdio", stdio), ("http handshake", old), ("http 2026-07-28", new)):
                    t0 = time.perf_counter()
                    answer = await session.call_tool(look.name, look.arguments)
                    times[label].append(time.perf_counter() - t0)
                    assert not answer.is_error, answer.content[0].text
    medians = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    return {"domain": domain, "call": look.name, "repeat": repeat, "median_us": medians,
            "ratio": {k: v / medians["bare"] for k, v in medians.items() if k != "bare"}}


def held(domain: str, episodes: int) -> dict[str, Any]:
    import httpx2

    import mua_gym

    with http_server(mua_gym.env_id(domain), "--max-episodes", str(episodes + 1)) as (process, base):
        with httpx2.Client(base_url=base, timeout=60) as http:
            http.delete(f"/episodes/{http.post('/episodes', json={'seed': 0}).json()['episode_id']}")
            before = rss_mib(process.pid)
            times = []
            for seed in range(episodes):
                t0 = time.perf_counter()
                assert http.post("/episodes", json={"seed": seed}).status_code == 201
                times.append(time.perf_counter() - t0)
            after = rss_mib(process.pid)
            count = http.get("/episodes").json()["held"]
    return {"domain": domain, "episodes": count, "rss_before_mib": round(before, 1), "rss_held_mib": round(after, 1),
            "per_episode_kib": round((after - before) * 1024 / episodes), "create_median_ms":
            round(statistics.median(times) * 1e3, 2)}


def plain_tasks(domain: str, count: int) -> list[Any]:
    import mua_gym
    from mua_gym.eval.coverage import behaviours

    found = mua_gym.get_domain(domain)
    writes = found.tools.names_of("write")
    return [t for t in found.tasks("test") if {a.name for a in t.gold_actions} & writes and not behaviours(t)
            and "transfer_to_human_agents" not in {a.name for a in t.gold_actions}][:count]


def oracle_calls(task: Any, skip: frozenset[str]) -> list[tuple[str, dict[str, Any]]]:
    from mua_gym.eval.agents import OracleAgent

    calls, agent = [], OracleAgent(task)
    for _ in range(2 * len(task.gold_actions) + 6):
        action = agent.act([])
        call = (action.get("tool_calls") or [None])[0]
        if call is None:
            calls.append(("send_message_to_user", {"message": action["content"]}))
        elif call["function"]["name"] not in skip:
            calls.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return calls


async def play(session: Any, task: Any, skip: frozenset[str]) -> None:
    for name, arguments in oracle_calls(task, skip):
        if ENDED in (await session.call_tool(name, arguments)).content[0].text:
            return


async def concurrent(domain: str, episodes: int) -> dict[str, Any]:
    import mua_gym

    tasks = plain_tasks(domain, episodes)
    tasks = (tasks * episodes)[:episodes]
    with http_server(mua_gym.env_id(domain)) as (_, base):
        async def one(task: Any) -> None:
            async with connect("http", "2026-07-28", start(base, task_id=task.id)["mcp_url"]) as session:
                await play(session, task, frozenset())

        t0 = time.perf_counter()
        for task in tasks:
            await one(task)
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        async with anyio.create_task_group() as group:
            for task in tasks:
                group.start_soon(one, task)
        together = time.perf_counter() - t0
    return {"domain": domain, "episodes": episodes, "one_at_a_time_s": round(serial, 2),
            "all_at_once_s": round(together, 2), "speedup": round(serial / together, 2)}


async def rewards(count: int) -> list[dict[str, Any]]:
    import httpx2

    import mua_gym

    rows = []
    for domain in DOMAINS:
        env_id = mua_gym.env_id(domain)
        writes = mua_gym.get_domain(domain).tools.names_of("write")
        tasks = plain_tasks(domain, count)
        with http_server(env_id) as (_, base):
            for transport, kind in (("stdio", "handshake"), ("stdio", "2026-07-28"), ("http", "handshake"),
                                    ("http", "2026-07-28")):
                paid = {"oracle": [], "wrong": []}
                for task in tasks:
                    for play_kind, skip in (("oracle", frozenset()), ("wrong", writes)):
                        if transport == "stdio":
                            result = Path(f"/tmp/mcp-bench-{os.getpid()}.json")
                            async with connect("stdio", kind, stdio_params(env_id, task.id, "--result", str(result))) \
                                    as session:
                                await play(session, task, skip)
                            paid[play_kind].append(json.loads(result.read_text())["reward"])
                        else:
                            episode = start(base, task_id=task.id)
                            async with connect("http", kind, episode["mcp_url"]) as session:
                                await play(session, task, skip)
                            state = httpx2.get(f"{base}/episodes/{episode['episode_id']}", timeout=60).json()
                            paid[play_kind].append(state["reward"])
                rows.append({"domain": domain, "transport": transport, "client": kind, "tasks": len(tasks),
                             "oracle_mean": statistics.mean(paid["oracle"]),
                             "wrong_mean": statistics.mean(paid["wrong"])})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["overhead", "held", "concurrent", "rewards"])
    parser.add_argument("--domain", default="retail", choices=DOMAINS)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args()
    if args.what == "overhead":
        print(json.dumps(anyio.run(overhead, args.domain, args.repeat)))
    elif args.what == "held":
        print(json.dumps(held(args.domain, args.episodes or 200)))
    elif args.what == "concurrent":
        print(json.dumps(anyio.run(concurrent, args.domain, args.episodes or 16)))
    else:
        for row in anyio.run(rewards, args.tasks):
            print(json.dumps(row))


if __name__ == "__main__":
    main()
