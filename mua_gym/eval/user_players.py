"""Who plays the customer of a user-side env (:mod:`mua_gym.eval.user_side`): a user simulator, or a reference user
that fails on purpose.

A player has ``start(task, info) -> action`` (the opening) and ``act(observation) -> action``; actions and
observations are the user-side env's. :class:`SimulatorPlayer` drives any
:class:`~mua_gym.user_sims.base.UserSimulator` from the env's observations alone (the scenario user, an LLM user):
that is how ``mua-gym eval --side user`` scores user simulators. The reference users each break one thing and must
score low; :data:`REFERENCE_USERS` names them:

- ``scenario``: the rule-driven scenario user (scores 1.0 on every generated task it can play);
- ``ok``: says "ok" to everything;
- ``dump``: opens with its whole scenario, read out, then says "ok";
- ``invent``: the scenario user, but the first value it gives (an id, zip, email) is made up;
- ``early_stop``: the scenario user, but it stops after the agent's first reply (on a task the agent settles in
  that reply, this is the faithful play).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from mua_gym.messages import AssistantMessage, ToolMessage, UserMessage
from mua_gym.task import Task
from mua_gym.user_sims.base import STOP_TOKENS, UserReply, UserSimulator

__all__ = ["REFERENCE_USERS", "SimulatorPlayer", "make_player", "play_episode"]

#: A value a user gives: an email, or a token with four digits or more (ids, zips, phone numbers, card numbers).
_VALUE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|#?[A-Za-z_]*\d[\w-]*\d{3}[\w-]*")


def _action(reply: UserReply) -> Any:
    if not reply.tool_calls:
        return reply.content
    return {"role": "assistant", "content": reply.content, "tool_calls": [c.model_dump() for c in reply.tool_calls]}


class SimulatorPlayer:
    """Plays the customer with ``simulator``, fed only what the user-side env shows: the agent's messages (the
    ``user`` role of the observation) and its own tools' results (``tool``)."""

    def __init__(self, simulator: UserSimulator) -> None:
        self.simulator = simulator
        self._view: list[Any] = []
        self._names: dict[str, str] = {}

    async def start(self, task: Task, info: dict[str, Any], seed: int | None = None) -> Any:
        self._view, self._names = [], {}
        return self._said(await self.simulator.start(task, seed=seed, tools=info.get("tools") or None))

    async def act(self, observation: list[dict[str, Any]]) -> Any:
        for message in observation:
            if message["role"] == "user":
                self._view.append(AssistantMessage(content=message.get("content") or ""))
            elif message["role"] == "tool":
                self._view.append(ToolMessage(tool_call_id=message["tool_call_id"], content=message["content"],
                                              name=self._names.get(message["tool_call_id"]), requestor="user"))
        return self._said(await self.simulator.respond(list(self._view)))

    def _said(self, reply: UserReply) -> Any:
        self._view.append(UserMessage(content=reply.content, tool_calls=reply.tool_calls or None))
        self._names.update({c.id: c.function.name for c in reply.tool_calls})
        return _action(reply)


class _Altered(SimulatorPlayer):
    """The scenario user with one thing changed in what it says (``alter(text, turn) -> text``)."""

    def __init__(self, alter: Callable[[str, int], str]) -> None:
        from mua_gym.user_sims.scenario import ScenarioUser

        super().__init__(ScenarioUser())
        self.alter, self.turn = alter, 0

    async def start(self, task: Task, info: dict[str, Any], seed: int | None = None) -> Any:
        self.turn = 0
        return self._change(await super().start(task, info, seed))

    async def act(self, observation: list[dict[str, Any]]) -> Any:
        self.turn += 1
        return self._change(await super().act(observation))

    def _change(self, action: Any) -> Any:
        text = action if isinstance(action, str) else action.get("content") or ""
        altered = self.alter(text, self.turn)
        return action if altered == text else altered  # (an altered phone action is said in words instead)


class _Invents:
    """Replaces the first value the user gives with one of the same shape that no scenario holds."""

    def __init__(self) -> None:
        self.done = False

    def __call__(self, text: str, turn: int) -> str:
        if self.done or (found := _VALUE.search(text)) is None:
            return text
        self.done = True
        value = found.group(0)
        fake = "zz" + value if "@" in value else "".join("9" if ch.isdigit() else ch for ch in value)
        return text.replace(value, fake, 1)


class _Fixed:
    """Says ``opening`` (the task's instructions where None), then ``reply`` to everything."""

    def __init__(self, reply: str, dump: bool) -> None:
        self.reply, self.dump = reply, dump

    async def start(self, task: Task, info: dict[str, Any], seed: int | None = None) -> Any:
        s = task.user_scenario
        return " ".join(filter(None, (s.instructions, s.known_info))) if self.dump else "Hi."

    async def act(self, observation: list[dict[str, Any]]) -> Any:
        return self.reply


def _early_stop(text: str, turn: int) -> str:
    return STOP_TOKENS[0] if turn == 1 else text


#: The reference users (see the module docstring).
REFERENCE_USERS = ("scenario", "ok", "dump", "invent", "early_stop")


def make_player(spec: str, **kwargs: Any) -> Any:
    """A player: one of :data:`REFERENCE_USERS`, or a user simulator spec (``"litellm:<model>"``, ``"scripted"``;
    ``kwargs`` are its keywords) played through :class:`SimulatorPlayer`."""
    from mua_gym.user_sims.scenario import ScenarioUser

    if spec == "scenario":
        return SimulatorPlayer(ScenarioUser(**kwargs))
    if spec in ("ok", "dump"):
        return _Fixed("ok", dump=spec == "dump")
    if spec == "invent":
        return _Altered(_Invents())
    if spec == "early_stop":
        return _Altered(_early_stop)
    from mua_gym.user_sims import make_user

    return SimulatorPlayer(make_user(spec, **kwargs))


async def play_episode(env: Any, player: Any, seed: int | None = None,
                       options: dict[str, Any] | None = None) -> tuple[float, dict[str, Any]]:
    """Plays one episode of the :class:`~mua_gym.eval.user_side.AsyncUserEnv` ``env`` with ``player``; returns the
    reward and the last step's ``info``. A player that fails (a user model's call) ends its episode void, with
    ``info["void"]`` saying why: it never ends the run."""
    observation, info = await env.reset(seed=seed, options=options)
    try:
        action = await player.start(env.core.task, info, seed)
        while True:
            observation, reward, terminated, truncated, info = await env.step(action)
            if terminated or truncated:
                return reward, info
            action = await player.act(observation)
    except Exception as exc:
        await env.finish("user_error")
        return 0.0, {"void": f"user_error: {type(exc).__name__}: {exc}"[:500],
                     "reward_info": env.trajectory().reward_info}
