"""Chat messages, in the OpenAI chat-completions shape.

Observations, trajectories and user simulators all speak these models. ``to_openai()`` gives the plain
dict that an OpenAI-compatible API (and every RL trainer) expects; ``message_from_openai`` reads one back.
``split_reasoning`` separates a model's ``<think>`` blocks from what it says, for the env and the LLM user alike.
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


def tool_reply(tool_call_id: str, content: str) -> dict[str, Any]:
    """The OpenAI chat dict of a tool's answer to one call."""
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


def to_openai(message: BaseModel) -> dict[str, Any]:
    """The plain OpenAI chat dict for a message: only the keys the API knows, no ``None`` values."""
    if isinstance(message, ToolMessage):
        return tool_reply(message.tool_call_id, message.content)
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


def tag_blocks(text: str, open_tag: str, close_tag: str, to_end: bool,
            limit: int | None = None) -> tuple[list[str], str]:
    """(the insides of ``open_tag ... close_tag`` blocks, the text around them), in one left-to-right pass.

    A block ends at the first ``close_tag`` after its opening; an unclosed one runs to the end of the text if
    ``to_end``, else it and what follows are left as text. ``str.find`` keeps this linear on any input (a lazy
    regex rescans the rest of the text from every opening tag that has no closing one). With ``limit``, the
    scan stops after ``limit + 1`` blocks.
    """
    inside: list[str] = []
    outside: list[str] = []
    pos = 0
    while limit is None or len(inside) <= limit:
        start = text.find(open_tag, pos)
        if start < 0:
            break
        end = text.find(close_tag, start + len(open_tag))
        if end < 0:
            if to_end:
                outside.append(text[pos:start])
                inside.append(text[start + len(open_tag):])
                pos = len(text)
            break  # without a closing tag further on, no later opening can close either
        outside.append(text[pos:start])
        inside.append(text[start + len(open_tag):end])
        pos = end + len(close_tag)
    outside.append(text[pos:])
    return inside, "".join(outside)


def split_reasoning(text: str) -> tuple[str, str | None]:
    """(visible text, reasoning) for text that may hold ``<think>`` blocks (or an unopened ``</think>``)."""
    if "<think>" not in text and "</think>" not in text:
        return text.strip(), None
    found, visible = tag_blocks(text, "<think>", "</think>", to_end=False)
    parts = [p.strip() for p in found]
    if "</think>" in visible:  # templates that open the think block in the prompt leave only its end
        head, _, visible = visible.rpartition("</think>")
        parts.insert(0, head.replace("<think>", "").strip())
    visible = visible.replace("<think>", "")
    reasoning = "\n".join(p for p in parts if p) or None
    return visible.strip(), reasoning
