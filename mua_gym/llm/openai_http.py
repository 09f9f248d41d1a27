"""The fast path to a user or judge model: chat completions from an OpenAI-compatible server (vLLM, SGLang,
llama.cpp) over kept-alive aiohttp connections, without litellm.

litellm reaches any provider, at a few milliseconds of CPU per call: with hundreds of episodes waiting on a
local server, that CPU is the limit. This client does one thing, ``POST {base_url}/chat/completions``, and hands
back the JSON. Name it with ``openai:<model>@<base_url>`` wherever a user or judge is named, e.g.
``user="openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1"``. Timeouts, retries, redaction, the memo and
usage accounting are those of the litellm path (:mod:`mua_gym.llm.client`): a failure raises
:class:`ServerError` (with the HTTP status), ``ConnectionError`` or ``TimeoutError``, which
:func:`~mua_gym.llm.client.failure_kind` classifies like litellm's.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any, Mapping
from urllib.parse import urlsplit

__all__ = ["OpenAIServer", "ServerError", "parse_spec"]


class ServerError(RuntimeError):
    """The server answered with an HTTP error; ``status_code`` is its status, the text its body (cut short)."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(f"HTTP {status_code}: {text[:500]}")
        self.status_code = status_code


def parse_spec(spec: str) -> tuple[str, str]:
    """``"<model>@<base_url>"`` (what follows ``openai:``) as (model, base_url); raises ValueError for anything
    else. The model may itself hold ``@``: the base URL is what follows the last ``@http``."""
    model, at, base_url = spec.rpartition("@http")
    base_url = "http" + base_url if at else ""
    parts = urlsplit(base_url) if base_url else None
    if not model or parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected openai:<model>@<base_url>, e.g. openai:my-model@http://127.0.0.1:8000/v1, "
                         f"not openai:{spec}")
    return model, base_url.rstrip("/")


def model_spec(spec: object) -> tuple[str, str | None] | None:
    """``(model, base_url)`` of a model named as ``litellm:<model>`` (base_url None: litellm reaches it) or
    ``openai:<model>@<base_url>`` (an OpenAI-compatible server); None for anything else. ValueError for an
    ``openai:`` spec without a base URL."""
    if not isinstance(spec, str):
        return None
    if spec.startswith("litellm:") and len(spec) > len("litellm:"):
        return spec.split(":", 1)[1], None
    if spec.startswith("openai:"):
        return parse_spec(spec.split(":", 1)[1])
    return None


class OpenAIServer:
    """Chat completions from one server for one owner (a user simulator or judge).

    Its aiohttp session lives on the event loop that first uses it, and keeps connections alive between calls;
    :meth:`aclose` closes it. ``api_key`` goes only into the ``Authorization`` header.
    """

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def complete(self, body: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """The server's JSON answer to ``body`` (model, messages and sampling keywords), within ``timeout`` seconds.

        Raises :class:`ServerError` for an HTTP error status or an answer that is not a JSON object,
        ``ConnectionError`` where the server cannot be reached, ``TimeoutError`` past ``timeout``.
        """
        import aiohttp

        session = self._session_here()
        try:
            async with session.post(self.url, data=json.dumps(body), headers=self._headers,
                                    timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                text = await response.text()
                status = response.status
        except aiohttp.ClientConnectionError as exc:
            if isinstance(exc, aiohttp.ServerTimeoutError):
                raise TimeoutError(f"no answer from {self.base_url} in {timeout} s") from None
            raise ConnectionError(f"cannot reach {self.base_url}: {exc}") from None
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer from {self.base_url} in {timeout} s") from None
        return _answer(status, text)

    def complete_blocking(self, body: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """:meth:`complete` without an event loop (one connection, closed after): for the probe call."""
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http(s) only)
                return _answer(response.status, response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            return _answer(exc.code, exc.read().decode("utf-8", "replace"))
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise TimeoutError(f"no answer from {self.base_url} in {timeout} s") from None
            raise ConnectionError(f"cannot reach {self.base_url}: {exc.reason}") from None

    def _session_here(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # No per-host cap: every episode waiting on this server gets a connection of its own.
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        """Closes the connections (on the loop that opened them); the next call opens new ones."""
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


def _answer(status: int, text: str) -> dict[str, Any]:
    if status >= 400:
        raise ServerError(status, text)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise ServerError(502, f"not a chat completion: {text[:200]}")
    return data
