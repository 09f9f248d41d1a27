"""Turning whatever an agent sends into one :class:`AssistantMessage`.

``step()`` accepts an OpenAI-style assistant message dict, an :class:`AssistantMessage`, a tool call (dict
or model) or a list of them, or a raw model string. Raw strings go through a parser:

- ``"hermes"``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (Hermes, Qwen 2.5/3);
- ``"json"``: the whole text is one ``{"name": ..., "arguments": ...}`` object (or a list of them);
- ``"text"``: everything is a message to the user;
- ``"auto"`` (default): hermes blocks if any, else a bare JSON call, else text.

Any callable ``str -> AssistantMessage`` is a parser too. ``<think>...</think>`` is always split off into
``reasoning`` first. Broken calls are kept as calls (with the raw text as arguments) so that the world
answers them with an ``Error:`` tool message instead of them silently turning into chat (a block that is no
JSON keeps its whole text, so that the record holds what the model wrote).

Every scan here is linear in the action's length. An action is refused whole (:class:`ActionError`, which
``step`` reports as ``info["error"]``) when its form is wrong, when it makes more than :data:`MAX_TOOL_CALLS`
calls, or when a call's arguments, given as Python objects, cannot be written as JSON (circular, nested too
deeply, an integer past Python's int-from-str limit).
"""

from __future__ import annotations

from typing import Any, Callable, Union

from pydantic import ValidationError

from mua_gym.jsonsafe import JSONError, clean_text, dumps, loads, loads_shape
from mua_gym.messages import AssistantMessage, FunctionCall, ToolCall, split_reasoning, tag_blocks

__all__ = ["ActionError", "MAX_TOOL_CALLS", "Parser", "clean_call", "get_parser", "malformed_reason",
           "split_reasoning", "to_assistant_message"]

Parser = Callable[[str], AssistantMessage]

MALFORMED = "<malformed>"
#: The most tool calls one message may make: more is refused whole (a flood of calls is no request to serve).
MAX_TOOL_CALLS = 256


class ActionError(ValueError):
    """An action that cannot be read as an assistant message at all (wrong role, wrong type)."""


def malformed_reason(text: str) -> str:
    """Why ``text``, the arguments kept for a :data:`MALFORMED` call, is no tool call."""
    try:
        loads(text)
    except JSONError as exc:
        return str(exc)
    return "not an object with a string 'name'"


def _check_count(calls: int) -> None:
    if calls > MAX_TOOL_CALLS:
        raise ActionError(f"more than {MAX_TOOL_CALLS} tool calls in one message")


def _shown(obj: Any) -> str:
    """At most 2,000 characters of ``obj`` as JSON, for the error a malformed call gets."""
    try:
        return dumps(obj)[:2000]
    except JSONError as exc:
        return f"({type(obj).__name__} that is not JSON: {exc})"


def _arguments_text(name: str, args: Any) -> str:
    """``args`` as the JSON text of a call's arguments; raises :class:`ActionError` where it has none."""
    if isinstance(args, str):
        return args
    try:
        return dumps(args)
    except JSONError as exc:
        raise ActionError(f"the arguments of {clean_text(name)[:100]!r} cannot be written as JSON: {exc}") from None


def _call_from_obj(obj: Any, call_id: str) -> ToolCall:
    """A tool call from a decoded ``{"name", "arguments"}`` (or OpenAI ``{"function": ...}``) object."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ToolCall(id=call_id, function=FunctionCall(name=MALFORMED, arguments=_shown(obj)))
    args = _arguments_text(obj["name"], obj.get("arguments", obj.get("parameters", {})))
    return ToolCall(id=call_id, function=FunctionCall(name=obj["name"], arguments=args))


def parse_hermes(text: str) -> AssistantMessage:
    visible, reasoning = split_reasoning(text)
    blocks, rest = tag_blocks(visible, "<tool_call>", "</tool_call>", to_end=True, limit=MAX_TOOL_CALLS)
    _check_count(len(blocks))
    if not blocks:
        return AssistantMessage(content=visible, reasoning=reasoning)
    calls = []
    for block in blocks:
        try:
            obj = loads(block.strip())
        except JSONError:
            calls.append(_malformed(block.strip()))
            continue
        try:
            calls.append(_call_from_obj(obj, ""))
        except ActionError:  # arguments nested to the brink of the decoder's depth may not encode again
            calls.append(_malformed(block.strip()))
    return AssistantMessage(content=rest.strip() or None, tool_calls=calls, reasoning=reasoning)


def _bare_json(visible: str) -> list[ToolCall] | None:
    """The calls of a text that is one bare JSON call (or a list of them); None for a text that is not."""
    body = visible.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    if not body or body[0] not in "[{":
        return None
    try:
        obj = loads(body)
    except JSONError as exc:
        return [_malformed(body)] if exc.well_formed and _looks_like_calls(body) else None
    if not _looks_like_calls(obj):
        return None
    items = obj if isinstance(obj, list) else [obj]
    _check_count(len(items))
    return [_call_from_obj(o, "") for o in items]


def _looks_like_calls(obj: Any) -> bool:
    """Whether decoded JSON (or, for a text, its structure with every number read as 0) is a call or calls."""
    if isinstance(obj, str):
        try:
            obj = loads_shape(obj)
        except JSONError:
            return False
    items = obj if isinstance(obj, list) else [obj]
    return bool(items) and all(isinstance(o, dict) and ("name" in o or "function" in o) for o in items)


def _malformed(text: str) -> ToolCall:
    """A call the world answers with an error that says why ``text`` is not a call (see :func:`malformed_reason`)."""
    return ToolCall(id="", function=FunctionCall(name=MALFORMED, arguments=text))


def parse_json(text: str) -> AssistantMessage:
    visible, reasoning = split_reasoning(text)
    calls = _bare_json(visible)
    if calls is None:
        return AssistantMessage(content=visible, reasoning=reasoning)
    return AssistantMessage(tool_calls=calls, reasoning=reasoning)


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
    """Reads any accepted action form, its text made writable as UTF-8 (lone surrogates become U+FFFD);
    raises :class:`ActionError` for wrong types or roles and for arguments that cannot be written as JSON."""
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
        _check_count(len(action))
        message = AssistantMessage(tool_calls=[_call_from_any(a, i) for i, a in enumerate(action)])
        if not message.tool_calls:
            raise ActionError("an empty list is not an action")
    else:
        raise ActionError(f"an action must be a string, a message dict or tool calls, not {type(action).__name__}")
    _check_count(len(message.tool_calls or ()))  # a custom parser's or the caller's own message
    message, owned = _clean(message, owned)
    return _with_ids(_strip_think(message), turn, owned)


def _described(value: Any) -> str:
    """A short, always printable name for what an agent sent (a repr can raise or run long on agent data)."""
    if isinstance(value, str):
        return repr(clean_text(value[:60]))
    return "None" if value is None else f"a {type(value).__name__}"


def _from_dict(data: dict[str, Any]) -> AssistantMessage:
    role = data.get("role")
    if role is None and ("function" in data or "name" in data):
        return AssistantMessage(tool_calls=[_call_from_any(data, 0)])
    if role != "assistant":
        raise ActionError(f"an action message must have role 'assistant', not {_described(role)}")
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        if not isinstance(content, list):
            raise ActionError("assistant content must be a string")
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]  # OpenAI content parts
        if not all(isinstance(p, str) for p in parts):
            raise ActionError("the text of an assistant content part must be a string")
        content = "".join(parts)
    reasoning = data.get("reasoning_content")
    if reasoning is not None and not isinstance(reasoning, str):
        raise ActionError("reasoning_content must be a string")
    raw_calls = data.get("tool_calls") or []
    if not isinstance(raw_calls, (list, tuple)):
        raise ActionError(f"tool_calls must be a list, not {_described(raw_calls)}")
    _check_count(len(raw_calls))
    calls = [_call_from_any(c, i) for i, c in enumerate(raw_calls)]
    return AssistantMessage(content=content, tool_calls=calls or None, reasoning=reasoning)


def _call_from_any(item: Any, index: int) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if not isinstance(item, dict):
        raise ActionError(f"a tool call must be a dict, not {type(item).__name__}")
    call_id = item.get("id")
    call = _call_from_obj(item, call_id if isinstance(call_id, str) else "")  # other ids are replaced
    if call.function.name == MALFORMED and isinstance(item.get("function"), dict) and "arguments" in item["function"]:
        raw = _arguments_text(call.function.name, item["function"]["arguments"])
        call = ToolCall(id=call.id, function=FunctionCall(name=call.function.name, arguments=raw))
    return call


def _clean(message: AssistantMessage, owned: bool) -> tuple[AssistantMessage, bool]:
    """``message`` with every text in it passed through :func:`clean_text`: itself where none changes, else a new
    message (which shares the unchanged calls, so it is owned only if ``message`` was)."""
    calls = message.tool_calls or []
    if (message.content is None or message.content.isascii()) and (
            message.reasoning is None or message.reasoning.isascii()):
        for call in calls:  # the common case, checked without a call per text (this is on every step)
            if not (call.id.isascii() and call.function.name.isascii() and call.function.arguments.isascii()):
                break
        else:
            return message, owned
    content = clean_text(message.content) if message.content is not None else None
    reasoning = clean_text(message.reasoning) if message.reasoning is not None else None
    cleaned = [clean_call(c) for c in calls]
    if content is message.content and reasoning is message.reasoning and all(a is b for a, b in zip(cleaned, calls)):
        return message, owned
    return AssistantMessage(content=content, tool_calls=cleaned or None, reasoning=reasoning), owned


def clean_call(call: ToolCall) -> ToolCall:
    """``call`` with its id, name and arguments passed through :func:`clean_text` (a new call if any changed)."""
    id_, name, arguments = clean_text(call.id), clean_text(call.function.name), clean_text(call.function.arguments)
    if id_ is call.id and name is call.function.name and arguments is call.function.arguments:
        return call
    return ToolCall(id=id_, function=FunctionCall(name=name, arguments=arguments))


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
