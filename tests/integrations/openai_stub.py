"""A scripted OpenAI-compatible chat server on 127.0.0.1, for driving a trainer's real client in tests.

``ScriptedOpenAI(reply)`` serves ``POST /v1/chat/completions`` (a JSON completion, or server-sent events when the
request says ``"stream": true``, ending in ``data: [DONE]``) and ``GET /v1/models``. For every request it calls
``reply(body) -> message``: ``body`` is the request's JSON (``messages``, ``tools``, ...), ``message`` an OpenAI
assistant message dict (``content`` and/or ``tool_calls``). The server keeps no conversation state, so a reply
function reads what it needs from the messages; :func:`gold_play` and :func:`play` turn a mua_gym task's scripted
agent into one. ``requests`` keeps every body seen.

    with ScriptedOpenAI(lambda body: {"content": "hi"}) as server:
        server.url  # "http://127.0.0.1:<port>/v1"
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from mua_gym.eval.agents import OracleAgent
from mua_gym.task import Task

__all__ = ["Reply", "ScriptedOpenAI", "by_opening", "gold_play", "play", "without_writes"]

Reply = Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedOpenAI:
    """A chat-completions server whose every answer is ``reply(request body)``; a context manager."""

    def __init__(self, reply: Reply, model: str = "scripted") -> None:
        self.reply = reply
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion object for one request (the reply as its only choice)."""
        self.requests.append(body)
        message = {"role": "assistant", "content": None, **self.reply(body)}
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _events(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The completion as stream chunks: role and content, one chunk per tool call, the finish, the usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    for index, call in enumerate(message.get("tool_calls") or []):
        events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": call["function"]}]}))
    events.append(chunk({}, choice["finish_reason"]))
    events.append(base | {"choices": [], "usage": completion["usage"]})
    return events


def _handler(stub: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: Nagle would hold the body ~40 ms

        def log_message(self, *args: Any) -> None:  # quiet: tests read the records, not stderr
            pass

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                body = {"object": "list", "data": [{"id": stub.model, "object": "model", "owned_by": "stub"}]}
                self._send(200, json.dumps(body).encode(), "application/json")
            else:
                self._send(404, b'{"error": {"message": "not found"}}', "application/json")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, b'{"error": {"message": "not found"}}', "application/json")
                return
            try:
                completion = stub.answer(body)
            except Exception as exc:  # a broken reply function shows up in the client as a 500, with its cause
                self._send(500, json.dumps({"error": {"message": f"{type(exc).__name__}: {exc}"}}).encode(),
                           "application/json")
                return
            if body.get("stream"):
                stream = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in _events(completion))
                self._send(200, stream + b"data: [DONE]\n\n", "text/event-stream")
            else:
                self._send(200, json.dumps(completion).encode(), "application/json")

    return Handler


def play(task: Task, change: Callable[[dict[str, Any]], dict[str, Any]] = lambda m: m) -> Reply:
    """A reply function that answers as :class:`~mua_gym.eval.agents.OracleAgent` would on ``task``, through ``change``.

    The n-th reply of a conversation (n counted from the assistant messages already in it) is the oracle's n-th
    action, so the server stays stateless.
    """

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        agent = OracleAgent(task)
        action: dict[str, Any] = {}
        for _ in range(1 + sum(m.get("role") == "assistant" for m in body.get("messages", []))):
            action = agent.act([])
        message = change(dict(action))
        message.pop("role", None)
        return message

    return reply


def gold_play(task: Task) -> Reply:
    """The oracle's play of ``task``: its gold calls in order, a confirmation before the writes; scores 1.0."""
    return play(task)


def without_writes(tools: set[str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``change`` for :func:`play`: each write (a call to one of ``tools``) is claimed in words, not made."""

    def change(message: dict[str, Any]) -> dict[str, Any]:
        calls = message.get("tool_calls") or []
        if any(c["function"]["name"] in tools for c in calls):
            return {"role": "assistant", "content": "I have made that change for you."}
        return message

    return change


def by_opening(replies: dict[str, Reply]) -> Reply:
    """Dispatches on the conversation's first user message (the simulated user's opening) to that task's reply."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        opening = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "user"), None)
        if opening not in replies:
            return {"content": "I am sorry, I cannot help with that."}
        return replies[opening](body)

    return reply
