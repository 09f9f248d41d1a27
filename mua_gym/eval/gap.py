"""The sim-to-real gap table: the same agent on the same tasks, clean and under each perturbation.

``mua-gym eval --perturb SPEC`` (repeatable) plays the run clean and once per SPEC, then prints one row per
SPEC: its families, pass^1 clean and perturbed over the tasks both played, the drop (clean minus perturbed) and
the drop's paired-bootstrap interval over tasks (:func:`mua_gym.eval.compare.compare_results`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from mua_gym.perturbations.base import make_perturbations

if TYPE_CHECKING:
    from mua_gym.eval.evaluate import EpisodeResult

__all__ = ["GapRow", "format_gap", "gap_rows"]


class GapRow(BaseModel):
    """One perturbation spec against the clean run."""

    perturb: str
    families: list[str]
    tasks: int
    clean: float
    perturbed: float
    #: ``clean - perturbed``, with its interval.
    drop: float
    low: float
    high: float
    #: Per-step cost: the perturbed run's mean wall seconds per turn over the clean run's.
    turn_time_ratio: float | None = None


def _seconds_per_turn(results: "list[EpisodeResult]") -> float | None:
    turns = sum(r.turns for r in results)
    return sum(r.wall_s for r in results) / turns if turns else None


def gap_rows(clean: "list[EpisodeResult]", perturbed: "dict[str, list[EpisodeResult]]", *, resamples: int = 10_000,
             seed: int = 0, confidence: float = 0.95) -> list[GapRow]:
    """A :class:`GapRow` per spec of ``perturbed`` (spec -> its episodes), against ``clean``'s episodes."""
    from mua_gym.eval.compare import compare_results

    rows = []
    base_time = _seconds_per_turn(clean)
    for spec, results in perturbed.items():
        stack = make_perturbations(spec)
        comparison = compare_results(clean, results, a="clean", b=spec, resamples=resamples, seed=seed,
                                     confidence=confidence).overall
        spent = _seconds_per_turn(results)
        rows.append(GapRow(perturb=spec, families=stack.families() if stack else [], tasks=comparison.tasks,
                           clean=comparison.a.pass_1, perturbed=comparison.b.pass_1, drop=0.0 - comparison.diff,
                           low=0.0 - comparison.high, high=0.0 - comparison.low,
                           turn_time_ratio=spent / base_time if spent and base_time else None))
    return rows


def format_gap(rows: list[GapRow]) -> str:
    """The rows as a Markdown table."""
    lines = ["| perturbation | family | tasks | clean pass^1 | perturbed pass^1 | drop | 95% interval | time/turn |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r.turn_time_ratio:.2f}x" if r.turn_time_ratio is not None else "-"
        lines.append(f"| {r.perturb} | {', '.join(r.families)} | {r.tasks} | {r.clean:.3f} | {r.perturbed:.3f} | "
                     f"{r.drop:+.3f} | [{r.low:+.3f}, {r.high:+.3f}] | {ratio} |")
    return "\n".join(lines)
