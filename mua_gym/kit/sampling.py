"""Seeded draws for world generators: weighted picks, exact quotas, and the ``size`` parameter."""

from __future__ import annotations

from typing import Callable, Mapping, TypeVar

import numpy as np

__all__ = ["quota_indices", "scaled_size", "weighted_index", "weighted_indices"]

T = TypeVar("T")


def weighted_indices(rng: np.random.Generator, weights: tuple[float, ...], n: int) -> list[int]:
    """``n`` indices into ``weights``, each drawn independently with those weights (one ``rng.random`` each)."""
    cumulative = np.cumsum(weights) / sum(weights)
    return np.minimum(np.searchsorted(cumulative, rng.random(n), side="right"), len(weights) - 1).tolist()


def weighted_index(rng: np.random.Generator, weights: tuple[float, ...]) -> int:
    """One index into ``weights``, drawn with those weights: the same value ``weighted_indices(rng, w, 1)[0]``
    would give, from the same one ``rng.random``."""
    cumulative = np.cumsum(weights) / sum(weights)
    return min(int(np.searchsorted(cumulative, rng.random(), side="right")), len(weights) - 1)


def quota_indices(weights: tuple[float, ...], n: int) -> np.ndarray:
    """``n`` indices into ``weights``, each as often as its share (largest remainders), in index order; draws
    nothing (shuffle the result with the caller's ``rng`` where order matters)."""
    shares = np.asarray(weights) / sum(weights) * n
    counts = np.floor(shares).astype(int)
    counts[np.argsort(counts - shares, kind="stable")[: n - counts.sum()]] += 1
    return np.repeat(np.arange(len(weights)), counts)


def scaled_size(size: str | float, presets: Mapping[str, T], scale: Callable[[float], T]) -> T:
    """What a world's ``size`` parameter stands for: ``presets[size]`` for a name, ``scale(size)`` for a positive
    number (a multiple of the default size). Raises ValueError naming the presets for anything else."""
    if isinstance(size, str):
        if size not in presets:
            raise ValueError(f"unknown size {size!r}; expected one of {sorted(presets)} or a positive number")
        return presets[size]
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
        raise ValueError(f"size must be a name or a positive number, not {size!r}")
    return scale(size)
