"""Inputs that used to break step() (issue 11, section 4): each comes back as a readable error, in linear time,
with the world exactly as it was, the trajectory serialisable, and the episode going on."""

import math
import re
import time

import numpy as np
import pytest

from mua_gym import MuaEnv
from mua_gym.jsonsafe import JSONError, clean_text, dumps, loads
from mua_gym.messages import AssistantMessage, UserMessage
from mua_gym.env.parsing import MAX_TOOL_CALLS, parse_auto, parse_hermes, split_reasoning
from mua_gym.env.reward import _calls
from mua_gym.env.trajectory import Trajectory
from mua_gym.user_sims import UserReply, UserSimulator

HUGE = "9" * 5000
MB = 1_000_000


@pytest.fixture(scope="module")
def telecom():
    env = MuaEnv("telecom", user="scenario", world_params={"count": 40})
    yield env
    env.close()


@pytest.fixture
def mock():
    env = MuaEnv("mock")
    env.reset(options={"task_id": "mock-cancel-card"})
    yield env
    env.close()


def _refuel_args(env):
    """A customer and line of the current telecom world, for refuel_data."""
    row = env.world.raw.execute("SELECT customer_id, line_id FROM customer_lines LIMIT 1").fetchone()
    return {"customer_id": row[0], "line_id": row[1]}


def step_unchanged(env, action):
    """Steps ``action`` and checks that the world did not change and the episode goes on; returns the step."""
    before = env.world.state_hash()
    result = env.step(action)
    assert env.world.state_hash() == before
    assert not result[2] and not result[3], result[4]
    line = env.unwrapped.trajectory().to_json_line()
    assert Trajectory.from_json_line(line).to_json_line() == line
    return result


def only_error(result, *needles):
    obs = result[0]
    assert len(obs) == 1 and obs[0]["role"] == "tool" and obs[0]["content"].startswith("Error:"), obs
    for needle in needles:
        assert needle in obs[0]["content"], obs[0]["content"]
    return obs[0]["content"]


# -- the JSON core ---------------------------------------------------------------------------------------------
def test_loads_refuses_what_is_no_plain_json_with_a_reason():
    assert loads('{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
    cases = {HUGE: "integer too long", "-" + HUGE: "integer too long", "NaN": "NaN is not a JSON number",
             "[Infinity]": "Infinity", "-Infinity": "-Infinity", "1e999": "out of range", "[" * 100_000: "deep",
             "{oops": "Expecting property name", "": "Expecting value"}
    for text, reason in cases.items():
        with pytest.raises(JSONError, match=reason):
            loads(text)
    with pytest.raises(JSONError) as value_error:
        loads('{"n": NaN}')
    assert value_error.value.well_formed
    with pytest.raises(JSONError) as syntax_error:
        loads('{"n": ')
    assert not syntax_error.value.well_formed


def test_dumps_refuses_what_json_cannot_carry():
    loop = {}
    loop["me"] = loop
    deep = []
    for _ in range(5000):
        deep = [deep]
    for value, reason in [(loop, "circular"), (deep, "deep"), (10 ** 5000, "integer too long"), ({1, 2}, "set"),
                          ({(1, 2): 3}, "keys")]:
        with pytest.raises(JSONError, match=reason):
            dumps(value)
    assert dumps({"x": math.inf}) == '{"x": Infinity}'  # written, so that the reader refuses it by name


def test_clean_text_replaces_lone_surrogates_only():
    assert clean_text("plain") == "plain"
    assert clean_text("é 😀") == "é 😀"
    assert clean_text("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert clean_text("\ud83d\ude00") == "\ufffd\ufffd"  # in a str (not UTF-16) a pair is two bad code points
    assert clean_text("x\x00y") == "x\x00y"


# -- 1. integer literals past 4,300 digits ---------------------------------------------------------------------
def test_huge_integers_come_back_as_errors_on_every_path(mock):
    only_error(step_unchanged(mock, '<tool_call>{"name": "get_order", "arguments": {"order_id": %s}}</tool_call>'
                              % HUGE), "integer too long")
    only_error(step_unchanged(mock, '{"name": "get_order", "arguments": {"order_id": %s}}' % HUGE),
               "integer too long")
    only_error(step_unchanged(mock, {"name": "get_order", "arguments": '{"order_id": %s}' % HUGE}),
               "malformed JSON arguments for get_order: integer too long")
    result = step_unchanged(mock, {"name": "get_order", "arguments": {"order_id": 10 ** 5000}})
    assert result[0] == [] and "integer too long" in result[4]["error"]
    assert mock.world.call_tool("get_order", '{"order_id": %s}' % HUGE).error


def test_the_action_comparison_of_the_reward_skips_unreadable_arguments():
    message = AssistantMessage(tool_calls=[{"id": "a", "function": {"name": "x", "arguments": "[%s]" % HUGE}},
                                           {"id": "b", "function": {"name": "y", "arguments": '{"k": NaN}'}},
                                           {"id": "c", "function": {"name": "z", "arguments": '{"k": 1}'}}])
    assert _calls([message]) == [("assistant", "z", {"k": 1}, False)]  # (no result came: it never ran)


def test_a_terminal_reward_after_hostile_calls_is_a_number(mock):
    mock.step({"name": "get_order", "arguments": '{"order_id": %s}' % HUGE})
    mock.step('<tool_call>{"name": "cancel_order", "arguments": {"order_id": NaN}}</tool_call>')
    obs, reward, terminated, truncated, info = mock.step("###STOP### thanks \ud800")
    for _ in range(5):
        if terminated or truncated:
            break
        obs, reward, terminated, truncated, info = mock.step("Anything else?")
    assert terminated or truncated
    assert isinstance(reward, float) and 0.0 <= reward <= 1.0
    Trajectory.from_json_line(mock.unwrapped.trajectory().to_json_line())


# -- 2. linear time ----------------------------------------------------------------------------------------------
SHAPES = {
    "think spam": "<think>" * (MB // 7),
    "unopened think ends": "</think>" * (MB // 8),
    "think pairs": "<think>a</think>" * (MB // 16),
    "tool_call opens": "<tool_call>{" * (MB // 12),
    "deep JSON text": "[" * MB,
    "deep JSON in a block": "<tool_call>" + "[" * MB,
    "one huge string": "x" * MB,
    "a huge JSON string": '{"name": "get_order", "arguments": {"order_id": "' + "7" * MB + '"}}',
    "surrogates": "\ud800" * MB,
    "NUL bytes": "\x00" * MB,
    "phone phrases": "please " + "turn " * (MB // 5),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_megabyte_action_of_any_shape_steps_well_under_a_second(telecom, shape):
    telecom.reset(seed=1)
    started = time.perf_counter()
    obs, reward, terminated, truncated, info = telecom.step(SHAPES[shape])
    assert time.perf_counter() - started < 0.5
    Trajectory.from_json_line(telecom.unwrapped.trajectory().to_json_line())


def test_split_reasoning_is_linear_and_keeps_its_meaning():
    started = time.perf_counter()
    visible, reasoning = split_reasoning("<think>" * (MB // 7))
    assert time.perf_counter() - started < 0.2 and visible == "" and reasoning is None
    assert split_reasoning("<think>a<think>b</think>c</think>d") == ("d", "c\na<think>b")
    assert split_reasoning("x<think>never closed") == ("xnever closed", None)
    assert split_reasoning("one</think>two<think>three</think>four") == ("twofour", "one\nthree")


def _regex_split_reasoning(text):
    """The regex version that split_reasoning replaced (quadratic on unclosed tags): the reference."""
    think = re.compile(r"<think>(.*?)</think>", re.DOTALL)
    parts = [m.strip() for m in think.findall(text)]
    visible = think.sub("", text)
    if "</think>" in visible:
        head, _, visible = visible.rpartition("</think>")
        parts.insert(0, head.replace("<think>", "").strip())
    visible = visible.replace("<think>", "")
    return visible.strip(), "\n".join(p for p in parts if p) or None


def test_split_reasoning_and_tool_call_blocks_agree_with_the_regexes_they_replaced():
    rng = np.random.default_rng(0)
    pieces = ["<think>", "</think>", "<tool_call>", "</tool_call>", "a", " ", "{}", "\n"]
    tool_call = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
    for _ in range(3000):
        text = "".join(pieces[i] for i in rng.integers(0, len(pieces), size=int(rng.integers(0, 12))))
        assert split_reasoning(text) == _regex_split_reasoning(text), text
        visible = split_reasoning(text)[0]
        message = parse_hermes(text)
        blocks = tool_call.findall(visible)
        assert len(message.tool_calls or []) == len(blocks), text
        if blocks:
            assert message.content == (tool_call.sub("", visible).strip() or None), text


def test_tool_call_blocks_scan_linearly_and_a_flood_of_calls_is_refused():
    started = time.perf_counter()
    message = parse_hermes("<tool_call>{" * (MB // 12))
    assert time.perf_counter() - started < 0.2 and len(message.tool_calls) == 1  # one block, unclosed
    many = '<tool_call>{"name": "a", "arguments": {}}</tool_call>' * (MAX_TOOL_CALLS + 1)
    with pytest.raises(ValueError, match="more than 256 tool calls"):
        parse_auto(many)
    assert len(parse_auto(many[:len(many) * MAX_TOOL_CALLS // (MAX_TOOL_CALLS + 1)]).tool_calls) == MAX_TOOL_CALLS


def test_a_flood_of_calls_is_an_unreadable_action(mock):
    flood = "<tool_call></tool_call>" * (MB // 23)
    started = time.perf_counter()
    obs, reward, terminated, truncated, info = step_unchanged(mock, flood)
    assert time.perf_counter() - started < 0.2
    assert obs == [] and "more than 256 tool calls" in info["error"] and info["tool_errors"] == 1


# -- 3. lone surrogates ------------------------------------------------------------------------------------------
def test_surrogates_in_agent_text_tool_names_and_arguments_leave_a_serialisable_record(mock):
    obs, *_ = mock.step("Hello \ud800 there")
    obs, *_ = step_unchanged(mock, {"name": "get_order\udfff", "arguments": {}})
    assert obs[0]["content"] == "Error: unknown tool 'get_order\ufffd'"
    obs, *_ = step_unchanged(mock, '<tool_call>{"name": "get_order", "arguments": {"order_id": "\\ud800"}}</tool_call>')
    assert obs[0]["content"].startswith("Error:") and "\ud800" not in obs[0]["content"]
    step_unchanged(mock, AssistantMessage(content="<think>\udfff</think>fine", tool_calls=[
        {"id": "x\ud800", "function": {"name": "get_order", "arguments": '{"order_id": "\ud800"}'}}]))
    trajectory = mock.unwrapped.trajectory()
    said = [e.message for e in trajectory.entries if e.message.role == "assistant"]
    assert said[0].content == "Hello \ufffd there"
    assert said[-1].tool_calls[0].id == "x\ufffd" and said[-1].reasoning == "\ufffd"
    line = trajectory.to_json_line()
    assert Trajectory.from_json_line(line) == trajectory


def test_the_callers_own_message_is_not_changed_when_it_is_cleaned(mock):
    mine = AssistantMessage(content="a\ud800", tool_calls=[{"id": "", "function": {"name": "get_order",
                                                                                     "arguments": "{}"}}])
    mock.step(mine)
    assert mine.content == "a\ud800" and mine.tool_calls[0].id == ""


class SurrogateUser(UserSimulator):
    """A user whose replies and own tool calls hold lone surrogates (as an LLM's JSON escapes can)."""

    name = "surrogates"
    immediate = True

    async def start(self, task, *, seed=None, tools=None):
        return UserReply(content="hi \ud800")

    async def respond(self, view):
        if view and view[-1].role == "tool" or len(view) > 3 and isinstance(view[-2], UserMessage):
            return UserReply(content="done \udfff")
        return UserReply(content="let me try \ud83d", tool_calls=[
            {"id": "u\ud800", "function": {"name": "toggle_airplane_mode\ud800", "arguments": "{}"}}])


def test_surrogates_from_a_user_simulator_leave_a_serialisable_record():
    env = MuaEnv("telecom", user=SurrogateUser(), world_params={"count": 40})
    obs, info = env.reset(seed=0)
    assert obs[-1]["content"] == "hi \ufffd"
    obs, reward, terminated, truncated, info = env.step("Please toggle airplane mode.")
    assert obs[0]["content"] == "done \ufffd"
    trajectory = env.unwrapped.trajectory()
    hidden = [e.message for e in trajectory.entries if not e.visible_to_agent]
    assert hidden[0].tool_calls[0].function.name == "toggle_airplane_mode\ufffd"
    assert hidden[1].content.startswith("Error: unknown tool") and "\ud800" not in hidden[1].content
    assert Trajectory.from_json_line(trajectory.to_json_line()) == trajectory
    env.close()


# -- 4. deep and circular actions --------------------------------------------------------------------------------
def _deep(depth):
    value = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("times", [1, 5])
def test_deep_and_circular_actions_are_unreadable_actions(mock, times):
    import sys

    depth = times * sys.getrecursionlimit()  # (importing IPython, as the notebook test does, raises the limit)
    loop = {"name": "get_order"}
    loop["arguments"] = loop
    for action in [{"name": "get_order", "arguments": _deep(depth)}, loop,
                   {"role": "assistant", "tool_calls": [{"function": {"name": "get_order", "arguments": loop}}]},
                   [{"name": "get_order", "arguments": _deep(depth)}]]:
        obs, reward, terminated, truncated, info = step_unchanged(mock, action)
        assert obs == [] and "cannot be written as JSON" in info["error"]
    deep_text = '{"name": "get_order", "arguments": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    obs, *_ = step_unchanged(mock, f"<tool_call>{deep_text}</tool_call>")
    assert obs[0]["content"].startswith("Error:")


# -- 5. NaN and infinities ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_refuel_data_refuses_non_finite_amounts_in_json_text(telecom, literal):
    telecom.reset(seed=2)
    args = _refuel_args(telecom)
    text = '{"customer_id": "%s", "line_id": "%s", "gb_amount": %s}' % (args["customer_id"], args["line_id"], literal)
    only_error(step_unchanged(telecom, {"name": "refuel_data", "arguments": text}), "refuel_data")
    only_error(step_unchanged(telecom, '<tool_call>{"name": "refuel_data", "arguments": %s}</tool_call>' % text))
    only_error(step_unchanged(telecom, '{"name": "refuel_data", "arguments": %s}' % text))


@pytest.mark.parametrize("amount", [math.inf, -math.inf, math.nan])
def test_refuel_data_refuses_non_finite_python_floats(telecom, amount):
    telecom.reset(seed=2)
    args = dict(_refuel_args(telecom), gb_amount=amount)
    only_error(step_unchanged(telecom, {"name": "refuel_data", "arguments": args}), "refuel_data")
    before = telecom.world.state_hash()
    direct = telecom.world.call_tool("refuel_data", args)  # Python objects straight to the world: Tool.validate
    assert direct.error and "finite" in direct.content and telecom.world.state_hash() == before
    good = telecom.world.call_tool("refuel_data", dict(args, gb_amount=2.0))
    assert not good.error, good.content  # the same call with a finite amount goes through


def test_every_tool_float_field_refuses_infinity():
    from mua_gym.domain.registry import get_domain

    checked = 0
    for name in ("mock", "retail", "airline", "telecom"):
        domain = get_domain(name)
        for kit in (domain.toolkit(domain.default_source), domain.user_tools):
            for tool in kit or []:
                for field, info in tool.arguments_model.model_fields.items():
                    if "float" not in repr(info.annotation) and "Number" not in repr(info.annotation):
                        continue
                    checked += 1
                    with pytest.raises(Exception, match="finite"):
                        tool.arguments_model.__pydantic_validator__.validate_assignment(
                            tool.arguments_model.model_construct(), field, math.inf)
    assert checked >= 1


# -- the judge's reply reader --------------------------------------------------------------------------------------
def test_first_object_finds_json_inside_prose_and_fences():
    from mua_gym.jsonsafe import first_object

    assert first_object('Sure:\n```json\n{"verdicts": [{"true": true}]}\n```') == {"verdicts": [{"true": True}]}
    assert first_object('{not json} but this is: {"a": {"b": 2}}') == {"a": {"b": 2}}
    assert first_object('{"a": ' + "9" * 5000 + '} then {"b": 1}') == {"b": 1}  # a huge int is skipped, not raised


@pytest.mark.parametrize("text", ["{" * 1_000_000, "{" * 500_000 + "}" * 500_000, '{"a":' * 200_000,
                                  ("{" * 1000 + "x") * 1000, "}{" * 500_000, '{"a": NaN}' * 100_000],
                         ids=["open", "nested", "unclosed-keys", "runs", "reversed", "refused-values"])
def test_first_object_is_linear_on_adversarial_replies(text):
    from mua_gym.jsonsafe import JSONError, first_object

    started = time.perf_counter()
    try:
        first_object(text)
    except JSONError:
        pass
    assert time.perf_counter() - started < 1.0
