"""Plays concurrent episodes against a ``mua-gym serve`` server with OpenEnv's own clients; prints JSON results.

    python openenv_client.py --url http://127.0.0.1:PORT --task ID [--task ID ...] [--env-arg KEY=JSON ...]
                             [--run FILE]

Run with the OpenEnv venv's python (OpenEnv cannot share the main test environment). For every task it plays,
at once, over WebSocket: a gold play with :class:`MuaEnvClient` (OpenAI message dicts, should score 1.0) and a
wrong play with OpenEnv's ``GenericEnvClient`` (raw Hermes text that skips the task's writes and sends two
unreadable actions first: 0.0 on a task with writes; ``writes`` in the result counts them). After each episode
ends it steps once more (``late``: what that step returned and the state after it). The OracleAgent that
writes the actions reads the task from a local env built with the same ``--env-arg`` keywords as the server.
``--run FILE`` then runs a Python file (the README's block) in this process, which has paid OpenEnv's slow import
already, and puts what it printed under ``"run_stdout"``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import time
from typing import Any

from openenv.core import GenericEnvClient

import mua_gym
from mua_gym.eval.agents import OracleAgent
from mua_gym.integrations.openenv import MuaEnvClient

WRITES = {name for name, tool in mua_gym.get_domain("retail").tools.tools.items() if tool.kind == "write"}


def hermes(action: dict[str, Any]) -> str:
    """An OpenAI assistant message as the raw text a Hermes/Qwen model writes."""
    calls = action.get("tool_calls") or []
    objects = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in calls]
    blocks = [f"<tool_call>{json.dumps(o)}</tool_call>" for o in objects]
    return "\n".join(blocks) if blocks else action["content"]


async def play(url: str, task: Any, wrong: bool) -> dict[str, Any]:
    """One episode over its own WebSocket session; what the test checks about it."""
    client = GenericEnvClient(base_url=url) if wrong else MuaEnvClient(base_url=url)
    started = time.monotonic()
    errors: list[str] = []
    async with client:
        result = await client.reset(task_id=task.id)
        opening = result.observation if wrong else result.observation.model_dump()
        agent = OracleAgent(task)
        observation = opening["messages"]
        steps = 0
        if wrong:  # unreadable actions first: the env answers them, the server does not raise
            for bad in ({"tool_calls": "not a list"}, {"role": "user", "content": "hi"}):
                out = await client.step(bad)
                errors.append(out.observation["error"])
                steps += 1
        while not result.done:
            action = agent.act(observation)
            names = [c["function"]["name"] for c in action.get("tool_calls") or []]
            if wrong:
                if WRITES.intersection(names):
                    action = {"role": "assistant", "content": "That is done for you."}
                result = await client.step({"text": hermes(action)})
                observation = result.observation["messages"]
            else:
                result = await client.step(action)
                observation = result.observation.messages
            steps += 1
            await asyncio.sleep(0)  # let the other sessions interleave
        state = await client.state()
        state = state if isinstance(state, dict) else state.model_dump()
        late = await client.step({"role": "assistant", "content": "One more thing?"})  # after done
        late_obs = late.observation if isinstance(late.observation, dict) else late.observation.model_dump()
        after = await client.state()
        after = after if isinstance(after, dict) else after.model_dump()
    meta = result.metadata or (result.observation["metadata"] if wrong else result.observation.metadata)
    writes = sum(a.name in WRITES for a in task.gold_actions)
    return {"task_id": task.id, "wrong": wrong, "writes": writes, "reward": result.reward, "done": result.done,
            "steps": steps, "opening_roles": [m["role"] for m in opening["messages"]], "tools": len(opening["tools"]),
            "reset_task_id": opening["task_id"], "termination_reason": meta.get("termination_reason"),
            "errors": errors, "state": state, "started": started, "ended": time.monotonic(),
            "late": {"reward": late.reward, "done": late.done, "messages": late_obs["messages"],
                     "error": late_obs["error"], "state": after}}


async def main_async(url: str, task_ids: list[str], env_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    env = mua_gym.make("mua/Retail-v0", **env_kwargs).unwrapped
    tasks = []
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        tasks.append(env.core.task)
    env.close()
    return await asyncio.gather(*(play(url, task, wrong) for task in tasks for wrong in (False, True)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--task", action="append", required=True)
    parser.add_argument("--env-arg", action="append", default=[], metavar="KEY=JSON")
    parser.add_argument("--run", help="a Python file to run afterwards, with OPENENV_URL set to --url")
    args = parser.parse_args()
    env_kwargs = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.env_arg)}
    out: dict[str, Any] = {"episodes": asyncio.run(main_async(args.url, args.task, env_kwargs))}
    if args.run:
        os.environ["OPENENV_URL"] = args.url
        printed = io.StringIO()
        with open(args.run, encoding="utf-8") as source, contextlib.redirect_stdout(printed):
            exec(compile(source.read(), args.run, "exec"), {"__name__": "__main__"})
        out["run_stdout"] = printed.getvalue()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
