"""Unique identifiers for generated worlds: fixed-width numeric ids and handles (user ids, emails, numbers)."""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

__all__ = ["UniqueIds", "unique"]


class UniqueIds:
    """Draws random fixed-width numeric ids from one ``rng``, never the same one twice (nor a reserved one)."""

    def __init__(self, rng: np.random.Generator, reserved: Iterable[str] = ()) -> None:
        self.rng = rng
        self.used: set[str] = set(reserved)

    def take(self, digits: int, n: int, prefix: str = "") -> list[str]:
        """``n`` new ids ``prefix`` + a ``digits``-digit number, drawn in one batch and redrawn where taken."""
        low, high = 10 ** (digits - 1), 10**digits
        out: list[str] = []
        while len(out) < n:
            for number in self.rng.integers(low, high, size=n - len(out)).tolist():
                ident = f"{prefix}{number}"
                if ident not in self.used:
                    self.used.add(ident)
                    out.append(ident)
        return out


def unique(used: set[str], redraw: Callable[[], str], first: str | None = None) -> str:
    """``first`` (or else ``redraw()``), then ``redraw()`` again while the value is in ``used``; the value
    returned is added to ``used``. A generator passes a value it drew in a batch as ``first``, so the rare
    collision is the only extra draw."""
    value = redraw() if first is None else first
    while value in used:
        value = redraw()
    used.add(value)
    return value
