"""Plays retail episodes through :func:`mua_gym.integrations.art.rollout` with OpenPipe ART; prints one JSON line.

Run by ``tests/integrations/test_art.py`` in a Python >= 3.12 venv holding ``openpipe-art``. Both models are
served by one scripted OpenAI-compatible server on 127.0.0.1, routed by the request's ``model``:

- ``agent-policy`` (the agent, reached through ``art.Model.openai_client()``) replays a list of replies: the
  task's gold actions as OpenAI ``tool_calls`` (OracleAgent's play), or that play without its last write;
- ``user-sim`` (the LLM user, reached by mua_gym through litellm) answers like a customer: a request at the
  start, yes to a plan, ``###STOP###`` once the agent says it is done.

The JSON holds, per play, the trajectory's reward, metrics and metadata, what ART captured (the models and the
tools of each captured request) and what the server saw; plus a control: a user-model call made inside a
trajectory without ``no_capture`` IS captured, so "only the agent's calls" means something.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("WANDB_MODE", "disabled")

import art  # noqa: E402

import mua_gym  # noqa: E402
from mua_gym.agents import OracleAgent  # noqa: E402
from mua_gym.integrations.art import rollout  # noqa: E402

AGENT, USER = "agent-policy", "user-sim"
WORLD = {"count": 3}
TASK_ID = "retail-train-0-00001"
README_TASK = "mock-cancel-card"


class Stub:
    """The scripted server's state: the agent's replies still to give and every request seen, by model."""

    def __init__(self) -> None:
        self.agent_replies: list[dict[str, Any]] = []
        self.seen: dict[str, int] = {}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        model = request.get("model", "")
        self.seen[model] = self.seen.get(model, 0) + 1
        if model == USER:
            message = {"role": "assistant", "content": self._customer(request["messages"])}
        else:
            message = (self.agent_replies.pop(0) if self.agent_replies
                       else {"role": "assistant", "content": "Is there anything else I can help you with today?"})
        return {
            "id": f"cmpl-{sum(self.seen.values())}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    @staticmethod
    def _customer(messages: list[dict[str, Any]]) -> str:
        # mua_gym's LLM user sees the agent as the "user" role; its own turns are "assistant"
        said = [m.get("content") or "" for m in messages if m.get("role") == "user"]
        last = said[-1].lower() if len(said) > 1 else ""
        if not last:
            return "Hi, I would like some help with one of my orders, please."
        if "shall i proceed" in last:
            return "Yes, please go ahead."
        if "all done" in last or "anything else" in last:
            return "No, that is everything, thank you. ###STOP###"
        return "Okay, thank you."


def serve(stub: Stub) -> tuple[ThreadingHTTPServer, str]:
    """Starts the scripted server on a free loopback port; returns it and its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep the JSON line alone on stdout
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            payload = json.dumps(stub.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def oracle_replies(task: mua_gym.Task, drop_last_write: bool = False) -> list[dict[str, Any]]:
    """The OracleAgent's play of ``task`` as OpenAI reply messages; optionally without its last write call."""
    agent = OracleAgent(task)
    replies = [agent.act([]) for _ in range(len(task.gold_actions) + 3)]
    if drop_last_write:
        tools = mua_gym.get_domain(task.domain).tools
        writes = [i for i, r in enumerate(replies) if r.get("tool_calls")
                  and tools[r["tool_calls"][0]["function"]["name"]].kind == "write"]
        del replies[writes[-1]]
    return replies


async def play(stub: Stub, model: Any, base_url: str, drop_last_write: bool) -> dict[str, Any]:
    task = next(t for t in mua_gym.get_domain("retail").tasks("train", "generated", **WORLD) if t.id == TASK_ID)
    stub.agent_replies = oracle_replies(task, drop_last_write)
    stub.seen = {}
    trajectory = await rollout(model, "mua/Retail-v0", TASK_ID, world_params=WORLD,
                               user=f"litellm:openai/{USER}", user_kwargs={"api_base": base_url, "api_key": "x"})
    captured = trajectory.exchanges.chat_completions
    return {
        "reward": trajectory.reward, "metrics": trajectory.metrics, "metadata": trajectory.metadata,
        "captured_models": [e.model for e in captured],
        "captured_tool_sets": sorted({tuple(sorted(t["function"]["name"] for t in e.request.get("tools") or []))
                                      for e in captured}),
        "captured_tool_calls": [[c.function.name for c in e.response.choices[0].message.tool_calls or []]
                                for e in captured],
        "env_tools": sorted(t["function"]["name"] for t in mua_gym.AsyncMuaEnv("retail").tool_schemas),
        "server_seen": dict(stub.seen),
        "gold_calls": [a.name for a in task.gold_actions],
    }


async def control(base_url: str) -> int:
    """How many calls ART captures of one user-model call made inside a trajectory with no ``no_capture``."""
    import litellm

    with art.Trajectory() as trajectory:
        await litellm.acompletion(model=f"openai/{USER}", api_base=base_url, api_key="x",
                                  messages=[{"role": "user", "content": "hello"}])
    return len(trajectory.exchanges.chat_completions)


def readme(stub: Stub, base_url: str, path: str) -> dict[str, Any]:
    """Runs the README's ART block (in ``path``) as written, its model served by the stub playing the oracle."""
    task = next(t for t in mua_gym.get_domain("mock").tasks("train") if t.id == README_TASK)
    stub.agent_replies, stub.seen = oracle_replies(task), {}
    os.environ["OPENAI_BASE_URL"] = base_url
    namespace: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        here = os.getcwd()
        os.chdir(folder)  # where ART keeps its files (.art/)
        try:
            exec(compile(open(path).read(), "README.md", "exec"), namespace)
        finally:
            os.chdir(here)
    trajectory = namespace["trajectory"]
    return {"reward": trajectory.reward, "captured": len(trajectory.exchanges.chat_completions),
            "server_seen": dict(stub.seen)}


async def plays(stub: Stub, base_url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        model = art.Model(name=AGENT, project="mua-gym-test", inference_api_key="x",
                          inference_base_url=base_url, base_path=home)
        right = await play(stub, model, base_url, drop_last_write=False)
        wrong = await play(stub, model, base_url, drop_last_write=True)
    return {"right": right, "wrong": wrong, "control_captured": await control(base_url)}


def main() -> None:
    stub = Stub()
    server, base_url = serve(stub)
    try:
        result = asyncio.run(plays(stub, base_url))
        if len(sys.argv) > 1:
            result["readme"] = readme(stub, base_url, sys.argv[1])
    finally:
        server.shutdown()
    result["python"] = sys.version.split()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
