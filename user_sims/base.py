"""The user-simulator protocol.

A simulator plays the customer of one episode at a time. The environment calls :meth:`start` once per
episode, then :meth:`respond` each time the agent speaks. ``respond`` sees the visible conversation from
the user's side: the agent's texts (never its tool calls, tool results or reasoning), the user's own
messages, and, in dual-control domains, the user's own tool calls and their results.

A reply either asks to run user tools (``tool_calls``; the environment runs them with
``requestor="user"`` and calls ``respond`` again with the results appended) or says something
(``content``). A reply that contains a stop token ends the episode.

Simulators are async because LLM users are network-bound; a simulator must never block the event loop.
A simulator that cannot answer raises :class:`UserSimulatorError`; the episode then ends truncated with
``termination_reason="user_error"``.
"""

from __future__ import annotations

import re

import abc
from typing import Any, ClassVar, Coroutine, Sequence, TypeVar

from pydantic import BaseModel, Field

from mua_gym.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from mua_gym.task import Task

__all__ = ["STOP_TOKENS", "UserReply", "UserSimulator", "UserSimulatorError", "UserView", "for_the_user",
           "run_immediate"]

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)

#: The user's control tokens (any spacing), chat-template role markers, and transcript role labels at a line's
#: start: what agent text could use to speak for the user or end the episode in the user's name.
_IMPERSONATION = re.compile(
    r"#{3}[ \t]*(?:STOP|TRANSFER|OUT-OF-SCOPE)[ \t]*#{3}|<\|[^|<>\n]{0,40}\|>|\[/?INST\]|</?s>|"
    r"^[ \t]*(?:user|customer|system|assistant|agent|human)[ \t]*:", re.IGNORECASE | re.MULTILINE)


def for_the_user(text: str) -> str:
    """The agent's ``text`` as a user simulator may read it: control tokens and role markers removed (linear
    time), so that no agent ends the episode or speaks in the user's name."""
    return _IMPERSONATION.sub("", text)


#: What a simulator sees: the agent's texts, its own messages, its own tool results.
UserView = Sequence[AssistantMessage | UserMessage | ToolMessage]


class UserReply(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: Token usage and cost of producing this reply, when a model produced it.
    usage: dict[str, Any] = Field(default_factory=dict)
    #: The user ran out of patience and leaves; the episode ends (``termination_reason="user_walked_away"``).
    walked_away: bool = False
    #: The agent asked for a fix the user found already in place ("it's already off"): a request made without a
    #: diagnosis, which strict scoring holds against the agent (a simulator that can tell sets it).
    needless: bool = False

    @property
    def stop_token(self) -> str | None:
        return next((t for t in STOP_TOKENS if t in self.content), None)


class UserSimulatorError(RuntimeError):
    """The simulator could not produce a reply (after its own retries)."""


class UserSimulator(abc.ABC):
    """Base class of user simulators. One instance serves one episode at a time."""

    #: Names the simulator in trajectories (``"scripted"``, ``"litellm:<model>"``, ...).
    name: str = "user"
    #: True where ``start`` and ``respond`` never wait on anything (rule-driven simulators): the synchronous
    #: ``MuaEnv`` then runs them without an event loop, which costs more than such a reply itself.
    immediate: ClassVar[bool] = False
    #: False where the simulator never runs the user's own tools (dual-control domains need a user that does).
    acts: ClassVar[bool] = True

    @abc.abstractmethod
    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        """Begins an episode of ``task`` and returns the user's opening message.

        ``tools`` are the OpenAI schemas of the user's own tools in dual-control domains.
        """

    @abc.abstractmethod
    async def respond(self, view: UserView) -> UserReply:
        """The user's next reply to the conversation so far."""

    def refuses(self, task: Task) -> str | None:
        """Why this simulator cannot play ``task`` (its ``start`` would raise), or None where it can. Evaluations
        leave such tasks out and list them."""
        return None

    async def retry(self, view: UserView, problem: str) -> UserReply | None:
        """Another reply in place of the last one, which broke the user's scenario as ``problem`` says (one line);
        None where the simulator cannot answer otherwise (a rule-driven one answers the same each time).

        The env asks for it with ``on_user_fault="retry"`` and drops the faulty reply. ``view`` is the one the faulty
        reply answered; the retried reply must not count as another turn of the user's.
        """
        return None

    def check(self) -> None:
        """Checks the simulator's configuration before any episode; returns None or raises a ``ValueError``.

        Model-driven simulators make one probe call here (``make(..., check_models=True)``); rule-driven ones
        have nothing to check.
        """

    async def aclose(self) -> None:
        """Releases any resources (connections, servers)."""


T = TypeVar("T")


def run_immediate(coro: Coroutine[Any, Any, T]) -> T:
    """The value of a simulator's coroutine that never suspends (see ``UserSimulator.immediate``), run without an
    event loop; raises RuntimeError if it does suspend."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a user simulator marked immediate waited on something; mark it immediate = False")
