"""SQL for worlds: connections, statements compiled once, and each table's own statements.

Tools build their SQLAlchemy Core statements once, at module level with ``bindparam``; :func:`bind` turns one
into SQL text and positional values, compiling it on first use. Compiling per call, with SQLAlchemy's
per-execution machinery, costs ten times more than the query itself on a small in-memory database.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from operator import itemgetter
from typing import Any, Callable

from sqlalchemy import Connection, create_engine
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql import ClauseElement

__all__ = ["Compiled", "DIALECT", "Key", "Row", "TableInfo", "bind", "compile_statement", "connect", "connect_shared",
           "engine_over", "json_safe", "quote"]

Key = tuple[Any, ...]
Row = tuple[Any, ...]


def quote(name: str) -> str:
    """``name`` as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def connect(data: bytes | None = None) -> sqlite3.Connection:
    raw = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    if data is not None:
        raw.deserialize(data)
    # REPLACE conflict resolution deletes rows silently unless this is on; the triggers must see it.
    raw.execute("PRAGMA recursive_triggers = ON")
    raw.execute("PRAGMA foreign_keys = ON")
    return raw


_DENY_WHEN_SHARED = {(sqlite3.SQLITE_TRANSACTION, "COMMIT")}


def _refuse_commit(action: int, arg1: str | None, *_: Any) -> int:
    return sqlite3.SQLITE_DENY if (action, arg1) in _DENY_WHEN_SHARED else sqlite3.SQLITE_OK


def connect_shared(path: str) -> sqlite3.Connection:
    """A connection over the database file ``path`` that never writes it, so that any number of connections in
    any number of processes share its pages: no file locks, the rollback journal in memory, dirty pages kept in
    memory however many, and COMMIT refused. What a connection writes lives in its open transaction only."""
    uri = Path(path).resolve().as_uri() + "?mode=rw&nolock=1"  # (quoted; a missing file is an error, not made)
    raw = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    for pragma in ("journal_mode = MEMORY", "cache_spill = OFF", "synchronous = OFF", "cache_size = -256",
                   "recursive_triggers = ON", "foreign_keys = ON"):
        raw.execute(f"PRAGMA {pragma}")
    raw.set_authorizer(_refuse_commit)
    return raw


def engine_over(raw: sqlite3.Connection) -> Connection:
    engine = create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool, isolation_level="AUTOCOMMIT")
    return engine.connect()



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
        cols = ", ".join(quote(c) for c in columns)
        every = [c.name for c in table.columns]
        all_cols = ", ".join(quote(c) for c in every)
        where_key = " AND ".join(f"{quote(k)} = ?" for k in key)
        name = quote(table.name)
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
        sets = ", ".join(f"{quote(self.every_column[i])} = ?" for i in positions)
        return f"UPDATE {quote(self.name)} SET {sets} WHERE rowid = ?"

    def key(self, row: Row) -> Key:
        positions = self.key_positions
        return (row[positions[0]],) if len(positions) == 1 else tuple([row[i] for i in positions])

    def as_dict(self, row: Row) -> dict[str, Any]:
        return {c: json_safe(v) for c, v in zip(self.columns, row)}

    def key_dict(self, key: Key) -> dict[str, Any]:
        return {self.columns[i]: json_safe(v) for i, v in zip(self.key_positions, key)}


def _real_affinity(kind: Any) -> bool:
    """Whether SQLite gives a column of this SQL type REAL affinity (its rules, in their order)."""
    declared = kind.compile(dialect=DIALECT).upper()
    return (not any(word in declared for word in ("INT", "CHAR", "CLOB", "TEXT", "BLOB"))
            and any(word in declared for word in ("REAL", "FLOA", "DOUB")))


def json_safe(value: Any) -> Any:
    return value.hex() if isinstance(value, (bytes, bytearray, memoryview)) else value



DIALECT = sqlite_dialect.dialect()
_NO_DEFAULT = object()


class Compiled:
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


_compiled: dict[int, Compiled] = {}


def compile_statement(stmt: ClauseElement) -> Compiled:
    """A Core statement compiled once per statement object. Tools build their statements once (module level,
    with ``bindparam``): compiling per call, and SQLAlchemy's per-execution machinery, cost ten times more than
    the query itself on a small in-memory database."""
    found = _compiled.get(id(stmt))
    if found is not None and found.stmt is stmt:
        return found
    if len(_compiled) > 4096:  # statements built per call (not the intended use) must not grow this forever
        _compiled.clear()
    compiled = stmt.compile(dialect=DIALECT)
    sql = compiled.string
    if "POSTCOMPILE" in sql:
        raise ValueError("expanding parameters (IN lists) are not supported in precompiled statements")
    params = []
    for name in compiled.positiontup or ():
        bind = compiled.binds[name]
        # Literals written into a statement (``== "order"``, ``round(x, 2)``) are bound parameters too.
        params.append((name, _NO_DEFAULT if bind.required or bind.callable else bind.value))
    found = _compiled[id(stmt)] = Compiled(stmt, sql, tuple(params))
    return found



def bind(stmt: ClauseElement, params: dict[str, Any]) -> tuple[Compiled, Any]:
    """(the compiled statement, its positional values): ``params`` merged over the statement's literals."""
    found = _compiled.get(id(stmt))
    if found is None or found.stmt is not stmt:
        found = compile_statement(stmt)
    try:
        return found, found.gather({**found.defaults, **params} if found.defaults else params)
    except KeyError as exc:
        raise TypeError(f"missing query parameter {exc.args[0]!r}") from None
