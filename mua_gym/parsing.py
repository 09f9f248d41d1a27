"""Turning whatever an agent sends into one :class:`AssistantMessage`.

``step()`` accepts an OpenAI-style assistant message dict, an :class:`AssistantMessage`, a tool call (dict
or model) or a list of them, or a raw model string. Raw strings go through a parser:

- ``"hermes"``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (Hermes, Qwen 2.5/3);
- ``"json"``: the whole text is one ``{"name": ..., "arguments": ...}`` object (or a list of them);
- ``"text"``: everything is a message to the user;
- ``"auto"`` (default): hermes blocks if any, else a bare JSON call, else text.

Any callable ``str -> AssistantMessage`` is a parser too. ``<think>...</think>`` is always split off into
``reasoning`` first. Broken calls are kept as calls (with the raw text as arguments) so that the world
answers them with an ``Error:`` tool message instead of them silently turning into chat.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Union

from pydantic import ValidationError

from mua_gym.messages import AssistantMessage, FunctionCall, ToolCall

__all__ = ["ActionError", "Parser", "get_parser", "split_reasoning", "to_assistant_message"]

Parser = Callable[[str], AssistantMessage]

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
MALFORMED = "<malformed>"


class ActionError(ValueError):
    """An action that cannot be read as an assistant message at all (wrong role, wrong type)."""


def split_reasoning(text: str) -> tuple[str, str | None]:
    """(visible text, reasoning) for text that may hold ``<think>`` blocks (or an unopened ``</think>``)."""
    parts = [m.strip() for m in _THINK.findall(text)]
    visible = _THINK.sub("", text)
    if "</think>" in visible:  # templates that open the think block in the prompt leave only its end
        head, _, visible = visible.rpartition("</think>")
        parts.insert(0, head.replace("<think>", "").strip())
    visible = visible.replace("<think>", "")
    reasoning = "\n".join(p for p in parts if p) or None
    return visible.strip(), reasoning


def _call_from_obj(obj: Any, call_id: str) -> ToolCall:
    """A tool call from a decoded ``{"name", "arguments"}`` (or OpenAI ``{"function": ...}``) object."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ToolCall(id=call_id, function=FunctionCall(name=MALFORMED, arguments=json.dumps(obj)[:2000]))
    args = obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(args, str):
        args = json.dumps(args)
    return ToolCall(id=call_id, function=FunctionCall(name=obj["name"], arguments=args))


def parse_hermes(text: str) -> AssistantMessage:
    visible, reasoning = split_reasoning(text)
    blocks = _TOOL_CALL.findall(visible)
    if not blocks:
        return AssistantMessage(content=visible, reasoning=reasoning)
    calls = []
    for i, block in enumerate(blocks):
        try:
            obj = json.loads(block.strip())
        except (json.JSONDecodeError, RecursionError):
            calls.append(ToolCall(id="", function=FunctionCall(name=MALFORMED, arguments=block.strip()[:2000])))
            continue
        calls.append(_call_from_obj(obj, ""))
    content = _TOOL_CALL.sub("", visible).strip() or None
    return AssistantMessage(content=content, tool_calls=calls, reasoning=reasoning)


def _bare_json(visible: str) -> list[Any] | None:
    body = visible.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    if not body or body[0] not in "[{":
        return None
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        return None
    items = obj if isinstance(obj, list) else [obj]
    if items and all(isinstance(o, dict) and ("name" in o or "function" in o) for o in items):
        return items
    return None


def parse_json(text: str) -> AssistantMessage:
    visible, reasoning = split_reasoning(text)
    items = _bare_json(visible)
    if items is None:
        return AssistantMessage(content=visible, reasoning=reasoning)
    return AssistantMessage(tool_calls=[_call_from_obj(o, "") for o in items],
                            reasoning=reasoning)


def parse_text(text: str) -> AssistantMessage:
    visible, reasoning = split_reasoning(text)
    return AssistantMessage(content=visible, reasoning=reasoning)


def parse_auto(text: str) -> AssistantMessage:
    if "<tool_call>" in text:
        return parse_hermes(text)
    return parse_json(text)


PARSERS: dict[str, Parser] = {"auto": parse_auto, "hermes": parse_hermes, "json": parse_json, "text": parse_text}


def get_parser(parser: str | Parser) -> Parser:
    if callable(parser):
        return parser
    try:
        return PARSERS[parser]
    except KeyError:
        raise ValueError(f"unknown parser {parser!r}; choose from {sorted(PARSERS)} or pass a callable") from None


ActionLike = Union[str, dict[str, Any], AssistantMessage, ToolCall, list[Any]]


def to_assistant_message(action: Any, parser: Parser, turn: int) -> AssistantMessage:
    """Reads any accepted action form; raises :class:`ActionError` only for wrong types or roles."""
    owned = True  # False: the caller's own objects, which are copied before any change
    if isinstance(action, str):
        message = parser(action)
    elif isinstance(action, AssistantMessage):
        message, owned = action, False
    elif isinstance(action, ToolCall):
        message, owned = AssistantMessage(tool_calls=[action]), False
    elif isinstance(action, dict):
        message = _from_dict(action)
    elif isinstance(action, (list, tuple)):
        message = AssistantMessage(tool_calls=[_call_from_any(a, i) for i, a in enumerate(action)])
        if not message.tool_calls:
            raise ActionError("an empty list is not an action")
    else:
        raise ActionError(f"an action must be a string, a message dict or tool calls, not {type(action).__name__}")
    return _with_ids(_strip_think(message), turn, owned)


def _from_dict(data: dict[str, Any]) -> AssistantMessage:
    role = data.get("role")
    if role is None and ("function" in data or "name" in data):
        return AssistantMessage(tool_calls=[_call_from_any(data, 0)])
    if role != "assistant":
        raise ActionError(f"an action message must have role 'assistant', not {role!r}")
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        if isinstance(content, list):  # OpenAI content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        else:
            raise ActionError("assistant content must be a string")
    calls = [_call_from_any(c, i) for i, c in enumerate(data.get("tool_calls") or [])]
    return AssistantMessage(content=content, tool_calls=calls or None, reasoning=data.get("reasoning_content"))


def _call_from_any(item: Any, index: int) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if not isinstance(item, dict):
        raise ActionError(f"a tool call must be a dict, not {type(item).__name__}")
    call = _call_from_obj(item, str(item.get("id") or ""))
    if isinstance(item.get("function"), dict) and "arguments" in item["function"]:
        raw = item["function"]["arguments"]
        if not isinstance(raw, str):
            raw = json.dumps(raw)
        call = ToolCall(id=call.id, function=FunctionCall(name=call.function.name, arguments=raw))
    return call


def _strip_think(message: AssistantMessage) -> AssistantMessage:
    if message.content and ("<think>" in message.content or "</think>" in message.content):
        visible, reasoning = split_reasoning(message.content)
        joined = "\n".join(r for r in (message.reasoning, reasoning) if r) or None
        return message.model_copy(update={"content": visible, "reasoning": joined})
    return message


def _with_ids(message: AssistantMessage, turn: int, owned: bool) -> AssistantMessage:
    """Gives every call a unique id; the caller's own ids are kept."""
    if not message.tool_calls:
        return message
    seen: set[str] = set()
    for i, call in enumerate(message.tool_calls):
        if not call.id or call.id in seen:
            if not owned:
                message, owned = message.model_copy(deep=True), True
            message.tool_calls[i].id = f"call_{turn}_{i}"  # type: ignore[index]
        seen.add(message.tool_calls[i].id)  # type: ignore[index]
    return message


def validate_action_dict(data: Any) -> bool:
    try:
        to_assistant_message(data, parse_text, 0)
    except (ActionError, ValidationError, TypeError):
        return False
    return True
