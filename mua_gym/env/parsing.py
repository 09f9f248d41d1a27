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

from dataclasses import dataclass
from typing import Any, Callable, Union

from pydantic import ValidationError

from mua_gym.jsonsafe import JSONError, clean_text, dumps, flat_json_copy, loads, loads_shape, plain_object
from mua_gym.messages import AssistantMessage, FunctionCall, ToolCall, split_reasoning, tag_blocks

__all__ = ["ActionError", "MAX_TOOL_CALLS", "ParsedAction", "ParsedCall", "Parser", "clean_call", "get_parser",
           "malformed_reason", "read_action", "split_reasoning", "to_assistant_message"]

Parser = Callable[[str], AssistantMessage]

MALFORMED = "<malformed>"
#: The most tool calls one message may make: more is refused whole (a flood of calls is no request to serve).
MAX_TOOL_CALLS = 256


class ActionError(ValueError):
    """An action that cannot be read as an assistant message at all (wrong role, wrong type)."""


@dataclass(slots=True)
class ParsedCall:
    """One call of an action, as the step runs it and the record keeps it."""

    id: str
    name: str
    #: The arguments' JSON text (a malformed call: what the model wrote); None: not written yet (see
    #: :attr:`arguments`).
    text: str | None
    #: The same arguments as a plain JSON object, where the action held them as one (the world takes them as
    #: they are instead of reading the text again); None: the world reads the text.
    decoded: dict[str, Any] | None = None

    @property
    def arguments(self) -> str:
        """The arguments' JSON text, written from :attr:`decoded` the first time it is asked for."""
        if self.text is None:
            self.text = dumps(self.decoded)
        return self.text

    @classmethod
    def of(cls, call: ToolCall) -> "ParsedCall":
        return cls(call.id, call.function.name, call.function.arguments)

    def tool_call(self) -> ToolCall:
        return ToolCall(id=self.id, function=FunctionCall(name=self.name, arguments=self.arguments))


@dataclass(slots=True)
class ParsedAction:
    """An action read into plain parts; its :class:`AssistantMessage` is built on the first :meth:`message`."""

    content: str | None
    calls: list[ParsedCall]
    reasoning: str | None = None
    #: Whether the message lists its calls where it has none (``tool_calls=[]``, kept as the caller gave it).
    listed: bool = False
    #: The message itself where it was given as one and records as it is.
    built: AssistantMessage | None = None

    @classmethod
    def of(cls, message: AssistantMessage) -> "ParsedAction":
        calls = message.tool_calls
        return cls(message.content, [ParsedCall.of(c) for c in calls or ()], message.reasoning, calls is not None,
                   message)

    def changed(self) -> None:
        """Forgets the message it was given as (a part changed): :meth:`message` builds a new one."""
        self.built = None

    def message(self) -> AssistantMessage:
        if self.built is None:
            calls = [c.tool_call() for c in self.calls]
            self.built = AssistantMessage(content=self.content, tool_calls=calls if calls or self.listed else None,
                                          reasoning=self.reasoning)
        return self.built


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


def _call_from_obj(obj: Any, call_id: str) -> ParsedCall:
    """A call from a decoded ``{"name", "arguments"}`` (or OpenAI ``{"function": ...}``) object."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ParsedCall(call_id, MALFORMED, _shown(obj))
    args = obj.get("arguments", obj.get("parameters", {}))
    flat = flat_json_copy(args)
    if flat is not None:  # (the common arguments: a private copy now, their text only when a record is read)
        return ParsedCall(call_id, obj["name"], None, flat)
    text = _arguments_text(obj["name"], args)
    return ParsedCall(call_id, obj["name"], text, args if text is not args and plain_object(args) else None)


def _read_hermes(text: str) -> ParsedAction:
    visible, reasoning = split_reasoning(text)
    blocks, rest = tag_blocks(visible, "<tool_call>", "</tool_call>", to_end=True, limit=MAX_TOOL_CALLS)
    _check_count(len(blocks))
    if not blocks:
        return ParsedAction(visible, [], reasoning)
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
    return ParsedAction(rest.strip() or None, calls, reasoning, listed=True)


def _bare_json(visible: str) -> list[ParsedCall] | None:
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


def _malformed(text: str) -> ParsedCall:
    """A call the world answers with an error that says why ``text`` is not a call (see :func:`malformed_reason`)."""
    return ParsedCall("", MALFORMED, text)


def _read_json(text: str) -> ParsedAction:
    visible, reasoning = split_reasoning(text)
    calls = _bare_json(visible)
    if calls is None:
        return ParsedAction(visible, [], reasoning)
    return ParsedAction(None, calls, reasoning, listed=True)


def _read_text(text: str) -> ParsedAction:
    visible, reasoning = split_reasoning(text)
    return ParsedAction(visible, [], reasoning)


def _read_auto(text: str) -> ParsedAction:
    if "<tool_call>" in text:
        return _read_hermes(text)
    return _read_json(text)


def parse_hermes(text: str) -> AssistantMessage:
    return _read_hermes(text).message()


def parse_json(text: str) -> AssistantMessage:
    return _read_json(text).message()


def parse_text(text: str) -> AssistantMessage:
    return _read_text(text).message()


def parse_auto(text: str) -> AssistantMessage:
    return _read_auto(text).message()


PARSERS: dict[str, Parser] = {"auto": parse_auto, "hermes": parse_hermes, "json": parse_json, "text": parse_text}
#: The built-in parsers' readers, which keep each call's decoded arguments (a custom parser gives only text).
_READERS: dict[Parser, Callable[[str], ParsedAction]] = {
    parse_auto: _read_auto, parse_hermes: _read_hermes, parse_json: _read_json, parse_text: _read_text}


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
    return read_action(action, parser, turn).message()


def read_action(action: Any, parser: Parser, turn: int) -> ParsedAction:
    """:func:`to_assistant_message` as the step runs it: the calls as plain parts, each with its arguments decoded
    where the action held them as objects, and the message built only when :meth:`ParsedAction.message` asks."""
    if isinstance(action, dict):
        parsed = _from_dict(action)
    elif isinstance(action, str):
        reader = _READERS.get(parser)
        parsed = reader(action) if reader is not None else _read_with(parser, action)
    elif isinstance(action, AssistantMessage):
        parsed = ParsedAction.of(action)
    elif isinstance(action, ToolCall):
        parsed = ParsedAction(None, [ParsedCall.of(action)], listed=True)
    elif isinstance(action, (list, tuple)):
        _check_count(len(action))
        parsed = ParsedAction(None, [_call_from_any(a, i) for i, a in enumerate(action)], listed=True)
        if not parsed.calls:
            raise ActionError("an empty list is not an action")
    else:
        raise ActionError(f"an action must be a string, a message dict or tool calls, not {type(action).__name__}")
    if len(parsed.calls) > MAX_TOOL_CALLS:  # a custom parser's or the caller's own message
        _check_count(len(parsed.calls))
    _clean(parsed)
    _strip_think(parsed)
    _with_ids(parsed, turn)
    return parsed


def _read_with(parser: Parser, text: str) -> ParsedAction:
    """``text`` read by a caller's own parser; ActionError where it fails or gives no :class:`AssistantMessage` (an
    agent's text must not raise out of ``step`` through it)."""
    try:
        message = parser(text)
    except Exception as exc:
        raise ActionError(f"the env's parser failed on this text: {type(exc).__name__}: {exc}") from exc
    if not isinstance(message, AssistantMessage):
        raise ActionError(f"the env's parser returned {_described(message)}, not an AssistantMessage")
    return ParsedAction.of(message)


def _described(value: Any) -> str:
    """A short, always printable name for what an agent sent (a repr can raise or run long on agent data)."""
    if isinstance(value, str):
        return repr(clean_text(value[:60]))
    return "None" if value is None else f"a {type(value).__name__}"


def _from_dict(data: dict[str, Any]) -> ParsedAction:
    role = data.get("role")
    if role is None and ("function" in data or "name" in data):
        return ParsedAction(None, [_call_from_any(data, 0)], listed=True)
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
    return ParsedAction(content, [_call_from_any(c, i) for i, c in enumerate(raw_calls)], reasoning)


def _call_from_any(item: Any, index: int) -> ParsedCall:
    if isinstance(item, ToolCall):
        return ParsedCall.of(item)
    if not isinstance(item, dict):
        raise ActionError(f"a tool call must be a dict, not {type(item).__name__}")
    call_id = item.get("id")
    call = _call_from_obj(item, call_id if isinstance(call_id, str) else "")  # other ids are replaced
    if call.name == MALFORMED and isinstance(item.get("function"), dict) and "arguments" in item["function"]:
        call.text = _arguments_text(call.name, item["function"]["arguments"])
    return call


def _clean(parsed: ParsedAction) -> None:
    """Passes every text of ``parsed`` through :func:`clean_text`."""
    calls = parsed.calls
    if (parsed.content is None or parsed.content.isascii()) and (
            parsed.reasoning is None or parsed.reasoning.isascii()):
        for call in calls:  # the common case, checked without a call per text (this is on every step)
            if not (call.id.isascii() and call.name.isascii() and (call.text is None or call.text.isascii())):
                break
        else:
            return
    content = clean_text(parsed.content) if parsed.content is not None else None
    reasoning = clean_text(parsed.reasoning) if parsed.reasoning is not None else None
    changed = content is not parsed.content or reasoning is not parsed.reasoning
    parsed.content, parsed.reasoning = content, reasoning
    for call in calls:
        id_, name, arguments = clean_text(call.id), clean_text(call.name), clean_text(call.arguments)
        if id_ is not call.id or name is not call.name or arguments is not call.arguments:
            call.id, call.name, call.text, changed = id_, name, arguments, True
    if changed:
        parsed.changed()


def clean_call(call: ToolCall) -> ToolCall:
    """``call`` with its id, name and arguments passed through :func:`clean_text` (a new call if any changed)."""
    id_, name, arguments = clean_text(call.id), clean_text(call.function.name), clean_text(call.function.arguments)
    if id_ is call.id and name is call.function.name and arguments is call.function.arguments:
        return call
    return ToolCall(id=id_, function=FunctionCall(name=name, arguments=arguments))


def _strip_think(parsed: ParsedAction) -> None:
    content = parsed.content
    if content and ("<think>" in content or "</think>" in content):
        visible, reasoning = split_reasoning(content)
        parsed.content = visible
        parsed.reasoning = "\n".join(r for r in (parsed.reasoning, reasoning) if r) or None
        parsed.changed()


def _with_ids(parsed: ParsedAction, turn: int) -> None:
    """Gives every call a unique id; the caller's own ids are kept."""
    calls = parsed.calls
    if len(calls) == 1:  # (most actions: nothing to compare the id with)
        if not calls[0].id:
            calls[0].id, parsed.built = f"call_{turn}_0", None
        return
    seen: set[str] = set()
    for i, call in enumerate(calls):
        if not call.id or call.id in seen:
            call.id, parsed.built = f"call_{turn}_{i}", None
        seen.add(call.id)


def validate_action_dict(data: Any) -> bool:
    try:
        read_action(data, parse_text, 0)
    except (ActionError, ValidationError, TypeError):
        return False
    return True
