"""The step reads arguments once and builds its records lazily: nothing of that may show.

A call's arguments given as objects reach the world as objects (no JSON round trip) and the record writes their
text only when someone reads it; these tests hold that to what the text path gives, value for value.
"""

from __future__ import annotations

import json
import math
import threading

import pytest

from mua_gym import MuaEnv
from mua_gym.env.parsing import ParsedAction, parse_auto, read_action
from mua_gym.jsonsafe import JSONError, dumps, flat_json_copy, plain_object
from mua_gym.messages import AssistantMessage, ToolMessage


@pytest.fixture
def mock():
    env = MuaEnv("mock")
    env.reset(seed=0)
    yield env
    env.close()


ARGUMENTS = [
    {"order_id": "O1"},
    {"order_id": "O1", "extra": 1},
    {"order_id": 7},
    {"order_id": True},
    {"order_id": None},
    {"order_id": 2.5},
    {"order_id": "caf\u00e9 \ud800"},
    {"order_id": ["O1"]},
    {"order_id": {"nested": [1, {"k": "v"}]}},
    {"order_id": math.nan},
    {"order_id": ("O1",)},
    {1: "O1"},
    {},
]


@pytest.mark.parametrize("arguments", ARGUMENTS, ids=repr)
def test_arguments_as_objects_step_exactly_as_their_json_text(arguments):
    """The world, the observation and the record are the same whether an agent sends objects or their text."""
    outcomes = []
    for given in (arguments, json.dumps(arguments)):
        env = MuaEnv("mock")
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step({"name": "get_order", "arguments": given})
        recorded = env.core.messages()[-2]
        outcomes.append((obs, reward, terminated, truncated, info, env.world.state_hash(),
                         recorded.tool_calls[0].function.arguments))
        env.close()
    assert outcomes[0] == outcomes[1]


def test_the_record_keeps_the_arguments_as_they_were_when_stepped(mock):
    flat = {"order_id": "O1"}
    nested = {"order_id": "O1", "items": ["a"]}
    mock.step([{"name": "get_order", "arguments": flat}, {"name": "get_order", "arguments": nested}])
    flat["order_id"] = "changed"
    nested["items"].append("b")
    calls = mock.core.messages()[-3].tool_calls
    assert [c.function.arguments for c in calls] == ['{"order_id": "O1"}', '{"order_id": "O1", "items": ["a"]}']


def test_records_are_built_once_and_equal_the_eager_messages(mock):
    mock.step({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": {"order_id": "O1"}}}]})
    first = mock.core.messages()
    assert first[-2] == AssistantMessage(tool_calls=[{"id": "c1", "function": {
        "name": "get_order", "arguments": '{"order_id": "O1"}'}}])
    assert isinstance(first[-1], ToolMessage) and first[-1].tool_call_id == "c1" and first[-1].name == "get_order"
    again = mock.core.messages()
    assert all(a is b for a, b in zip(first, again))  # built once, then kept
    assert mock.core.trajectory().entries[-2].trainable and mock.core.agent_messages()[-1]["role"] == "tool"


def test_the_callers_own_message_is_recorded_as_it_is():
    message = AssistantMessage(content="hi", tool_calls=[])
    parsed = read_action(message, parse_auto, 1)
    assert parsed.message() is message
    renamed = read_action(AssistantMessage(tool_calls=[{"id": "", "function": {"name": "a"}}]), parse_auto, 4)
    assert renamed.message().tool_calls[0].id == "call_4_0"


def test_parsed_calls_keep_decoded_arguments_only_where_they_are_plain_json():
    parsed = read_action('<tool_call>{"name": "a", "arguments": {"k": [1, 2]}}</tool_call>', parse_auto, 1)
    assert parsed.calls[0].decoded == {"k": [1, 2]} and parsed.calls[0].arguments == '{"k": [1, 2]}'
    text = read_action({"name": "a", "arguments": '{"k": 1}'}, parse_auto, 1)
    assert text.calls[0].decoded is None and text.calls[0].arguments == '{"k": 1}'
    odd = read_action({"name": "a", "arguments": {"k": (1,)}}, parse_auto, 1)
    assert odd.calls[0].decoded is None and odd.calls[0].arguments == '{"k": [1]}'
    assert isinstance(parsed, ParsedAction) and parsed.message().tool_calls[0].function.name == "a"


def test_flat_json_copy_and_plain_object_accept_only_what_reads_back_the_same():
    flat = {"a": "x", "b": 1, "c": 2.5, "d": True, "e": None}
    copy = flat_json_copy(flat)
    assert copy == flat and copy is not flat
    for value in ({"a": [1]}, {"a": math.inf}, {1: "a"}, {"a": 10 ** 4300}, {"a": (1,)}, ["a"], "a"):
        assert flat_json_copy(value) is None
    assert plain_object({"a": [1, {"b": [None, 2.5]}]}) and plain_object({})
    for value in ({"a": [math.nan]}, {"a": {2: 1}}, {"a": [(1,)]}, ["a"], {"a": {1, 2}}):
        assert not plain_object(value)
    for value in (flat, {"a": [1, {"b": [None, 2.5]}]}):
        assert json.loads(dumps(value)) == value


def test_dumps_recovers_after_a_failed_encoding_and_across_threads():
    loop: list = []
    loop.append(loop)
    shared = {"k": [1, 2, {"x": "y"}]}
    with pytest.raises(JSONError):
        dumps([shared, object()])  # fails after it entered ``shared``: its mark must not stay behind
    assert dumps(shared) == json.dumps(shared)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(2000):
                assert dumps(shared) == '{"k": [1, 2, {"x": "y"}]}'
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("parser, error", [
    (lambda text: 1 / 0, "the env's parser failed on this text: ZeroDivisionError"),
    (lambda text: text, "the env's parser returned 'hello', not an AssistantMessage")])
def test_a_callers_parser_that_fails_makes_an_unreadable_action_not_an_exception(parser, error):
    env = MuaEnv("mock", parser=parser)
    env.reset(seed=0)
    before = env.world.state_hash()
    obs, reward, terminated, truncated, info = env.step("hello")
    assert obs == [] and reward == 0.0 and error in info["error"] and env.world.state_hash() == before
