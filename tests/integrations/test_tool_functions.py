"""tool_function: an env's tool schemas as Python functions that transformers describes back the same way."""

from __future__ import annotations

import inspect
import json

import pytest

import mua_gym
from mua_gym.integrations.tool_functions import python_type, tool_function, tool_method

transformers_utils = pytest.importorskip("transformers.utils")


def _types(schema: dict) -> dict:
    """Each parameter's JSON type, enum and item type: what a Python hint can carry."""
    out = {}
    for name, spec in schema["properties"].items():
        items = spec.get("items") or {}
        out[name] = (spec.get("type"), tuple(spec.get("enum") or ()), items.get("type"))
    return out


@pytest.mark.parametrize("domain", ["mock", "retail", "airline", "telecom"])
def test_every_tool_round_trips_through_transformers_get_json_schema(domain):
    for schema in mua_gym.AsyncMuaEnv(domain).tool_schemas:
        function = tool_function(schema, lambda name, arguments: "")
        described = transformers_utils.get_json_schema(function)["function"]
        ours = schema["function"]
        assert described["name"] == ours["name"]
        assert " ".join(ours["description"].split()).startswith(described["description"][:40])
        assert set(described["parameters"].get("required", [])) == set(ours["parameters"].get("required", []))
        assert _types(described["parameters"]) == _types(ours["parameters"]), ours["name"]
        for name, spec in ours["parameters"]["properties"].items():  # descriptions survive, nested shapes added
            assert described["parameters"]["properties"][name]["description"].startswith(
                " ".join(spec["description"].split())[:30])


def test_calls_reach_run_with_the_models_arguments_and_unset_optionals_dropped():
    schema = {"type": "function", "function": {"name": "find", "description": "Find a thing.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string", "description": "What."},
                                         "limit": {"type": "integer", "description": "How many."}},
        "required": ["query"]}}}
    seen = []
    function = tool_function(schema, lambda name, arguments: seen.append((name, arguments)) or "found")
    assert function(query="a") == "found" and function(query="b", limit=3) == "found"
    assert seen == [("find", {"query": "a"}), ("find", {"query": "b", "limit": 3})]
    assert str(inspect.signature(function)) == "(*, query: str, limit: Optional[int] = None) -> str"

    class Holder:
        def _run_tool(self, name, arguments):
            return json.dumps([name, arguments])

    Holder.find = tool_method(schema)
    assert Holder().find(query="x") == '["find", {"query": "x"}]'
    assert list(inspect.signature(Holder().find).parameters) == ["query", "limit"]


def test_nested_objects_are_spelled_out_in_the_docstring():
    book = next(s for s in mua_gym.AsyncMuaEnv("airline").tool_schemas if s["function"]["name"] == "book_reservation")
    doc = tool_function(book, lambda n, a: "").__doc__
    assert "Shape: list of {flight_number: string, date: string}" in doc
    assert "Args:\n    user_id:" in doc


def test_python_type_reads_unions_enums_and_arrays():
    assert python_type({"anyOf": [{"type": "string"}, {"type": "null"}]}) == (str | None)
    assert python_type({"type": ["integer", "null"]}) == (int | None)
    assert python_type({"type": "array", "items": {"type": "number"}}) == list[float]
    assert str(python_type({"type": "string", "enum": ["a", "b"]})) == "typing.Literal['a', 'b']"


def test_a_parameter_python_cannot_name_is_refused_in_one_line():
    schema = {"type": "function", "function": {"name": "book", "description": "Book.", "parameters": {
        "type": "object", "properties": {"class": {"type": "string", "description": "Cabin."}}, "required": ["class"]}}}
    with pytest.raises(ValueError, match="parameter 'class'"):
        tool_function(schema, lambda n, a: "")


def test_make_async_refuses_an_id_that_is_not_mua_gyms():
    with pytest.raises(ValueError, match="not a mua_gym env id"):
        mua_gym.make_async("CartPole-v1")
    with pytest.raises(ValueError, match="registered: mua/Airline-v0"):
        mua_gym.make_async("mua/Nope-v0")
    assert mua_gym.make_async("mua/Mock-v0", max_turns=3).max_turns == 3
