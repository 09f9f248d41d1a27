"""The cost of a tool call over MCP (stdio) against a bare env step, interleaved in one run.

    python benchmarks/integrations_mcp.py                  # retail, 300 calls each way
    python benchmarks/integrations_mcp.py --domain airline --repeat 500

A bare :class:`mua_gym.AsyncMuaEnv` and an ``mua-gym serve --protocol mcp --transport stdio`` process (the SDK's
``ClientSession`` on this side) play the same task; the same read call (the task's first gold look-up, which changes
nothing) is made on each in turn, so both see the same machine load. Prints the medians in microseconds and the
overhead of MCP (the JSON-RPC round trip through two pipes, the server's schema check and the result's wrapping).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]


async def measure(domain: str, repeat: int) -> dict[str, float]:
    import mua_gym
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    task = next(t for t in mua_gym.get_domain(domain).tasks("test")
                if any(a.name.startswith(("get_", "find_")) for a in t.gold_actions))
    look = next(a for a in task.gold_actions if a.name.startswith(("get_", "find_")))
    turns = 10 * repeat + 10  # (every call is a turn: neither episode may end before the last)
    env = mua_gym.make_async(mua_gym.env_id(domain), split="test", user="scenario", max_turns=turns)
    await env.reset(options={"task_id": task.id})
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "mua_gym.cli", "serve", "--protocol", "mcp", "--transport", "stdio", "--env", mua_gym.env_id(domain),
        "--env-arg", "split=test", "--env-arg", "user=scenario", "--env-arg", f"max_turns={turns}",
        "--task-id", task.id])
    times: dict[str, list[float]] = {"bare": [], "mcp": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(repeat):
                t0 = time.perf_counter()
                await env.step({"name": look.name, "arguments": look.arguments})
                t1 = time.perf_counter()
                answer = await session.call_tool(look.name, look.arguments)
                t2 = time.perf_counter()
                assert not answer.is_error, answer.content[0].text
                times["bare"].append(t1 - t0)
                times["mcp"].append(t2 - t1)
    out = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    return {**out, "overhead": out["mcp"] - out["bare"], "ratio": out["mcp"] / out["bare"], "call": look.name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="retail", choices=["retail", "airline", "telecom", "mock"])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    figures = anyio.run(measure, args.domain, args.repeat)
    print(json.dumps(figures))
    print(f"{args.domain} {figures['call']}, median of {args.repeat}: bare step {figures['bare']:.0f} us, over MCP "
          f"stdio {figures['mcp']:.0f} us, overhead {figures['overhead']:.0f} us ({figures['ratio']:.1f}x)")


if __name__ == "__main__":
    main()
