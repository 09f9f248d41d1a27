"""The full record of one episode, as one JSON line."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from mua_gym.messages import (
    AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage, arguments_object, to_openai,
)

__all__ = ["ChatExample", "Trajectory", "TrajectoryEntry"]


class TrajectoryEntry(BaseModel):
    message: Message
    #: True for the agent's own turns: the only tokens a trainer should put loss on.
    trainable: bool
    #: False for what the agent never saw (a dual-control user's own tool calls and results).
    visible_to_agent: bool = True


class ChatExample(BaseModel):
    """An episode as a trainer reads it: what the agent saw, in order, and which of it the agent wrote."""

    #: The agent-visible messages as OpenAI chat dicts (system, user, assistant, tool); hidden user traffic left out.
    messages: list[dict[str, Any]]
    #: The OpenAI schemas of the agent's tools.
    tools: list[dict[str, Any]]
    #: One flag per message of ``messages``: True exactly for the agent's own turns (the ones to put loss on).
    trainable: list[bool]


class Trajectory(BaseModel):
    task_id: str
    domain: str
    seed: int | None = None
    user: str = ""
    tools: list[dict[str, Any]] = []
    entries: list[TrajectoryEntry] = []
    reward: float | None = None
    reward_info: dict[str, Any] | None = None
    terminated: bool = False
    truncated: bool = False
    termination_reason: str | None = None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    user_tool_calls: int = 0
    usage: dict[str, Any] = {}
    #: With ``perturb=``: ``{"drawn": [what each perturbation drew], "events": [what each did, by turn]}``.
    perturbations: dict[str, Any] | None = None
    #: Every fault of the simulated user's, in order (:class:`mua_gym.env.infos.UserFault` dicts).
    user_faults: list[dict[str, Any]] = []
    #: Why the episode is void (``"user_error: ..."``, ``"user_fault: ..."``), or None: see ``AsyncMuaEnv.void``.
    void: str | None = None

    @property
    def task_reward(self) -> float | None:
        """The binary task reward, whatever reward mode shaped ``reward``: what success is judged on.

        ``None`` while the episode has no reward yet; 0.0 for a truncated one; else ``reward_info["task_reward"]``
        (``reward_info["reward"]`` in records made before reward modes, the same value; ``reward`` in a record
        without ``reward_info``).
        """
        if self.reward is None:
            return None
        if self.truncated:
            return 0.0
        if not self.reward_info:
            return float(self.reward)
        return float(self.reward_info.get("task_reward", self.reward_info.get("reward", 0.0)))

    @property
    def messages(self) -> list[Any]:
        return [e.message for e in self.entries]

    def agent_messages(self) -> list[dict[str, Any]]:
        """The conversation as the agent saw it, as OpenAI chat dicts."""
        return [to_openai(e.message) for e in self.entries if e.visible_to_agent]

    def to_chat(self, arguments: Literal["json", "dict"] = "json") -> ChatExample:
        """The agent's view of the episode with a trainable flag per message (see :class:`ChatExample`).

        ``arguments="json"`` keeps each tool call's arguments as the JSON string the API uses; ``"dict"`` decodes
        them (what most chat templates expect), leaving as a string any the agent wrote that is not a JSON object.
        """
        visible = [e for e in self.entries if e.visible_to_agent]
        messages = [to_openai(e.message) for e in visible]
        if arguments == "dict":
            for message in messages:
                for call in message.get("tool_calls") or ():
                    call["function"]["arguments"] = arguments_object(call["function"]["arguments"])
        elif arguments != "json":
            raise ValueError(f"arguments must be 'json' or 'dict', not {arguments!r}")
        return ChatExample(messages=messages, tools=self.tools, trainable=[e.trainable for e in visible])

    def to_json_line(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json_line(cls, line: str) -> "Trajectory":
        return cls.model_validate_json(line)

    def render_text(self) -> str:
        """A readable transcript."""
        lines = [f"== {self.domain} task {self.task_id} (seed {self.seed}, user {self.user}) =="]
        for e in self.entries:
            lines.append(_line(e.message, e.visible_to_agent))
        for fault in self.user_faults:
            lines.append(f"-- user fault ({fault.get('handled', 'flagged')}) at turn {fault.get('turn')}: "
                         f"{fault.get('kind')}: {fault.get('evidence')}")
        if self.termination_reason:
            void = f"; void ({self.void})" if self.void else ""
            lines.append(f"-- ended: {self.termination_reason}; reward {self.reward}{void}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The episode as HTML (what Jupyter shows): see :func:`mua_gym.env.html_view.trajectory_html`."""
        from mua_gym.env.html_view import trajectory_html

        return trajectory_html(self)


def _line(m: Any, visible: bool) -> str:
    hidden = "" if visible else " (hidden from agent)"
    if isinstance(m, SystemMessage):
        first = m.content.strip().splitlines()[0] if m.content.strip() else ""
        return f"[system] {first[:100]}{' ...' if len(m.content) > len(first) else ''}"
    if isinstance(m, UserMessage):
        calls = "".join(f"\n  -> {c.function.name}({c.function.arguments})" for c in m.tool_calls or [])
        return f"[user{hidden}] {m.content}{calls}"
    if isinstance(m, AssistantMessage):
        calls = "".join(f"\n  -> {c.function.name}({c.function.arguments})" for c in m.tool_calls or [])
        return f"[agent] {m.content or ''}{calls}".rstrip()
    if isinstance(m, ToolMessage):
        return f"[tool {m.name or ''}{hidden}] {m.content[:300]}"
    return str(m)
