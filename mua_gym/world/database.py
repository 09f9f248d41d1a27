"""The world: one episode's live database, and the tools that act on it.

A :class:`World` is a live copy of a :class:`~mua_gym.world.image.WorldImage` that never commits: it holds one
transaction open from the image's state on, so a reset is SQLite rolling that transaction back (it restores the
pages an episode touched) followed by the few writes that make a task's start. Its hash and its diff read only
the rows the image's change log lists. Every tool call runs in a savepoint: a call that fails, or a read tool
that wrote, leaves the world exactly as it was.
"""

from __future__ import annotations

import sqlite3
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from sqlalchemy import Connection
from sqlalchemy.sql import ClauseElement

from mua_gym.world.diff import HASH_MOD, ChangeSet, TableDiff, WorldDiff, compare_changes, diff_rows, row_hash
from mua_gym.world.image import CHANGES, Delta, WorldImage, WorldSnapshot, apply_writes
from mua_gym.world.memo import Memo, Memory
from mua_gym.world.sql import Compiled, Key, Row, bind, connect, connect_shared, engine_over
from mua_gym.tools import ReadToolWrote, Requestor, Toolkit, ToolResult, render_result, resolve_call

__all__ = ["Memory", "World"]


class World:
    """A live, isolated database for one episode, with the domain's tools bound to it.

    Tools read and write with :meth:`fetch_one`, :meth:`fetch_all`, :meth:`fetch_scalar` and
    :meth:`execute` (precompiled Core statements, bound parameters), or through ``conn``, a SQLAlchemy
    connection; every tool call runs in a savepoint either way. The connection holds one transaction open for
    the world's life (see :meth:`reset`): code that writes around the tools does so in :meth:`savepoint`, never
    with COMMIT, ROLLBACK or savepoints of its own (a world whose transaction was ended anyway notices at its
    next reset and reloads its image; until then a failing call may not be undone, and says so).

    By default a world holds a private in-memory copy of its image. ``shared_base=True``: the world opens its
    image's file (:meth:`WorldImage.file`), which every such world of the image, in every process, shares and
    none writes; it then holds only the pages it read lately and those it wrote. COMMIT is refused, since it
    would write the shared file, and the rule above becomes strict: a write made after the transaction was
    ended by hand (``conn.rollback()``, ROLLBACK) would reach the file, which a reset then notices, warns of and
    leaves for a private copy, but other worlds sharing the file would already have seen it.
    """

    def __init__(self, image: WorldImage, tools: Toolkit | None = None, user_tools: Toolkit | None = None,
                 after_call: Callable[["World"], None] | None = None,
                 setup_tools: Toolkit | None = None, memo: bool = False, shared_base: bool = False) -> None:
        self.image = image
        self.tools = tools or Toolkit()
        self.user_tools = user_tools or Toolkit()
        #: Runs after every successful call, inside the call's savepoint (e.g. re-deriving coupled state).
        self.after_call = after_call
        #: Functions only a task's initial actions may call (fault injection), with requestor "setup".
        self.setup_tools = setup_tools or Toolkit()
        # On the image's file, shared and never written, a world holds only the pages it reads and writes; else
        # (or after loading other bytes) it holds a whole copy of the database in memory.
        self._on_file = shared_base
        self.raw = connect_shared(image.file()) if shared_base else connect(image.data)
        # Made now, not on first use: SQLAlchemy's first connect ends any open transaction, which would end the
        # savepoint of a tool that touches ``conn`` first.
        self._conn: Connection | None = engine_over(self.raw)
        #: Who is calling the running tool ("assistant" or "user"); tools may read it.
        self.requestor: Requestor = "assistant"
        #: What domain code derived from the content and keeps between calls, for a domain that asked for it
        #: (``Domain(memo=True)``); None otherwise. See :mod:`mua_gym.world.memo`.
        self.memo: Memo | None = Memo(self) if memo else None
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
        # Savepoint mua_tool stays open between calls, marking the world as the last call left it: SQLite's
        # change count when it was set, or None when there is none. A call that finds the count moved sets it
        # again (two statements); a read call after a read call needs none.
        self._tool_mark: int | None = None
        self._blocks = 0  # calls and savepoint() blocks under way: inside one, a call takes a savepoint of its own

    @property
    def conn(self) -> Connection:
        """A SQLAlchemy connection over this world's database (its transaction is the world's; see the class)."""
        if self._conn is None:
            self._conn = engine_over(self.raw)
        return self._conn

    # -- queries -----------------------------------------------------------------------------------
    def _cursor(self, stmt: ClauseElement, params: dict[str, Any]) -> tuple[sqlite3.Cursor, Compiled]:
        found, values = bind(stmt, params)
        return self._run(found.sql, values), found

    @staticmethod
    def _columns(cur: sqlite3.Cursor, found: Compiled) -> tuple[str, ...]:
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
        """Runs a write statement whose RETURNING clause gives the rowid, then every column of its table, and
        returns the rows it wrote (rowid first); a world with a memo keeps each (see :meth:`Memo.remember_row`)."""
        cur, found = self._write(stmt, params)
        rows = cur.fetchall()  # (all its changes are made before the first row comes back)
        self._seen_changes = self.raw.total_changes
        memo = self.memo
        if memo is None:
            return rows
        info = self.image.tables[found.table]  # type: ignore[index]
        for row in rows:
            kept = row[1:]
            # RETURNING hands a REAL column's integral value back as SQLite stored it, an int; a SELECT, a float.
            if any(type(kept[i]) is int for i in info.real_positions):
                kept = tuple(float(v) if i in info.real_positions and type(v) is int else v for i, v in enumerate(kept))
            memo.remember_row(info.name, row[0], kept)
        return rows

    def _write(self, stmt: ClauseElement, params: dict[str, Any]) -> tuple[sqlite3.Cursor, Compiled]:
        found, values = bind(stmt, params)
        if not self.raw.in_transaction:
            self._reopen()
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

    def memory(self) -> Memory:
        """What the memo remembers and is still valid (empty without one): hand it to :meth:`reset` with this
        state's :meth:`delta`."""
        return {} if self.memo is None else self.memo.memory()

    def _state_replaced(self) -> None:
        self._serial += 1
        self._replaced = self._serial
        self._seen_changes = self.raw.total_changes

    def _notice_outside_writes(self) -> None:
        if self.raw.total_changes != self._seen_changes:
            self._state_replaced()

    def _reopen(self) -> None:
        """Opens the world's transaction again where it was ended by hand (against the contract): a write in
        SQLite's autocommit mode would commit, and on a shared base commit is refused."""
        self._tool_mark = None
        self._run("SAVEPOINT mua_base")

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """For writes made around the tools (``raw``, ``conn``): undone together if the block raises, and then
        the world forgets what it derived from the content (a ROLLBACK TO of one's own savepoint would leave
        remembered values and kept rows stale: SQLite's change count does not move back)."""
        if not self.raw.in_transaction:
            self._reopen()
        self._run("SAVEPOINT mua_user")
        self._blocks += 1
        try:
            yield
        except BaseException:
            self._run("ROLLBACK TO mua_user")
            self._run("RELEASE mua_user")
            self._state_replaced()
            raise
        finally:
            self._blocks -= 1
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
        self._tool_mark = None
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        shared = self._on_file and data is self.image.data  # (the file holds the image: nothing commits to it)
        if shared and raw.execute(f"SELECT 1 FROM {CHANGES} LIMIT 1").fetchone() is not None:
            warnings.warn("mua_gym: a write made outside this world's transaction reached its image's shared file; "
                          "the world now keeps a private copy, and new worlds get a fresh file", RuntimeWarning,
                          stacklevel=3)
            self.image.discard_file()
            shared = False
        if not shared:
            raw.deserialize(data)
            self._on_file = False
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
        self._release_tool_savepoint()
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
            if run(f"SELECT 1 FROM {CHANGES} LIMIT 1").fetchone() is not None:
                self._load_base(self.image.data)
        else:
            self._load_base(self.image.data)
        if delta:
            try:
                apply_writes(self._run, self.image.writes(delta), "mua_base")
            except BaseException:
                raw.execute("ROLLBACK TO mua_base")
                self._state_replaced()
                raise
        self._run("SAVEPOINT mua_start")
        self._start = delta
        self._state_replaced()
        self._install(memory)

    def _release_tool_savepoint(self) -> None:
        """Ends the standing savepoint mua_tool: released, since an outer ROLLBACK TO that cancels it instead
        makes every later ROLLBACK TO of the transaction slower (a reset's, measured at 10x)."""
        if self._tool_mark is not None and self.raw.in_transaction:
            try:
                self._run("RELEASE mua_tool")
            except sqlite3.OperationalError:
                pass  # (gone with a transaction ended by hand)
        self._tool_mark = None

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
        if self.memo is not None:
            self.memo.install(memory)

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
        copy = connect(self.image.data)
        try:
            copy.execute("SAVEPOINT mua_copy")
            apply_writes(copy.execute, self.image.writes(self.delta(), keep=False), "mua_copy")
            copy.execute("RELEASE mua_copy")
            return copy.serialize()
        finally:
            copy.close()

    def _changed_rowids(self) -> list[tuple[str, int]]:
        return self._run(f"SELECT tbl, rid FROM {CHANGES}").fetchall()

    def state_hash(self) -> str:
        """A canonical hash of the content (row order and volatile columns ignored), as 32 hex digits."""
        total = self.image.hash
        for table, rowid in self._changed_rowids():
            old = self.image.base_row(table, rowid)
            if old is not None:
                total -= row_hash(table, old)
            new = self.raw.execute(self.image.tables[table].select_by_rowid, (rowid,)).fetchone()
            if new is not None:
                total += row_hash(table, new)
        return f"{total % HASH_MOD:032x}"

    def changes(self) -> ChangeSet:
        """Every row whose content differs from the image, by table and primary key."""
        image, run = self.image, self._run
        known = None if self.memo is None else self.memo.known_row
        out: ChangeSet = {}
        odd: list[tuple[str, Row | None, Row | None]] = []  # rows whose key is new, gone or changed
        for table, rowid in self._changed_rowids():
            info = image.tables[table]
            new = None if known is None else known(table, rowid)  # a row the domain kept, or read here
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
        if other.image is self.image:
            return compare_changes(self.image, {}, other.changes(), self.changes()).diff
        out: dict[str, TableDiff] = {}
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
        resolved = resolve_call(name, arguments, requestor, self.tools, self.user_tools, self.setup_tools)
        if isinstance(resolved, ToolResult):
            return resolved
        found, kwargs = resolved
        raw, run = self.raw, self._run
        written = raw.total_changes
        standing = self._blocks == 0  # else a call or savepoint() block is open inside mua_tool: nest, as before
        if not raw.in_transaction:
            self._reopen()
        if not standing:
            run("SAVEPOINT mua_tool")
        elif self._tool_mark != written:
            self._release_tool_savepoint()
            run("SAVEPOINT mua_tool")
            self._tool_mark = written
        self.requestor = requestor
        self._blocks += 1
        try:
            value = found.function(self, **kwargs) if found.takes_world else found.function(**kwargs)
            content = render_result(value)
            if found.kind == "read" and raw.total_changes != written:
                raise ReadToolWrote(f"tool '{name}' is declared kind='read' but wrote to the world; its writes were "
                                    "undone (declare it kind='write')")
            if self.after_call is not None:
                self.after_call(self)
        except Exception as exc:  # a failing tool must leave the world exactly as it was
            message = str(exc) or type(exc).__name__
            try:
                run("ROLLBACK TO mua_tool")
            except sqlite3.OperationalError:  # only where a transaction was ended by hand, against the contract
                self._tool_mark = None
                self._state_replaced()
                return ToolResult.failure(f"{message} (and its writes stay: this world's transaction was ended by "
                                          "hand, which took the call's savepoint with it)")
            run("RELEASE mua_tool")
            if standing:
                self._tool_mark = None
            self._state_replaced()
            return ToolResult.failure(message)
        finally:
            self.requestor = "assistant"
            self._blocks -= 1
        if not standing:
            run("RELEASE mua_tool")
        return ToolResult(content=content, error=False)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self.raw.close()

