"""An env's tools as plain Python callables, for trainers that read tools from function signatures.

TRL (and ``transformers.utils.get_json_schema``) describe a tool to the model from a function's type hints and
its Google-style docstring. :func:`tool_function` makes such a function from an OpenAI tool schema: its
signature, annotations and ``Args:`` docstring say what the schema says (JSON types become Python types, an
``enum`` becomes a ``Literal``, an optional parameter defaults to None), and calling it hands the arguments
to a ``run(name, arguments) -> str`` callback, which in mua_gym plays the call in an env.

Nested structure is described as far as Python hints can carry it: ``list[str]``, ``list[dict]``, ``dict``.
"""

from __future__ import annotations

import inspect
import keyword
from typing import Any, Callable, Literal, Optional

__all__ = ["python_type", "tool_function", "tool_method"]

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict,
                            "null": type(None)}


def python_type(schema: dict[str, Any]) -> Any:
    """The Python type hint that says what a JSON schema says, as far as hints can."""
    if "enum" in schema and schema["enum"] and all(isinstance(v, (str, int, bool)) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        kinds = [python_type(o) for o in options if o.get("type") != "null"]
        hint = kinds[0] if len(kinds) == 1 else Any
        return Optional[hint] if len(kinds) < len(options) else hint
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        hint = python_type({**schema, "type": kinds[0]}) if len(kinds) == 1 else Any
        return Optional[hint] if len(kinds) < len(kind) else hint
    if kind == "array":
        items = schema.get("items")
        return list[python_type(items)] if isinstance(items, dict) and items else list
    return _SCALARS.get(kind, Any)


def _shape(schema: dict[str, Any]) -> str:
    """A short written form of the structure a hint cannot carry: ``{flight_number: string, date: string}``."""
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        inner = _shape(schema["items"])
        return f"list of {inner}" if inner else ""
    properties = schema.get("properties")
    if schema.get("type") == "object" and isinstance(properties, dict) and properties:
        fields = ", ".join(f"{k}: {_shape(v) or v.get('type', 'any')}" for k, v in properties.items())
        return "{" + fields + "}"
    return ""


def _parts(schema: dict[str, Any]) -> tuple[str, list[inspect.Parameter], dict[str, Any], str]:
    """(the tool's name, its keyword-only parameters, their hints, its Google-style docstring)."""
    function = schema.get("function", schema)
    name = function["name"]
    params = function.get("parameters") or {}
    properties: dict[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or ())
    ordered = [p for p in properties if p in required] + [p for p in properties if p not in required]
    parameters, hints, lines = [], {}, []
    for pname in ordered:
        if not pname.isidentifier() or keyword.iskeyword(pname) or pname == "self":
            raise ValueError(f"tool {name!r}: parameter {pname!r} cannot be a Python parameter name, and trainers "
                             "that read tools from signatures need one")
        hint = python_type(properties[pname])
        if pname not in required:
            hint = Optional[hint]
        hints[pname] = hint
        parameters.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, annotation=hint,
                                            default=inspect.Parameter.empty if pname in required else None))
        text = " ".join(str(properties[pname].get("description") or pname.replace("_", " ")).split())
        shape = _shape(properties[pname])
        if "{" in shape:  # nested fields: the hint says only list[dict]
            text += f" Shape: {shape}."
        lines.append(f"    {pname}: {text}")
    description = " ".join(str(function.get("description") or name.replace("_", " ")).split())
    doc = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    hints["return"] = str
    return name, parameters, hints, doc


def _dress(function: Callable[..., str], schema: dict[str, Any], method: bool) -> Callable[..., str]:
    name, parameters, hints, doc = _parts(schema)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.__annotations__ = hints
    if method:
        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *parameters]
    function.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return function


def _optional(schema: dict[str, Any]) -> frozenset[str]:
    params = schema.get("function", schema).get("parameters") or {}
    return frozenset(params.get("properties") or ()) - set(params.get("required") or ())


def tool_function(schema: dict[str, Any], run: Callable[[str, dict[str, Any]], str]) -> Callable[..., str]:
    """A function named after the tool whose keyword arguments are the schema's parameters.

    Calling it returns ``run(name, arguments)``, with the optional arguments left as None dropped, so that the
    env, not Python, judges what the model sent (unknown or missing arguments come back as the env's error).
    """
    name, optional = schema.get("function", schema)["name"], _optional(schema)

    def function(**arguments: Any) -> str:
        return run(name, {k: v for k, v in arguments.items() if v is not None or k not in optional})

    return _dress(function, schema, method=False)


def tool_method(schema: dict[str, Any], run_attribute: str = "_run_tool") -> Callable[..., str]:
    """:func:`tool_function` as a method: calling it returns ``getattr(self, run_attribute)(name, arguments)``."""
    name, optional = schema.get("function", schema)["name"], _optional(schema)

    def method(self: Any, **arguments: Any) -> str:
        run = getattr(self, run_attribute)
        return run(name, {k: v for k, v in arguments.items() if v is not None or k not in optional})

    return _dress(method, schema, method=True)
