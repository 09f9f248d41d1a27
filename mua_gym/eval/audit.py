"""A reward-hacking audit: every exploit agent, the fair agent and the oracle on a domain's tasks.

    from mua_gym.eval.audit import audit
    rows = audit("mua/Retail-v0", split="test", num_tasks=50)

An exploit is any agent of :data:`mua_gym.eval.baselines.BLIND_AGENTS` or
:data:`mua_gym.eval.baselines.EXPLOIT_AGENTS`: it does not solve tasks, so a fair reward pays it (almost) never.
The fair agent and the oracle show the reward still pays those that do. ``mua-gym audit`` prints the table and
exits non-zero when an exploit is paid too often.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from pydantic import BaseModel

__all__ = ["AuditRow", "audit", "aaudit", "format_table", "strategies"]


class AuditRow(BaseModel):
    """One strategy's episodes on the audited tasks."""

    strategy: str
    #: ``exploit`` (must not be paid), or ``solver`` (the fair agent and the oracle: must be).
    kind: str
    episodes: int
    #: The mean strict task reward (``task`` mode's).
    mean_reward: float
    #: The share of episodes whose strict task reward is 1: a success, paid in the success band in every reward
    #: mode (no shaping lifts a failure there).
    paid: float
    #: The same share by tau2's own rules (``parity_reward``): where TAU2's tasks are audited, what tau2 pays.
    paid_parity: float


def strategies() -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """Every audited strategy: name -> (kind, factory of an agent for a task)."""
    from mua_gym.eval.agents import make_agent
    from mua_gym.eval.baselines import BLIND_AGENTS, EXPLOIT_AGENTS

    found: dict[str, tuple[str, Callable[[Any], Any]]] = {
        f"blind-{name}": ("exploit", lambda task, make=make: make()) for name, make in BLIND_AGENTS.items()}
    found.update({name: ("exploit", make) for name, make in EXPLOIT_AGENTS.items()})
    found["fair"] = ("solver", lambda task: make_agent("fair", task))
    found["oracle"] = ("solver", lambda task: make_agent("oracle", task))
    return found


async def aaudit(env_id: str, *, split: str = "test", num_tasks: int | None = None, user: str | None = "scenario",
                 world: str | None = None, world_params: dict[str, Any] | None = None,
                 only: list[str] | None = None, concurrency: int = 8) -> list[AuditRow]:
    """Plays each strategy (``only``: those named) once on each of the split's first ``num_tasks`` tasks (all if
    None); one row per strategy. ValueError for an unknown strategy name."""
    from mua_gym.eval.evaluate import EvalConfig, aevaluate

    table = strategies()
    names = list(table) if only is None else only
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}: one of {', '.join(table)}")
    rows = []
    for name in names:
        kind, make = table[name]
        config = EvalConfig(env_ids=[env_id], agent=name, user=user, split=split, world=world,
                            world_params=world_params or {}, num_tasks=num_tasks, concurrency=concurrency)
        results: list[Any] = []
        await aevaluate(config, on_episode=lambda result, done, total: results.append(result),
                        agent_factory=lambda task, seed, make=make: make(task))
        parity = [float((r.trajectory.get("reward_info") or {}).get("parity_reward") or 0.0) for r in results]
        n = max(len(results), 1)
        rows.append(AuditRow(strategy=name, kind=kind, episodes=len(results),
                             mean_reward=sum(r.reward for r in results) / n,
                             paid=sum(r.success for r in results) / n,
                             paid_parity=sum(p >= 1.0 - 1e-6 for p in parity) / n))
    return rows


def audit(env_id: str, **kwargs: Any) -> list[AuditRow]:
    """:func:`aaudit`, run to completion."""
    return asyncio.run(aaudit(env_id, **kwargs))


def format_table(rows: list[AuditRow]) -> str:
    """The rows as a Markdown table."""
    lines = ["| strategy | kind | episodes | mean reward | paid | paid (tau2 rules) |", "|---|---|---|---|---|---|"]
    lines += [f"| {r.strategy} | {r.kind} | {r.episodes} | {r.mean_reward:.3f} | {r.paid:.1%} | {r.paid_parity:.1%} |"
              for r in rows]
    return "\n".join(lines)
