"""User-side envs: the policy plays the customer, an agent serves it, and the fidelity reward pays the play.

    env = mua_gym.make("mua/Retail-User-v0")              # the fair agent serves (agent="oracle", "litellm:<model>")
    observation, info = env.reset(seed=0)                 # [system: the customer's scenario]; info["tools"]: its own
    observation, reward, terminated, truncated, info = env.step("Hi! I'd like to cancel an order.")

The same episode as the agent envs', seen from the other side (an :class:`~mua_gym.env.AsyncMuaEnv` runs inside,
with the policy as its user): the same worlds, tasks, fault checker and scoring.

- **Observation**: OpenAI chat messages from the customer's side. The reset's is the system message the LLM user
  gets (:func:`mua_gym.user_sims.llm.scenario_text`: the role's guidelines, the scenario, the persona). A step's
  holds what came back: the agent's messages as ``user`` messages (the other party), the results of the
  customer's own tool calls (telecom's phone) as ``tool`` messages. The agent's tool calls and results are never
  shown, as in a real support chat.
- **Action**: the customer's message: a string, or an assistant message dict (``content``, and ``tool_calls``
  for its own tools, which ``info["tools"]`` lists). ``###STOP###`` (goals met, or the agent said they cannot be),
  ``###TRANSFER###`` or ``###OUT-OF-SCOPE###`` in it ends the conversation. An action the env cannot read comes
  back in ``info["error"]`` and changes nothing (after ``max_errors`` of them the episode ends truncated).
- **Reward**: 0.0 until the end, then the fidelity reward (:func:`mua_gym.env.fidelity.fidelity`), its components
  in ``info["reward_info"]``. ``info["user_faults"]`` lists each fault on the step that made it.
- **Ends**: terminated when the customer or the agent ends the conversation; truncated after ``max_turns``
  customer messages, ``max_errors`` unreadable actions, or when the agent fails (the episode is then ``void``:
  it says nothing about the customer).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import gymnasium

from mua_gym.env.core import AsyncMuaEnv
from mua_gym.env.fidelity import fidelity
from mua_gym.env.infos import UserResetInfo, UserStepInfo
from mua_gym.env.spaces import ActionSpace, MessagesSpace
from mua_gym.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from mua_gym.task import Task
from mua_gym.user_sims.base import UserReply, UserSimulator, UserView
from mua_gym.user_sims.llm import scenario_text
from mua_gym.user_sims.persona import resolve_persona

__all__ = ["AsyncUserEnv", "MAX_USER_TURNS", "REFERENCE_AGENTS", "UserEnv"]

#: Customer messages an episode allows by default.
MAX_USER_TURNS = 30
#: Agents whose play is fixed by the task: a reference user's message count is known for them.
REFERENCE_AGENTS = ("fair", "oracle", "fair-retry")


class _PolicyUser(UserSimulator):
    """The inner env's user: it hands each turn to the user-side env's policy and waits for its reply."""

    name = "policy"
    immediate = False
    acts = True

    def __init__(self, env: "AsyncUserEnv") -> None:
        self._env = env

    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        return await self._env._turn(("start", task, seed, tools))

    async def respond(self, view: UserView) -> UserReply:
        return await self._env._turn(("respond", view))


class _Ended(BaseException):
    """Raised into the inner episode's user turn when the user-side env ends it from outside (a BaseException: the
    inner env's user turn must not take it for a failing simulator)."""


class AsyncUserEnv:
    """A user-side episode of ``domain``; ``agent`` (``"fair"``, ``"oracle"``, ``"random"``, ``"litellm:<model>"``,
    its keywords in ``agent_kwargs``) serves the customer. ``max_turns`` bounds the customer's messages; the other
    keywords are :class:`~mua_gym.env.AsyncMuaEnv`'s (``split``, ``world``, ``world_params``, ``tasks``,
    ``shared_base``, ``fault_reviewer``...), for the episode inside.

    ``await reset(seed=, options=)`` and ``await step(action)`` are the contract (see the module docstring);
    ``trajectory()`` is the inner episode's record, ``to_chat()`` the customer's side as a chat, ``core`` the inner
    :class:`AsyncMuaEnv`.
    """

    def __init__(self, domain: Any = "mock", *, agent: str = "fair", agent_kwargs: dict[str, Any] | None = None,
                 max_turns: int = MAX_USER_TURNS, max_errors: int = 10, **env_kwargs: Any) -> None:
        from mua_gym.eval.agents import check_agent_spec

        check_agent_spec(agent, **(agent_kwargs or {}))
        if max_turns < 1 or max_errors < 1:
            raise ValueError("max_turns and max_errors must be at least 1")
        for key in ("user", "user_kwargs"):
            if key in env_kwargs:
                raise ValueError(f"{key}= has no meaning in a user-side env: the policy is the user")
        self.agent_spec, self.agent_kwargs = agent, dict(agent_kwargs or {})
        self.max_turns, self.max_errors = max_turns, max_errors
        self.core = AsyncMuaEnv(domain, user=_PolicyUser(self), **env_kwargs)
        self._env_kwargs = env_kwargs
        self._driver: asyncio.Task[None] | None = None
        self._asks: asyncio.Queue[Any] = asyncio.Queue()
        self._reply: asyncio.Future[Any] | None = None  # the user turn the inner episode waits on
        self._references: dict[str, int | None] = {}
        self._chat: list[dict[str, Any]] = []
        self._shown = 0  # messages of the user's view already in the chat
        self._user_messages = 0
        self._errors = 0
        self._done = True
        self._agent_void: str | None = None
        self._ended_info: dict[str, Any] = {}

    # -- the contract --------------------------------------------------------------------------------------------
    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                    ) -> tuple[list[dict[str, Any]], UserResetInfo]:
        """Starts an episode; returns the customer's system message and ``info``: ``task_id``, ``domain``,
        ``split``, ``tools`` (the customer's own tool schemas; empty where it has none), ``agent``, ``max_turns``."""
        await self._stop_driver()
        self._asks, self._reply = asyncio.Queue(), None
        self._chat, self._shown, self._user_messages, self._errors = [], 0, 0, 0
        self._done, self._agent_void, self._ended_info = False, None, {}
        self._driver = asyncio.ensure_future(self._drive(seed, options))
        asked = await self._asks.get()
        if asked[0] == "failed":  # the inner reset refused (an unknown task id, no tasks): nothing started
            self._done = True
            raise asked[1]
        _, task, user_seed, tools = asked
        persona = resolve_persona(task, "task", user_seed)
        self._chat = [{"role": "system", "content": scenario_text(task, persona)}]
        self._tools = list(tools or [])
        info: UserResetInfo = {"task_id": task.id, "domain": self.core.domain.name, "split": task.split,
                               "tools": self._tools, "agent": self.agent_spec, "max_turns": self.max_turns}
        return [dict(m) for m in self._chat], info

    async def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, bool, UserStepInfo]:
        """One customer message; returns what came back (see the module docstring), the reward (the fidelity reward
        on the last step, else 0.0), terminated, truncated and ``info``."""
        if self._done or self._driver is None:
            return [], 0.0, bool(self._ended_info.get("terminated")), bool(self._ended_info.get("truncated")), \
                {**self._ended_info, "error": "the episode is over: call reset() first"}
        try:
            reply = _read_reply(action, self._tools)
        except ValueError as exc:
            self._errors += 1
            if self._errors >= self.max_errors:
                return await self._cut("too_many_errors", f"unreadable action: {exc}")
            return [], 0.0, False, False, {"error": f"unreadable action: {exc}", "turns": self._user_messages}
        self._record(reply)
        if reply.stop_token is None and not reply.tool_calls and self._user_messages >= self.max_turns:
            return await self._cut("max_turns")
        self._answer(reply)
        return await self._next()

    async def finish(self, reason: str = "stopped_by_trainer") -> float:
        """Ends a running episode where it stands (the customer said nothing more) and returns its reward: the
        fidelity reward, in which ``stop`` then fails."""
        if self._done:
            return float(self._ended_info.get("reward", 0.0))
        _, reward, *_ = await self._cut(reason)
        return reward

    def trajectory(self) -> Any:
        """The inner episode's :class:`~mua_gym.env.trajectory.Trajectory` (the agent's side, the customer's
        faults), with the fidelity reward once ended."""
        record = self.core.trajectory()
        if self._ended_info.get("reward_info") is not None:
            record = record.model_copy(update={"reward": self._ended_info["reward"],
                                               "reward_info": self._ended_info["reward_info"],
                                               "void": self._ended_info.get("void")})
        return record

    def to_chat(self) -> list[dict[str, Any]]:
        """The customer's side so far, as a chat: its system message, the agent's messages as ``user``, its own as
        ``assistant``, its tools' results as ``tool``; what a trainer puts loss on is the ``assistant`` turns."""
        return [dict(m) for m in self._chat]

    @property
    def done(self) -> bool:
        return self._done

    @property
    def void(self) -> str | None:
        """Why the episode is void (the agent failed: it says nothing of the customer), or None."""
        return self._ended_info.get("void") or self._agent_void

    @property
    def task(self) -> Task | None:
        """The running (or last) episode's task."""
        return self.core.task

    async def aclose(self) -> None:
        await self._stop_driver()
        await self.core.aclose()

    # -- the episode inside ----------------------------------------------------------------------------------------
    async def _turn(self, asked: tuple[Any, ...]) -> UserReply:
        """The inner user's turn: what the policy says next (a step puts it), or :class:`_Ended` when cut."""
        self._reply = asyncio.get_running_loop().create_future()  # (a bare future: nothing to undo if collected)
        await self._asks.put(asked)
        reply = await self._reply
        if reply is None:
            raise _Ended()
        return reply

    def _answer(self, reply: UserReply | None) -> None:
        """Hands the waiting user turn its reply (None: the episode is cut)."""
        assert self._reply is not None and not self._reply.done(), "no user turn is waiting"
        self._reply.set_result(reply)

    async def _drive(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """Plays the inner episode: the agent acts, the inner env steps, the customer's turns go to the policy. An
        agent that fails ends the episode void; it never leaves a step waiting."""
        from mua_gym.eval.agents import make_agent

        core = self.core
        try:
            try:
                observation, info = await core.reset(seed=seed, options=options)
            except Exception as exc:
                await self._asks.put(("failed", exc))
                return
            try:
                agent = make_agent(self.agent_spec, core.task, seed, **self.agent_kwargs)
                agent.reset(info)
                while not core.done:
                    action = await agent.aact(observation)
                    if agent.stopped:
                        await core.finish(agent.stop_reason or "agent_stop")
                        break
                    observation, *_ = await core.step(action)
            except Exception as exc:  # the agent's failure, not the customer's: the episode says nothing of it
                self._agent_void = f"agent_error: {type(exc).__name__}: {exc}"[:500]
                await core.finish("agent_error", score=False)
        except _Ended:
            pass
        await self._asks.put(("ended",))

    async def _next(self) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        """Waits for the inner episode's next user turn (or its end); returns the step's result."""
        faults_before = len(self.core._episode.user_faults)
        asked = await self._asks.get()
        if asked[0] == "ended":
            return self._end(faults_before)
        observation = self._shown_since()
        faults = self.core._episode.user_faults[faults_before:]
        info: dict[str, Any] = {"turns": self._user_messages}
        if faults:
            info["user_faults"] = [dict(f) for f in faults]
        return observation, 0.0, False, False, info

    def _shown_since(self) -> list[dict[str, Any]]:
        """The messages of the customer's view it has not seen yet, from its side."""
        view = self.core._user_view
        shown: list[dict[str, Any]] = []
        for message in view[self._shown:]:
            if isinstance(message, AssistantMessage) and message.content:
                shown.append({"role": "user", "content": message.content})
            elif isinstance(message, ToolMessage):
                shown.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        self._shown = len(view)
        self._chat += shown
        return shown

    def _record(self, reply: UserReply) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [c.model_dump() for c in reply.tool_calls]
        else:
            self._user_messages += 1
        self._chat.append(message)
        self._shown += 1  # (the inner view holds it too, as the user's own message)

    def _end(self, faults_before: int) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        core = self.core
        record = core.trajectory()
        void = self._agent_void or record.void
        observation = self._shown_since()
        faults = core._episode.user_faults[faults_before:]
        evidence = fidelity(record.user_faults, record.termination_reason, None if void else record.task_reward,
                            self._user_messages, None if void else self._reference())
        reward = 0.0 if void else evidence["reward"]
        evidence["reward"] = reward
        self._done = True
        info: dict[str, Any] = {"turns": self._user_messages, "termination_reason": record.termination_reason,
                                "reward_info": evidence, "task_reward": record.task_reward}
        if faults:
            info["user_faults"] = [dict(f) for f in faults]
        if void:
            info["void"] = void
        terminated = record.terminated and not void
        self._ended_info = {"reward": reward, "reward_info": evidence, "terminated": terminated,
                            "truncated": not terminated, "termination_reason": record.termination_reason,
                            "void": void}
        return observation, reward, terminated, not terminated, info

    async def _cut(self, reason: str, error: str | None = None
                   ) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        """Ends the episode from outside (the customer's limits): the inner episode is scored as it stands."""
        faults_before = len(self.core._episode.user_faults)
        self._answer(None)  # the waiting user turn raises _Ended: the driver stops
        await self._asks.get()
        if not self.core.done:
            await self.core.finish(reason)
        observation, reward, _, _, info = self._end(faults_before)
        if error is not None:
            info["error"] = error
        self._ended_info["terminated"], self._ended_info["truncated"] = False, True
        return observation, reward, False, True, info

    async def _stop_driver(self) -> None:
        if self._driver is not None and not self._driver.done():
            self._driver.cancel()
            try:
                await self._driver
            except (asyncio.CancelledError, Exception):
                pass
        self._driver = None

    def _reference(self) -> int | None:
        """The customer messages the scenario user sends on this task with this agent (kept per task), or None
        where the agent's play is not fixed by the task."""
        task = self.core.task
        if self.agent_spec not in REFERENCE_AGENTS or task is None:
            return None
        if task.id not in self._references:
            self._references[task.id] = _reference_messages(self.core, task, self.agent_spec)
        return self._references[task.id]


def _reference_messages(core: AsyncMuaEnv, task: Task, agent_spec: str) -> int | None:
    """How many messages the scenario user sends playing ``task`` against ``agent_spec`` (None where it cannot
    play the task)."""
    from mua_gym import MuaEnv
    from mua_gym.eval.agents import make_agent

    env = MuaEnv(core.domain, user="scenario", tasks=[task], split=task.split)
    try:
        if env.core.user.refuses(task) is not None:
            return None
        observation, info = env.reset(options={"task_id": task.id})
        agent = make_agent(agent_spec, task)
        agent.reset(info)
        while not env.core.done:
            observation, *_ = env.step(agent.act(observation))
        return sum(1 for m in env.core._user_view if isinstance(m, UserMessage) and not m.tool_calls)
    finally:
        env.close()


def _read_reply(action: Any, tools: list[dict[str, Any]]) -> UserReply:
    """The customer's message from a string or an assistant message dict; ValueError for anything else."""
    if isinstance(action, str):
        return UserReply(content=action)
    if not isinstance(action, dict):
        raise ValueError(f"expected a string or a message dict, got {type(action).__name__}")
    content = action.get("content") or ""
    if not isinstance(content, str):
        raise ValueError("content must be a string")
    calls = []
    for i, call in enumerate(action.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError("each tool call needs a function with a name")
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        if not isinstance(arguments, str):
            raise ValueError("a tool call's arguments must be a JSON object or its text")
        calls.append(ToolCall.make(str(call.get("id") or f"user_call_{i}"), function["name"], arguments))
    if not content and not calls:
        raise ValueError("an empty message")
    return UserReply(content=content, tool_calls=calls)


class UserEnv(gymnasium.Env):
    """The synchronous Gymnasium face of :class:`AsyncUserEnv` (its keywords); ``core`` is the async env.

    It keeps one event loop for the env's life: the inner episode waits on it between steps.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, domain: Any = "mock", render_mode: str | None = None, **kwargs: Any) -> None:
        from mua_gym.env.gym_env import _Runner

        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.render_mode = render_mode
        self.core = AsyncUserEnv(domain, **kwargs)
        self.observation_space = MessagesSpace()
        self.action_space = ActionSpace([t["function"]["name"] for t in self.core.core._user_tool_schemas or []])
        self._runner = _Runner()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        super().reset(seed=seed)
        return self._runner.run(self.core.reset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        if self.core.core.task is None:
            raise gymnasium.error.ResetNeeded("Cannot call env.step() before calling env.reset()")
        return self._runner.run(self.core.step(action))

    def finish(self, reason: str = "stopped_by_trainer") -> float:
        """Ends a running episode where it stands; returns its fidelity reward (see :meth:`AsyncUserEnv.finish`)."""
        return self._runner.run(self.core.finish(reason))

    def trajectory(self) -> Any:
        return self.core.trajectory()

    def to_chat(self) -> list[dict[str, Any]]:
        return self.core.to_chat()

    @property
    def done(self) -> bool:
        return self.core.done

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"{m['role'].upper()}: {m.get('content') or m.get('tool_calls')}" for m in self.to_chat())

    def close(self) -> None:
        self._runner.run(self.core.aclose())
        self._runner.close()
        super().close()
