"""The kit's unique-id helpers: no repeats, reserved ids honoured, and redraws only on a collision."""

import numpy as np

from mua_gym.kit.people import UniqueIds, unique


def test_unique_ids_never_repeat_nor_use_reserved():
    ids = UniqueIds(np.random.default_rng(0), reserved=[str(n) for n in range(10, 95)])
    drawn = ids.take(2, 5) + ids.take(2, 5, prefix="#")
    assert len(set(drawn)) == 10
    numbers = [int(d.lstrip("#")) for d in drawn]
    assert all(95 <= n <= 99 for n in numbers[:5])  # only five two-digit numbers were left
    assert [d[0] for d in drawn[5:]] == ["#"] * 5


def test_unique_ids_are_seeded():
    assert UniqueIds(np.random.default_rng(3)).take(7, 50) == UniqueIds(np.random.default_rng(3)).take(7, 50)


def test_unique_redraws_only_on_collision():
    draws = iter(["b", "a", "c"])
    used = {"a", "b"}
    assert unique(used, lambda: next(draws)) == "c"  # "b" and "a" were taken
    assert used == {"a", "b", "c"}
    assert unique(used, lambda: 1 / 0, first="d") == "d"  # a free first value draws nothing
    assert "d" in used
