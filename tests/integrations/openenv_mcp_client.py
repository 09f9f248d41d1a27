"""Plays episodes MCP-style against a ``mua-gym serve`` (OpenEnv) server with OpenEnv's own MCP client; prints JSON.

    python openenv_mcp_client.py --url http://127.0.0.1:PORT --task ID [--task ID ...]

Run with the OpenEnv venv's python. For every task, with :class:`MuaMcpClient` (OpenEnv's ``MCPToolClient``: reset
over ``/ws``, ``tools/list`` and ``tools/call`` over the ``/mcp`` route in the same session): the oracle's play,
then a play without the task's writes after three bad calls. The reward is read from ``state()``. Then the ``/mcp``
route by raw JSON-RPC without a session: the tool list, and a call, which has no episode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import urllib.request
from typing import Any

from mcp_play import ENDED, oracle_actions

import mua_gym
from mua_gym.integrations.openenv import MuaMcpClient


async def play(url: str, task: Any, wrong: bool) -> dict[str, Any]:
    writes = mua_gym.get_domain(task.domain).tools.names_of("write")
    out: dict[str, Any] = {"task_id": task.id, "wrong": wrong, "bad": []}
    async with MuaMcpClient(base_url=url) as client:
        opened = await client.reset(task_id=task.id)
        out["reset_task_id"] = opened.observation.task_id
        out["tools"] = sorted(t.name for t in await client.list_tools())
        if wrong:
            for name, arguments in (("no_such_tool", {}), ("send_message_to_user", {"message": 5}),
                                    ("get_order_details", {"order_id": 7})):
                out["bad"].append(await client.call_tool(name, **arguments))
        texts = []
        for name, arguments in oracle_actions(task, writes if wrong else frozenset()):
            texts.append(await client.call_tool(name, **arguments))
            if ENDED in texts[-1]:
                break
        out["ended"] = ENDED in texts[-1]
        state = await client.state()
        out["state"] = {"reward": state.reward, "done": state.done, "task_id": state.task_id,
                        "step_count": state.step_count}
        out["calls"] = len(texts) + len(out["bad"])
    return out


def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(f"{url}/mcp", data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.load(reply)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--task", action="append", required=True)
    args = parser.parse_args()
    retail = mua_gym.get_domain("retail")
    tasks = {t.id: t for split in ("train", "test") for t in retail.tasks(split, count=20)}
    episodes = await asyncio.gather(*[play(args.url, tasks[t], wrong) for t in args.task for wrong in (False, True)])
    listed = rpc(args.url, "tools/list", {})
    called = rpc(args.url, "tools/call", {"name": "get_order_details", "arguments": {"order_id": "#W1"}})
    print(json.dumps({"episodes": episodes, "sessionless_tools": sorted(t["name"] for t in listed["result"]["tools"]),
                      "sessionless_call": called}))


if __name__ == "__main__":
    asyncio.run(main())
