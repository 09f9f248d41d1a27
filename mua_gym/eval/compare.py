"""Two evaluation runs side by side: pass^1 of each, the difference, and a paired bootstrap interval on it.

    from mua_gym.eval.compare import compare_runs, format_comparison
    c = compare_runs("runs/baseline", "runs/candidate")
    print(format_comparison(c))
    c.overall.diff, (c.overall.low, c.overall.high)   # B - A and its 95% interval

Only the tasks both runs played are compared (a task is an env id and a task id); those only one run played
are listed in ``only_a`` / ``only_b``. A task's pass^1 is its success rate over its trials (the runs may
have played different numbers of trials). The interval is a percentile bootstrap, paired by task: each of
``resamples`` draws picks the common tasks with replacement and takes the mean of B's rate minus A's over
the picked tasks; the interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
(numpy's linear interpolation) of those means. Every group (each env, and all tasks together) draws from
its own ``numpy.random.default_rng(seed)``, so the same seed gives the same intervals.

The other figures of each side (mean reward, turns, tool calls, errors, tokens, cost) are over the
episodes of the common tasks too, so that both sides are measured on the same tasks.

Each group also has a noise floor: ``z * sqrt(V_A + V_B)``, V each side's :func:`~mua_gym.eval.evaluate.pass1_variance`
over the group's tasks (the spread of each task's trials), z = 1.96: the least B - A that trial noise alone would
not explain at 95%. A difference under it is ``within_noise`` (the bootstrap interval speaks to the choice of
tasks; the floor to the trials' coin flips: a pass^1 gap under it is what rerunning either side could give).
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel, Field, computed_field

from mua_gym.eval.evaluate import (
    ROLES, Z95, EpisodeResult, RoleUsage, group_by_task, is_void, pass1_variance, read_run, tokens_and_cost,
    usage_ledger,
)

__all__ = ["GroupComparison", "RunComparison", "SideFigures", "TaskDifference", "bootstrap_means",
           "compare_results", "compare_runs", "format_comparison"]

OVERALL = "overall"


class SideFigures(BaseModel):
    """One run's figures over the episodes of a group's common tasks."""

    episodes: int
    #: The mean over the group's common tasks of each task's success rate.
    pass_1: float
    mean_reward: float
    mean_turns: float
    mean_tool_calls: float
    tool_errors: int
    agent_errors: int
    user_errors: int
    #: Agent, user and judge tokens, and their cost in USD, summed over the episodes.
    tokens: float
    cost: float
    #: The same per role (``agent``, ``user``, ``judge``), with each role's share.
    ledger: dict[str, RoleUsage] = Field(default_factory=dict)
    #: User faults recorded over the episodes, and the void episodes (:func:`~mua_gym.eval.evaluate.is_void`).
    user_faults: int = 0
    void: int = 0
    #: pass^1 with the void episodes left out (tasks whose every trial is void left out); None: every one void.
    pass_1_void_excluded: float | None = None


class GroupComparison(BaseModel):
    """One env (or ``overall``): the common tasks' count, each side's figures, B - A and its interval."""

    name: str
    tasks: int
    a: SideFigures
    b: SideFigures
    #: ``b.pass_1 - a.pass_1``.
    diff: float
    low: float
    high: float
    #: The least ``|diff|`` that trial noise would not explain at 95% (see the module's docstring).
    noise_floor: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def significant(self) -> bool:
        """Whether the interval leaves out 0."""
        return self.low > 0 or self.high < 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def within_noise(self) -> bool:
        """Whether ``|diff|`` is under the noise floor (a difference of exactly 0 always is)."""
        return self.diff == 0 or abs(self.diff) < self.noise_floor


class TaskDifference(BaseModel):
    """One common task: each run's success rate over its trials, and B's minus A's."""

    env_id: str
    task_id: str
    a_rate: float
    b_rate: float
    a_trials: int
    b_trials: int
    diff: float


class RunComparison(BaseModel):
    """Runs A and B compared (see the module's docstring for what each figure means)."""

    a: str
    b: str
    #: Each run's agent (its ``EvalConfig.agent``), or "" where the results came without a run folder.
    a_agent: str = ""
    b_agent: str = ""
    resamples: int
    seed: int
    confidence: float
    overall: GroupComparison
    #: Per env that both runs have common tasks in, by env id.
    by_env: dict[str, GroupComparison]
    #: ``(env id, task id)`` of the tasks only one run played, sorted.
    only_a: list[tuple[str, str]] = Field(default_factory=list)
    only_b: list[tuple[str, str]] = Field(default_factory=list)
    #: Every common task, the largest ``|diff|`` first (ties by env and task id).
    tasks: list[TaskDifference]
    #: The run settings (``EvalConfig`` fields) that differ: ``{field: [A's, B's]}``.
    settings: dict[str, list[Any]] = Field(default_factory=dict)


def bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``resamples`` resamples of ``values`` drawn with replacement: an array of ``resamples``
    floats. The draws are one ``rng.integers(0, len(values), size=(resamples, len(values)))`` call."""
    values = np.asarray(values, dtype=float)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    return values[picks].mean(axis=1)


def _interval(diffs: np.ndarray, resamples: int, seed: int, confidence: float) -> tuple[float, float]:
    means = bootstrap_means(diffs, resamples, np.random.default_rng(seed))
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def _figures(results: list[EpisodeResult], rates: Sequence[float]) -> SideFigures:
    n = len(results) or 1
    kept = [[r.success for r in task if not is_void(r)] for task in group_by_task(results).values()]
    kept = [v for v in kept if v]
    usage: dict[str, float] = defaultdict(float)
    for r in results:
        for name, value in r.usage.items():
            usage[name] += value
    tokens, cost = tokens_and_cost(usage)
    return SideFigures(
        episodes=len(results), pass_1=float(np.mean(rates)) if len(rates) else 0.0,
        mean_reward=sum(r.reward for r in results) / n, mean_turns=sum(r.turns for r in results) / n,
        mean_tool_calls=sum(r.tool_calls for r in results) / n, tool_errors=sum(r.tool_errors for r in results),
        agent_errors=sum(r.error_kind == "agent" for r in results),
        user_errors=sum(r.error_kind == "user" for r in results), tokens=tokens, cost=cost,
        ledger=usage_ledger(usage), user_faults=sum(len(r.user_faults) for r in results),
        void=sum(is_void(r) for r in results),
        pass_1_void_excluded=sum(sum(v) / len(v) for v in kept) / len(kept) if kept else None)


def compare_results(results_a: list[EpisodeResult], results_b: list[EpisodeResult], *, a: str = "A", b: str = "B",
                    resamples: int = 10_000, seed: int = 0, confidence: float = 0.95) -> RunComparison:
    """:func:`compare_runs` on two lists of episodes (``a`` and ``b`` name them); raises ValueError where the
    two share no task."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    tasks_a, tasks_b = group_by_task(results_a), group_by_task(results_b)
    common = sorted(set(tasks_a) & set(tasks_b))
    if not common:
        raise ValueError(f"{a} and {b} have no task in common: nothing to compare")
    rate_a = {k: sum(r.success for r in tasks_a[k]) / len(tasks_a[k]) for k in common}
    rate_b = {k: sum(r.success for r in tasks_b[k]) / len(tasks_b[k]) for k in common}

    def group(name: str, keys: list[tuple[str, str]]) -> GroupComparison:
        ra, rb = [rate_a[k] for k in keys], [rate_b[k] for k in keys]
        low, high = _interval(np.subtract(rb, ra), resamples, seed, confidence)
        side_a = _figures([r for k in keys for r in tasks_a[k]], ra)
        side_b = _figures([r for k in keys for r in tasks_b[k]], rb)
        variance = sum(pass1_variance([[r.success for r in tasks[k]] for k in keys]) for tasks in (tasks_a, tasks_b))
        return GroupComparison(name=name, tasks=len(keys), a=side_a, b=side_b, diff=side_b.pass_1 - side_a.pass_1,
                               low=low, high=high, noise_floor=Z95 * variance ** 0.5)

    envs = sorted({env for env, _ in common})
    differences = [TaskDifference(env_id=k[0], task_id=k[1], a_rate=rate_a[k], b_rate=rate_b[k],
                                  a_trials=len(tasks_a[k]), b_trials=len(tasks_b[k]), diff=rate_b[k] - rate_a[k])
                   for k in common]
    differences.sort(key=lambda d: -abs(d.diff))  # stable: ties keep the (env, task) order of ``common``
    return RunComparison(
        a=a, b=b, resamples=resamples, seed=seed, confidence=confidence, overall=group(OVERALL, common),
        by_env={env: group(env, [k for k in common if k[0] == env]) for env in envs},
        only_a=sorted(set(tasks_a) - set(tasks_b)), only_b=sorted(set(tasks_b) - set(tasks_a)), tasks=differences)


def compare_runs(folder_a: str | os.PathLike[str], folder_b: str | os.PathLike[str], *, resamples: int = 10_000,
                 seed: int = 0, confidence: float = 0.95) -> RunComparison:
    """Compares two ``mua-gym eval`` folders (finished or not): A is the baseline, differences are B - A.
    Raises FileNotFoundError where a folder holds no run, ValueError where the runs share no task."""
    run_a, run_b = read_run(folder_a), read_run(folder_b)
    comparison = compare_results(run_a.results, run_b.results, a=str(folder_a), b=str(folder_b),
                                 resamples=resamples, seed=seed, confidence=confidence)
    key_a, key_b = run_a.config.run_key(), run_b.config.run_key()
    settings = {k: [key_a[k], key_b[k]] for k in key_a if key_a[k] != key_b[k]}
    return comparison.model_copy(update={"a_agent": run_a.config.agent, "b_agent": run_b.config.agent,
                                         "settings": settings})


def _table(header: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """Columns padded to their widest cell: the first ``left`` left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _passed(rate: float, trials: int) -> str:
    return f"{round(rate * trials)}/{trials}"


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def _verdict(g: GroupComparison) -> str:
    """The marks after a group's figures: ``*`` where the interval leaves out 0, ``within noise`` where it is."""
    return " ".join(mark for mark, on in (("*", g.significant), ("within noise", g.within_noise)) if on)


def _ledger(groups: list[GroupComparison]) -> list[str]:
    """The tokens and cost table per role and side, with the judge's share of each; nothing where no model ran."""
    sides = [(f"{g.name} {name}", f) for g in groups for name, f in (("A", g.a), ("B", g.b))]
    if not any(f.ledger for _, f in sides):
        return []
    header = ["", *(f"{role} {what}" for role in ROLES for what in ("tokens", "$")), "judge share"]
    rows = []
    for label, f in sides:
        cells = [label]
        for role in ROLES:
            used = f.ledger.get(role, RoleUsage())
            cells += [f"{used.tokens:.0f}", f"{used.cost:.4f}"]
        judge = f.ledger.get("judge", RoleUsage())
        cells.append(f"{judge.token_share:.0%} tokens, {judge.cost_share:.0%} cost")
        rows.append(cells)
    return ["", "Tokens and cost by role:", *_table(header, rows)]


def format_comparison(c: RunComparison, max_tasks: int = 10) -> str:
    """The comparison as the terminal prints it: the runs, pass^1 per env and overall with B - A and its
    interval, each side's other figures, and the ``max_tasks`` tasks that differ most (those that differ)."""
    groups = [*c.by_env.values(), c.overall] if len(c.by_env) > 1 else [c.overall]
    level = f"{c.confidence:.0%}"
    out = [f"A: {c.a}" + (f" (agent {c.a_agent})" if c.a_agent else ""),
           f"B: {c.b}" + (f" (agent {c.b_agent})" if c.b_agent else ""),
           f"{c.overall.tasks} tasks in common; only A played {len(c.only_a)}, only B played {len(c.only_b)}"]
    if c.settings:
        out.append("Settings that differ: " + "; ".join(f"{k} {a!r} / {b!r}" for k, (a, b) in c.settings.items()))
    out.append("")
    out += _table(["", "tasks", "pass^1 A", "pass^1 B", "B - A", f"{level} interval", "noise floor", ""],
                  [[g.name, str(g.tasks), f"{g.a.pass_1:.3f}", f"{g.b.pass_1:.3f}", _signed(g.diff),
                    f"[{_signed(g.low)}, {_signed(g.high)}]", f"{g.noise_floor:.3f}", _verdict(g)] for g in groups])
    star = "* the interval leaves out 0; " if any(g.significant for g in [c.overall, *c.by_env.values()]) else ""
    out.append(f"({star}paired bootstrap over tasks, {c.resamples} resamples, seed {c.seed};")
    out.append(" within noise: |B - A| under the noise floor, the least difference the trials' own spread would not "
               "explain at 95%)")
    out.append("")
    rows = []
    for g in groups:
        for side, f in (("A", g.a), ("B", g.b)):
            rows.append([f"{g.name} {side}", str(f.episodes), f"{f.mean_reward:.3f}", f"{f.mean_turns:.1f}",
                         f"{f.mean_tool_calls:.1f}", str(f.tool_errors), f"{f.agent_errors}/{f.user_errors}",
                         f"{f.tokens:.0f}", f"{f.cost:.4f}", str(f.user_faults), str(f.void),
                         "-" if f.pass_1_void_excluded is None else f"{f.pass_1_void_excluded:.3f}"])
    out += _table(["", "episodes", "reward", "turns", "tool calls", "tool errors", "agent/user errors", "tokens",
                   "cost $", "user faults", "void", "pass^1 w/o void"], rows)
    out += _ledger(groups)
    differing = [t for t in c.tasks if t.diff != 0]
    if differing:
        out += ["", f"Tasks that differ most ({len(differing)} of {len(c.tasks)} differ; passed/trials):"]
        out += _table(["env", "task", "A", "B", "B - A"],
                      [[t.env_id, t.task_id, _passed(t.a_rate, t.a_trials), _passed(t.b_rate, t.b_trials),
                        _signed(t.diff)] for t in differing[:max_tasks]], left=2)
    for side, keys in (("A", c.only_a), ("B", c.only_b)):
        if keys:
            shown = ", ".join(f"{env} {task}" for env, task in keys[:5])
            out.append(f"Only {side} played {len(keys)} task(s): {shown}{' ...' if len(keys) > 5 else ''}")
    return "\n".join(out)
