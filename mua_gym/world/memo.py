"""A world's memo: values domain code derived from the content, kept while the tables they came from are unwritten.

A domain asks for one with ``Domain(memo=True)``; its worlds then carry a :class:`Memo` as ``world.memo`` (None
otherwise). It is for tools that derive the same state on every call (telecom's phone reads its own row and
re-runs an account sync after each action): they remember the value once and get it back with :meth:`Memo.recall`
until a write to one of its tables makes it stale. Staleness rides on the world's write stamps
(:meth:`~mua_gym.world.World.last_write`): a tool's write moves its table's stamp, and anything the world cannot
attribute (a reset, a failed call, a write made around the tools) moves every stamp.

Rows kept with :meth:`Memo.remember_row` are also what the world's change set takes instead of reading the row
again (the reward reads that change set), so a domain that writes through :meth:`World.execute_and_keep` pays for
each written row once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mua_gym.world.sql import Row

__all__ = ["Memo", "Memory"]

_ROW_KEY = "\x00row %s %d"  # the key of a row kept by Memo.remember_row (no domain key starts with NUL)

# Memory: a memo's valid values, by key: (the tables each came from, the value). What travels with a start state.
Memory = dict[str, tuple[tuple[str, ...], Any]]


class Memo:
    """The values one world remembers: key -> (tables it was derived from, their write stamp then, value)."""

    __slots__ = ("world", "_values")

    def __init__(self, world: Any) -> None:
        self.world = world  # its World (typed loosely: world.py imports this module)
        self._values: dict[str, tuple[tuple[str, ...], int, Any]] = {}

    def recall(self, key: str) -> Any:
        """The value last remembered under ``key``, or None where one of its tables may have changed since."""
        found = self._values.get(key)
        if found is None:
            return None
        tables, stamp, value = found
        world = self.world
        if world.raw.total_changes != world._seen_changes:  # (World._notice_outside_writes, inline: a hot path)
            world._state_replaced()
        if len(tables) == 1:  # the common case, inline
            return value if stamp == max(world._replaced, world._written.get(tables[0], 0)) else None
        return value if stamp == world.last_write(tables) else None

    def remember(self, key: str, tables: tuple[str, ...], value: Any) -> None:
        """Keeps ``value`` (never mutated afterwards) as derived from the current content of ``tables``."""
        self._values[key] = (tables, self.world.last_write(tables), value)

    def remember_row(self, table: str, rowid: int, row: Row) -> None:
        """Keeps ``row`` (every column of ``table``'s row at ``rowid``, in the table's order, exactly as SQLite
        returns them) as that row's content now. While ``table`` is unwritten since, the world's
        :meth:`~mua_gym.world.World.changes` (what the reward reads) takes it instead of reading the row."""
        self.remember(_ROW_KEY % (table, rowid), (table,), row)

    def known_row(self, table: str, rowid: int) -> Row | None:
        """The row kept by :meth:`remember_row`, or None where it may be stale."""
        return self.recall(_ROW_KEY % (table, rowid))

    def memory(self) -> Memory:
        """What is remembered and still valid: hand it to ``World.reset`` with the world's ``delta()``."""
        last_write = self.world.last_write
        return {k: (t, v) for k, (t, s, v) in self._values.items() if s == last_write(t)}

    def install(self, memory: Memory | None) -> None:
        """Replaces what is remembered with ``memory``, as derived from the world's content now (the world has
        just been reset to the state ``memory`` was taken in)."""
        stamp = self.world._replaced
        self._values = {k: (t, stamp, v) for k, (t, v) in memory.items()} if memory else {}
