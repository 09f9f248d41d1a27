"""Comparing worlds: the hash of a row, and the diff between two versions of a world's rows.

A world's hash is the sum of its rows' hashes modulo ``HASH_MOD``, so a change to a few rows moves it by
those rows' hashes alone, without reading the rest.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, Field

from mua_gym.sql import Key, Row, TableInfo, json_safe

__all__ = ["ChangeSet", "HASH_MOD", "RowDiff", "TableDiff", "WorldDiff", "diff_rows", "row_hash"]

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

