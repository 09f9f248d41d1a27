"""Many episodes over MCP's Streamable HTTP, each behind an unguessable handle in its URL.

    mua-gym serve --protocol mcp --env mua/Retail-v0 --split test --port 8000

The operator's control plane (never a tool the model could call):

- ``POST /episodes`` with ``{"task_id": "..."}``, ``{"seed": N}`` or ``{}`` starts an episode. The answer (201) is
  ``{"episode_id", "mcp_url", "task_id", "opening"}``: the handle, the URL to point the MCP client at, the task,
  and the customer's first message, which the operator hands the agent.
- ``GET /episodes/{id}`` reads its state: ``done``, ``world_hash`` (the world's digest now), ``idle_s``, and once
  ended ``reward``, ``termination_reason``, ``reward_info`` and the whole ``trajectory``.
- ``DELETE /episodes/{id}`` ends a running episode where it stands (scored as a trainer's cut is), answers the same
  and forgets it. An episode nobody touches for ``idle_timeout_s`` is ended and forgotten too.
- ``GET /episodes`` counts them: ``{"held", "max_episodes"}``.

The model's plane is ``/episodes/{id}/mcp``: the domain's agent tools and ``send_message_to_user``, the same list on
every URL of a server (the env's ``static_tools()``). It serves both protocol eras: handshake clients (a
``ClientSession``, MCP SDK 1.x) and 2026-07-28 clients, which have no session. The server keeps no MCP session of its
own: the handle in the URL is the episode, so memory grows with the episodes held and nothing else.

Who gets in: the server binds loopback unless told otherwise, and then checks the Host and Origin headers (DNS
rebinding, a web page posting to this machine). On any
other address it needs a bearer token, checked on every request, control plane and MCP alike. Handles carry 192 random
bits. Request bodies are bounded, and an episode past ``max_episodes`` is refused (429), not served until memory runs
out.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

from mua_gym.integrations import require

require("mcp", "mcp")

import anyio  # noqa: E402  (mcp's dependencies, from here down)
import pydantic  # noqa: E402
from mcp.server.streamable_http_manager import RequestBodyLimitMiddleware, StreamableHTTPSessionManager  # noqa: E402
from mcp.server.transport_security import TransportSecuritySettings  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import Response  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402

from mua_gym.integrations.mcp import McpEpisode, agent_instructions, mcp_server, mcp_tools  # noqa: E402

__all__ = ["EpisodeLimitError", "EpisodeStore", "Limits", "http_app", "is_loopback"]


@dataclass(frozen=True)
class Limits:
    """What one server holds at most: episodes at once, seconds an untouched episode lives, bytes in a request."""

    max_episodes: int = 256
    idle_timeout_s: float = 900.0
    max_body_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if self.max_episodes < 1 or self.idle_timeout_s <= 0 or self.max_body_bytes < 1024:
            raise ValueError("limits: max_episodes >= 1, idle_timeout_s > 0 and max_body_bytes >= 1024")


class EpisodeLimitError(RuntimeError):
    """The server holds as many episodes as its limit allows."""


class EpisodeRequest(pydantic.BaseModel):
    """The body of ``POST /episodes``: a task by id, or a seed that draws one, or neither (a random draw)."""

    model_config = pydantic.ConfigDict(extra="forbid")
    task_id: str | None = pydantic.Field(default=None, max_length=200)
    seed: int | None = pydantic.Field(default=None, ge=0, lt=2**63)


@dataclass
class _Held:
    episode: McpEpisode
    touched: float


class EpisodeStore:
    """The episodes one server holds, by handle. ``make_env()`` builds a fresh env for each (an
    :class:`mua_gym.AsyncMuaEnv`), ``tools`` are the agent tool schemas every episode lists."""

    def __init__(self, make_env: Callable[[], Any], tools: list[dict[str, Any]], limits: Limits = Limits(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.make_env, self.tools, self.limits, self.clock = make_env, tools, limits, clock
        self._held: dict[str, _Held] = {}
        self._starting = 0

    def __len__(self) -> int:
        return len(self._held)

    async def create(self, task_id: str | None = None, seed: int | None = None) -> tuple[str, McpEpisode]:
        """Starts an episode; returns its handle and the episode. Raises :class:`EpisodeLimitError` at the limit
        and ValueError or KeyError for a task the env does not have (nothing is held then)."""
        if len(self._held) + self._starting >= self.limits.max_episodes:
            raise EpisodeLimitError(
                f"the server holds {self.limits.max_episodes} episodes, its limit: delete finished ones "
                f"(DELETE /episodes/ID) or wait for idle ones to expire ({self.limits.idle_timeout_s:g} s)")
        self._starting += 1
        try:
            env = self.make_env()
            try:
                episode = McpEpisode(env, tools=self.tools)
                await episode.start(task_id=task_id, seed=seed)
            except BaseException:
                await env.aclose()
                raise
        finally:
            self._starting -= 1
        handle = secrets.token_urlsafe(24)
        self._held[handle] = _Held(episode, self.clock())
        return handle, episode

    def get(self, handle: str) -> McpEpisode | None:
        """The episode behind ``handle``, its idle clock restarted; None for a handle unknown or expired."""
        held = self._held.get(handle)
        if held is None:
            return None
        held.touched = self.clock()
        return held.episode

    def state(self, handle: str) -> dict[str, Any] | None:
        """What ``GET /episodes/{id}`` answers, or None for a handle unknown or expired."""
        held = self._held.get(handle)
        if held is None:
            return None
        world = held.episode.env.world
        return {"episode_id": handle, **held.episode.result(),
                "world_hash": world.state_hash() if world is not None else None,
                "idle_s": round(self.clock() - held.touched, 3)}

    async def delete(self, handle: str) -> dict[str, Any] | None:
        """Ends the episode where it stands, forgets it and returns its last state; None for an unknown handle."""
        if handle not in self._held:
            return None
        await self._held[handle].episode.close()
        state = self.state(handle)
        await self._forget(handle)
        return state

    async def expire(self) -> int:
        """Ends and forgets every episode idle for longer than the limit; returns how many."""
        now = self.clock()
        stale = [h for h, held in self._held.items() if now - held.touched > self.limits.idle_timeout_s]
        for handle in stale:
            await self._held[handle].episode.close()
            await self._forget(handle)
        return len(stale)

    async def close(self) -> None:
        """Ends and forgets every episode (the server is stopping)."""
        for handle in list(self._held):
            await self._held[handle].episode.close()
            await self._forget(handle)

    async def _forget(self, handle: str) -> None:
        held = self._held.pop(handle, None)
        if held is not None:
            await held.episode.env.aclose()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name to bind) only takes connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, default=str), status_code=status, media_type="application/json")


def _error(message: str, status: int) -> Response:
    return _json({"error": message}, status)


class _Guard:
    """Refuses, before anything else reads it, a request with a foreign Host or Origin header (loopback servers: DNS
    rebinding, and a web page posting to this machine) or without the bearer token (when there is one); bounds
    request bodies."""

    def __init__(self, app: ASGIApp, token: str | None, loopback: bool, max_body_bytes: int) -> None:
        self.app = RequestBodyLimitMiddleware(app, max_body_bytes)
        self.expected = f"Bearer {token}".encode() if token else None
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.loopback and not _host_allowed(headers.get(b"host", b"").decode("latin-1")):
            await _error("this server answers only requests addressed to this machine (Host header)", 421)(
                scope, receive, send)
            return
        origin = headers.get(b"origin")
        if self.loopback and origin is not None and not _host_allowed(origin.decode("latin-1").split("://")[-1]):
            await _error("this server answers no web page but its own (Origin header)", 403)(scope, receive, send)
            return
        if self.expected is not None and not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
            response = _error("missing or wrong bearer token (Authorization: Bearer ...)", 401)
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _host_allowed(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in ("127.0.0.1", "localhost", "[::1]")


def http_app(make_env: Callable[[], Any], *, limits: Limits = Limits(), token: str | None = None,
             loopback: bool = True, redact: Callable[[str], str] = str) -> Any:
    """The ASGI app of an episode server (serve it with uvicorn). ``make_env()`` builds one env per episode;
    ``token``, when given, is required of every request; ``loopback`` turns on the Host check; ``redact`` cleans
    error messages of secrets. Raises ValueError where the env's tool list varies per episode."""
    probe = make_env()
    tools = probe.static_tools()
    store = EpisodeStore(make_env, tools, limits)
    listed = mcp_tools(tools)
    server = mcp_server(agent_instructions(probe.policy), lambda: listed,
                        lambda ctx: store.get(ctx.request.path_params["episode_id"]) if ctx.request else None)
    # (the guard checks Host and Origin on every route, this one included: the SDK's own check would repeat it)
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True,
                                           security_settings=unchecked, max_request_body_size=limits.max_body_bytes)

    async def create(request: Request) -> Response:
        try:
            body = EpisodeRequest.model_validate_json(await request.body() or b"{}")
        except pydantic.ValidationError as exc:
            return _error(f"bad episode request: {_first_error(exc)}", 400)
        try:
            handle, episode = await store.create(task_id=body.task_id, seed=body.seed)
        except EpisodeLimitError as exc:
            return _error(str(exc), 429)
        except (ValueError, KeyError) as exc:
            return _error(redact(str(exc).strip("'\"")), 400)
        except Exception as exc:  # a user simulator that fails on its opening: the operator's to see, not a crash
            return _error(redact(f"the episode could not start: {type(exc).__name__}: {exc}"), 500)
        return _json({"episode_id": handle, "mcp_url": str(request.url_for("mcp", episode_id=handle)),
                      "task_id": episode.info.get("task_id"), "opening": episode.opening}, 201)

    async def count(request: Request) -> Response:
        return _json({"held": len(store), "max_episodes": limits.max_episodes})

    async def read(request: Request) -> Response:
        state = store.state(request.path_params["episode_id"])
        return _json(state) if state is not None else _error("no such episode (unknown, deleted or expired)", 404)

    async def delete(request: Request) -> Response:
        state = await store.delete(request.path_params["episode_id"])
        return _json(state) if state is not None else _error("no such episode (unknown, deleted or expired)", 404)

    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        if store.get(scope["path_params"]["episode_id"]) is None:
            await _error("no such episode (unknown, deleted or expired)", 404)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with manager.run(), anyio.create_task_group() as group:
            group.start_soon(_expire_forever, store, limits)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                await store.close()
                await probe.aclose()

    routes = [Route("/episodes", create, methods=["POST"]), Route("/episodes", count, methods=["GET"]),
              Route("/episodes/{episode_id}", read, methods=["GET"]),
              Route("/episodes/{episode_id}", delete, methods=["DELETE"]),
              Route("/episodes/{episode_id}/mcp", _Asgi(mcp_endpoint), name="mcp", methods=["GET", "POST", "DELETE"])]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.store = store
    return _Guard(app, token, loopback, limits.max_body_bytes)


class _Asgi:
    """An ASGI callable Starlette's Route takes as it is (a plain function would be called as a request handler)."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Any]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


async def _expire_forever(store: EpisodeStore, limits: Limits) -> None:
    every = max(0.05, min(limits.idle_timeout_s / 4, 30.0))
    while True:
        await anyio.sleep(every)
        await store.expire()


def _first_error(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ())) or "body"
    return f"{where}: {error.get('msg')}"
