"""Tools: plain typed Python functions, described to the model by an OpenAI function schema.

A domain writes its tools like this::

    @tool(kind="write")
    def cancel_order(world: World, order_id: str, reason: str) -> dict:
        '''Cancel a pending order.

        Args:
            order_id: The order's id.
            reason: Why the customer cancels.
        '''

The schema comes from the type hints and the Google-style docstring. A first parameter named ``world`` is
injected by the caller and is not part of the schema. Arguments are validated by pydantic before the
function runs; a function refuses a request by raising :class:`ToolError`.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from mua_gym.jsonsafe import JSONError, clean_text, dumps, loads

ToolKind = Literal["read", "write", "generic"]
#: Who calls a tool: the agent, the simulated user (on its own device), or a task's setup (fault injection).
Requestor = Literal["assistant", "user", "setup"]

__all__ = ["ReadToolWrote", "Requestor", "Tool", "ToolError", "ToolKind", "ToolResult", "Toolkit", "parse_arguments",
           "render_result", "resolve_call", "tool"]


class ToolError(Exception):
    """Raised by a tool to refuse a call; its message reaches the caller as ``Error: <message>``."""


class ReadToolWrote(ToolError):
    """A tool declared ``kind="read"`` wrote rows: the call is undone and answered with this error."""


class ToolResult(BaseModel):
    """What one tool call returned: the text of the tool message, and whether it is an error."""

    model_config = ConfigDict(frozen=True)

    content: str
    error: bool = False

    @classmethod
    def failure(cls, message: str) -> "ToolResult":
        """An error result: ``Error: <message>``, lone surrogates (echoed agent text) made U+FFFD."""
        return cls(content=clean_text(f"Error: {message}"), error=True)


@dataclass(frozen=True)
class Tool:
    """One callable tool: its function, its argument model and its OpenAI schema."""

    name: str
    kind: ToolKind
    function: Callable[..., Any]
    description: str
    arguments_model: type[BaseModel]
    schema: dict[str, Any]
    takes_world: bool

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises :class:`ToolError` describing every problem."""
        if not arguments and not self.schema["function"]["parameters"]["properties"]:
            return {}  # a tool without parameters called without arguments (most phone actions): nothing to check
        try:
            model = self.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(_describe_validation_error(self.name, exc)) from None
        return dict(model.__dict__)  # the fields (extra arguments are refused)


def _describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "missing":
            problems.append(f"missing argument '{where}'")
        elif err["type"] == "extra_forbidden":
            problems.append(f"unexpected argument '{where}'")
        else:
            problems.append(f"argument '{where}': {err['msg']}")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Splits a Google-style docstring into (description, {argument: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section = "description"
    current: str | None = None
    arg_indent = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            section, current, arg_indent = "args", None, None
            continue
        if _SECTION_HEADER.match(line):
            section = "other"
            continue
        if section == "description":
            description.append(line)
        elif section == "args" and line.strip():
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1)
                args[current] = match.group(3).strip()
            elif current is not None:
                args[current] = (args[current] + " " + line.strip()).strip()
    return " ".join(" ".join(description).split()), args


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    # Some OpenAI-compatible servers reject "$ref"; nested argument models are inlined instead.
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_refs(defs[ref[len("#/$defs/"):]], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def make_tool(function: Callable[..., Any], *, kind: ToolKind, name: str | None = None,
              strict: bool = True) -> Tool:
    """Builds a :class:`Tool` from a typed function (see the module docstring)."""
    if kind not in ("read", "write", "generic"):
        raise ValueError(f"tool kind must be read, write or generic, not {kind!r}")
    tool_name = name or function.__name__
    description, arg_docs = parse_docstring(function.__doc__)
    hints = get_type_hints(function)
    params = list(inspect.signature(function).parameters.values())
    takes_world = bool(params) and params[0].name == "world"
    if takes_world:
        params = params[1:]
    fields: dict[str, Any] = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name}: *args and **kwargs are not allowed")
        if p.name not in hints:
            raise TypeError(f"tool {tool_name}: argument '{p.name}' needs a type hint")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=arg_docs.get(p.name)))
    model = create_model(  # type: ignore[call-overload]
        f"{tool_name}_arguments",
        # NaN and infinities are no JSON numbers and no amounts: refused in every float field.
        __config__=ConfigDict(extra="forbid", strict=strict, allow_inf_nan=False),
        **fields,
    )
    parameters = model.model_json_schema()
    defs = parameters.pop("$defs", {})
    parameters = _strip_titles(_inline_refs(parameters, defs))
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    schema = {
        "type": "function",
        "function": {"name": tool_name, "description": description, "parameters": parameters},
    }
    return Tool(tool_name, kind, function, description, model, schema, takes_world)


def tool(kind: ToolKind = "read", *, name: str | None = None,
         strict: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a function as a tool; :class:`Toolkit` collects marked functions from a module."""

    def mark(function: Callable[..., Any]) -> Callable[..., Any]:
        function.__mua_tool__ = make_tool(function, kind=kind, name=name, strict=strict)  # type: ignore[attr-defined]
        return function

    return mark


@dataclass
class Toolkit:
    """An ordered set of tools, looked up by name."""

    tools: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def of(cls, *functions: Callable[..., Any] | Tool) -> "Toolkit":
        kit = cls()
        for f in functions:
            kit.add(f)
        return kit

    @classmethod
    def from_module(cls, module: Any) -> "Toolkit":
        """Every function in ``module`` marked with :func:`tool`, in definition order."""
        marked = [v for v in vars(module).values() if hasattr(v, "__mua_tool__")]
        marked.sort(key=lambda f: f.__code__.co_firstlineno)
        return cls.of(*marked)

    def add(self, item: Callable[..., Any] | Tool) -> None:
        t = item if isinstance(item, Tool) else getattr(item, "__mua_tool__", None)
        if t is None:
            raise TypeError(f"{item!r} is not a tool: decorate it with @tool(...)")
        if t.name in self.tools:
            raise ValueError(f"duplicate tool name {t.name!r}")
        self.tools[t.name] = t

    def names_of(self, kind: str) -> frozenset[str]:
        """The names of the tools of ``kind`` (``"read"``, ``"write"``, ...)."""
        return frozenset(name for name, t in self.tools.items() if t.kind == kind)

    def without(self, names: Iterable[str]) -> "Toolkit":
        drop = set(names)
        return Toolkit({n: t for n, t in self.tools.items() if n not in drop})

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    def names(self) -> list[str]:
        return list(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas, ready for the ``tools=`` argument of a chat completion."""
        return [json.loads(json.dumps(t.schema)) for t in self.tools.values()]


# -- dispatch: from a call as sent to the function and its arguments ----------------------------------------
_CALLERS = {"assistant": "the assistant", "user": "the user"}


def resolve_call(name: Any, arguments: Any, requestor: Any, assistant: Toolkit, user: Toolkit,
                 setup: Toolkit) -> tuple[Tool, dict[str, Any]] | ToolResult:
    """The tool ``requestor`` may call by ``name`` and its validated keyword arguments, or the error to answer.

    ``assistant``, ``user`` and ``setup`` are each requestor's toolkit; a name found only in the other side's kit
    is "not available" (a setup's functions are named to no one, nor theirs to it), any other is "unknown".
    ``arguments`` are a dict, JSON text or None; they are checked against the tool's model.
    """
    if requestor == "assistant":
        kit, other = assistant, user
    elif requestor == "user":
        kit, other = user, assistant
    elif requestor == "setup":
        kit, other = setup, None
    else:
        return ToolResult.failure(f"unknown requestor {requestor!r}")
    found: Tool | None = kit.tools.get(name) if isinstance(name, str) else None
    if found is None:
        if isinstance(name, str) and other is not None and name in other:
            return ToolResult.failure(f"tool '{name}' is not available to {_CALLERS[requestor]}")
        shown = name[:200] + ("..." if len(name) > 200 else "") if isinstance(name, str) else type(name).__name__
        return ToolResult.failure(f"unknown tool '{shown}'")
    args = parse_arguments(name, arguments)
    if isinstance(args, ToolResult):
        return args
    try:
        return found, found.validate(args)
    except ToolError as exc:
        return ToolResult.failure(str(exc))


def parse_arguments(name: str, arguments: Any) -> dict[str, Any] | ToolResult:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = loads(arguments)
        except JSONError as exc:
            return ToolResult.failure(f"malformed JSON arguments for {name}: {exc}")
    if not isinstance(arguments, dict):
        return ToolResult.failure(f"arguments for {name} must be a JSON object, not {type(arguments).__name__}")
    return arguments


def render_result(value: Any) -> str:
    """The text of a tool message for a tool's return value (writable as UTF-8); raises :class:`JSONError`
    for a value that JSON cannot carry, which the caller turns into an error with the call undone."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, BaseModel):
        try:
            return value.model_dump_json()
        except ValueError as exc:  # pydantic refuses lone surrogates and values it cannot write
            raise JSONError(f"the tool's result cannot be written as JSON: {exc}") from None
    return dumps(value)
