"""OpenEnv adapter: a mua_gym env served as an OpenEnv ``Environment`` (openenv 0.10), and a typed client.

``create_mua_app(env_id, **make_kwargs)`` builds OpenEnv's FastAPI app (``create_app``) around
:class:`MuaEnvironment`; ``mua-gym serve --env ID --port P`` runs it with uvicorn on 127.0.0.1. Each WebSocket
session (``/ws``) gets a fresh mua_gym env (``SUPPORTS_CONCURRENT_SESSIONS``; ``max_sessions`` at once), so an
episode spans many steps there; plain HTTP ``/reset`` and ``/step`` build a fresh env per request (OpenEnv's
rule), so they cannot carry an episode.

- ``reset(seed=None, episode_id=None, task_id=None, split=None, index=None)``: ``task_id`` names the task;
  ``split`` with ``index`` picks the index-th task of a split (OpenEnv's task API, also served as
  ``/mua_<domain>/splits``, ``/tasks``, ``/num_tasks``, ``/task``); otherwise ``seed`` draws one from ``split``
  (or the env's split). Its :class:`MuaObservation` holds the opening ``messages`` (system policy, the user's
  first message), the ``tools`` (OpenAI schemas) and the ``task_id``.
- ``step(MuaAction)``: an OpenAI assistant message (``content`` and/or ``tool_calls``) or raw model text
  (``text``: Hermes ``<tool_call>`` blocks, a bare JSON call, or words to the user). The observation's
  ``messages`` are the new tool and user messages; ``reward`` is the task's reward on the terminal step, 0.0
  before (and 0.0 for a wrong play); ``done`` is terminated or truncated; ``metadata`` is the env's step info.
  A step after ``done`` changes nothing: no messages, the episode's reward again, ``error`` says to reset, and
  the state (``step_count``, ``reward``) stays as the episode left it.
  An action the env cannot read comes back in ``error`` (its fields take any JSON so that the env, not the
  server's validation, answers it); nothing a model writes raises.
- A void episode (:attr:`mua_gym.AsyncMuaEnv.void`: the user failed, or broke its scenario under
  ``on_user_fault="void"``) says so in the observation's ``void`` (the reason; also in ``metadata``) at the reset
  where it is void from the opening and on the step that ends it (``done``, reward 0.0), and in the state's
  ``void``. OpenEnv's protocol has no way to drop an episode (an observation is ``done``, ``reward`` and
  ``metadata``): the client, the trainer's rollout code, leaves out episodes whose last observation has ``void``.
- MCP-style play (OpenEnv's ``ListToolsAction`` / ``CallToolAction``, or a :class:`MuaAction` with ``type``
  ``"list_tools"`` / ``"call_tool"`` over ``/ws``): the tools are the domain's agent tools and
  ``send_message_to_user(message)``, whose result is the user's reply (:mod:`mua_gym.integrations.mcp_calls`). A
  call is a turn of the episode; its ``result`` is ``{"data": text, "is_error", "content"}`` and the reward is the
  observation's and the state's, never a tool's. OpenEnv's ``/mcp`` route (JSON-RPC ``tools/list`` and
  ``tools/call`` with a ``session_id``) plays the same through :attr:`MuaEnvironment.mcp_client`;
  :class:`MuaMcpClient` (OpenEnv's ``MCPToolClient``, typed) resets over ``/ws`` and calls over ``/mcp`` in one
  session.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, Optional
from uuid import uuid4

from mua_gym.integrations import require, void_reason
from mua_gym.integrations.mcp_calls import call_action, call_answer, call_error, listed_tools

_types = require("openenv.core.env_server.types", "openenv")

from openenv.core.client_types import StepResult  # noqa: E402  (present once the require above passed)
from openenv.core.env_client import EnvClient  # noqa: E402
from openenv.core.env_server.http_server import create_app  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.mcp_types import (  # noqa: E402
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.mcp_client import MCPToolClient  # noqa: E402
from pydantic import Field  # noqa: E402

__all__ = ["EpisodeTools", "MuaAction", "MuaEnvClient", "MuaEnvironment", "MuaMcpClient", "MuaObservation", "MuaState",
           "create_mua_app"]

SPLITS = ("train", "dev", "test")


class MuaAction(_types.Action):  # type: ignore[misc, name-defined]
    """One agent turn: an OpenAI assistant message, or the model's raw ``text`` (which then is the whole action)."""

    role: Any = Field(default="assistant", description="'assistant'")
    content: Any = Field(default=None, description="text to the user")
    tool_calls: Any = Field(default=None, description="OpenAI tool calls")
    reasoning_content: Any = Field(default=None, description="the model's reasoning, kept out of the reply")
    text: Any = Field(default=None, description="raw model text: <tool_call> blocks, a JSON call, or words")
    type: Any = Field(default=None, description="'list_tools' or 'call_tool' for MCP-style play, else none")
    tool_name: Any = Field(default=None, description="with type 'call_tool': the tool")
    arguments: Any = Field(default=None, description="with type 'call_tool': its arguments, an object")

    def to_env_action(self) -> Any:
        """What ``MuaEnv.step`` takes: the raw text if given, else the message dict."""
        if self.text is not None:
            return self.text
        message = {"role": self.role, "content": self.content}
        if self.tool_calls is not None:
            message["tool_calls"] = self.tool_calls
        if self.reasoning_content is not None:
            message["reasoning_content"] = self.reasoning_content
        return message


class MuaObservation(_types.Observation):  # type: ignore[misc, name-defined]
    """The new messages (after a reset: the opening, with the ``tools``), the task and how the step ended."""

    messages: list[dict[str, Any]] = Field(default_factory=list, description="new OpenAI chat messages")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas (after a reset)")
    task_id: Optional[str] = None
    terminated: bool = False
    truncated: bool = False
    error: Optional[str] = Field(default=None, description="why the action could not be read, if it could not")
    void: Optional[str] = Field(default=None, description="why the episode is void (leave it out of training)")


class MuaState(_types.State):  # type: ignore[misc, name-defined]
    """The session's episode: its env, task, turns so far, and reward once it ended."""

    env_id: str = ""
    task_id: Optional[str] = None
    done: bool = False
    reward: Optional[float] = None
    void: Optional[str] = None


class MuaEnvironment(Environment):  # type: ignore[misc]
    """One mua_gym env per OpenEnv session; ``make_kwargs`` are :func:`mua_gym.make`'s keywords."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str = "mua/Retail-v0", **make_kwargs: Any) -> None:
        import mua_gym

        super().__init__()
        self.env_id = env_id
        self.env = mua_gym.make(env_id, **make_kwargs).unwrapped
        self._state = MuaState(env_id=env_id)
        self._turn = threading.RLock()
        #: What OpenEnv's ``/mcp`` route lists and calls (it looks for an ``mcp_client``).
        self.mcp_client = EpisodeTools(self)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, task_id: Optional[str] = None,
              split: Optional[str] = None, index: Optional[int] = None, **kwargs: Any) -> MuaObservation:
        """Starts an episode; returns the opening messages, the tools and the task id."""
        if kwargs:  # a misspelt key would otherwise draw a random task without a word
            raise ValueError(f"reset takes seed, episode_id, task_id, split and index, not {', '.join(sorted(kwargs))}")
        if task_id is not None:
            options: dict[str, Any] | None = {"task_id": task_id}
        elif index is not None:
            options = {"task": self.get_task_model(split or self.env.core.split, index)}
        else:
            options = {"split": split} if split else None
        with self._turn:
            observation, info = self.env.reset(seed=seed, options=options)
        void = void_reason(self.env, info)
        self._state = MuaState(episode_id=episode_id or uuid4().hex, step_count=0, env_id=self.env_id,
                               task_id=info["task_id"], void=void)
        meta = {k: v for k, v in info.items() if k not in ("tools", "policy")}  # both are in the fields already
        return MuaObservation(messages=observation, tools=info["tools"], task_id=info["task_id"], metadata=meta,
                              void=void)

    def step(self, action: Any, timeout_s: Optional[float] = None, **kwargs: Any) -> Any:
        """One agent turn; returns the new messages, the reward (0.0 until the end) and ``done``. An MCP-style
        action returns a ``ListToolsObservation`` or a ``CallToolObservation`` instead."""
        if isinstance(action, MuaAction) and action.type is not None:
            return self.mcp_step(action.type, action.tool_name, action.arguments)
        if isinstance(action, ListToolsAction):
            return self.mcp_step("list_tools")
        if isinstance(action, CallToolAction):
            return self.mcp_step("call_tool", action.tool_name, action.arguments)
        with self._turn:  # /ws steps run in a session thread, /mcp calls in another
            return self._step(action.to_env_action() if isinstance(action, MuaAction) else action)

    def _step(self, move: Any) -> MuaObservation:
        if self.env.core.task is None:  # a plain HTTP /step gets a fresh env: there is no episode to step
            return MuaObservation(messages=[], task_id=None, done=False, reward=0.0,
                                  error="no episode in this session: call reset() first")
        observation, reward, terminated, truncated, info = self.env.step(move)
        if self._state.done:  # the episode is over: the env only says so, and what it scored stands
            return MuaObservation(messages=[], task_id=self._state.task_id, done=True, reward=self._state.reward,
                                  terminated=bool(terminated), truncated=bool(truncated), error=info.get("error"),
                                  metadata=info, void=self._state.void)
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = done
        if done:
            self._state.reward = float(reward)
            self._state.void = void_reason(self.env, info)
        return MuaObservation(messages=observation, task_id=self._state.task_id, done=done, reward=float(reward),
                              terminated=bool(terminated), truncated=bool(truncated), error=info.get("error"),
                              metadata=info, void=self._state.void if done else None)

    def mcp_step(self, kind: Any, name: Any = None, arguments: Any = None) -> Any:
        """``kind`` ``"list_tools"``: a ``ListToolsObservation``; ``"call_tool"``: plays the call ``name`` with
        ``arguments`` as a turn of the episode and returns a ``CallToolObservation`` (its ``error`` set only where
        there is no episode or no such kind; tool errors are results)."""
        with self._turn:
            return self._mcp_step(kind, name, arguments)

    def _mcp_step(self, kind: Any, name: Any, arguments: Any) -> Any:
        reward = self._state.reward if self._state.done else 0.0
        if kind == "list_tools":
            core = self.env.core
            try:
                tools = core.episode_tools if core.task is not None else core.static_tools()
            except ValueError as exc:  # action perturbations drawn per episode: no list before the reset
                return ListToolsObservation(tools=[], done=self._state.done, reward=reward,
                                            metadata={"error": str(exc)})
            return ListToolsObservation(tools=[Tool(**t) for t in listed_tools(tools)], done=self._state.done,
                                        reward=reward)
        name = str(name or "")
        if kind != "call_tool":
            return self._call_failed(name, ToolErrorType.INVALID_ARGS,
                                     f"type must be list_tools or call_tool, not {str(kind)[:40]!r}")
        if self.env.core.task is None:
            return self._call_failed(name, ToolErrorType.EXECUTION_ERROR,
                                     "no episode in this session: call reset() first")
        arguments = {} if arguments is None else arguments
        refused = call_error(name, arguments)
        if refused:
            return CallToolObservation(tool_name=name, result=_tool_result(refused, True), done=self._state.done,
                                       reward=reward)
        was_done = self._state.done
        stepped = self._step(call_action(name, arguments))
        text, error = call_answer(name, stepped.messages, {"error": stepped.error}, stepped.done and not was_done)
        return CallToolObservation(tool_name=name, result=_tool_result(text, error), done=stepped.done,
                                   reward=stepped.reward, metadata=stepped.metadata)

    def _call_failed(self, name: str, kind: Any, message: str) -> Any:
        return CallToolObservation(tool_name=name, error=ToolError(error_type=kind, message=message),
                                   done=self._state.done, reward=self._state.reward if self._state.done else 0.0)

    @property
    def state(self) -> MuaState:
        """The session's episode so far."""
        return self._state

    def close(self) -> None:
        """Closes the mua_gym env; a second call does nothing."""
        if self.env is not None:
            self.env.close()
            self.env = None

    # -- OpenEnv's task API -------------------------------------------------------------------------
    def list_splits(self) -> list[str]:
        """The task splits: train, dev and test."""
        return list(SPLITS)

    def num_tasks(self, split: str) -> int:
        """How many tasks ``split`` holds."""
        return len(self.env.core.tasks(split))

    def get_task_model(self, split: str, index: int) -> Any:
        """The ``index``-th :class:`mua_gym.Task` of ``split``; IndexError when there is none."""
        tasks = self.env.core.tasks(split)
        if not 0 <= index < len(tasks):
            raise IndexError(f"split {split!r} has {len(tasks)} tasks, no index {index}")
        return tasks[index]

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        """``{"id", "index", "split"}`` of one task (``reset(task_id=id)`` plays it)."""
        return {"id": self.get_task_model(split, index).id, "index": index, "split": split}

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """``{"id", "index", "split"}`` of every task of ``split``."""
        return [{"id": t.id, "index": i, "split": split} for i, t in enumerate(self.env.core.tasks(split))]


def _tool_result(text: str, error: bool) -> dict[str, Any]:
    """A call's result: ``data`` (what OpenEnv's ``MCPToolClient.call_tool`` returns), the error flag, and MCP's
    ``content``."""
    return {"data": text, "is_error": error, "content": [{"type": "text", "text": text}]}


class EpisodeTools:
    """A :class:`MuaEnvironment`'s tools in the shape OpenEnv's ``/mcp`` route calls (a connected fastmcp
    ``Client``): ``list_tools()`` and ``call_tool(name, arguments)``, each a step of the environment's episode,
    run off the event loop. A call that cannot be played (no episode yet) raises, which the route answers as a
    JSON-RPC error; everything else, tool errors included, is a result."""

    def __init__(self, environment: MuaEnvironment) -> None:
        self._environment = environment

    def is_connected(self) -> bool:
        return True

    async def __aenter__(self) -> EpisodeTools:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def list_tools(self) -> list[Any]:
        return (await asyncio.to_thread(self._environment.mcp_step, "list_tools")).tools

    async def call_tool(self, name: str, arguments: Any = None) -> Any:
        observation = await asyncio.to_thread(self._environment.mcp_step, "call_tool", name, arguments)
        if observation.error is not None:
            raise RuntimeError(observation.error.message)
        return observation.result


def create_mua_app(env_id: str = "mua/Retail-v0", max_sessions: int = 64, **make_kwargs: Any) -> Any:
    """OpenEnv's FastAPI app serving ``env_id``; raises (ValueError, KeyError, gymnasium's Error) on bad arguments.

    One env is built and reset first: it checks the arguments and builds the task set and world image, so the
    first sessions do not pay for them.
    """
    probe = MuaEnvironment(env_id, **make_kwargs)
    try:
        probe.reset(seed=0)
        name = "mua_" + probe.env.core.domain.name
    finally:
        probe.close()
    factory = functools.partial(MuaEnvironment, env_id, **make_kwargs)
    return create_app(factory, MuaAction, MuaObservation, env_name=name, max_concurrent_envs=max_sessions,
                      state_cls=MuaState)


class MuaEnvClient(EnvClient):  # type: ignore[misc]
    """OpenEnv's WebSocket client, typed for :class:`MuaAction` / :class:`MuaObservation` / :class:`MuaState`.

    ``step`` also takes a plain string (raw model text) or an OpenAI assistant message dict (keys the action
    does not know, such as ``refusal`` or ``annotations``, are left out).
    """

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, str):
            return {"text": action}
        if isinstance(action, MuaAction):
            return action.model_dump(exclude_none=True)
        return {k: v for k, v in dict(action).items() if k in MuaAction.model_fields}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        fields = dict(payload.get("observation") or {})
        observation = MuaObservation(**fields, done=payload.get("done", False), reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> MuaState:
        return MuaState(**payload)


class MuaMcpClient(MCPToolClient):  # type: ignore[misc]
    """OpenEnv's ``MCPToolClient`` for a mua_gym server: ``reset`` over ``/ws`` (a :class:`MuaObservation`: the
    opening, the tools, the task), ``list_tools`` and ``call_tool`` over ``/mcp`` in the same session, and
    ``state()`` a :class:`MuaState`, which holds the reward once the episode ended."""

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        if "messages" not in (payload.get("observation") or {}):
            return super()._parse_result(payload)
        return MuaEnvClient._parse_result(self, payload)

    def _parse_state(self, payload: dict[str, Any]) -> MuaState:
        return MuaState(**payload)
