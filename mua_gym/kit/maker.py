"""A task maker's mechanics: the world read once as plain data, a seeded pick, and a level's intents.

A domain's task maker subclasses :class:`TaskMaker` and adds one method per intent kind (each returns an
:class:`mua_gym.kit.generation.Intent`, or None where this user has nothing for it); :func:`draw_intents` picks a
level's kinds and calls them. :func:`read_world` gives the maker its snapshot of the world. Composing the
task and verifying it are :mod:`mua_gym.kit.generation`'s (:func:`~mua_gym.kit.generation.compose_task`,
:func:`~mua_gym.kit.generation.generate_tasks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Container, Mapping, Sequence, TypeVar

import numpy as np

from mua_gym.task import WorldSpec
from mua_gym.kit.generation import Intent
from mua_gym.domain.state import state_of

if TYPE_CHECKING:
    from mua_gym.domain import Domain
    from mua_gym.world import World

__all__ = ["TaskMaker", "draw_intents", "generated_world", "read_world"]

#: How many other kinds :func:`draw_intents` tries for one request before it gives the task up.
RETRIES = 4
T = TypeVar("T")
S = TypeVar("S")
M = TypeVar("M", bound="TaskMaker")


class TaskMaker:
    """Makes one task from a seeded generator: ``rng`` draws every choice, ``used`` holds the ids of the records
    (orders, reservations) that an earlier intent of the same task already took."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def pick(self, items: Sequence[T]) -> T:
        """One of ``items`` (a non-empty sequence), drawn uniformly."""
        return items[int(self.rng.integers(len(items)))]

    def unused(self, draw: Callable[[], str], taken: Container[str]) -> str:
        """A value ``draw()`` makes that ``taken`` does not hold (drawn again until one is free): an id shaped like
        the world's that finds no record."""
        while True:
            value = draw()
            if value not in taken:
                return value


def draw_intents(maker: M, level: int, makers: Mapping[str, Callable[[M], Intent | None]],
                 kinds: Sequence[str] | None = None, last: str | Sequence[str] | None = "refusal",
                 count: int | None = None) -> list[Intent] | None:
    """``count`` (default ``level``) intents of kinds drawn from ``kinds`` (by default every key of ``makers``), the
    last one of kind ``last`` (or one drawn from several) from level 3 up (a request the policy refuses, or one for a
    human); a kind with nothing for this user is drawn again (up to :data:`RETRIES` times; the closing one not at
    all), then None."""
    kinds = list(makers) if kinds is None else kinds
    closing = [last] if isinstance(last, str) else list(last or ())
    wanted = level if count is None else count
    intents: list[Intent] = []
    for slot in range(wanted):
        closes = level >= 3 and bool(closing) and slot == wanted - 1
        pool = closing if closes else kinds
        # a kind this user has nothing (left) for: another kind of the same pool; the closing kind is drawn once
        # (its draw keeps the closing kinds' weights among the tasks made)
        for _ in range(1 if closes else RETRIES + 1):
            made = makers[pool[int(maker.rng.integers(len(pool)))]](maker)
            if made is not None:
                intents.append(made)
                break
        else:
            return None
    return intents


def generated_world(seed: int, size: str = "default", source: str = "generated") -> WorldSpec:
    """The world spec of a generated split: the world of ``seed`` at ``size`` (a size means nothing to another
    source, whose world is fixed)."""
    params = {"size": size} if size != "default" and source == "generated" else {}
    return WorldSpec(source=source, seed=seed, params=params)


def read_world(domain: "Domain", world: WorldSpec, read: Callable[["World"], S]) -> S:
    """``read`` applied to a fresh copy of ``world`` (a live :class:`World`, valid during the call only): a task
    maker's snapshot, read once per split."""
    image = domain.image(world)
    with state_of(domain).scratch_lock:
        scratch = domain.scratch_world(image, world.source)
        scratch.load(image.data)
        return read(scratch)
