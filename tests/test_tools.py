import json

import pytest

from mua_gym.arith import evaluate_expression
from mua_gym.stdtools import calculate
from mua_gym.tools import Toolkit, ToolError, make_tool, parse_docstring, tool


def test_schema_from_hints_and_docstring(mock):
    schema = mock.tools["cancel_order"].schema
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "cancel_order"
    assert fn["description"].startswith("Cancel a pending order.")
    params = fn["parameters"]
    assert params["type"] == "object"
    assert set(params["properties"]) == {"order_id", "reason"}
    assert params["properties"]["order_id"] == {"type": "string", "description": "The order's id."}
    assert sorted(params["required"]) == ["order_id", "reason"]
    assert "world" not in json.dumps(schema)


def test_nested_models_are_inlined(mock):
    items = mock.tools["place_order"].schema["function"]["parameters"]["properties"]["items"]
    assert items["type"] == "array"
    assert "$ref" not in json.dumps(items)
    assert set(items["items"]["properties"]) == {"product_id", "quantity"}


def test_docstring_parsing_multiline_args():
    desc, args = parse_docstring("""Do a thing.

    More words.

    Args:
        a (int): first
            continued here.
        b: second

    Returns:
        nothing
    """)
    assert desc == "Do a thing. More words."
    assert args == {"a": "first continued here.", "b": "second"}


def test_tool_kinds_and_duplicates():
    with pytest.raises(ValueError):
        make_tool(lambda: 1, kind="delete")  # type: ignore[arg-type]

    @tool(kind="read")
    def ping() -> str:
        """Ping."""
        return "pong"

    kit = Toolkit.of(ping)
    with pytest.raises(ValueError, match="duplicate"):
        kit.add(ping)
    with pytest.raises(TypeError):
        Toolkit.of(lambda: 1)


def test_validation_is_strict_and_describes_problems(mock):
    t = mock.tools["cancel_order"]
    with pytest.raises(ToolError, match="missing argument 'reason'"):
        t.validate({"order_id": "O1001"})
    with pytest.raises(ToolError, match="argument 'order_id'"):
        t.validate({"order_id": 1001, "reason": "no longer needed"})
    with pytest.raises(ToolError, match="unexpected argument 'extra'"):
        t.validate({"order_id": "O1", "reason": "x", "extra": 1})


@pytest.mark.parametrize("expression,expected", [
    ("2 * (3 + 4)", 14.0), ("10 / 4", 2.5), ("-3 + 1.5", -1.5), ("2 ** 10", 1024.0), ("7 % 4", 3.0),
])
def test_arithmetic(expression, expected):
    assert evaluate_expression(expression) == expected


@pytest.mark.parametrize("expression", [
    "__import__('os').system('echo hi')", "open('x')", "1 / 0", "2 ** 100000", "abs(-1)", "x + 1",
    "(-1) ** 0.5", "", "1 +", "[1, 2]", "'a' * 3", "10 ** 100 ** 100",
])
def test_arithmetic_refuses_everything_else(expression):
    with pytest.raises(ValueError):
        evaluate_expression(expression)


def test_calculate_tool_rounds_and_refuses():
    t = calculate.__mua_tool__
    assert t.function(expression="1 / 3") == "0.33"
    assert t.function(expression="2 ** 10") == "1024.0"
    with pytest.raises(ToolError, match="Invalid characters"):
        t.function(expression="import os")
    with pytest.raises(ToolError, match="Invalid characters"):
        t.function(expression="7 % 2")
