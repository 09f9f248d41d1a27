"""The scaffolding the tau2 conformance suites share, parameterised by domain.

``tau2_ref.py`` is the tau2 side (its environments, one call there, how answers and DBs compare). This module is
what the ``test_*_conformance.py`` suites build around it:

* :class:`DomainSpec`: a single-control domain (retail, airline) as its suite compares it, with its module
  fixtures (:func:`fixtures`), the gold replay of every tau2 task (:func:`assert_gold_replay`), the oracle's env
  reward (:func:`assert_oracle_scores_one`), the records that changed on either side (:func:`record_problems`),
  a targeted case (:func:`edge_case_problems`) and a fuzzed call sequence (:func:`check_sequence`,
  :func:`fuzz_summary`) run on both sides;
* the option-picking helpers of the differential fuzzers (:class:`Bad`, :func:`pick`, :func:`sample`) and the
  pieces of argument generation the domains share;
* the telecom user toolkit's argument-free tools, which both telecom suites that call user tools cycle through.

Only imported after ``pytest.importorskip("tau2")``. Each suite keeps its own edge cases, its generators and the
hypothesis test that draws from them: with ``derandomize`` the seed is a digest of that nested test's source,
decorators included, so moving or rewording it would change every draw.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Union

import pytest
from episodes import run_oracle
from hypothesis import strategies as st
from tau2_ref import Tau2Reference, compare_call, db_equal, normalise, record_diffs, tau2_call

import mua_gym
from mua_gym.env.episode import prepare_task

# Tools whose error texts only have to be errors on both sides (tau2's are raw Python errors there).
GENERIC_TOOLS = {"calculate", "transfer_to_human_agents"}
SHORT_TEXT = st.text(max_size=8)
# tau2 telecom's user tools that take no argument, in its toolkit's order.
TELECOM_NO_ARG_USER_TOOLS = [
    "check_status_bar", "check_network_status", "check_network_mode_preference", "run_speed_test",
    "toggle_airplane_mode", "check_sim_status", "reseat_sim_card", "toggle_data", "toggle_roaming",
    "check_data_restriction_status", "toggle_data_saver_mode", "check_apn_settings", "reset_apn_settings",
    "check_wifi_status", "toggle_wifi", "check_wifi_calling_status", "toggle_wifi_calling", "check_vpn_status",
    "connect_vpn", "disconnect_vpn", "check_installed_apps", "can_send_mms", "reboot_device",
    "check_payment_request", "make_payment",
]

# A changed row of one of our tables -> the tau2 record it belongs to: that record table (the row key's first
# element is the record id) or a function of the row key giving (record table, record id).
RecordOf = Union[str, Callable[[tuple], tuple[str, str]]]


@dataclass(frozen=True)
class DomainSpec:
    """A single-control domain as its conformance suite compares it with tau2.

    ``records``: per tau2 record table, (our query for one record, the function that makes tau2's record of its
    row, the query's parameter). ``record_of_table``: every table of ours that a tool may change (see
    :data:`RecordOf`); a change in any other table makes :func:`check_sequence` compare the whole DBs.
    ``full_db_every``: every how many fuzzed sequences the whole DBs are compared anyway.
    """

    name: str
    env_id: str
    task_count: int
    reference: Callable[[], Tau2Reference]
    export_db: Callable[[Any], dict[str, Any]]
    records: dict[str, tuple[Any, Callable[[Any, Any], Any], str]]
    record_of_table: dict[str, RecordOf]
    full_db_every: int

    def our_record(self, world: Any, table: str, key: str) -> Any:
        """One record as tau2 would dump it, from our world (None if absent)."""
        query, make, param = self.records[table]
        row = world.fetch_one(query, **{param: key})
        return None if row is None else make(world, row)

    def our_changed_records(self, world: Any) -> set[tuple[str, str]] | None:
        """The tau2 records our world changed since its reset; None when a table we do not map changed."""
        out = set()
        for table, rows in world.changes().items():
            owner = self.record_of_table.get(table)
            if owner is None:
                return None  # a table we do not know: compare everything
            out |= {owner(key) if callable(owner) else (owner, key[0]) for key in rows}
        return out


def fixtures(spec: DomainSpec) -> tuple[Any, Any, Any]:
    """The suite's module fixtures ``domain``, ``ours`` (a tau2-data world) and ``ref`` (tau2's environment)."""

    @pytest.fixture(scope="module")
    def domain():
        return mua_gym.get_domain(spec.name)

    @pytest.fixture(scope="module")
    def ours(domain):
        world = domain.new_world("tau2")
        yield world
        world.close()

    @pytest.fixture(scope="module")
    def ref():
        return spec.reference()

    return domain, ours, ref


def assert_initial_db(spec: DomainSpec, ref: Tau2Reference, ours: Any) -> None:
    ours.reset()
    ref.reset()
    mine, theirs = spec.export_db(ours), ref.dump()
    assert db_equal(mine, theirs), record_diffs(mine, theirs)


def assert_gold_replay(spec: DomainSpec, domain: Any, ours: Any, tau2_tasks: list[Any], new_env: Callable[[], Any],
                       more_than: int) -> None:
    """Every tau2 task's gold actions, call by call on ``new_env()`` and ours, and the final DBs; our gold actions
    must be tau2's, and more than ``more_than`` calls made."""
    our_tasks = {t.id: t for split in ("train", "test") for t in domain.tasks(split, "tau2")}
    assert len(tau2_tasks) == spec.task_count
    assert len(our_tasks) == spec.task_count and set(our_tasks) == {t.id for t in tau2_tasks}
    mismatches: list[str] = []
    calls = 0
    for task in tau2_tasks:
        gold = task.evaluation_criteria.actions or []
        mine = our_tasks[task.id].gold_actions
        if [(a.name, a.arguments, a.requestor) for a in gold] != [(a.name, a.arguments, a.requestor) for a in mine]:
            mismatches.append(f"task {task.id}: our gold actions differ from tau2's")
            continue
        env = new_env()
        ours.reset()
        for i, action in enumerate(gold):
            calls += 1
            theirs = tau2_call(env, action.name, copy.deepcopy(action.arguments), action.requestor)
            result = ours.call_tool(action.name, copy.deepcopy(action.arguments), action.requestor)
            problem = compare_call(action.name, action.arguments, theirs, result, strict_errors=True)
            if problem:
                mismatches.append(f"task {task.id} action {i}: {problem}")
        mine_db, theirs_db = spec.export_db(ours), env.tools.db.model_dump()
        if not db_equal(mine_db, theirs_db):
            mismatches.append(f"task {task.id}: final DB differs: {record_diffs(mine_db, theirs_db)}")
    ours.reset()
    assert calls == sum(len(t.evaluation_criteria.actions or []) for t in tau2_tasks) > more_than
    assert not mismatches, f"{len(mismatches)} mismatches, first ones:\n" + "\n".join(mismatches[:10])


def assert_oracle_scores_one(spec: DomainSpec, domain: Any) -> None:
    """The env-level reward of the oracle agent on every task (DB + COMMUNICATE through our own reward)."""
    tasks = [t for split in ("train", "test") for t in domain.tasks(split, "tau2")]
    assert len(tasks) == spec.task_count
    env = mua_gym.make(spec.env_id, world="tau2")
    try:
        failures = []
        for task in tasks:
            reward, terminated, truncated, info = run_oracle(env, task)
            # tau2's rules pay every gold replay; strictly, a task that looking up and stopping meets needs a judge
            strict = 0.0 if prepare_task(env.unwrapped.core.domain, task).judge_only else 1.0
            calls, parity = info["tool_calls"], info["reward_info"]["parity_reward"]
            if (reward, terminated, truncated, calls, parity) != (strict, True, False, len(task.gold_actions), 1.0):
                failures.append((task.id, reward, terminated, truncated, info.get("reward_info")))
    finally:
        env.close()
    assert not failures, failures[:5]


def call_both(ref: Tau2Reference, ours: Any, name: Any, args: dict[str, Any],
              strict_errors: bool) -> tuple[str | None, tuple[str, bool]]:
    """One call on both sides (tau2 first): (a description of the difference or None, tau2's answer)."""
    theirs = ref.call(name, copy.deepcopy(args))
    result = ours.call_tool(name, copy.deepcopy(args))
    return compare_call(name, args, theirs, result, strict_errors=strict_errors), theirs


def record_problems(spec: DomainSpec, ref: Tau2Reference, ours: Any, extra: set[tuple[str, str]],
                    ours_changed: set[tuple[str, str]] | None) -> tuple[list[str], dict[str, set[str]]]:
    """Every record that changed on either side (``ours_changed``: :meth:`DomainSpec.our_changed_records`, just
    computed), plus ``extra``, compared; and tau2's change set (for reset)."""
    changed = ref.changed()
    keys = {(t, k) for t, ks in changed.items() for k in ks} | (ours_changed or set()) | extra
    problems = []
    for table, key in sorted(keys):
        a, b = spec.our_record(ours, table, key), ref.record(table, key)
        if a != b and normalise(a) != normalise(b):
            problems.append(f"{table}[{key}] differs: {record_diffs({key: a}, {key: b})}")
    return problems, changed


def edge_case_problems(spec: DomainSpec, ref: Tau2Reference, ours: Any,
                       calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A targeted case from the shipped DB: each call compared (error texts too but for generic tools), then every
    changed record; both sides are reset after."""
    ref.reset()
    ours.reset()
    problems = []
    changed = None
    try:
        for name, args in calls:
            problem, _ = call_both(ref, ours, name, args, strict_errors=name not in GENERIC_TOOLS)
            if problem:
                problems.append(problem)
        found, changed = record_problems(spec, ref, ours, set(), spec.our_changed_records(ours))
        problems += found
    finally:
        ref.reset(changed)
        ours.reset()
    return problems


@dataclass
class Call:
    """A fuzzed call; ``well_formed``: a known tool, every argument present and of its declared type."""

    name: str
    args: dict[str, Any]
    well_formed: bool


def check_sequence(spec: DomainSpec, ref: Tau2Reference, ours: Any, calls: list[Call], named: set[tuple[str, str]],
                   stats: Counter) -> list[str]:
    """A fuzzed sequence on both sides from the shipped DB, then the DBs; both sides are reset after.

    Every ``spec.full_db_every``-th sequence compares the complete DBs (export vs model_dump). The others compare
    every record that changed on either side (tau2: all records against a pristine copy; ours: the world's change
    set) plus the ``named`` records, which is the same verdict as long as our change tracking is right (which the
    full comparisons and the gold replay check).
    """
    problems = []
    changed = None
    try:
        for call in calls:
            strict = call.well_formed and call.name not in GENERIC_TOOLS
            problem, theirs = call_both(ref, ours, call.name, call.args, strict_errors=strict)
            stats["calls"] += 1
            stats[(call.name, "error" if theirs[1] else "ok")] += 1
            if problem:
                problems.append(problem)
        stats["sequences"] += 1
        ours_changed = spec.our_changed_records(ours)  # one look at our change set: it queries the world
        if ours_changed is None or stats["sequences"] % spec.full_db_every == 0:
            stats["full_db_checks"] += 1
            changed = ref.changed()
            ours_db, tau2_db = spec.export_db(ours), ref.dump()
            if not db_equal(ours_db, tau2_db):
                problems.append(f"DB differs: {record_diffs(ours_db, tau2_db)}")
        else:
            found, changed = record_problems(spec, ref, ours, named, ours_changed)
            problems += found
    finally:
        ref.reset(changed)
        ours.reset()
    return problems


def fuzz_start(ref: Tau2Reference, ours: Any) -> tuple[Counter, float]:
    """Both sides reset; the fuzz's statistics and start time."""
    ref.reset()
    ours.reset()
    return Counter(), time.perf_counter()


def fuzz_summary(stats: Counter, started: float, tools: list[str], write_tools: tuple[str, ...]) -> None:
    """Prints what the fuzz did; it must have run 500 sequences and reached both outcomes of every write tool."""
    elapsed = time.perf_counter() - started
    per_tool = {n: (stats[(n, "ok")], stats[(n, "error")]) for n in tools}
    print(f"\nfuzz: {stats['sequences']} sequences, {stats['calls']} calls, {stats['full_db_checks']} full DB "
          f"checks, {elapsed:.1f} s; per tool (tau2 ok, error): {per_tool}")
    assert stats["sequences"] >= 500
    # The generator must keep reaching both outcomes of every write tool.
    for name in write_tools:
        assert stats[(name, "ok")] > 0 and stats[(name, "error")] > 0, (name, per_tool[name])


# -- option picking for the differential fuzzers -----------------------------------------------------------
@dataclass(frozen=True)
class Bad:
    """An option of the wrong JSON type or value: the call is malformed (tau2 then fails with a raw Python error)."""

    value: Any


def pick(draw: Any, ctx: Any, arg: str, good: list[tuple[int, Any]], bad: list[tuple[int, Any]] = ()) -> Any:
    """A value for ``arg``: one of ``good`` (likely to pass tau2's checks); one of ``good + bad`` when ``arg`` is
    the argument the call perturbs (``ctx.perturb``). Options are (weight, value or function of draw);
    :class:`Bad` marks a malformed value and clears ``ctx.typed``.
    """
    options = [o for o in (list(good) + list(bad) if ctx.perturb == arg else good) if o[0] > 0]
    k = draw(st.integers(0, sum(w for w, _ in options) - 1))
    for weight, option in options:
        if k < weight:
            break
        k -= weight
    if isinstance(option, Bad):
        ctx.typed = False
        option = option.value
    return option(draw) if callable(option) else option


def sample(pool: list[Any]) -> Callable[[Any], Any]:
    """An option drawing one element of ``pool``."""
    return lambda draw: draw(st.sampled_from(pool))


def user_id_arg(draw: Any, ctx: Any, user_ids: list[str]) -> Any:
    """A ``user_id``: the focus user's (``ctx.user``); perturbed, another, a miss or a wrong type."""
    return pick(draw, ctx, "user_id", [(1, ctx.user)], [
        (3, sample(user_ids)), (1, ctx.user.upper()), (1, "no_such_user_0000"), (1, Bad(5)), (1, Bad(None)),
        (1, Bad([ctx.user])),
    ])


def generic_args(draw: Any, ctx: Any, name: str, expressions: list[str]) -> dict[str, Any]:
    """The arguments of one of :data:`GENERIC_TOOLS`."""
    if name == "calculate":
        return {"expression": pick(draw, ctx, "expression", [(1, sample(expressions))], [
            (8, sample(expressions)), (1, Bad(4))])}
    assert name == "transfer_to_human_agents", name
    return {"summary": pick(draw, ctx, "summary", [(1, "The customer wants a refund.")],
                            [(1, lambda d: d(SHORT_TEXT))])}


def misshape(draw: Any, ctx: Any, args: dict[str, Any], missing: bool, extra: bool) -> None:
    """Drops one argument (``missing``, if there is one) or adds an unexpected one (``extra``): malformed."""
    if missing and args:
        del args[draw(st.sampled_from(sorted(args)))]
        ctx.typed = False
    elif extra:
        args["extra"] = "x"
        ctx.typed = False
