"""World images: a domain's built database, frozen, with the change log that lets a world reset and compare fast.

A :class:`WorldImage` is a serialized in-memory SQLite database whose tables carry triggers: every row a write
touches is listed in the change log table ``CHANGES``. The image knows the hash of every row it started with,
so a world's hash and diff cost time in proportion to the rows an episode changed, not to the world's size.
A :data:`Delta` is a world's state as rows over its image; :func:`apply_writes` takes an image's state there.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import tempfile
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable

from sqlalchemy import Connection, MetaData
from sqlalchemy.schema import CreateIndex, CreateTable

from mua_gym.world.diff import HASH_MOD, row_hash
from mua_gym.world.sql import Key, Row, TableInfo, connect, engine_over, quote

__all__ = ["CHANGES", "Delta", "WorldImage", "WorldSnapshot", "Writes", "apply_writes", "sweep_stale_files"]

#: The change log: (table, rowid) of every row written since the image's state.
CHANGES = "_mua_changes"
_MISSING = object()
_image_ids = itertools.count(1)

# A delta is a world's state relative to its image, storable and replayable: (table, rowid, every column of the
# row as it is now, or None where the image's row is gone), for every row that differs from the image.
Delta = tuple[tuple[str, int, "Row | None"], ...]
# Statements with their parameters, run in order.
Writes = list[tuple[str, tuple[Any, ...]]]


def _remove_file(path: str, owner: int) -> None:
    if os.getpid() == owner:  # (a forked child must not remove its parent's file)
        try:
            os.remove(path)
        except OSError:
            pass


_FILE_PREFIX = "mua-gym-image-"  # then the writing process's id and a dash
_swept = False  # whether this process has swept (see _sweep_once)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's process: alive)
        return True
    return True


def sweep_stale_files(folder: str | None = None) -> list[str]:
    """Removes the image files in ``folder`` (the temp folder by default) whose writing process is gone: one
    killed before its finalizers ran leaves its files behind. Returns the paths removed.

    A file removed while another process still reads it (a process id seen from another pid namespace) costs that
    process nothing: open connections keep reading it, and its image writes a new file when asked for one."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(_FILE_PREFIX) and name.endswith(".sqlite")):
            continue
        pid = name[len(_FILE_PREFIX):].partition("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            path = os.path.join(folder, name)
            try:
                os.remove(path)
            except OSError:
                continue
            removed.append(path)
    return removed


def _sweep_once() -> None:
    """:func:`sweep_stale_files`, the first time a process writes an image file."""
    global _swept
    if not _swept:
        _swept = True
        sweep_stale_files()


def _install_change_tracking(raw: sqlite3.Connection, tables: list[str]) -> None:
    raw.execute(
        f"CREATE TABLE {CHANGES} (tbl TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (tbl, rid)) WITHOUT ROWID"
    )
    for t in tables:
        lit = "'" + t.replace("'", "''") + "'"
        record = f"INSERT OR IGNORE INTO {CHANGES} VALUES ({lit}, %s.rowid);"
        raw.executescript(
            f"CREATE TRIGGER {quote('_mua_i_' + t)} AFTER INSERT ON {quote(t)} BEGIN {record % 'NEW'} END;"
            f"CREATE TRIGGER {quote('_mua_d_' + t)} AFTER DELETE ON {quote(t)} BEGIN {record % 'OLD'} END;"
            f"CREATE TRIGGER {quote('_mua_u_' + t)} AFTER UPDATE ON {quote(t)} BEGIN {record % 'OLD'} END;"
            # (apart, with its condition: a row rarely changes rowid, and a second insert costs every update)
            f"CREATE TRIGGER {quote('_mua_r_' + t)} AFTER UPDATE ON {quote(t)} WHEN NEW.rowid IS NOT OLD.rowid "
            f"BEGIN {record % 'NEW'} END;"
        )



class WorldImage:
    """An immutable starting database: its bytes, the hash of its content, and a copy for look-ups.

    Build one with :meth:`build`; a domain caches one per (source, seed, parameters).
    """

    def __init__(self, metadata: MetaData, raw: sqlite3.Connection, name: str = "", *,
                 data: bytes | None = None, content_hash: int | None = None) -> None:
        self.id = next(_image_ids)
        self.name = name
        self.metadata = metadata
        self.tables: dict[str, TableInfo] = {t.name: TableInfo.of(t, i) for i, t in enumerate(metadata.sorted_tables)}
        self._lookup = raw
        self._by_rowid: dict[tuple[str, int], Row | None] = {}
        self._full_by_rowid: dict[tuple[str, int], Row | None] = {}
        self._by_key: dict[tuple[str, Key], Row | None] = {}
        self._writes: dict[int, tuple[Delta, Writes, Writes]] = {}
        self._file: str | None = None
        self._file_lock = threading.Lock()
        self.data: bytes = raw.serialize() if data is None else data
        if content_hash is None:
            total = 0
            for info in self.tables.values():
                for row in raw.execute(info.select_all):
                    total += row_hash(info.name, row)
            content_hash = total % HASH_MOD
        self.hash = content_hash

    @classmethod
    def build(cls, metadata: MetaData, populate: Callable[[Connection], None], name: str = "") -> "WorldImage":
        """Creates the schema, runs ``populate(connection)`` in one transaction, and freezes the result."""
        raw = connect()
        conn = engine_over(raw)
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

    @classmethod
    def from_bytes(cls, metadata: MetaData, data: bytes, content_hash: int, name: str = "") -> "WorldImage":
        """The image whose bytes (``.data``) and content hash (``.hash``) an earlier :meth:`build` gave."""
        return cls(metadata, connect(data), name, data=data, content_hash=content_hash)

    def file(self) -> str:
        """The path of a file holding :attr:`data`, written on first use and removed with the image (by the
        process that wrote it; a process's first file also sweeps away those of processes that were killed, see
        :func:`sweep_stale_files`). Worlds open it as their shared, never-written base (see :class:`World`)."""
        if self._file is None or not os.path.exists(self._file):  # (a cleaner may have removed it)
            with self._file_lock:
                if self._file is None or not os.path.exists(self._file):
                    _sweep_once()
                    fd, path = tempfile.mkstemp(prefix=f"{_FILE_PREFIX}{os.getpid()}-", suffix=".sqlite")
                    with os.fdopen(fd, "wb") as out:
                        out.write(self.data)
                    weakref.finalize(self, _remove_file, path, os.getpid())
                    self._file = path
        return self._file

    def discard_file(self) -> None:
        """Forgets the file (one that was written by mistake): the next :meth:`file` writes a fresh one."""
        with self._file_lock:
            path, self._file = self._file, None
        if path is not None:
            _remove_file(path, os.getpid())

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



def apply_writes(run: Callable[..., sqlite3.Cursor], writes: tuple[Writes, Writes], savepoint: str) -> None:
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

