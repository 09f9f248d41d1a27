"""Chat messages, in the OpenAI chat-completions shape.

Observations, trajectories and user simulators all speak these models. ``to_openai()`` gives the plain
dict that an OpenAI-compatible API (and every RL trainer) expects; ``message_from_openai`` reads one back.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from mua_gym.jsonsafe import JSONError, loads


class FunctionCall(BaseModel):
    """The function part of a tool call. ``arguments`` is a JSON string, as in the OpenAI API."""

    model_config = ConfigDict(extra="ignore")

    name: str
    arguments: str = "{}"


class ToolCall(BaseModel):
    """One tool call requested by the assistant (or, in dual-control domains, by the user)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    @classmethod
    def make(cls, id: str, name: str, arguments: dict[str, Any] | str) -> "ToolCall":
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(id=id, function=FunctionCall(name=name, arguments=args))

    @property
    def name(self) -> str:
        return self.function.name


class SystemMessage(BaseModel):
    role: Literal["system"] = "system"
    content: str


class UserMessage(BaseModel):
    role: Literal["user"] = "user"
    content: str
    # Tool calls a dual-control user made in its own turn; hidden from the agent.
    tool_calls: list[ToolCall] | None = None


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    # Text inside <think>...</think>, kept for the trajectory but never shown to the user simulator.
    reasoning: str | None = None

    @property
    def text(self) -> str:
        return self.content or ""


class ToolMessage(BaseModel):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str
    name: str | None = None
    error: bool = False
    requestor: Literal["assistant", "user"] = "assistant"


Message = Annotated[
    Union[SystemMessage, UserMessage, AssistantMessage, ToolMessage], Field(discriminator="role")
]
_MESSAGE_ADAPTER: TypeAdapter[Any] = TypeAdapter(Message)


def message_from_openai(data: dict[str, Any]) -> SystemMessage | UserMessage | AssistantMessage | ToolMessage:
    """Reads one OpenAI-style message dict (extra keys are ignored)."""
    return _MESSAGE_ADAPTER.validate_python(data)


def to_openai(message: BaseModel) -> dict[str, Any]:
    """The plain OpenAI chat dict for a message: only the keys the API knows, no ``None`` values."""
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [tc.model_dump() for tc in message.tool_calls]
        return out
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    raise TypeError(f"not a chat message: {type(message).__name__}")


def arguments_object(text: str) -> Any:
    """A tool call's JSON arguments as a dict (what chat templates expect), or the text itself where it holds no
    JSON object (a malformed call keeps what the model wrote)."""
    try:
        value = loads(text)
    except JSONError:
        return text
    return value if isinstance(value, dict) else text


def refusal_messages(error: str, tool_call_ids: "list[str] | tuple[str, ...]" = (), role: str = "tool"
                     ) -> list[dict[str, Any]]:
    """What to show a model whose action the env could not read at all (``step`` returned no messages and
    ``info["error"]``): one tool message per call it made, since chat APIs refuse a call left unanswered, or
    else one message of ``role`` (``"user"`` for APIs that take tool messages only after calls)."""
    text = f"Error: {error}"
    if tool_call_ids:
        return [{"role": "tool", "tool_call_id": i, "content": text} for i in tool_call_ids]
    return [{"role": role, "content": text}]


def as_recorded(reply: dict[str, Any], recorded: AssistantMessage) -> dict[str, Any]:
    """A model's reply with its calls as the env recorded them: the env's ids (it renames missing and repeated
    ones), or, for calls the env read out of the text, the env's message, so each tool message answers a call."""
    calls = reply.get("tool_calls") or []
    ids = [c.id for c in recorded.tool_calls or []]
    if not calls:
        return to_openai(recorded) if ids else reply
    if len(ids) != len(calls) or all(isinstance(c, dict) and c.get("id") == i for c, i in zip(calls, ids)):
        return reply
    return {**reply, "tool_calls": [{**c, "id": i} for c, i in zip(calls, ids)]}


def refused_reply(reply: dict[str, Any], error: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the reply, what answers it) for a reply the env could not read at all: an error tool message per call
    where the calls have distinct ids, else the reply without its calls and the error as a user message."""
    calls = reply.get("tool_calls") or []
    ids = [c.get("id") if isinstance(c, dict) else None for c in calls]
    if calls and all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids):
        return reply, refusal_messages(error, ids)
    return {k: v for k, v in reply.items() if k != "tool_calls"}, refusal_messages(error, role="user")
