"""The world: one episode's database, and the tools that act on it.

A domain's data is built once into a :class:`WorldImage`: a serialized in-memory SQLite database with
triggers that record every row a write touches. A :class:`World` is a live copy of an image; loading an
image is a memory copy (``sqlite3.Connection.deserialize``), which is what makes ``reset`` cheap.

Because the image knows the hash of every row it started with, and the triggers know which rows changed
since, ``state_hash`` and ``diff`` cost time in proportion to the rows an episode changed, not to the
size of the world.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from pydantic import BaseModel, Field
from sqlalchemy import Connection, MetaData, create_engine
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.sql import ClauseElement

from mua_gym.tools import Tool, ToolError, ToolResult, Toolkit

if TYPE_CHECKING:
    from mua_gym.domain import Domain

__all__ = ["ChangeSet", "Delta", "Memory", "RowDiff", "TableDiff", "World", "WorldDiff", "WorldImage", "WorldSnapshot"]

Requestor = Literal["assistant", "user", "setup"]
Key = tuple[Any, ...]
Row = tuple[Any, ...]

_CHANGES = "_mua_changes"
#: Above this many changed rows a reset loads the whole image instead of rewriting rows.
REVERT_LIMIT = 5000
_MOD = 1 << 128
_MISSING = object()
_image_ids = itertools.count(1)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _row_hash(table: str, row: Row) -> int:
    digest = hashlib.blake2b(repr((table, row)).encode(), digest_size=16).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True)
class TableInfo:
    """How one table is hashed and compared: its compared (non-volatile) columns and primary key."""

    name: str
    columns: tuple[str, ...]
    key_positions: tuple[int, ...]
    select_by_rowid: str
    select_by_key: str
    select_all: str
    select_full_by_rowid: str
    delete_by_rowid: str
    insert_full: str
    update_full: str
    order: int

    @classmethod
    def of(cls, table: Any, order: int = 0) -> "TableInfo":
        columns = tuple(c.name for c in table.columns if not c.info.get("volatile", False))
        key = [c.name for c in table.primary_key.columns]
        if not key:
            raise ValueError(f"table {table.name!r} needs a primary key to be compared")
        positions = tuple(columns.index(k) for k in key)
        cols = ", ".join(_q(c) for c in columns)
        every = [c.name for c in table.columns]
        all_cols = ", ".join(_q(c) for c in every)
        where_key = " AND ".join(f"{_q(k)} = ?" for k in key)
        name = _q(table.name)
        return cls(
            name=table.name,
            columns=columns,
            key_positions=positions,
            select_by_rowid=f"SELECT {cols} FROM {name} WHERE rowid = ?",
            select_by_key=f"SELECT {cols} FROM {name} WHERE {where_key}",
            select_all=f"SELECT {cols} FROM {name}",
            select_full_by_rowid=f"SELECT {all_cols} FROM {name} WHERE rowid = ?",
            delete_by_rowid=f"DELETE FROM {name} WHERE rowid = ?",
            insert_full=f"INSERT INTO {name} (rowid, {all_cols}) VALUES (?, {', '.join('?' for _ in every)})",
            update_full=f"UPDATE {name} SET {', '.join(f'{_q(c)} = ?' for c in every)} WHERE rowid = ?",
            order=order,
        )

    def key(self, row: Row) -> Key:
        return tuple(row[i] for i in self.key_positions)

    def as_dict(self, row: Row) -> dict[str, Any]:
        return {c: _json_safe(v) for c, v in zip(self.columns, row)}

    def key_dict(self, key: Key) -> dict[str, Any]:
        return {self.columns[i]: _json_safe(v) for i, v in zip(self.key_positions, key)}


def _json_safe(value: Any) -> Any:
    return value.hex() if isinstance(value, (bytes, bytearray, memoryview)) else value


def _install_change_tracking(raw: sqlite3.Connection, tables: list[str]) -> None:
    raw.execute(
        f"CREATE TABLE {_CHANGES} (tbl TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (tbl, rid)) WITHOUT ROWID"
    )
    for t in tables:
        lit = "'" + t.replace("'", "''") + "'"
        record = f"INSERT OR IGNORE INTO {_CHANGES} VALUES ({lit}, %s.rowid);"
        raw.executescript(
            f"CREATE TRIGGER {_q('_mua_i_' + t)} AFTER INSERT ON {_q(t)} BEGIN {record % 'NEW'} END;"
            f"CREATE TRIGGER {_q('_mua_d_' + t)} AFTER DELETE ON {_q(t)} BEGIN {record % 'OLD'} END;"
            f"CREATE TRIGGER {_q('_mua_u_' + t)} AFTER UPDATE ON {_q(t)} BEGIN {record % 'OLD'} {record % 'NEW'} END;"
        )


def _connect(data: bytes | None = None) -> sqlite3.Connection:
    raw = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    if data is not None:
        raw.deserialize(data)
    # REPLACE conflict resolution deletes rows silently unless this is on; the triggers must see it.
    raw.execute("PRAGMA recursive_triggers = ON")
    raw.execute("PRAGMA foreign_keys = ON")
    return raw


def _engine_over(raw: sqlite3.Connection) -> Connection:
    engine = create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool, isolation_level="AUTOCOMMIT")
    return engine.connect()


class WorldImage:
    """An immutable starting database: its bytes, the hash of its content, and a copy for look-ups.

    Build one with :meth:`build`; a domain caches one per (source, seed, parameters).
    """

    def __init__(self, metadata: MetaData, raw: sqlite3.Connection, name: str = "") -> None:
        self.id = next(_image_ids)
        self.name = name
        self.metadata = metadata
        self.tables: dict[str, TableInfo] = {t.name: TableInfo.of(t, i) for i, t in enumerate(metadata.sorted_tables)}
        self._lookup = raw
        self._by_rowid: dict[tuple[str, int], Row | None] = {}
        self._full_by_rowid: dict[tuple[str, int], Row | None] = {}
        self._by_key: dict[tuple[str, Key], Row | None] = {}
        self.data: bytes = raw.serialize()
        total = 0
        for info in self.tables.values():
            for row in raw.execute(info.select_all):
                total += _row_hash(info.name, row)
        self.hash = total % _MOD

    @classmethod
    def build(cls, metadata: MetaData, populate: Callable[[Connection], None], name: str = "") -> "WorldImage":
        """Creates the schema, runs ``populate(connection)`` in one transaction, and freezes the result."""
        raw = _connect()
        conn = _engine_over(raw)
        # Tables, then indexes in name order: create_all's index order varies between processes, and the
        # image's bytes must not.
        for table in metadata.sorted_tables:
            conn.execute(CreateTable(table))
        for table in metadata.sorted_tables:
            for index in sorted(table.indexes, key=lambda i: i.name or ""):
                conn.execute(CreateIndex(index))
        raw.execute("BEGIN")
        try:
            populate(conn)
        except BaseException:
            raw.execute("ROLLBACK")
            raise
        raw.execute("COMMIT")
        _install_change_tracking(raw, [t.name for t in metadata.sorted_tables])
        conn.close()
        raw.execute("VACUUM")
        return cls(metadata, raw, name)

    # Look-ups of the image's rows are cached: the image never changes, and resets, hashes and diffs ask for
    # the same few rows again and again.
    def base_row(self, table: str, rowid: int) -> Row | None:
        found = self._by_rowid.get((table, rowid), _MISSING)
        if found is _MISSING:
            found = self._by_rowid[(table, rowid)] = self._lookup.execute(
                self.tables[table].select_by_rowid, (rowid,)).fetchone()
        return found  # type: ignore[return-value]

    def base_full_row(self, table: str, rowid: int) -> Row | None:
        """Every column (volatile ones too) of the image's row at ``rowid``."""
        found = self._full_by_rowid.get((table, rowid), _MISSING)
        if found is _MISSING:
            found = self._full_by_rowid[(table, rowid)] = self._lookup.execute(
                self.tables[table].select_full_by_rowid, (rowid,)).fetchone()
        return found  # type: ignore[return-value]

    def base_row_by_key(self, table: str, key: Key) -> Row | None:
        found = self._by_key.get((table, key), _MISSING)
        if found is _MISSING:
            found = self._by_key[(table, key)] = self._lookup.execute(
                self.tables[table].select_by_key, key).fetchone()
        return found  # type: ignore[return-value]


@dataclass(frozen=True)
class WorldSnapshot:
    """A world's full state at one moment; restore it into any world made from the same image."""

    image_id: int
    data: bytes


# A change set maps table -> primary key -> the row as it is now (None: deleted), for every row whose
# content differs from the image it started from.
ChangeSet = dict[str, dict[Key, "Row | None"]]
# A delta is a world's state relative to its image, storable and replayable: (table, rowid, every column of the
# row as it is now, or None where the image's row is gone), for every row that differs from the image.
Delta = tuple[tuple[str, int, "Row | None"], ...]
# Memory: values domain code derived from a world's content, by key: (the tables each came from, the value).
Memory = dict[str, tuple[tuple[str, ...], Any]]


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
            before={c: _json_safe(before[info.columns.index(c)]) for c in changed},
            after={c: _json_safe(after[info.columns.index(c)]) for c in changed},
            changed=changed,
        ))


_DIALECT = sqlite_dialect.dialect()
_NO_DEFAULT = object()


class _Compiled:
    """A statement compiled once: its SQL, its parameters in order (name, literal or _NO_DEFAULT), and the
    names of its result columns (learned at its first fetch)."""

    __slots__ = ("stmt", "sql", "params", "columns")

    def __init__(self, stmt: ClauseElement, sql: str, params: tuple[tuple[str, Any], ...]) -> None:
        self.stmt, self.sql, self.params = stmt, sql, params
        self.columns: tuple[str, ...] | None = None


_compiled: dict[int, _Compiled] = {}


def _compile(stmt: ClauseElement) -> _Compiled:
    found = _compiled.get(id(stmt))
    if found is not None and found.stmt is stmt:
        return found
    if len(_compiled) > 4096:  # statements built per call (not the intended use) must not grow this forever
        _compiled.clear()
    compiled = stmt.compile(dialect=_DIALECT)
    sql = compiled.string
    if "POSTCOMPILE" in sql:
        raise ValueError("expanding parameters (IN lists) are not supported in precompiled statements")
    params = []
    for name in compiled.positiontup or ():
        bind = compiled.binds[name]
        # Literals written into a statement (``== "order"``, ``round(x, 2)``) are bound parameters too.
        params.append((name, _NO_DEFAULT if bind.required or bind.callable else bind.value))
    found = _compiled[id(stmt)] = _Compiled(stmt, sql, tuple(params))
    return found


def compile_statement(stmt: ClauseElement) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """SQL text and parameter order for a Core statement, compiled once per statement object.

    Tools build their statements once (module level, with ``bindparam``) and run them through
    :meth:`World.fetch_one` and friends: compiling per call, and SQLAlchemy's per-execution machinery,
    cost ten times more than the query itself on a small in-memory database.
    """
    found = _compile(stmt)
    return found.sql, found.params


class World:
    """A live, isolated database for one episode, with the domain's tools bound to it.

    Tools read and write with :meth:`fetch_one`, :meth:`fetch_all`, :meth:`fetch_scalar` and
    :meth:`execute` (precompiled Core statements, bound parameters), or through ``conn``, a SQLAlchemy
    connection (autocommit; every tool call runs in a savepoint either way).
    """

    def __init__(self, image: WorldImage, tools: Toolkit | None = None, user_tools: Toolkit | None = None,
                 domain: "Domain | None" = None, after_call: Callable[["World"], None] | None = None,
                 setup_tools: Toolkit | None = None) -> None:
        self.image = image
        self.domain = domain
        self.tools = tools or Toolkit()
        self.user_tools = user_tools or Toolkit()
        #: Runs after every successful call, inside the call's savepoint (e.g. re-deriving coupled state).
        self.after_call = after_call
        #: Functions only a task's initial actions may call (fault injection), with requestor "setup".
        self.setup_tools = setup_tools or Toolkit()
        self.raw = _connect(image.data)
        # Made now, not on first use: SQLAlchemy's first connect ends any open transaction, which would end the
        # savepoint of a tool that touches ``conn`` first.
        self._conn: Connection | None = _engine_over(self.raw)
        #: Who is calling the running tool ("assistant" or "user"); tools may read it.
        self.requestor: Requestor = "assistant"
        # What domain code derived from the content and keeps between calls (see ``recall``):
        # key -> (tables it was derived from, their write stamp then, value).
        self._memory: dict[str, tuple[tuple[str, ...], int, Any]] = {}
        self._serial = 0  # counts writes; a table's last write, and the last wholesale change, are stamped
        self._written: dict[str, int] = {}
        self._replaced = 0
        self._seen_changes = self.raw.total_changes  # SQLite's count of rows written: catches writes we did not make

    @property
    def conn(self) -> Connection:
        """A SQLAlchemy connection over this world's database (autocommit; tool calls run in savepoints)."""
        if self._conn is None:
            self._conn = _engine_over(self.raw)
        return self._conn

    # -- queries -----------------------------------------------------------------------------------
    def _cursor(self, stmt: ClauseElement, params: dict[str, Any]) -> tuple[sqlite3.Cursor, _Compiled]:
        found = _compiled.get(id(stmt))
        if found is None or found.stmt is not stmt:
            found = _compile(stmt)
        try:
            values = [params[name] if default is _NO_DEFAULT else params.get(name, default)
                      for name, default in found.params]
        except KeyError as exc:
            raise TypeError(f"missing query parameter {exc.args[0]!r}") from None
        return self.raw.execute(found.sql, values), found

    @staticmethod
    def _columns(cur: sqlite3.Cursor, found: _Compiled) -> tuple[str, ...]:
        columns = found.columns
        if columns is None:
            columns = found.columns = tuple(d[0] for d in cur.description)
        return columns

    def fetch_all(self, stmt: ClauseElement, **params: Any) -> list[dict[str, Any]]:
        cur, found = self._cursor(stmt, params)
        rows = cur.fetchall()
        if not rows:
            return []
        names = self._columns(cur, found)
        return [dict(zip(names, row)) for row in rows]

    def fetch_one(self, stmt: ClauseElement, **params: Any) -> dict[str, Any] | None:
        cur, found = self._cursor(stmt, params)
        row = cur.fetchone()
        return None if row is None else dict(zip(self._columns(cur, found), row))

    def fetch_scalar(self, stmt: ClauseElement, **params: Any) -> Any:
        row = self._cursor(stmt, params)[0].fetchone()
        return None if row is None else row[0]

    def fetch_column(self, stmt: ClauseElement, **params: Any) -> list[Any]:
        return [row[0] for row in self._cursor(stmt, params)[0].fetchall()]

    def execute(self, stmt: ClauseElement, **params: Any) -> int:
        """Runs a write statement; returns the number of rows it touched."""
        self._stamp_write(stmt)
        count = self._cursor(stmt, params)[0].rowcount
        self._seen_changes = self.raw.total_changes
        return count

    def _stamp_write(self, stmt: ClauseElement) -> None:
        self._notice_outside_writes()
        self._serial += 1
        table = getattr(stmt, "table", None)
        if table is not None:
            self._written[table.name] = self._serial
        else:  # a statement we cannot attribute to a table counts as a change to all of them
            self._replaced = self._serial

    def last_write(self, tables: tuple[str, ...]) -> int:
        """A stamp that moves whenever any of ``tables`` may have changed since it was read.

        Writes made with :meth:`execute` move the stamps of their own tables; resets, loads, restores, failed calls
        and writes made any other way (``conn``, ``raw``) move every table's.
        """
        self._notice_outside_writes()
        stamp = self._replaced
        written = self._written
        for t in tables:
            s = written.get(t, 0)
            if s > stamp:
                stamp = s
        return stamp

    # -- memory: values derived from the content, kept while what they were derived from is unchanged -----
    def recall(self, key: str) -> Any:
        """The value last remembered under ``key``, or None where one of its tables may have changed since."""
        found = self._memory.get(key)
        if found is None:
            return None
        tables, stamp, value = found
        self._notice_outside_writes()
        if len(tables) == 1:  # the common case, inline
            return value if stamp == max(self._replaced, self._written.get(tables[0], 0)) else None
        return value if stamp == self.last_write(tables) else None

    def remember(self, key: str, tables: tuple[str, ...], value: Any) -> None:
        """Keeps ``value`` (never mutated afterwards) as derived from the current content of ``tables``."""
        self._memory[key] = (tables, self.last_write(tables), value)

    def memory(self) -> Memory:
        """What is remembered and still valid: hand it to :meth:`reset` with this state's :meth:`delta`."""
        return {k: (t, v) for k, (t, s, v) in self._memory.items() if s == self.last_write(t)}

    def _state_replaced(self) -> None:
        self._serial += 1
        self._replaced = self._serial
        self._seen_changes = self.raw.total_changes

    def _notice_outside_writes(self) -> None:
        if self.raw.total_changes != self._seen_changes:
            self._state_replaced()

    # -- state -------------------------------------------------------------------------------------
    def load(self, data: bytes) -> None:
        """Replaces the whole database with ``data`` (bytes of this world's image or a snapshot of it)."""
        if data is self.image.data:
            self.reset()
        else:
            self.raw.deserialize(data)
            self._state_replaced()

    def reset(self, delta: Delta = (), memory: Memory | None = None) -> None:
        """Back to the image's state, or to the image with ``delta`` applied (a task's start, see :meth:`delta`).

        ``memory``, taken with :meth:`memory` from a world in exactly that state, is remembered again here, so
        the first calls of an episode find what its start state already derived.

        Only rows the last episode changed, and the delta's rows, are written, which keeps the connection's
        prepared statements valid: loading a whole database would make SQLite prepare every statement again on
        its first use, which costs more than the reset itself. Past many changed rows the image is loaded whole.
        """
        self._revert(delta)
        if memory:
            self._memory = {k: (t, self.last_write(t), v) for k, (t, v) in memory.items()}

    def _revert(self, delta: Delta) -> None:
        changed = self._changed_rowids()
        if not changed and not delta:
            return
        if len(changed) > REVERT_LIMIT:
            self.raw.deserialize(self.image.data)
            self._state_replaced()
            changed = []
            if not delta:
                return
        raw, tables, image = self.raw, self.image.tables, self.image
        target = {(t, rid): row for t, rid, row in delta}
        for t, rid in changed:
            if (t, rid) not in target:
                target[(t, rid)] = image.base_full_row(t, rid)
        # Rows the image lacks (added by an episode or by the start) are deleted and inserted again, never updated
        # in place: the same rowid may hold another key here (the start added bill X where the last episode added
        # bill Y), and children would still point at the old key. Deletions go first (children before parents),
        # then updates of the image's rows, then insertions (parents before children), so foreign keys hold at
        # every statement. Where a constraint still fails (rows that swapped unique values or parents), every row
        # is deleted and inserted again, foreign-key checks deferred to the end. (No pragma is switched on the
        # fast path: SQLite re-prepares every statement after one.)
        rows = sorted(((tables[t], rid, row, image.base_full_row(t, rid) is None) for (t, rid), row in target.items()),
                      key=lambda x: x[0].order)
        raw.execute("SAVEPOINT mua_reset")
        try:
            try:
                self._write_rows(rows)
            except sqlite3.IntegrityError:  # rows swapped unique values or parents: every row out, then back in
                raw.execute("ROLLBACK TO mua_reset")
                raw.execute("PRAGMA defer_foreign_keys = ON")
                self._write_rows([(info, rid, row, True) for info, rid, row, _ in rows])
            # The triggers recorded every row written, i.e. the delta's rows and the last episode's: when the
            # latter are among the former (an episode of the same task), that is exactly what must be tracked.
            if len(target) > len(delta):
                raw.execute(f"DELETE FROM {_CHANGES}")
                if delta:
                    raw.executemany(f"INSERT INTO {_CHANGES} VALUES (?, ?)", [(t, rid) for t, rid, _ in delta])
            raw.execute("RELEASE mua_reset")
        except BaseException:
            raw.execute("ROLLBACK TO mua_reset")
            raw.execute("RELEASE mua_reset")
            raw.deserialize(self.image.data)
            self._state_replaced()
            if delta:  # the world is the image now; a start it cannot reach is the caller's to hear about
                raise
        self._state_replaced()

    def _write_rows(self, rows: list[tuple[TableInfo, int, Row | None, bool]]) -> None:
        raw = self.raw
        for info, rid, row, added in reversed(rows):
            if row is None or added:
                raw.execute(info.delete_by_rowid, (rid,))
        missing = [(info, rid, row) for info, rid, row, added in rows
                   if row is not None and (added or raw.execute(info.update_full, (*row, rid)).rowcount == 0)]
        for info, rid, row in missing:
            raw.execute(info.insert_full, (rid, *row))

    def delta(self) -> Delta:
        """This world's state as rows over its image: :meth:`reset` with it brings any world of the image here."""
        out = []
        for t, rid in sorted(self._changed_rowids()):
            info = self.image.tables[t]
            row = self.raw.execute(info.select_full_by_rowid, (rid,)).fetchone()
            if row != self.image.base_full_row(t, rid):
                out.append((t, rid, row))
        return tuple(out)

    def snapshot(self) -> WorldSnapshot:
        return WorldSnapshot(self.image.id, self.raw.serialize())

    def restore(self, snapshot: WorldSnapshot) -> None:
        if snapshot.image_id != self.image.id:
            raise ValueError("snapshot was taken from a world of another image")
        self.raw.deserialize(snapshot.data)
        self._state_replaced()

    def _changed_rowids(self) -> list[tuple[str, int]]:
        return self.raw.execute(f"SELECT tbl, rid FROM {_CHANGES}").fetchall()

    def state_hash(self) -> str:
        """A canonical hash of the content (row order and volatile columns ignored), as 32 hex digits."""
        total = self.image.hash
        for table, rowid in self._changed_rowids():
            old = self.image.base_row(table, rowid)
            if old is not None:
                total -= _row_hash(table, old)
            new = self.raw.execute(self.image.tables[table].select_by_rowid, (rowid,)).fetchone()
            if new is not None:
                total += _row_hash(table, new)
        return f"{total % _MOD:032x}"

    def changes(self) -> ChangeSet:
        """Every row whose content differs from the image, by table and primary key."""
        current: dict[str, dict[Key, Row | None]] = {}
        removed: dict[str, set[Key]] = {}
        for table, rowid in self._changed_rowids():
            info = self.image.tables[table]
            new = self.raw.execute(info.select_by_rowid, (rowid,)).fetchone()
            if new is not None:
                current.setdefault(table, {})[info.key(new)] = new
            old = self.image.base_row(table, rowid)
            if old is not None:
                removed.setdefault(table, set()).add(info.key(old))
        out: ChangeSet = {}
        for table in set(current) | set(removed):
            rows = current.get(table, {})
            changed: dict[Key, Row | None] = {}
            for key, row in rows.items():
                if self.image.base_row_by_key(table, key) != row:
                    changed[key] = row
            for key in removed.get(table, ()):
                if key not in rows:
                    changed[key] = None
            if changed:
                out[table] = changed
        return out

    def row(self, table: str, key: Key) -> Row | None:
        """The current row of ``table`` with primary key ``key`` (compared columns only)."""
        return self.raw.execute(self.image.tables[table].select_by_key, key).fetchone()

    def diff(self, other: "World") -> WorldDiff:
        """What turns this world into ``other``: rows ``other`` has and this lacks are 'inserted'."""
        out: dict[str, TableDiff] = {}
        if other.image is self.image:
            mine, theirs = self.changes(), other.changes()
            for table in sorted(set(mine) | set(theirs)):
                info, td = self.image.tables[table], TableDiff()
                a, b = mine.get(table, {}), theirs.get(table, {})
                for key in sorted(set(a) | set(b), key=repr):
                    before = a[key] if key in a else self.image.base_row_by_key(table, key)
                    after = b[key] if key in b else self.image.base_row_by_key(table, key)
                    diff_rows(info, key, before, after, td)
                if td.inserted or td.deleted or td.updated:
                    out[table] = td
            return WorldDiff(tables=out)
        for table, info in self.image.tables.items():
            other_info = other.image.tables.get(table)
            if other_info is None or other_info.columns != info.columns:
                raise ValueError(f"cannot compare worlds with different schemas (table {table!r})")
            a = {info.key(r): r for r in self.raw.execute(info.select_all)}
            b = {info.key(r): r for r in other.raw.execute(info.select_all)}
            td = TableDiff()
            for key in sorted(set(a) | set(b), key=repr):
                diff_rows(info, key, a.get(key), b.get(key), td)
            if td.inserted or td.deleted or td.updated:
                out[table] = td
        return WorldDiff(tables=out)

    # -- tools -------------------------------------------------------------------------------------
    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None,
                  requestor: Requestor = "assistant") -> ToolResult:
        """Runs one tool call atomically. Never raises for bad input: problems come back as errors."""
        if requestor == "assistant":
            kit, others, who = self.tools, self.user_tools, "the assistant"
        elif requestor == "user":
            kit, others, who = self.user_tools, self.tools, "the user"
        elif requestor == "setup":
            kit, others, who = self.setup_tools, Toolkit(), "a task's setup"
        else:
            return ToolResult.failure(f"unknown requestor {requestor!r}")
        found: Tool | None = kit.tools.get(name) if isinstance(name, str) else None
        if found is None:
            if isinstance(name, str) and name in others:
                return ToolResult.failure(f"tool '{name}' is not available to {who}")
            return ToolResult.failure(f"unknown tool '{name}'")
        args = _parse_arguments(name, arguments)
        if isinstance(args, ToolResult):
            return args
        try:
            kwargs = found.validate(args)
        except ToolError as exc:
            return ToolResult.failure(str(exc))
        self.requestor = requestor
        if found.kind == "read" and self.after_call is None:  # reads change nothing: no savepoint (a hot path)
            try:
                return ToolResult(content=render_result(found.function(self, **kwargs) if found.takes_world
                                                        else found.function(**kwargs)))
            except Exception as exc:
                return ToolResult.failure(str(exc) or type(exc).__name__)
            finally:
                self.requestor = "assistant"
        self.raw.execute("SAVEPOINT mua_tool")
        try:
            value = found.function(self, **kwargs) if found.takes_world else found.function(**kwargs)
            content = render_result(value)
            if self.after_call is not None:
                self.after_call(self)
        except Exception as exc:  # a failing tool must leave the world exactly as it was
            self.raw.execute("ROLLBACK TO mua_tool")
            self.raw.execute("RELEASE mua_tool")
            self._state_replaced()
            return ToolResult.failure(str(exc) or type(exc).__name__)
        finally:
            self.requestor = "assistant"
        self.raw.execute("RELEASE mua_tool")
        return ToolResult(content=content, error=False)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self.raw.close()


def _parse_arguments(name: str, arguments: Any) -> dict[str, Any] | ToolResult:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except (json.JSONDecodeError, RecursionError) as exc:
            return ToolResult.failure(f"malformed JSON arguments for {name}: {exc}")
    if not isinstance(arguments, dict):
        return ToolResult.failure(f"arguments for {name} must be a JSON object, not {type(arguments).__name__}")
    return arguments


def render_result(value: Any) -> str:
    """The text of a tool message for a tool's return value."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value)
