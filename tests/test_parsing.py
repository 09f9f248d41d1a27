import pytest

from mua_gym.messages import AssistantMessage, ToolCall, message_from_openai, to_openai
from mua_gym.env.parsing import (
    MALFORMED, ActionError, get_parser, parse_auto, parse_hermes, parse_json, parse_text, split_reasoning,
    to_assistant_message,
)


def test_split_reasoning():
    assert split_reasoning("<think>a</think> hi") == ("hi", "a")
    assert split_reasoning("plan first</think>Answer") == ("Answer", "plan first")
    assert split_reasoning("<think>a</think>x<think>b</think>y") == ("xy", "a\nb")
    assert split_reasoning("no thoughts") == ("no thoughts", None)


def test_hermes_blocks():
    m = parse_hermes('I will look.<tool_call>\n{"name": "get_order", "arguments": {"order_id": "O1"}}\n</tool_call>')
    assert m.content == "I will look."
    assert [(c.function.name, c.function.arguments) for c in m.tool_calls] == [("get_order", '{"order_id": "O1"}')]
    broken = parse_hermes("<tool_call>{oops</tool_call>")
    assert broken.tool_calls[0].function.name == MALFORMED
    unclosed = parse_hermes('<tool_call>{"name": "a", "arguments": {}}')
    assert unclosed.tool_calls[0].function.name == "a"


def test_bare_json_and_text():
    m = parse_json('{"name": "calculate", "arguments": {"expression": "1+1"}}')
    assert m.tool_calls[0].function.name == "calculate" and m.content is None
    m = parse_json('```json\n[{"name": "a", "arguments": {}}, {"name": "b"}]\n```')
    assert [c.function.name for c in m.tool_calls] == ["a", "b"]
    assert parse_json('{"answer": 42}').content == '{"answer": 42}'  # JSON that is not a call is text
    assert parse_text('<tool_call>{"name": "a"}</tool_call>').tool_calls is None
    assert parse_auto("Hello there").content == "Hello there"


def test_action_forms_and_ids():
    m = to_assistant_message({"role": "assistant", "content": "x", "tool_calls": [
        {"id": "call_abc", "type": "function", "function": {"name": "a", "arguments": {"k": 1}}},
        {"id": "call_abc", "type": "function", "function": {"name": "b", "arguments": "{}"}}]}, parse_auto, 3)
    assert [c.id for c in m.tool_calls] == ["call_abc", "call_3_1"]  # caller ids kept, duplicates renamed
    assert m.tool_calls[0].function.arguments == '{"k": 1}'
    m = to_assistant_message([{"name": "a", "arguments": {}}, ToolCall.make("z", "b", {})], parse_auto, 1)
    assert [c.id for c in m.tool_calls] == ["call_1_0", "z"]
    m = to_assistant_message(AssistantMessage(content="<think>r</think>ok"), parse_auto, 1)
    assert (m.content, m.reasoning) == ("ok", "r")
    with pytest.raises(ActionError):
        to_assistant_message({"role": "user", "content": "x"}, parse_auto, 1)
    with pytest.raises(ValueError):
        get_parser("nope")


def test_message_round_trip():
    d = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]}
    assert to_openai(message_from_openai(d)) == d
    assert to_openai(message_from_openai({"role": "tool", "tool_call_id": "1", "content": "ok"})) == \
        {"role": "tool", "tool_call_id": "1", "content": "ok"}
