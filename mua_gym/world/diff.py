"""Comparing worlds: the hash of a row, and the diff between two versions of a world's rows.

A world's hash is the sum of its rows' hashes modulo ``HASH_MOD``, so a change to a few rows moves it by
those rows' hashes alone, without reading the rest.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, NamedTuple, Protocol

from pydantic import BaseModel, Field

from mua_gym.world.sql import Key, Row, TableInfo, json_safe

__all__ = ["BaseRows", "ChangeSet", "HASH_MOD", "RowDiff", "TableDiff", "WorldComparison", "WorldDiff",
           "compare_changes", "diff_rows", "row_hash"]

HASH_MOD = 1 << 128

# A change set maps table -> primary key -> the row as it is now (None: deleted), for every row whose
# content differs from the image it started from.
ChangeSet = dict[str, dict[Key, "Row | None"]]


def row_hash(table: str, row: Row) -> int:
    """The hash of one row of ``table`` (its compared columns), as an integer below ``HASH_MOD``."""
    digest = hashlib.blake2b(repr((table, row)).encode(), digest_size=16).digest()
    return int.from_bytes(digest, "big")


# (Field(default_factory=...) rather than ``= []``: pydantic deep-copies a mutable default on every
# construction, and diffs are built on the reward's path.)
class RowDiff(BaseModel):
    key: dict[str, Any]
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    changed: list[str] = Field(default_factory=list)


class TableDiff(BaseModel):
    inserted: list[RowDiff] = Field(default_factory=list)
    deleted: list[RowDiff] = Field(default_factory=list)
    updated: list[RowDiff] = Field(default_factory=list)


class WorldDiff(BaseModel):
    """What turns one world into another: per table, the rows inserted, deleted and updated."""

    tables: dict[str, TableDiff] = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.tables

    def count(self) -> int:
        return sum(len(t.inserted) + len(t.deleted) + len(t.updated) for t in self.tables.values())


def diff_rows(info: TableInfo, key: Key, before: Row | None, after: Row | None, out: TableDiff) -> None:
    """Adds the difference between two versions of one row (either may be absent) to ``out``."""
    if before == after:
        return
    if before is None:
        out.inserted.append(RowDiff(key=info.key_dict(key), after=info.as_dict(after)))  # type: ignore[arg-type]
    elif after is None:
        out.deleted.append(RowDiff(key=info.key_dict(key), before=info.as_dict(before)))
    else:
        changed = [c for c, a, b in zip(info.columns, before, after) if a != b]
        out.updated.append(RowDiff(
            key=info.key_dict(key),
            before={c: json_safe(before[info.columns.index(c)]) for c in changed},
            after={c: json_safe(after[info.columns.index(c)]) for c in changed},
            changed=changed,
        ))



class BaseRows(Protocol):
    """The rows change sets are taken against (a :class:`mua_gym.world.image.WorldImage`)."""

    tables: Mapping[str, TableInfo]

    def base_row_by_key(self, table: str, key: Key) -> Row | None: ...


class WorldComparison(NamedTuple):
    """A final world set against a gold one, both as change sets from the same start."""

    #: What turns the final world into the gold one (``inserted``: rows gold has and final lacks).
    diff: WorldDiff
    #: Rows gold changes from the start (a dual-control user's own rows left out).
    gold_changed: int
    #: Of those, the rows the final world holds exactly as gold does.
    reproduced: int
    #: Rows the final world changed that gold leaves as they started.
    extra: int
    #: Rows gold changes that the final world changed to another value.
    wrong: int


def compare_changes(base: BaseRows, start: ChangeSet, gold: ChangeSet, final: ChangeSet,
                    user_rows: frozenset[tuple[str, Key]] = frozenset()) -> WorldComparison:
    """Compares ``final`` with ``gold`` (change sets over ``base``), both reached from ``start``.

    Rows in ``user_rows`` (``(table, key)``) are diffed but counted in no total: a dual-control user's own.
    """
    tables: dict[str, TableDiff] = {}
    gold_changed = reproduced = extra = wrong = 0
    for table in sorted(set(final) | set(gold) | set(start)):
        mine_rows, gold_rows, start_rows = final.get(table, {}), gold.get(table, {}), start.get(table, {})
        td: TableDiff | None = None  # made only where the final world differs from gold (rare in a good episode)
        for key in sorted(set(mine_rows) | set(gold_rows) | set(start_rows), key=repr):
            initial = start_rows[key] if key in start_rows else base.base_row_by_key(table, key)
            mine = mine_rows[key] if key in mine_rows else base.base_row_by_key(table, key)
            wanted = gold_rows[key] if key in gold_rows else base.base_row_by_key(table, key)
            if mine != wanted:
                if td is None:
                    td = tables[table] = TableDiff()
                diff_rows(base.tables[table], key, mine, wanted, td)
            if user_rows and (table, key) in user_rows:
                continue
            if wanted != initial:
                gold_changed += 1
                reproduced += mine == wanted
                wrong += mine != wanted and mine != initial  # a miss, and a write it should not have made
            elif mine != initial:
                extra += 1
    return WorldComparison(WorldDiff(tables=tables), gold_changed, reproduced, extra, wrong)
