"""An OpenAI-compatible chat server on loopback that answers by model name, for failure-path tests.

``ok`` answers ``OK``; ``badkey`` fails 401 and echoes the bearer token it was sent (as careless providers do);
``missing`` fails 404; ``busy`` fails 503 and echoes the token too; ``flaky-N`` fails 503 N times, then answers
once with a judge's verdict that its one statement holds, and so on; ``user-N`` plays a customer who asks
for help until the agent has spoken N times after its greeting, then stops. ``REQUESTS[model]`` counts
the calls each model got, so a test can tell a retried call from one that was not.

    with error_llm_server() as api_base:
        litellm.completion(model="openai/badkey", api_base=api_base, api_key="...", messages=[...])
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

__all__ = ["FLAKY_REPLY", "REQUESTS", "error_llm_server"]

REQUESTS: Counter[str] = Counter()


FLAKY_REPLY = json.dumps({"verdicts": [{"statement": 1, "true": True, "reason": "the transcript shows it"}]})


def _completion(model: str, content: str = "OK") -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def _flaky_fails(model: str, request: int) -> bool:
    """Whether request number ``request`` (from 1) to ``flaky-N`` is one of the N failures of its round."""
    failures = model.removeprefix("flaky-")
    return model.startswith("flaky-") and failures.isdigit() and (request - 1) % (int(failures) + 1) < int(failures)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        model = str(body.get("model"))
        REQUESTS[model] += 1
        token = (self.headers.get("Authorization") or "").split(" ")[-1]
        if model == "ok":
            self._send(200, _completion(model))
        elif model == "badkey":
            self._send(401, {"error": {"message": f"Incorrect API key provided: {token}.", "code": 401}})
        elif model == "busy" or _flaky_fails(model, REQUESTS[model]):
            self._send(503, {"error": {"message": f"overloaded; request from key {token}", "code": 503}})
        elif model.startswith("flaky-"):
            self._send(200, _completion(model, FLAKY_REPLY))
        elif model.startswith("user-") and model.removeprefix("user-").isdigit():
            heard = sum(1 for m in body.get("messages") or [] if m.get("role") == "user")  # the agent's turns
            done = heard > int(model.removeprefix("user-"))
            self._send(200, _completion(model, "###STOP###" if done else "Please help me with my order."))
        else:
            self._send(404, {"error": {"message": f"The model `{model}` does not exist", "code": 404}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def error_llm_server() -> Iterator[str]:
    """Serves on a free port of 127.0.0.1 in a thread; yields the ``api_base`` (``http://127.0.0.1:PORT/v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, name="error-llm-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
