"""One mua_gym episode behind MCP tools (the ``mcp`` SDK 2.x, low-level server), for any MCP client.

    mua-gym serve --protocol mcp --transport stdio --env mua/Retail-v0 --task-id retail-test-0-00000 --result out.json

The model sees the domain's agent tools, with the env's own JSON schemas as their input schemas, and
``send_message_to_user(message)``, which returns the simulated user's reply. The user's side (telecom's phone
tools) is never listed. Arguments are checked against the schemas; every failure (a wrong argument, an unknown tool,
a failing tool, a call after the end) comes back as an ``is_error`` result with the env's message, never as a
protocol error, and changes nothing. The reward never goes through a tool the model could call: the operator reads
it from the result file, written when the episode starts and when it ends: at the last call, or when the process
closes (an episode still running then is scored as it stands, as a trainer's cut is). The server's
``instructions`` carry the policy and the user's opening, and the result file holds the opening from the start.

:class:`McpEpisode` is the transport-free part: the tool list and what a call does. :func:`serve_stdio` serves one
over stdin and stdout (one process, one episode: what a CLI agent's MCP config launches); nothing but protocol
traffic goes to stdout.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Callable

from mua_gym.integrations import require
from mua_gym.integrations.mcp_calls import SEND, call_action, call_answer, call_error, listed_tools

_types = require("mcp.types", "mcp")

import anyio  # noqa: E402  (an mcp dependency)
import jsonschema  # noqa: E402  (an mcp dependency, present once the require above passed)
from mcp.server.lowlevel.server import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402

__all__ = ["SEND", "McpEpisode", "agent_instructions", "mcp_server", "mcp_tools", "serve_stdio"]

def mcp_tools(tools: list[dict[str, Any]]) -> list[Any]:
    """The MCP tools for agent tool schemas: each with its JSON schema as input schema, then :data:`SEND`."""
    return [_types.Tool(**entry) for entry in listed_tools(tools)]


def _text(text: str, error: bool = False) -> Any:
    return _types.CallToolResult(content=[_types.TextContent(type="text", text=text)], is_error=error)


class McpEpisode:
    """One episode of ``env`` (an :class:`mua_gym.AsyncMuaEnv`) as MCP tools; ``result_file`` receives its outcome.

    ``await start(task_id=None, seed=None)`` resets the env and returns the user's opening; :meth:`tools` lists the
    tools; ``await call(name, arguments)`` plays one and returns a ``CallToolResult``; ``await close()`` ends a
    running episode where it stands and writes the result. ``tools`` fixes the agent's tool schemas (a server that
    lists the same tools to every connection passes ``env.static_tools()``); by default they are the episode's own.
    Calls to one episode are played one at a time, in the order they come.
    """

    def __init__(self, env: Any, result_file: str | None = None, tools: list[dict[str, Any]] | None = None) -> None:
        self.env = env
        self.result_file = result_file
        self.opening = ""
        self.policy = ""
        self.done = False
        self.reward: float | None = None
        self.info: dict[str, Any] = {}
        self._fixed_tools = tools
        self._tools: list[Any] = []
        self._schemas: dict[str, dict[str, Any]] = {}
        self._turn = anyio.Lock()

    async def start(self, task_id: str | None = None, seed: int | None = None) -> str:
        options = {"task_id": task_id} if task_id is not None else None
        observation, info = await self.env.reset(seed=seed, options=options)
        self.info = dict(info)
        self.policy = str(info.get("policy") or "")
        self.opening = "\n".join(str(m.get("content") or "") for m in observation if m.get("role") == "user")
        self._tools = mcp_tools(self._fixed_tools if self._fixed_tools is not None else info.get("tools") or [])
        self._schemas = {tool.name: tool.input_schema for tool in self._tools}
        self.done = False
        self._write()
        return self.opening

    def tools(self) -> list[Any]:
        """The model's tools: the domain's agent tools, then :data:`SEND`."""
        return self._tools

    async def call(self, name: str, arguments: dict[str, Any] | None) -> Any:
        """Plays one tool call; an ``is_error`` result for anything the env refuses, the world unchanged."""
        async with self._turn:
            return await self._call(name, arguments)

    async def _call(self, name: str, arguments: dict[str, Any] | None) -> Any:
        if self.done:
            return _text("The conversation has ended; no further calls are taken.", error=True)
        schema = self._schemas.get(name)
        if schema is None:
            return _text(f"Error: unknown tool {name!r}; the tools are {', '.join(self._schemas)}", error=True)
        arguments = arguments if arguments is not None else {}
        refused = call_error(name, arguments)
        if refused:
            return _text(refused, error=True)
        try:
            jsonschema.validate(arguments, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
            return _text(f"Error: {where}: {exc.message}", error=True)
        observation, reward, terminated, truncated, info = await self.env.step(call_action(name, arguments))
        ended = bool(terminated or truncated)
        if ended:
            self._end(reward, info)
        text, error = call_answer(name, observation, info, ended)
        return _text(text, error=error)

    async def close(self) -> None:
        """Ends a running episode where it stands (scored as a trainer's cut is) and writes the result; an episode
        already over was written when it ended."""
        async with self._turn:
            if not self.done:
                reward = await self.env.finish("stopped_by_client")
                self._end(reward, {"termination_reason": "stopped_by_client",
                                   "reward_info": self.env.trajectory().reward_info})

    def _end(self, reward: float, info: dict[str, Any]) -> None:
        self.done, self.reward = True, float(reward)
        self.info = {**self.info, **info}
        self._write()

    def result(self) -> dict[str, Any]:
        """What the result file holds: the task, the opening, and once ended the reward, why it ended, the reward's
        breakdown and the whole trajectory."""
        out: dict[str, Any] = {"task_id": self.info.get("task_id"), "done": self.done, "opening": self.opening}
        if self.done:
            trajectory = self.env.trajectory()
            out.update(reward=self.reward, termination_reason=self.info.get("termination_reason"),
                       reward_info=self.info.get("reward_info"), trajectory=json.loads(trajectory.to_json_line()))
        return out

    def _write(self) -> None:
        """Writes :meth:`result` to the result file, whole or not at all (a temporary file renamed)."""
        if self.result_file is None:
            return
        folder = os.path.dirname(os.path.abspath(self.result_file))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".part") as handle:
            json.dump(self.result(), handle, default=str)
        os.replace(handle.name, self.result_file)


def agent_instructions(policy: str, opening: str | None = None) -> str:
    """What a server tells the model it serves: its role, the policy and, where known, the customer's opening."""
    text = f"You are the support agent. Follow this policy.\n\n{policy}"
    return text + (f"\n\nThe customer's first message:\n{opening}" if opening is not None else "")


def mcp_server(instructions: str, tools: Callable[[], list[Any]],
               episode_of: Callable[[Any], McpEpisode | None]) -> Any:
    """An MCP low-level server listing ``tools()`` and playing each call on ``episode_of(ctx)`` (the request's
    context); a call whose episode is gone is an ``is_error`` result, as is anything the episode raises."""

    async def list_tools(ctx: Any, params: Any) -> Any:
        return _types.ListToolsResult(tools=tools())

    async def call_tool(ctx: Any, params: Any) -> Any:
        episode = episode_of(ctx)
        if episode is None:
            return _text("Error: this episode has ended and expired, or was deleted.", error=True)
        try:
            return await episode.call(params.name, params.arguments)
        except Exception as exc:  # nothing a model sends becomes a protocol error
            return _text(f"Error: {type(exc).__name__}: {exc}", error=True)

    return Server("mua-gym", instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(env: Any, *, task_id: str | None = None, seed: int | None = None,
                      result_file: str | None = None) -> McpEpisode:
    """Serves one episode of ``env`` over stdin and stdout until the client closes; returns the episode, its
    result written."""
    episode = McpEpisode(env, result_file)
    await episode.start(task_id=task_id, seed=seed)
    server = mcp_server(agent_instructions(episode.policy, episode.opening), episode.tools, lambda ctx: episode)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await episode.close()
    return episode
