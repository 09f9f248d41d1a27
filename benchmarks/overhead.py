"""Timing helpers the adapter benchmarks share: interleaved runs and medians, in microseconds."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def interleaved_us(bare: Callable[[], Any], adapter: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Medians of ``bare()`` and ``adapter()`` called in turns (so both see the same machine load), and their
    difference: ``{"bare": ..., "adapter": ..., "overhead": adapter - bare}``."""
    times: dict[str, list[float]] = {"bare": [], "adapter": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        bare()
        t1 = time.perf_counter()
        adapter()
        t2 = time.perf_counter()
        times["bare"].append(t1 - t0)
        times["adapter"].append(t2 - t1)
    return with_overhead({k: statistics.median(v) * 1e6 for k, v in times.items()})


def with_overhead(figures: dict[str, float]) -> dict[str, float]:
    """``figures`` with ``overhead``: adapter minus bare."""
    return {**figures, "overhead": figures["adapter"] - figures["bare"]}


def report(name: str, figures: dict[str, float], unit: str = "us") -> str:
    return (f"{name} step, median: bare {figures['bare']:.1f} {unit}, adapter {figures['adapter']:.1f} {unit}, "
            f"overhead {figures['overhead']:.1f} {unit}")
