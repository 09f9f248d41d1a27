"""The world: one episode's database, and the tools that act on it.

A domain's data is built once into a :class:`WorldImage`: a serialized in-memory SQLite database with
triggers that record every row a write touches. A :class:`World` is a live copy of an image that never
commits: it holds one transaction open from the image's state on, so a reset is SQLite rolling that
transaction back (it restores the pages an episode touched) followed by the few writes that make a task's start.

Because the image knows the hash of every row it started with, and the triggers know which rows changed
since, ``state_hash`` and ``diff`` cost time in proportion to the rows an episode changed, not to the
size of the world.
"""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel, Field
from sqlalchemy import Connection, MetaData, create_engine
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.sql import ClauseElement

from mua_gym.jsonsafe import JSONError, clean_text, dumps, loads
from mua_gym.tools import Tool, ToolError, ToolResult, Toolkit

__all__ = ["ChangeSet", "Delta", "Memory", "ReadToolWrote", "RowDiff", "TableDiff", "World", "WorldDiff", "WorldImage",
           "WorldSnapshot"]

Requestor = Literal["assistant", "user", "setup"]
Key = tuple[Any, ...]
Row = tuple[Any, ...]


class ReadToolWrote(ToolError):
    """A tool declared ``kind="read"`` wrote rows: the call is undone and answered with this error."""


_CHANGES = "_mua_changes"
_ROW_KEY = "\x00row %s %d"  # the memory key of a row kept by World.remember_row (no domain key starts with NUL)
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
    every_column: tuple[str, ...]
    order: int
    #: Where the compared columns sit among every column (None: they are every column).
    compared_positions: tuple[int, ...] | None = None
    #: Where the columns of REAL affinity sit among every column.
    real_positions: tuple[int, ...] = ()

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
            every_column=tuple(every),
            order=order,
            compared_positions=None if len(columns) == len(every) else tuple(every.index(c) for c in columns),
            real_positions=tuple(i for i, c in enumerate(table.columns) if _real_affinity(c.type)),
        )

    def update_columns(self, positions: list[int]) -> str:
        """An UPDATE by rowid of the columns at ``positions`` (of ``every_column``), in that order."""
        sets = ", ".join(f"{_q(self.every_column[i])} = ?" for i in positions)
        return f"UPDATE {_q(self.name)} SET {sets} WHERE rowid = ?"

    def key(self, row: Row) -> Key:
        positions = self.key_positions
        return (row[positions[0]],) if len(positions) == 1 else tuple([row[i] for i in positions])

    def as_dict(self, row: Row) -> dict[str, Any]:
        return {c: _json_safe(v) for c, v in zip(self.columns, row)}

    def key_dict(self, key: Key) -> dict[str, Any]:
        return {self.columns[i]: _json_safe(v) for i, v in zip(self.key_positions, key)}


def _real_affinity(kind: Any) -> bool:
    """Whether SQLite gives a column of this SQL type REAL affinity (its rules, in their order)."""
    declared = kind.compile(dialect=_DIALECT).upper()
    return (not any(word in declared for word in ("INT", "CHAR", "CLOB", "TEXT", "BLOB"))
            and any(word in declared for word in ("REAL", "FLOA", "DOUB")))


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
            f"CREATE TRIGGER {_q('_mua_u_' + t)} AFTER UPDATE ON {_q(t)} BEGIN {record % 'OLD'} END;"
            # (apart, with its condition: a row rarely changes rowid, and a second insert costs every update)
            f"CREATE TRIGGER {_q('_mua_r_' + t)} AFTER UPDATE ON {_q(t)} WHEN NEW.rowid IS NOT OLD.rowid "
            f"BEGIN {record % 'NEW'} END;"
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
        self._writes: dict[int, tuple[Delta, Writes, Writes]] = {}
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

    def writes(self, delta: "Delta", keep: bool = True) -> tuple["Writes", "Writes"]:
        """The statements that take this image to ``delta``: (the plain way, the way that cannot collide).

        The plain way deletes (children first), updates only the columns that differ, then inserts (parents
        first). It fails only where rows swapped a unique value or a parent; the other way deletes every row the
        delta touches and inserts them again, for a caller that has deferred foreign-key checks. Both are kept
        per delta object (unless ``keep`` is false): a task's start is applied at every reset of that task.
        """
        found = self._writes.get(id(delta))
        if found is not None and found[0] is delta:
            return found[1], found[2]
        deletes: list[tuple[int, str, tuple[Any, ...]]] = []
        updates: list[tuple[int, str, tuple[Any, ...]]] = []
        inserts: list[tuple[int, str, tuple[Any, ...]]] = []
        out_again: list[tuple[int, str, tuple[Any, ...]]] = []  # the other way: every touched row out...
        in_again: list[tuple[int, str, tuple[Any, ...]]] = []  # ...and back in
        for table, rid, row in delta:
            info = self.tables[table]
            old = self.base_full_row(table, rid)
            if old is not None:
                out_again.append((info.order, info.delete_by_rowid, (rid,)))
            if row is not None:
                in_again.append((info.order, info.insert_full, (rid, *row)))
            if row is None:
                if old is not None:
                    deletes.append((info.order, info.delete_by_rowid, (rid,)))
            elif old is None:
                inserts.append((info.order, info.insert_full, (rid, *row)))
            else:  # 1 and 1.0 compare equal but are stored differently: the type counts too
                changed = [i for i, (a, b) in enumerate(zip(row, old)) if a != b or type(a) is not type(b)]
                if changed:
                    updates.append((info.order, info.update_columns(changed), (*(row[i] for i in changed), rid)))

        def ordered(writes: list[tuple[int, str, tuple[Any, ...]]], children_first: bool) -> Writes:
            return [(sql, params) for _, sql, params in sorted(writes, key=lambda w: -w[0] if children_first else w[0])]

        plain = ordered(deletes, True) + ordered(updates, False) + ordered(inserts, False)
        safe = ordered(out_again, True) + ordered(in_again, False)
        if keep:
            if len(self._writes) > 8192:  # deltas made on the fly (snapshots) must not grow this forever
                self._writes.clear()
            self._writes[id(delta)] = (delta, plain, safe)
        return plain, safe


@dataclass(frozen=True)
class WorldSnapshot:
    """A world's full state at one moment, as rows over its image; restore it into any world of that image."""

    image_id: int
    delta: "Delta"


# A change set maps table -> primary key -> the row as it is now (None: deleted), for every row whose
# content differs from the image it started from.
ChangeSet = dict[str, dict[Key, "Row | None"]]
# A delta is a world's state relative to its image, storable and replayable: (table, rowid, every column of the
# row as it is now, or None where the image's row is gone), for every row that differs from the image.
Delta = tuple[tuple[str, int, "Row | None"], ...]
# Statements with their parameters, run in order.
Writes = list[tuple[str, tuple[Any, ...]]]
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

    __slots__ = ("stmt", "sql", "params", "columns", "defaults", "gather", "table")

    def __init__(self, stmt: ClauseElement, sql: str, params: tuple[tuple[str, Any], ...]) -> None:
        self.stmt, self.sql, self.params = stmt, sql, params
        self.columns: tuple[str, ...] | None = None
        #: The table a write statement writes (None: one it cannot be attributed to, or a query).
        table = getattr(stmt, "table", None)
        self.table: str | None = getattr(table, "name", None)
        #: The literals' values by name; ``gather(params)`` picks the values in order (from params merged over
        #: these where there are any).
        self.defaults = {name: value for name, value in params if value is not _NO_DEFAULT}
        names = [name for name, _ in params]
        self.gather: Callable[[dict[str, Any]], Any] = (
            (lambda _: ()) if not names else
            (lambda p, _n=names[0]: (p[_n],)) if len(names) == 1 else itemgetter(*names))


_compiled: dict[int, _Compiled] = {}


def _compile(stmt: ClauseElement) -> _Compiled:
    """A Core statement compiled once per statement object. Tools build their statements once (module level,
    with ``bindparam``): compiling per call, and SQLAlchemy's per-execution machinery, cost ten times more than
    the query itself on a small in-memory database."""
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


class World:
    """A live, isolated database for one episode, with the domain's tools bound to it.

    Tools read and write with :meth:`fetch_one`, :meth:`fetch_all`, :meth:`fetch_scalar` and
    :meth:`execute` (precompiled Core statements, bound parameters), or through ``conn``, a SQLAlchemy
    connection; every tool call runs in a savepoint either way. The connection holds one transaction open for
    the world's life (see :meth:`reset`): code that writes around the tools does so in :meth:`savepoint`, never
    with COMMIT or ROLLBACK (a world whose transaction was ended anyway notices at its next reset and reloads its
    image).
    """

    def __init__(self, image: WorldImage, tools: Toolkit | None = None, user_tools: Toolkit | None = None,
                 after_call: Callable[["World"], None] | None = None,
                 setup_tools: Toolkit | None = None) -> None:
        self.image = image
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
        # The transaction that is never committed: rolling back to it is how a reset forgets an episode.
        # One cursor runs the world's own statements (their results are read at once): making a cursor per
        # statement, as ``raw.execute`` does, costs about as much as a small statement.
        self._run = self.raw.cursor().execute
        self._run("SAVEPOINT mua_base")
        self._base_is_image = True
        self._start: Delta | None = None  # the delta of the last reset, kept under savepoint mua_start

    @property
    def conn(self) -> Connection:
        """A SQLAlchemy connection over this world's database (its transaction is the world's; see the class)."""
        if self._conn is None:
            self._conn = _engine_over(self.raw)
        return self._conn

    # -- queries -----------------------------------------------------------------------------------
    @staticmethod
    def _bind(stmt: ClauseElement, params: dict[str, Any]) -> tuple[_Compiled, Any]:
        found = _compiled.get(id(stmt))
        if found is None or found.stmt is not stmt:
            found = _compile(stmt)
        try:
            return found, found.gather({**found.defaults, **params} if found.defaults else params)
        except KeyError as exc:
            raise TypeError(f"missing query parameter {exc.args[0]!r}") from None

    def _cursor(self, stmt: ClauseElement, params: dict[str, Any]) -> tuple[sqlite3.Cursor, _Compiled]:
        found, values = self._bind(stmt, params)
        return self._run(found.sql, values), found

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
        if row is None:
            return None
        return dict(zip(found.columns or self._columns(cur, found), row))

    def fetch_scalar(self, stmt: ClauseElement, **params: Any) -> Any:
        row = self._cursor(stmt, params)[0].fetchone()
        return None if row is None else row[0]

    def fetch_column(self, stmt: ClauseElement, **params: Any) -> list[Any]:
        return [row[0] for row in self._cursor(stmt, params)[0].fetchall()]

    def execute(self, stmt: ClauseElement, **params: Any) -> int:
        """Runs a write statement; returns the number of rows it touched."""
        cur, _ = self._write(stmt, params)
        self._seen_changes = self.raw.total_changes
        return cur.rowcount

    def execute_and_keep(self, stmt: ClauseElement, **params: Any) -> list[Row]:
        """Runs a write statement whose RETURNING clause gives the rowid, then every column of its table, keeps
        each row it wrote (see :meth:`remember_row`) and returns them (rowid first)."""
        cur, found = self._write(stmt, params)
        rows = cur.fetchall()  # (all its changes are made before the first row comes back)
        self._seen_changes = self.raw.total_changes
        info = self.image.tables[found.table]  # type: ignore[index]
        for row in rows:
            kept = row[1:]
            # RETURNING hands a REAL column's integral value back as SQLite stored it, an int; a SELECT, a float.
            if any(type(kept[i]) is int for i in info.real_positions):
                kept = tuple(float(v) if i in info.real_positions and type(v) is int else v for i, v in enumerate(kept))
            self.remember_row(info.name, row[0], kept)
        return rows

    def _write(self, stmt: ClauseElement, params: dict[str, Any]) -> tuple[sqlite3.Cursor, _Compiled]:
        found, values = self._bind(stmt, params)
        if self.raw.total_changes != self._seen_changes:  # (_notice_outside_writes, inline: a hot path)
            self._state_replaced()
        self._serial += 1
        if found.table is not None:
            self._written[found.table] = self._serial
        else:  # a statement we cannot attribute to a table counts as a change to all of them
            self._replaced = self._serial
        return self._run(found.sql, values), found

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
        if self.raw.total_changes != self._seen_changes:  # (_notice_outside_writes, inline: a hot path)
            self._state_replaced()
        if len(tables) == 1:  # the common case, inline
            return value if stamp == max(self._replaced, self._written.get(tables[0], 0)) else None
        return value if stamp == self.last_write(tables) else None

    def remember(self, key: str, tables: tuple[str, ...], value: Any) -> None:
        """Keeps ``value`` (never mutated afterwards) as derived from the current content of ``tables``."""
        self._memory[key] = (tables, self.last_write(tables), value)

    def remember_row(self, table: str, rowid: int, row: Row) -> None:
        """Keeps ``row`` (every column of ``table``'s row at ``rowid``, in the table's order, exactly as SQLite
        returns them) as that row's content now. While ``table`` is unwritten since, :meth:`changes` (what the
        reward reads) takes it instead of reading the row."""
        self.remember(_ROW_KEY % (table, rowid), (table,), row)

    def known_row(self, table: str, rowid: int) -> Row | None:
        """The row kept by :meth:`remember_row`, or None where it may be stale."""
        return self.recall(_ROW_KEY % (table, rowid))

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

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """For writes made around the tools (``raw``, ``conn``): undone together if the block raises, and then
        the world forgets what it derived from the content (a ROLLBACK TO of one's own savepoint would leave
        remembered values and kept rows stale: SQLite's change count does not move back)."""
        self._run("SAVEPOINT mua_user")
        try:
            yield
        except BaseException:
            self._run("ROLLBACK TO mua_user")
            self._run("RELEASE mua_user")
            self._state_replaced()
            raise
        self._run("RELEASE mua_user")

    # -- state -------------------------------------------------------------------------------------
    def load(self, data: bytes) -> None:
        """Replaces the whole database with ``data``: bytes of this world's image or of :meth:`serialize`."""
        if data is self.image.data:
            self.reset()
        else:
            self._load_base(data)

    def _load_base(self, data: bytes) -> None:
        # Loading makes SQLite prepare every statement again on its next use: only for images and odd cases.
        raw = self.raw
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raw.deserialize(data)
        raw.execute("SAVEPOINT mua_base")
        self._base_is_image = data is self.image.data
        self._start = None
        self._state_replaced()

    def reset(self, delta: Delta = (), memory: Memory | None = None) -> None:
        """Back to the image's state, or to the image with ``delta`` applied (a task's start, see :meth:`delta`).

        ``memory``, taken with :meth:`memory` from a world in exactly that state, is remembered again here, so
        the first calls of an episode find what its start state already derived.

        The world never commits: it rolls its transaction back (SQLite restores the pages written since the
        image's state), writes the delta's rows, and keeps a savepoint there, so the next reset to the same start
        (the same ``delta`` object) is a single rollback to it. A start the image cannot reach leaves the world at
        the image and raises.
        """
        raw = self.raw
        self._state_replaced()
        if self._start is delta and self._rollback_to("mua_start"):
            self._install(memory)
            return
        self._start = None
        if self._base_is_image and raw.in_transaction:
            # A whole rollback, not one to savepoint mua_base: only the end of a transaction lets SQLite drop its
            # journals, which would otherwise grow with every episode and make each rollback slower. What was
            # committed is the image, unless someone committed by hand: then the change log is not empty.
            run = self._run
            run("ROLLBACK")
            run("SAVEPOINT mua_base")
            if run(f"SELECT 1 FROM {_CHANGES} LIMIT 1").fetchone() is not None:
                self._load_base(self.image.data)
        else:
            self._load_base(self.image.data)
        if delta:
            try:
                _apply(self._run, self.image.writes(delta), "mua_base")
            except BaseException:
                raw.execute("ROLLBACK TO mua_base")
                self._state_replaced()
                raise
        self._run("SAVEPOINT mua_start")
        self._start = delta
        self._state_replaced()
        self._install(memory)

    def _rollback_to(self, savepoint: str) -> bool:
        """Rolls back to one of the world's savepoints; False where it is gone (the transaction was ended)."""
        if not (self._base_is_image and self.raw.in_transaction):
            return False
        try:
            self._run(f"ROLLBACK TO {savepoint}")
        except sqlite3.OperationalError:
            return False
        return True

    def _install(self, memory: Memory | None) -> None:
        # (called right after _state_replaced: every table's stamp is that of the replacement; nothing else is valid)
        stamp = self._replaced
        self._memory = {k: (t, stamp, v) for k, (t, v) in memory.items()} if memory else {}

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
        return WorldSnapshot(self.image.id, self.delta())

    def restore(self, snapshot: WorldSnapshot) -> None:
        if snapshot.image_id != self.image.id:
            raise ValueError("snapshot was taken from a world of another image")
        self.reset(snapshot.delta)

    def serialize(self) -> bytes:
        """The current content as the bytes of a SQLite database (``raw.serialize()`` gives the image's: the
        world's writes are never committed)."""
        copy = _connect(self.image.data)
        try:
            copy.execute("SAVEPOINT mua_copy")
            _apply(copy.execute, self.image.writes(self.delta(), keep=False), "mua_copy")
            copy.execute("RELEASE mua_copy")
            return copy.serialize()
        finally:
            copy.close()

    def _changed_rowids(self) -> list[tuple[str, int]]:
        return self._run(f"SELECT tbl, rid FROM {_CHANGES}").fetchall()

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
        image, run = self.image, self._run
        out: ChangeSet = {}
        odd: list[tuple[str, Row | None, Row | None]] = []  # rows whose key is new, gone or changed
        for table, rowid in self._changed_rowids():
            info = image.tables[table]
            new = self.known_row(table, rowid)  # a row the domain kept, or read here
            if new is None:
                new = run(info.select_by_rowid, (rowid,)).fetchone()
            elif info.compared_positions is not None:
                new = tuple([new[i] for i in info.compared_positions])
            old = image.base_row(table, rowid)
            if new is not None and old is not None and (key := info.key(new)) == info.key(old):
                if new != old:  # the common case: a row updated in place
                    out.setdefault(table, {})[key] = new
            elif new is not None or old is not None:
                odd.append((table, new, old))
        if odd:
            # A key that left one rowid may live on at another, or in a row the change log also lists.
            current = {(t, image.tables[t].key(new)): new for t, new, _ in odd if new is not None}
            for (table, key), new in current.items():
                if image.base_row_by_key(table, key) != new:
                    out.setdefault(table, {})[key] = new
            for table, new, old in odd:
                if old is not None:
                    key = image.tables[table].key(old)
                    if (table, key) not in current and key not in out.get(table, {}):
                        out.setdefault(table, {})[key] = None
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
            shown = name[:200] + ("..." if len(name) > 200 else "") if isinstance(name, str) else type(name).__name__
            return ToolResult.failure(f"unknown tool '{shown}'")
        args = _parse_arguments(name, arguments)
        if isinstance(args, ToolResult):
            return args
        try:
            kwargs = found.validate(args)
        except ToolError as exc:
            return ToolResult.failure(str(exc))
        self.requestor = requestor
        written = self.raw.total_changes
        self._run("SAVEPOINT mua_tool")
        try:
            value = found.function(self, **kwargs) if found.takes_world else found.function(**kwargs)
            content = render_result(value)
            if found.kind == "read" and self.raw.total_changes != written:
                raise ReadToolWrote(f"tool '{name}' is declared kind='read' but wrote to the world; its writes were "
                                    "undone (declare it kind='write')")
            if self.after_call is not None:
                self.after_call(self)
        except Exception as exc:  # a failing tool must leave the world exactly as it was
            self.raw.execute("ROLLBACK TO mua_tool")
            self.raw.execute("RELEASE mua_tool")
            self._state_replaced()
            return ToolResult.failure(str(exc) or type(exc).__name__)
        finally:
            self.requestor = "assistant"
        self._run("RELEASE mua_tool")
        return ToolResult(content=content, error=False)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self.raw.close()


def _apply(run: Callable[..., sqlite3.Cursor], writes: tuple[Writes, Writes], savepoint: str) -> None:
    """Runs a delta's writes (see :meth:`WorldImage.writes`) on a database at its image's state, inside
    ``savepoint``: the plain way, or, where rows swapped unique values or parents, the way that cannot collide,
    with foreign keys deferred and checked here (a transaction that never commits never checks them)."""
    plain, safe = writes
    try:
        for sql, params in plain:
            run(sql, params)
        return
    except sqlite3.IntegrityError:
        run(f"ROLLBACK TO {savepoint}")
    run("PRAGMA defer_foreign_keys = ON")
    try:
        for sql, params in safe:
            run(sql, params)
        if run("PRAGMA foreign_key_check").fetchone() is not None:
            raise sqlite3.IntegrityError("FOREIGN KEY constraint failed")
    finally:
        run("PRAGMA defer_foreign_keys = OFF")


def _parse_arguments(name: str, arguments: Any) -> dict[str, Any] | ToolResult:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = loads(arguments)
        except JSONError as exc:
            return ToolResult.failure(f"malformed JSON arguments for {name}: {exc}")
    if not isinstance(arguments, dict):
        return ToolResult.failure(f"arguments for {name} must be a JSON object, not {type(arguments).__name__}")
    return arguments


def render_result(value: Any) -> str:
    """The text of a tool message for a tool's return value (writable as UTF-8); raises :class:`JSONError`
    for a value that JSON cannot carry, which the caller turns into an error with the call undone."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, BaseModel):
        try:
            return value.model_dump_json()
        except ValueError as exc:  # pydantic refuses lone surrogates and values it cannot write
            raise JSONError(f"the tool's result cannot be written as JSON: {exc}") from None
    return dumps(value)
