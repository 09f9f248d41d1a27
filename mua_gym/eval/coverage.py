"""How much of what a reference task set asks does a generated split ask too: tool sets, lengths, behaviours.

We train on generated tasks and are judged on TAU2's, so a generated split should ask for what TAU2 asks. This
module compares the two by their shape only, never by their content: the set of tool names each task's gold agent
calls, how many calls it makes, the tools used, the user behaviours that hang on the conversation, and (telecom)
the faults injected before the episode. Nothing of a reference task (its world, ids or text) goes into a generated
one; the reference is read here and only counted.

:func:`coverage` returns a :class:`Coverage`; ``mua-gym tasks --coverage`` prints it (:func:`format_coverage`).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Iterable, Sequence

from pydantic import BaseModel

from mua_gym.kit.behaviours import BEHAVIOURS
from mua_gym.task import Task

__all__ = ["Coverage", "behaviours", "coverage", "fault_family", "format_coverage", "tool_set"]

#: What makes a prose scenario conditional on the conversation ("if the agent asks ...", "only after ...").
CONDITIONAL_PROSE = re.compile(r"\bif\b|\bunless\b|\bonly (?:if|when|after|once)\b|\bwhen (?:the agent|asked|you are "
                               r"asked)\b|\bchange (?:your|his|her) mind\b|\bafter (?:the agent|being)\b",
                               re.IGNORECASE)


def tool_set(task: Task, reads: frozenset[str] = frozenset()) -> frozenset[str]:
    """The names of the tools the task's gold agent calls (the user's own calls left out), less the look-ups
    ``reads`` names."""
    return frozenset(a.name for a in task.gold_actions if a.requestor == "assistant" and a.name not in reads)


def gold_length(task: Task) -> int:
    """How many calls the task's gold agent makes."""
    return sum(1 for a in task.gold_actions if a.requestor == "assistant")


def fault_family(task: Task) -> frozenset[str]:
    """The names of the set-up calls that break the world before the episode (telecom's faults), as a set."""
    return frozenset(a.name for a in task.initial_actions)


def behaviours(task: Task) -> set[str]:
    """The user's conditional behaviours in ``task``: for a generated task, the behaviour fields its intents carry
    (``on_confirm``, ``withhold``, ``first_says``); for a prose task, ``"prose"`` where its scenario (instructions,
    reason for calling, what the user knows and does not) hangs on the conversation (:data:`CONDITIONAL_PROSE`)."""
    scenario = task.user_scenario
    found = {key for intent in scenario.intents for key in BEHAVIOURS if intent.get(key)}
    prose = " ".join(t or "" for t in (scenario.instructions, scenario.reason_for_call, scenario.known_info,
                                       scenario.unknown_info))
    if not scenario.intents and CONDITIONAL_PROSE.search(prose):
        found.add("prose")
    return found


class Spread(BaseModel):
    """How many gold calls the tasks of one set make."""

    median: float
    max: int
    histogram: dict[int, int]  # calls -> tasks


class Coverage(BaseModel):
    """A generated split compared with a reference task set, by shape.

    ``exact``: the share of reference tasks whose tool set some generated task has exactly; ``contained``: whose tool
    set lies within some generated task's; ``exact_requests`` and ``contained_requests``: the same for the tool sets
    without look-ups (what a task asks done: writes, sums, hand-offs; TAU2's gold lists its look-ups for some tasks
    and not for others, so only these compare like with like); ``missing_tools``: tools the reference's gold calls
    and no generated task does; ``conditional``: tasks with a conditional user behaviour, of each set;
    ``faults``: the set-up calls (telecom's injected faults) the reference makes, and how many of them the generated
    split makes too; ``fault_families``: the reference's fault combinations (each task's set of set-up calls) and the
    share of reference tasks whose combination the generated split has.
    """

    generated: int
    reference: int
    generated_tool_sets: int
    reference_tool_sets: int
    exact: float
    contained: float
    exact_requests: float
    contained_requests: float
    uncovered_requests: list[tuple[list[str], int]]
    uncovered_tool_sets: list[tuple[list[str], int]]  # (tool set, reference tasks with it), most common first
    generated_length: Spread
    reference_length: Spread
    missing_tools: list[str]
    conditional_generated: int
    conditional_reference: int
    behaviour_counts: dict[str, int]  # behaviour field -> generated tasks with it
    by_difficulty: dict[str, dict[str, int]]  # level -> {"tasks", "conditional"}
    faults: int
    faults_covered: int
    fault_families: int
    fault_families_covered: float
    missing_fault_families: list[list[str]]


def _spread(lengths: Sequence[int]) -> Spread:
    return Spread(median=float(statistics.median(lengths)) if lengths else 0.0, max=max(lengths, default=0),
                  histogram=dict(sorted(Counter(lengths).items())))


def _match(ours: set[frozenset[str]], theirs: Counter[frozenset[str]]) -> tuple[int, int, list[tuple[list[str], int]]]:
    """How many of ``theirs`` (tool set -> tasks) have their set in ``ours``, within one of ``ours``, and the sets
    not in ``ours`` (most tasks first)."""
    maximal = [s for s in ours if not any(s < other for other in ours)]
    exact = sum(n for s, n in theirs.items() if s in ours)
    contained = sum(n for s, n in theirs.items() if any(s <= m for m in maximal))
    uncovered = sorted(((sorted(s), n) for s, n in theirs.items() if s not in ours), key=lambda x: (-x[1], x[0]))
    return exact, contained, uncovered


def coverage(generated: Iterable[Task], reference: Iterable[Task], reads: Iterable[str] = ()) -> Coverage:
    """How far ``generated`` covers ``reference`` (see :class:`Coverage`); both are read once, in full. ``reads``:
    the domain's look-up tools, left out of the request sets."""
    ours, theirs, looks = list(generated), list(reference), frozenset(reads)
    our_sets = {tool_set(t) for t in ours}
    their_sets = Counter(tool_set(t) for t in theirs)
    exact, contained, uncovered = _match(our_sets, their_sets)
    exact_requests, contained_requests, uncovered_requests = _match(
        {tool_set(t, looks) for t in ours}, Counter(tool_set(t, looks) for t in theirs))
    used = set().union(*our_sets) if our_sets else set()
    missing = sorted(set().union(*their_sets) - used) if their_sets else []
    levels: dict[str, dict[str, int]] = {}
    counts: Counter[str] = Counter()
    for t in ours:
        found = behaviours(t)
        counts.update(found)
        row = levels.setdefault(str(t.difficulty), {"tasks": 0, "conditional": 0})
        row["tasks"] += 1
        row["conditional"] += bool(found)
    our_faults = {fault_family(t) for t in ours}
    their_calls = {a.name for t in theirs for a in t.initial_actions}
    our_calls = {a.name for t in ours for a in t.initial_actions}
    their_faults = Counter(fault_family(t) for t in theirs if t.initial_actions)
    n = len(theirs) or 1
    return Coverage(
        generated=len(ours), reference=len(theirs), generated_tool_sets=len(our_sets),
        reference_tool_sets=len(their_sets), exact=exact / n, contained=contained / n,
        exact_requests=exact_requests / n, contained_requests=contained_requests / n,
        uncovered_requests=uncovered_requests, uncovered_tool_sets=uncovered,
        generated_length=_spread([gold_length(t) for t in ours]),
        reference_length=_spread([gold_length(t) for t in theirs]), missing_tools=missing,
        conditional_generated=sum(1 for t in ours if behaviours(t)),
        conditional_reference=sum(1 for t in theirs if behaviours(t)), behaviour_counts=dict(sorted(counts.items())),
        by_difficulty=dict(sorted(levels.items())), faults=len(their_calls),
        faults_covered=len(their_calls & our_calls), fault_families=len(their_faults),
        fault_families_covered=sum(k for f, k in their_faults.items() if f in our_faults) / (sum(their_faults.values())
                                                                                           or 1),
        missing_fault_families=sorted(sorted(f) for f in their_faults if f not in our_faults),
    )


def format_coverage(report: Coverage, name: str = "generated", against: str = "reference", top: int = 10) -> str:
    """``report`` as a table a person reads: the issue's rows, then the reference tool sets left uncovered."""
    g, r = report.generated_length, report.reference_length
    rows = [
        ("tasks", f"{report.generated}", f"{report.reference}"),
        ("distinct agent tool sets", f"{report.generated_tool_sets}", f"{report.reference_tool_sets}"),
        (f"{against} tasks whose exact tool set occurs in {name}", "", f"{report.exact:.0%}"),
        (f"{against} tasks whose tool set lies within one of {name}", "", f"{report.contained:.0%}"),
        ("the same without look-ups: exact", "", f"{report.exact_requests:.0%}"),
        ("the same without look-ups: within one", "", f"{report.contained_requests:.0%}"),
        ("gold agent calls, median / max", f"{g.median:g} / {g.max}", f"{r.median:g} / {r.max}"),
        (f"tools {against} uses that {name} does not", "", ", ".join(report.missing_tools) or "none"),
        ("tasks with conditional user behaviour", f"{report.conditional_generated}",
         f"{report.conditional_reference}"),
    ]
    if report.fault_families:
        rows.append((f"{against}'s faults (set-up calls) that {name} injects", "",
                     f"{report.faults_covered} of {report.faults}"))
        rows.append((f"{against} tasks whose fault combination {name} has", "",
                     f"{report.fault_families_covered:.0%} ({report.fault_families} combinations)"))
    width = max(len(row[0]) for row in rows)
    lines = [f"{'':{width}s}  {name:>12s}  {against}"]
    lines += [f"{a:{width}s}  {b:>12s}  {c}" for a, b, c in rows]
    if report.behaviour_counts:
        lines.append("behaviours in " + name + ": " + ", ".join(f"{BEHAVIOURS.get(k, k)} {v}"
                                                                for k, v in report.behaviour_counts.items()))
    lines.append("by level: " + ", ".join(f"{lvl}: {row['tasks']} tasks, {row['conditional']} conditional"
                                          for lvl, row in report.by_difficulty.items()))
    if report.uncovered_tool_sets:
        lines.append(f"{against} tool sets not in {name} (tasks):")
        lines += [f"  {n:3d}  {' '.join(s) or '(no calls)'}" for s, n in report.uncovered_tool_sets[:top]]
    if report.uncovered_requests:
        lines.append(f"{against} request sets (no look-ups) not in {name} (tasks):")
        lines += [f"  {n:3d}  {' '.join(s) or '(none)'}" for s, n in report.uncovered_requests[:top]]
    if report.missing_fault_families:
        lines.append(f"{against} fault combinations not in {name}:")
        lines += [f"  {' '.join(f)}" for f in report.missing_fault_families[:top]]
    return "\n".join(lines)
