"""The scenario user cannot be gamed: on the phone it does only what it is asked to do (a check changes nothing, an
on/off set leaves a setting that already is as asked, a request it is asked not to carry out is not carried out), it
agrees only to a plan that names a change and what it is for, it never raises on what an agent sends, and it answers
any text in linear time."""

import asyncio
import time

import pytest

import mua_gym
from mua_gym import MuaEnv, Task
from mua_gym.messages import AssistantMessage
from mua_gym.eval.coverage import behaviours
from mua_gym.user_sims import ScenarioUser
from mua_gym.domains.telecom.user_requests import SETTINGS, VOCABULARY
from mua_gym.user_sims.tool_requests import named_request, reader_for
from mua_gym.user_sims.scenario import READ_LIMIT, prose

READER = reader_for(VOCABULARY)  # what telecom's user understands in words


@pytest.fixture(scope="module")
def env():
    return MuaEnv("telecom", user="scenario", split="test")


@pytest.fixture(scope="module")
def tasks(env):
    return env.core.tasks("test")


@pytest.fixture(scope="module")
def user_tools(env):
    return frozenset(t["function"]["name"] for t in env.core._user_tool_schemas)


def _task(tasks, wanted: str, unwanted: tuple[str, ...] = ()):
    return next(t for t in tasks if wanted in t.user_scenario.facts["faults"] and not t.user_scenario.facts["trap"]
                and not any(u in t.user_scenario.facts["faults"] for u in unwanted))


def _read(env, tool: str, **arguments) -> str:
    return env.unwrapped.world.call_tool(tool, arguments, "user").content


def _say(env, text: str) -> tuple[str, dict]:
    obs, reward, terminated, truncated, info = env.step(text)
    assert info["termination_reason"] is None, info
    return obs[-1]["content"], info


def test_asked_to_check_the_user_reports_and_changes_nothing(env, tasks):
    task = _task(tasks, "pref:")
    env.reset(options={"task": task})
    before = _read(env, "check_network_mode_preference")
    assert "4g_5g_preferred" not in before
    reply, _ = _say(env, "Please check your network mode preference.")  # the reported exploit: it used to set it
    assert reply.startswith("It shows:") and before.split(": ")[1] in reply
    assert _read(env, "check_network_mode_preference") == before
    reply, _ = _say(env, "Could you set your network mode preference to 4G/5G preferred?")
    assert "4g_5g_preferred" in _read(env, "check_network_mode_preference") and "Done" in reply

    task = _task(tasks, "airplane:on")
    env.reset(options={"task": task})
    for check in ("Please check whether airplane mode is on.", "Can you look at your status bar?",
                  "Please check your network status.", "Could you run a speed test?"):
        reply, _ = _say(env, check)
        assert "Airplane Mode: ON" in _read(env, "check_network_status"), check
    assert env.unwrapped.trajectory().user_tool_calls == 4  # one read each


def test_on_off_requests_are_sets_and_toggle_flips(env, tasks):
    task = _task(tasks, "airplane:on")
    env.reset(options={"task": task})
    reply, _ = _say(env, "Please turn on airplane mode.")
    assert reply.startswith("It's already on") and "Airplane Mode: ON" in _read(env, "check_network_status")
    reply, _ = _say(env, "Please turn off airplane mode on your phone.")
    assert "now OFF" in reply and "Airplane Mode: OFF" in _read(env, "check_network_status")
    reply, _ = _say(env, "Please switch airplane mode off.")
    assert reply.startswith("It's already off") and "Airplane Mode: OFF" in _read(env, "check_network_status")
    reply, _ = _say(env, "Please toggle airplane mode.")
    assert reply.startswith("Done") and "Airplane Mode: ON" in _read(env, "check_network_status")
    reply, _ = _say(env, "Please turn airplane mode on and then off again.")  # a cycle: two flips
    assert reply.startswith("Done") and "Airplane Mode: ON" in _read(env, "check_network_status")
    reply, _ = _say(env, "Please turn airplane mode.")
    assert reply == "Should I switch it on or off?" and "Airplane Mode: ON" in _read(env, "check_network_status")

    task = _task(tasks, "saver:on")
    env.reset(options={"task": task})
    reply, _ = _say(env, "Please turn on data saver mode.")
    assert reply.startswith("It's already on") and "ON" in _read(env, "check_data_restriction_status")
    reply, _ = _say(env, "Please turn off data saver.")
    assert _read(env, "check_data_restriction_status") == "Data Saver mode is OFF."


def test_agent_steps_and_bare_questions_make_the_user_do_nothing(env, tasks):
    task = _task(tasks, "roaming:line_off")
    env.reset(options={"task": task})
    roaming = _read(env, "check_network_status")
    for text in ("Shall I enable roaming on your line?", "I will turn on roaming for your line now.",
                 "Hello! How can I help?", "Yes. Confirm. Done.", "Shall I proceed?"):
        _say(env, text)
    assert env.unwrapped.trajectory().user_tool_calls == 0 and _read(env, "check_network_status") == roaming


def test_a_request_is_read_in_its_own_clause_and_a_negated_one_is_never_performed(env, tasks, user_tools):
    for text in ("could you turn off airplane mode so i can check your signal?",  # the agent's step is another clause
                 "please turn off airplane mode, and i will check the line.",
                 "don't turn off wi-fi, but please turn off airplane mode."):
        request = READER.request_in_words(text, user_tools)
        assert request is not None and request.setting.key == "airplane" and request.want is False, text
    negated = ("please do not turn off airplane mode", "Please don't turn off airplane mode.",
               "Never turn off airplane mode, please.", "There is no need to turn off airplane mode.",
               "Please don\u2019t restart your phone.")
    assert all(READER.request_in_words(text.lower(), user_tools) is None for text in negated)
    assert READER.request_in_words("please don't forget to turn off airplane mode.", user_tools).want is False

    env.reset(options={"task": _task(tasks, "airplane:on")})
    for text in negated:
        _say(env, text)
    assert env.unwrapped.trajectory().user_tool_calls == 0 and "Airplane Mode: ON" in _read(env, "check_network_status")
    reply, _ = _say(env, "Could you turn off airplane mode so I can check your signal?")
    assert "now OFF" in reply and "Airplane Mode: OFF" in _read(env, "check_network_status")


def test_named_tools_run_as_named_and_bad_arguments_get_a_question(env, tasks, user_tools):
    task = _task(tasks, "data_off:off")
    env.reset(options={"task": task})
    huge = "1" * 5000  # past Python's int-parsing limit of 4,300 digits: json.loads raises ValueError
    for text in (f'Please do this on your phone: toggle_data({{"x": {huge}}}).', "toggle_data(" + "[" * 100_000,
                 'Please do this on your phone: set_network_mode_preference(["4g_5g_preferred"]).'):
        reply, _ = _say(env, text)
        assert reply.startswith("I couldn't make sense of the settings"), reply
    for text in ("Please do not run toggle_data().", "Don't call toggle_data({}) yet, I am still checking.",
                 "All good. There is no need to toggle_data now."):  # a negated tool is never run
        _say(env, text)
    assert "Mobile Data Enabled: No" in _read(env, "check_network_status")
    assert env.unwrapped.trajectory().user_tool_calls == 0
    reply, _ = _say(env, "Please do this on your phone: toggle_data({}).")
    assert "Mobile Data is now ON" in reply
    reply, _ = _say(env, 'Please do this on your phone: set_network_mode_preference({"mode": "3g_only"}).')
    assert "3g_only" in _read(env, "check_network_mode_preference")
    assert named_request("please TOGGLE_DATA now", user_tools).calls == (("toggle_data", {}),)
    assert named_request("toggle_data_saver_mode()", user_tools).calls == (("toggle_data_saver_mode", {}),)
    assert named_request("refuel_data with {}", user_tools) is None  # an agent tool's name is not a user tool's
    assert named_request("Don't worry, please run toggle_data().", user_tools).calls == (("toggle_data", {}),)


def test_every_example_in_the_tables_is_understood(user_tools):
    for setting in SETTINGS:
        tools = {t for t in (setting.read, setting.toggle, setting.action, setting.on_tool, setting.off_tool) if t}
        for example in setting.examples:
            request = READER.request_in_words(f"please {example}.", user_tools)
            assert request is not None and request.kind != "ask", example
            assert {name for name, _ in request.calls} <= tools, (example, request)


def _straight(task: Task) -> bool:
    """Whether the task's user says everything straight: no change of mind, no fact held back or given wrong."""
    return not behaviours(task)


def test_confirmation_needs_a_stated_plan():
    retail = mua_gym.get_domain("retail")
    task = next(t for t in retail.tasks("test") if "order_id" in t.user_scenario.intents[0] and _straight(t))
    order = task.user_scenario.intents[0]["order_id"]
    user = ScenarioUser()
    asyncio.run(user.start(task, seed=0))

    def reply(text: str) -> str:
        return asyncio.run(user.respond([AssistantMessage(content=text)])).content

    for bare in ("Shall I proceed?", "Confirm? (yes/no)", "Is that correct?", "Should I go ahead?"):
        assert reply(bare).startswith("What exactly"), bare
    assert reply(f"I will cancel order {order} for you. Shall I proceed?").startswith("Yes")
    assert reply("I will cancel order #W0000000 for you. Shall I proceed?").startswith("What exactly")
    assert reply(f"Order {order} is the one. Shall I proceed?").startswith("What exactly")  # names no change
    later = next(t for t in retail.tasks("test") if len(t.user_scenario.intents) > 1 and _straight(t) and
                 "order_id" in t.user_scenario.intents[-1] and "order_id" not in t.user_scenario.intents[0])
    asyncio.run(user.start(later, seed=0))  # a plan for a request not stated yet is still one the user wants
    assert reply(f"I will cancel order {later.user_scenario.intents[-1]['order_id']}. Shall I?").startswith("Yes")
    airline = mua_gym.get_domain("airline")
    lettered = next(t for t in airline.tasks("test")
                    if t.user_scenario.intents[0].get("reservation_id", "1").isalpha() and _straight(t))
    asyncio.run(user.start(lettered, seed=0))  # a reservation code without a digit is an id all the same
    code = lettered.user_scenario.intents[0]["reservation_id"]
    assert reply(f"I can update reservation {code} for you. Shall I proceed?").startswith("Yes")
    unstructured = Task(id="u", domain="mock", script=["Hi, please cancel my order."])
    asyncio.run(user.start(unstructured, seed=0))  # nothing to match: a change and any id make it a plan
    assert reply("Shall I cancel it?").startswith("What") and reply("Shall I cancel O1001?").startswith("Yes")
    asyncio.run(user.start(task, seed=0))  # a plan that says "order number" or "name" is a plan, not a question
    for plan in (f"I will cancel order number {order}. Shall I proceed?",
                 f"I will cancel order {order} under your name. Shall I proceed?",
                 f"To verify: I will cancel order {order}. Is that correct?"):
        assert reply(plan).startswith("Yes"), plan
    assert reply("What is the order number?") == f"It's order {order}."  # a plain question is still answered
    assert reply("I will cancel order number #W0000000. Shall I proceed?") == f"It's order {order}."
    kept = user._plan_anchors()
    asyncio.run(user.start(task, seed=1))
    assert user._plan_anchors() is kept  # made once per task, not once per episode
    declining = Task.model_validate(task.model_dump())
    declining.user_scenario.intents[0]["accept"] = False
    asyncio.run(user.start(declining, seed=0))
    assert reply(f"I will cancel order {order} for you. Shall I proceed?").startswith("No")


def _prose_char_by_char(text: str) -> str:
    """What ``prose`` returns, walking every character: the reference it is checked against."""
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def test_prose_drops_braced_arguments_without_walking_the_message():
    import random

    rng = random.Random(0)
    for _ in range(20_000):
        text = "".join(rng.choice("{}ab ") for _ in range(rng.randint(0, 14)))
        assert prose(text) == _prose_char_by_char(text), text
    plan = ('Here is what I will do: cancel_pending_order({"order_id": "#W1", "reason": "ordered by mistake"}). '
            + "Shall I proceed? " * 1000)[:READ_LIMIT]
    assert prose(plan) == _prose_char_by_char(plan)

    def best(text: str) -> float:
        timings = []
        for _ in range(20):
            started = time.perf_counter()
            prose(text)
            timings.append(time.perf_counter() - started)
        return min(timings)

    assert best(plan) < 1e-4  # a JSON plan is two finds and two slices, not 16,000 steps of Python (~0.8 ms)
    assert best("{}" * 200_000) < 8 * best("{}" * 50_000) + 0.01  # linear however dense the braces


@pytest.mark.parametrize("shape", ["please turn ", "a", "please. ", "please airplane ", "toggle_data(", "{",
                                   "shall i proceed? ", "please check data saver and ", "email? ",
                                   "please don't turn wi-fi off, ", "please don't wifi ", "do not toggle_data "])
def test_a_megabyte_of_any_shape_is_answered_fast(env, tasks, shape):
    user = ScenarioUser()
    asyncio.run(user.start(tasks[0], seed=0, tools=env.core._user_tool_schemas))
    text = shape * (1_000_000 // len(shape))
    started = time.perf_counter()
    asyncio.run(user.respond([AssistantMessage(content=text)]))
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("unit", ["turn ", "don't turn wi-fi off, ", "don't wifi ", "i will check wifi and "])
def test_phone_request_matching_is_linear(user_tools, unit):
    def cost(n: int) -> float:
        text = "please " + unit * n  # requests, or clauses that ask nothing and are passed over one by one
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            READER.request_in_words(text, user_tools)
            best = min(best, time.perf_counter() - started)
        return best

    small, large = cost(100_000 // len(unit)), cost(400_000 // len(unit))
    assert large < 8 * small + 0.01  # four times the text: a quadratic matcher would take sixteen times as long


def test_nothing_an_agent_says_breaks_the_user(env, tasks):
    import random

    pieces = [e for s in SETTINGS for e in s.examples] + [
        "please", "could you", "toggle_data(", ")", "{", "}", '{"mode": "4g_only"}', "set_network_mode_preference",
        'grant_app_permission({"app_name": 5})', "İ", "ß", ".", ",", "?", "\n", "and", "then", "on", "off", "shall i",
        "1" * 5000, "[" * 50, "anything else", "order id?", "\x00", "😀", "on and off", "cancel #W123"]
    rng = random.Random(0)
    for i in range(400):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        env.reset(options={"task": tasks[i % len(tasks)]})
        *_, info = env.step(text)
        assert info["termination_reason"] != "user_error", (text, info.get("user_error"))
