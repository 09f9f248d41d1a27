"""Built world images and generated task lists, kept on disk so that a new process need not build them again.

A vector worker, a Ray actor or a CLI call is a new process: without this cache each one generates and verifies a
split's tasks (seconds) and builds its world image before its first reset. An entry's name is a digest of what
made it: the domain, the source, the split or seed and parameters, and the source code that built it (every file
of the domain's package and of ``mua_gym``), with the numpy, SQLite and Python versions. A change to any of them
is a new name, so an entry is never stale; old entries are only disk space.

- Where: ``$MUA_GYM_CACHE``, else ``$XDG_CACHE_HOME/mua_gym``, else ``~/.cache/mua_gym``. ``MUA_GYM_CACHE=off``
  turns it off. ``mua-gym cache`` prints the folder and its size; ``mua-gym cache --clear`` empties it (as does
  deleting the folder).
- Safe under concurrent writers: an entry is written to a temporary file and renamed into place, so a reader
  sees a whole entry or none. Every entry carries the sha256 of its payload; one that does not match (a
  truncated or altered file) is rebuilt and replaced.
- Entries are pickles, as trusted as the code beside them: point ``MUA_GYM_CACHE`` only at a folder that no one
  else can write.
- Which sources: a domain lists them in ``Domain.cached_sources`` (``("generated",)`` by default): sources whose
  output depends only on their arguments and code. TAU2's own data is read from the installed package instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np
from mua_gym.task import GenerationStats, Task

__all__ = ["CachedTasks", "cache_folder", "cached_image", "cached_tasks", "clear", "code_digest", "entry",
           "store_image", "usage"]

_OFF = {"off", "0", "false", "no", "none"}
_digests: dict[str, str | None] = {}
_digest_lock = threading.Lock()


def cache_folder() -> Path | None:
    """The cache's folder (not created here), or None where ``MUA_GYM_CACHE`` turns the cache off."""
    setting = os.environ.get("MUA_GYM_CACHE", "").strip()
    if setting.lower() in _OFF and setting:
        return None
    if setting:
        return Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "mua_gym"


def _package_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix in (".py", ".md", ".json", ".toml", ".txt"))


def _digest_of(paths: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def code_digest(module_name: str) -> str | None:
    """A digest of the code that a function of ``module_name`` runs: every source file of the package holding
    that module (the file alone for a top-level module) and of ``mua_gym``. Found without importing the module
    (a submodule's package is imported, as ``importlib.util.find_spec`` does);
    computed once per process. None where the module has no source file (``__main__``, a notebook's cells)."""
    if module_name in _digests:
        return _digests[module_name]
    with _digest_lock:
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):  # __main__ without a spec, a module that cannot be found
            spec = None
        if spec is None or spec.origin is None or not Path(spec.origin).is_file():
            return None
        origin = Path(spec.origin)
        if spec.submodule_search_locations is not None or "." in module_name:
            own_root, own_files = origin.parent, _package_files(origin.parent)
        else:
            own_root, own_files = origin.parent, [origin]
        core = Path(__file__).resolve().parents[1]  # the whole mua_gym package, not this folder
        digest = hashlib.sha256("\0".join([
            _digest_of(own_files, own_root), _digest_of(_package_files(core), core),
            np.__version__, sqlite3.sqlite_version, f"{sys.version_info[0]}.{sys.version_info[1]}",
        ]).encode()).hexdigest()
        _digests[module_name] = digest
        return digest


def entry(kind: str, domain: str, source: str, function: Callable[..., Any], arguments: Any) -> Path | None:
    """The file of the entry that ``function`` (a world builder or task source of ``source`` of the domain named
    ``domain``) makes for ``arguments`` (anything with a stable ``repr``), or None where the cache is off."""
    folder = cache_folder()
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    # Only a module's own named functions: a lambda or a nested function may hold state its code does not show.
    if folder is None or not module or not name or "<" in name:
        return None
    digest = code_digest(module)
    if digest is None:
        return None
    parts = [kind, domain, source, f"{module}:{name}", repr(arguments), digest]
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    return folder / f"{domain}-{kind}-{digest}{'.db' if kind == 'image' else '.pkl'}"


def _read(path: Path) -> bytes | None:
    """An entry's payload, or None where it is missing or does not match its checksum."""
    try:
        with open(path, "rb") as f:
            head = f.readline()
            payload = f.read()
    except OSError:
        return None
    return payload if head.strip() == hashlib.sha256(payload).hexdigest().encode() else None


def _write(path: Path, payload: bytes) -> None:
    """Writes an entry whole or not at all (temporary file, then rename); a cache that cannot be written is
    skipped, never an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(payload).hexdigest().encode() + b"\n")
                f.write(payload)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass


class CachedTasks(Sequence[Task]):
    """A split's tasks read from the cache, each unpickled on its first use: a reset reads one task of a split,
    not thousands. Indexing, slicing (a list), iterating, ``len``, ``==`` and ``+`` work as on the list that
    was cached; ``stats`` is that list's (:class:`~mua_gym.task.TaskList`), or None."""

    def __init__(self, blobs: list[bytes], stats: GenerationStats | None) -> None:
        self._blobs = blobs
        self._tasks: list[Task | None] = [None] * len(blobs)
        self.stats = stats

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, index: int) -> Task: ...
    @overload
    def __getitem__(self, index: slice) -> list[Task]: ...
    def __getitem__(self, index: int | slice) -> Task | list[Task]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._blobs)))]
        task = self._tasks[index]
        if task is None:
            task = self._tasks[index] = pickle.loads(self._blobs[index])
        return task

    def __iter__(self) -> Iterator[Task]:
        return (self[i] for i in range(len(self._blobs)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (list, tuple, CachedTasks)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # (mutable, as the list it stands for)

    def __add__(self, other: Sequence[Task]) -> list[Task]:
        return [*self, *other]

    def __radd__(self, other: Sequence[Task]) -> list[Task]:
        return [*other, *self]

    def __repr__(self) -> str:
        return f"CachedTasks({len(self)} tasks)"


def cached_tasks(path: Path | None, make: Callable[[], list[Task]]) -> Sequence[Task]:
    """The tasks kept at ``path`` (an :func:`entry`) as :class:`CachedTasks`, or else ``make()``'s list, kept
    there.

    What is read back equals what ``make()`` returned, task for task and field for field (pickles: JSON would
    turn the tuples in a task's free-form facts into lists), with its ``stats`` where it had them.
    """
    payload = None if path is None else _read(path)
    if payload is not None:
        try:
            blobs, stats = pickle.loads(payload)
        except Exception:  # written by another layout of these classes: rebuilt below
            pass
        else:
            return CachedTasks(blobs, stats)
    tasks = make()
    if path is not None:
        blobs = [pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL) for t in tasks]
        _write(path, pickle.dumps((blobs, getattr(tasks, "stats", None)), protocol=pickle.HIGHEST_PROTOCOL))
    return tasks


def cached_image(path: Path | None) -> tuple[bytes, int] | None:
    """The bytes and content hash of the world image kept at ``path`` (an :func:`entry`), or None where there
    is no valid entry (the caller builds the image and keeps it with :func:`store_image`)."""
    payload = None if path is None else _read(path)
    if payload is None or len(payload) < 16:
        return None
    return payload[16:], int.from_bytes(payload[:16], "big")


def store_image(path: Path | None, data: bytes, content_hash: int) -> None:
    """Keeps an image's bytes and content hash at ``path`` for :func:`cached_image`."""
    if path is not None:
        _write(path, content_hash.to_bytes(16, "big") + data)


def usage(folder: Path | None = None) -> tuple[int, int]:
    """(entries, bytes) in the cache folder; (0, 0) where it does not exist."""
    folder = folder or cache_folder()
    if folder is None or not folder.is_dir():
        return 0, 0
    files = [p for p in folder.iterdir() if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def clear(folder: Path | None = None) -> int:
    """Deletes every entry (and any temporary file a killed writer left); returns how many files went."""
    folder = folder or cache_folder()
    if folder is None or not folder.is_dir():
        return 0
    removed = 0
    for path in folder.iterdir():
        if path.is_file() and (path.suffix in (".pkl", ".db") or path.name.startswith(".tmp-")):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
