"""mua_gym episodes as a verifiers 0.4 environment (``import verifiers.v1 as vf``), simulated user in the loop.

``vf-eval mua-gym-verifiers`` (or ``[env] taskset.id = "mua-gym-verifiers"`` in a prime-rl config) plays one mua_gym
episode per rollout. verifiers imports a taskset id only as a top-level module (a dotted id fails), so the id needs
``mua_gym_verifiers``, two lines re-exporting this module's ``__all__``; the classes live here:

- :class:`MuaTaskset` yields one :class:`MuaTask` per mua_gym task of ``--env.taskset.env-id`` /
  ``--env.taskset.split``; ``TaskData.id`` is the mua_gym task id and is the task's ``key``, so a group
  (``-r N``) plays one task. The domain's policy is the task's system prompt.
- :class:`MuaEnv` runs the conversation: the env's user simulator opens it, each agent text goes to
  ``AsyncMuaEnv.step`` (the user) and the user's reply comes back as the next turn, until the env terminates or
  truncates; a run verifiers cuts short (``--env.agent.max-turns``, a token limit, a ``@stop``) is scored as the
  world stands (``AsyncMuaEnv.finish``). Its reward (0.0 unless the episode terminated with the gold world, 0.0 for
  a truncated one) is recorded on the trace as ``reward`` inside the interaction, with ``turns``, ``tool_calls``
  and ``tool_errors`` as metrics and the termination reason in ``trace.info``.
- A void episode (:attr:`mua_gym.AsyncMuaEnv.void`: the user failed, or broke its scenario under
  ``on_user_fault="void"``, at the opening or at any later turn) is recorded as a failed rollout, what verifiers
  calls an errored trace: :class:`VoidRollout` is raised inside the interaction, whose context records it
  (``Rollout.fail``: ``trace.ok`` False, ``trace.has_error``, ``trace.errors``, ``stop_condition``
  ``"voidrollout_error"``; verifiers/v1/agent.py:795-797, rollout.py:192-209) and skips scoring; ``run`` catches it,
  so the episode (``episode.ok`` False, env.py:298) carries the trace. Its ``reward`` is None ("scoring didn't
  run", trace.py:407-409) and ``trace.info["void"]`` says why. An errored trace is what verifiers' own consumers
  leave out (the error-corrected means of utils/format.py:57-72, replay's rescoring, GEPA); a trainer reading
  the traces (prime-rl) is to skip ``trace.ok == False`` as it skips any failed rollout.
- :class:`MuaHarness`, the taskset's default harness, is the agent's chat loop, run in-process: it sends the
  conversation and the env's OpenAI tool schemas to the model (through verifiers' interception, so every call is
  on the trace) and plays each tool call in the episode's env, until the model answers in text. Where the env
  renamed a call id (missing or repeated), the conversation carries the env's ids, so every tool message answers
  a call; an action the env cannot read at all (e.g. over 256 calls) is answered with one ``Error: ...`` tool
  message per call.
- Envs are pooled across rollouts and closed by ``MuaEnv.stop()`` when verifiers' ``serving()`` ends.

Config (``--env.taskset.*``): ``env_id`` (``mua/Retail-v0``), ``split`` (``test``), ``user`` (the domain's default
rule-driven user when empty), ``max_turns`` (100), ``world`` and ``world_params``. Nothing a model sends raises
here: unreadable calls come back as the env's errors.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

from pydantic import Field

from mua_gym.integrations import VoidEpisode, require, void_reason

vf = require("verifiers.v1", "verifiers")
_chat = require("verifiers.v1.dialects.chat", "verifiers")
_errors = require("verifiers.v1.errors", "verifiers")
httpx = require("httpx", "verifiers")

import mua_gym  # noqa: E402

from mua_gym.env import AsyncMuaEnv  # noqa: E402
from mua_gym.env.options import MAX_TURNS  # noqa: E402
from mua_gym.task import Task as MuaGymTask  # noqa: E402

__all__ = ["MuaEnv", "MuaHarness", "MuaTaskset", "VoidRollout"]

#: The documented taskset id; verifiers imports it as the top-level module ``mua_gym_verifiers``.
TASKSET_ID = "mua-gym-verifiers"
#: Exit code verifiers reads as "the harness lost its model connection" (retried, not a harness bug).
_TRANSPORT_EXIT = 97

# The live env of each open interaction, by trace id: the harness plays tool calls in it.
_LIVE: dict[str, AsyncMuaEnv] = {}


class VoidRollout(VoidEpisode, _errors.RolloutError):  # type: ignore[misc, name-defined]
    """A void episode, recorded on its trace as verifiers records a failed rollout (see the module docstring).
    A ``RolloutError``, so verifiers records it without logging a traceback."""


class MuaTasksetConfig(vf.TasksetConfig):
    """Which mua_gym env, split and user the rollouts play (``--env.taskset.<field>``)."""

    env_id: str = "mua/Retail-v0"
    """A registered mua_gym env id (``mua_gym.available_domains()``)."""
    split: str = "test"
    user: str = ""
    """The simulated user (``scripted``, ``scenario``, ``litellm:<model>``); empty: the domain's default."""
    max_turns: int = Field(MAX_TURNS, ge=1)
    """Agent turns (tool-call steps and messages to the user) before the episode is truncated."""
    world: str | None = None
    world_params: dict[str, Any] = Field(default_factory=dict)


def _env_kwargs(config: MuaTasksetConfig) -> dict[str, Any]:
    """The :func:`mua_gym.make_async` keywords of ``config``."""
    return mua_gym.make_kwargs(split=config.split, max_turns=config.max_turns, user=config.user,
                               world=config.world, world_params=config.world_params)


def open_env(config: MuaTasksetConfig) -> AsyncMuaEnv:
    """A fresh :class:`AsyncMuaEnv` for ``config``; ValueError naming the valid ids for an unknown env id."""
    return mua_gym.make_async(config.env_id, **_env_kwargs(config))


class MuaTask(vf.Task[vf.TaskData, vf.State, vf.TaskConfig]):
    """One mua_gym task; ``data.id`` is its task id."""

    @property
    def key(self) -> str:
        """The mua_gym task id: rollouts of one task form one group whatever their position."""
        return str(self.data.id)


class MuaTaskset(vf.Taskset[MuaTask, MuaTasksetConfig]):
    """The tasks of one mua_gym env and split, in the env's order."""

    def load(self) -> Iterator[MuaTask]:
        """Yields a prompt-less :class:`MuaTask` per task (the simulated user opens), the policy as system prompt."""
        env = open_env(self.config)
        try:
            policy, tasks = env.policy, env.tasks(self.config.split)
        finally:
            _close_now(env)
        for task in tasks:
            yield MuaTask(vf.TaskData(id=task.id, name=task.id, system_prompt=policy), self.config.task)


def _close_now(env: AsyncMuaEnv) -> None:
    """Closes ``env`` from sync code, on a thread of its own where a loop already runs in this one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(env.aclose())
        return
    failed: list[BaseException] = []

    def close() -> None:
        try:
            asyncio.run(env.aclose())
        except BaseException as exc:  # re-raised in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=close, name="mua-gym-close")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


class MuaHarnessConfig(vf.HarnessConfig):
    """No knobs: the harness plays the model against the episode's env."""

    id: str = TASKSET_ID


class MuaHarness(vf.Harness[MuaHarnessConfig]):
    """The agent's chat loop, in-process: model calls through the interception, tool calls in the episode's env."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, **_: Any) -> vf.ProgramResult:
        """Runs one segment: model turns until a text reply or the end of the episode; returns the exit status."""
        env = _LIVE.get(trace.id)
        if env is None:
            return vf.ProgramResult(2, "", f"{type(self).__name__} plays only inside {MuaEnv.__name__} (no live env)")
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages.extend(_chat.message_to_wire(m) for m in prompt)
        url = endpoint.rstrip("/") + "/chat/completions"
        try:
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {secret}"},
                                         timeout=httpx.Timeout(None, connect=10.0)) as client:
                while not env.done:
                    reply = await _complete(client, url, ctx.model, messages, env.episode_tools)
                    messages.append(reply)
                    if not reply.get("tool_calls"):
                        break
                    messages[-1], (observation, *_) = await env.chat_step(reply)  # every call answered
                    messages.extend(observation)
        except httpx.TransportError as exc:
            return vf.ProgramResult(_TRANSPORT_EXIT, "", f"model connection failed: {exc!r}")
        except _ModelRefused as exc:  # a refused turn (a limit or @stop) or a model error: verifiers judges which
            return vf.ProgramResult(1, "", str(exc))
        return vf.ProgramResult(0, "", "")


class _ModelRefused(Exception):
    """The interception answered a model call with an error status."""


async def _complete(client: httpx.AsyncClient, url: str, model: str, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One streamed chat completion, assembled into an OpenAI assistant message dict.

    Plain httpx, not the OpenAI SDK: the SDK re-walks every message and schema of each request (~1 ms per message).
    """
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if tools:
        body["tools"] = tools
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    async with client.stream("POST", url, json=body) as response:
        if response.status_code >= 400:
            raise _ModelRefused(f"model call refused ({response.status_code}): {(await response.aread())[:500]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            try:
                chunk = json.loads(line[5:])
            except ValueError:
                raise _ModelRefused(f"model stream sent an unreadable event: {line[:200]!r}") from None
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise _ModelRefused(f"model stream failed: {json.dumps(chunk['error'])[:500]}")
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                content.append(_text(delta.get("content")))
                for part in delta.get("tool_calls") or []:
                    call = calls.setdefault(part.get("index", 0), {"id": "", "type": "function",
                                                                   "function": {"name": "", "arguments": ""}})
                    call["id"] = _text(part.get("id")) or call["id"]
                    function = part.get("function") or {}
                    call["function"]["name"] += _text(function.get("name"))
                    call["function"]["arguments"] += _text(function.get("arguments"))
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def _text(value: Any) -> str:
    """A streamed text field as a string: '' for none, JSON for a server that sent a structure."""
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


class MuaEnvConfig(vf.EnvConfig):
    """One ``agent`` seat; it runs on the host by default (the harness executes no code)."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class MuaEnv(vf.Env[MuaEnvConfig]):
    """Plays one mua_gym episode per rollout: the user simulator and the world live here, in the env."""

    def __init__(self, config: MuaEnvConfig) -> None:
        super().__init__(config)
        self._free: list[AsyncMuaEnv] = []  # reset() clears an env wholly, so episodes reuse them
        self._opened: list[AsyncMuaEnv] = []
        self._tasks: dict[str, MuaGymTask] = {}

    def _acquire(self) -> AsyncMuaEnv:
        if self._free:
            return self._free.pop()
        env = open_env(self.taskset.config)
        self._opened.append(env)
        if not self._tasks:
            self._tasks = {t.id: t for t in env.tasks(self.taskset.config.split)}
        return env

    async def stop(self) -> None:
        """Closes every env this one opened (their worlds and users' connections); verifiers calls it as
        ``serving()`` ends. Envs opened later (another ``serving()``) are new ones."""
        opened, self._opened, self._free = self._opened, [], []
        errors = [e for e in await asyncio.gather(*(env.aclose() for env in opened), return_exceptions=True)
                  if isinstance(e, BaseException)]
        if errors:
            raise errors[0]

    async def run(self, task: Any, agents: Any) -> None:
        """One episode of ``task``: the user opens, agent and user alternate, the env's reward lands on the trace."""
        env = self._acquire()
        try:
            wanted = self._tasks.get(str(task.data.id))
            options = {"task": wanted} if wanted is not None else {"task_id": task.data.id}
            observation, info = await env.reset(options=options)
            async with agents.agent.interaction(task) as interaction:
                trace = interaction.trace
                _LIVE[trace.id] = env
                try:
                    await _converse(env, interaction, observation, info)
                finally:
                    _LIVE.pop(trace.id, None)
                if not env.done:  # verifiers cut the agent off (a limit or @stop): score the world as it stands
                    await env.finish()
                record = env.trajectory()
                trace.record_metrics({"turns": record.turns, "tool_calls": record.tool_calls,
                                      "tool_errors": record.tool_errors})
                trace.info.update({"mua_task_id": record.task_id, "termination_reason": record.termination_reason,
                                   "terminated": record.terminated, "truncated": record.truncated})
                void = void_reason(env)
                if void is not None:  # the interaction records it as a failed rollout: no score, left out
                    trace.info["void"] = void
                    trace.rewards["reward"] = None
                    raise VoidRollout(void, record.task_id)
                trace.record_reward("reward", float(record.reward or 0.0) if record.terminated else 0.0)
        except VoidRollout:
            pass  # recorded on the trace, which the episode keeps; the episode itself did not fail
        finally:
            self._free.append(env)


async def _converse(env: AsyncMuaEnv, interaction: Any, observation: list[dict[str, Any]],
                    info: dict[str, Any]) -> None:
    """Relays user turns to the agent and the agent's text to the user until the episode ends."""
    if void_reason(env, info) is not None or len(observation) < 2:
        await env.step("")  # void from the opening: the env ends the episode truncated (user_error, user_fault)
        return
    said = str(observation[-1].get("content") or "")
    while not env.done:
        segment = await interaction.turn(said)
        if segment.terminated or env.done or interaction.trace.stop_condition is not None:
            break  # a verifiers limit or @stop cut the agent off: its last words were never a reply
        reply = await env.step({"role": "assistant", "content": _last_text(segment.messages)})
        if env.done:
            break
        said = str(reply[0][-1].get("content") or "") if reply[0] else ""


def _last_text(messages: list[Any]) -> str:
    """The text of the segment's last assistant message ('' if it had none)."""
    for message in reversed(messages):
        if getattr(message, "role", None) == "assistant":
            content = message.content
            return content if isinstance(content, str) else json.dumps(_chat.message_to_wire(message)["content"])
    return ""

