"""Plays retail episodes through :func:`mua_gym.integrations.art.rollout` with OpenPipe ART; prints one JSON line.

Run by ``tests/integrations/test_art.py`` in a Python >= 3.12 venv holding ``openpipe-art``. Both models are
served by one scripted OpenAI-compatible server on 127.0.0.1, routed by the request's ``model``:

- ``agent-policy`` (the agent, reached through ``art.Model.openai_client()``) replays a list of replies: the
  task's gold actions as OpenAI ``tool_calls`` (OracleAgent's play), or that play without its last write;
- ``user-sim`` (the LLM user, reached by mua_gym through litellm) answers like a customer: a request at the
  start, yes to a plan, ``###STOP###`` once the agent says it is done.

The JSON holds, per play, the trajectory's reward, metrics and metadata, what ART captured (the models and the
tools of each captured request) and what the server saw; a rollout whose user never opens (``void``: alone, and
in ``art.trajectory_group`` beside a gold play); a play whose calls the adapter must mend (``mending``: clashing
and missing ids, a call in text, too many calls); plus a control: a user-model call made inside a trajectory
without ``no_capture`` IS captured, so "only the agent's calls" means something.
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
from mua_gym.eval.agents import OracleAgent  # noqa: E402
from mua_gym.integrations.art import VoidEpisode, rollout  # noqa: E402
from void_users import Breaks  # noqa: E402  (beside this script)
from mua_gym.env.parsing import MAX_TOOL_CALLS  # noqa: E402
from mua_gym.user_sims import UserReply, UserSimulator, UserSimulatorError  # noqa: E402

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


class NeverOpens(UserSimulator):
    """A user whose model is down: it cannot open the conversation."""

    name = "never-opens"

    async def start(self, task: Any, *, seed: int | None = None, tools: Any = None) -> UserReply:
        raise UserSimulatorError("the user model is down")

    async def respond(self, view: Any) -> UserReply:
        raise UserSimulatorError("the user model is down")


async def void(stub: Stub, model: Any, base_url: str) -> dict[str, Any]:
    """A rollout whose user never opens, alone and in an ART group beside a gold play."""
    task = next(t for t in mua_gym.get_domain("retail").tasks("train", "generated", **WORLD) if t.id == TASK_ID)
    stub.agent_replies, stub.seen = oracle_replies(task), {}
    never = mua_gym.AsyncMuaEnv("retail", user=NeverOpens(), world_params=WORLD)
    try:
        await rollout(model, never, TASK_ID)
        alone = "no error"
    except VoidEpisode as exc:
        alone = str(exc)
    agent_calls_alone = stub.seen.get(AGENT, 0)
    group = await art.trajectory_group(
        [rollout(model, never, TASK_ID),
         rollout(model, "mua/Retail-v0", TASK_ID, world_params=WORLD, user=f"litellm:openai/{USER}",
                 user_kwargs={"api_base": base_url, "api_key": "x"})],
        return_exceptions=True)
    await never.aclose()
    midway = {}
    for how in ("fault", "error"):  # the user breaks at its first reply, after the agent's first turns
        stub.agent_replies, stub.seen = oracle_replies(task), {}
        breaking = mua_gym.AsyncMuaEnv("retail", user=Breaks(how, 1), world_params=WORLD, on_user_fault="void")
        try:
            await rollout(model, breaking, TASK_ID)
            said = "no error"
        except VoidEpisode as exc:
            said = f"{type(exc).__name__}: {exc.reason}"
        finally:
            await breaking.aclose()
        midway[how] = {"said": said, "agent_calls": stub.seen.get(AGENT, 0)}
    return {"alone": alone, "agent_calls_alone": agent_calls_alone,
            "group_rewards": [t.reward for t in group.trajectories],
            "group_exceptions": [e.type for e in group.exceptions], "midway": midway}


def mending_replies(task: mua_gym.Task) -> list[dict[str, Any]]:
    """Three turns the adapter must mend, then the gold play: calls with one id between two of them and none
    on a third, a Hermes call in plain text (the server did not parse it), and more calls than the env reads."""
    look = {"type": "function", "function": {"name": "list_all_product_types", "arguments": "{}"}}
    many = [{**look, "id": f"many_{i}"} for i in range(MAX_TOOL_CALLS + 1)]
    text = '<tool_call>{"name": "list_all_product_types", "arguments": {}}</tool_call>'
    return [{"role": "assistant", "content": None, "tool_calls": [{**look, "id": "same"}, {**look, "id": "same"},
                                                                   {**look, "id": ""}]},
            {"role": "assistant", "content": text},
            {"role": "assistant", "content": None, "tool_calls": many}] + oracle_replies(task)


async def mending(stub: Stub, model: Any, base_url: str) -> dict[str, Any]:
    """A play through the turns of :func:`mending_replies`: what each captured request said about its calls."""
    task = next(t for t in mua_gym.get_domain("retail").tasks("train", "generated", **WORLD) if t.id == TASK_ID)
    stub.agent_replies, stub.seen = mending_replies(task), {}
    trajectory = await rollout(model, "mua/Retail-v0", TASK_ID, world_params=WORLD,
                               user=f"litellm:openai/{USER}", user_kwargs={"api_base": base_url, "api_key": "x"})
    unanswered, refused = [], 0
    for exchange in trajectory.exchanges.chat_completions:
        messages = list(exchange.request.get("messages") or [])
        for i, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            ids = [c["id"] for c in message.get("tool_calls") or []]
            answers = []
            for later in messages[i + 1:]:
                if later.get("role") != "tool":
                    break
                answers.append(later.get("tool_call_id"))
            if answers != ids or len(set(ids)) != len(ids) or not all(ids):
                unanswered.append({"ids": ids[:4], "answers": answers[:4]})
        refused = max(refused, sum(1 for m in messages if m.get("role") == "tool"
                                   and str(m.get("tool_call_id", "")).startswith("many_")
                                   and str(m.get("content", "")).startswith("Error:")))
    return {"reward": trajectory.reward, "unanswered": unanswered, "refused": refused,
            "requests": len(trajectory.exchanges.chat_completions)}


async def plays(stub: Stub, base_url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        model = art.Model(name=AGENT, project="mua-gym-test", inference_api_key="x",
                          inference_base_url=base_url, base_path=home)
        right = await play(stub, model, base_url, drop_last_write=False)
        wrong = await play(stub, model, base_url, drop_last_write=True)
        voided = await void(stub, model, base_url)
        mended = await mending(stub, model, base_url)
    return {"right": right, "wrong": wrong, "void": voided, "mending": mended,
            "control_captured": await control(base_url)}


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
