"""The reference side of the conformance tests: tau2's own environments, run in-process, and how to compare.

Only imported by the ``test_*_conformance.py`` suites (and ``conformance_kit.py``) after
``pytest.importorskip("tau2")``. Nothing here stores expected results: every answer comes from the installed
tau2 at run time. Besides the reference environments it holds the domain-neutral comparison helpers; the
suites' scaffolding around them (fixtures, replays, fuzz helpers) lives in ``conformance_kit.py``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from loguru import logger  # noqa: E402  (tau2 logs every tool response through loguru)

logger.remove()

from tau2.data_model.message import ToolCall  # noqa: E402
from tau2.domains.airline import data_model as airline_model  # noqa: E402
from tau2.domains.airline.environment import get_environment as get_airline_environment  # noqa: E402
from tau2.domains.airline.environment import get_tasks as get_airline_tasks  # noqa: E402
from tau2.domains.airline.utils import AIRLINE_DB_PATH  # noqa: E402
from tau2.domains.retail.data_model import Order, Product, RetailDB, User  # noqa: E402
from tau2.domains.retail.environment import get_environment, get_tasks  # noqa: E402
from tau2.domains.retail.utils import RETAIL_DB_PATH  # noqa: E402
from tau2.domains.telecom.data_model import TelecomDB  # noqa: E402
from tau2.domains.telecom.environment import get_environment as get_telecom_environment  # noqa: E402
from tau2.domains.telecom.user_data_model import PerformanceLevel, TelecomUserDB, VpnDetails  # noqa: E402
from tau2.domains.telecom.utils import TELECOM_DB_PATH, TELECOM_USER_DB_PATH  # noqa: E402

__all__ = ["AIRLINE_DB_PATH", "RETAIL_DB_PATH", "Tau2Airline", "Tau2Reference", "Tau2Retail", "Tau2Telecom",
           "compare_call", "content_equal", "db_equal", "get_airline_environment", "get_airline_tasks",
           "get_environment", "get_tasks", "normalise", "record_diffs", "tau2_call"]

_RECORD_MODELS = {"orders": Order, "users": User, "products": Product}
_AIRLINE_RECORD_MODELS = {"flights": airline_model.Flight, "users": airline_model.User,
                          "reservations": airline_model.Reservation}


def normalise(value: Any) -> Any:
    """The comparison form of a DB or record: a JSON round trip (tuples become lists, odd types strings)."""
    return json.loads(json.dumps(value, default=str))


def content_equal(a: str, b: str) -> bool:
    """Two tool-message texts say the same: equal JSON objects/arrays, else equal strings.

    Scalars are compared as text, so ``"4.0"`` and ``"4"`` (or a bare id and a quoted one) differ.
    """
    try:
        pa, pb = json.loads(a), json.loads(b)
    except (ValueError, RecursionError):
        return a == b
    if isinstance(pa, (dict, list)) or isinstance(pb, (dict, list)):
        return pa == pb
    return a == b


def tau2_call(env: Any, name: Any, arguments: dict[str, Any], requestor: str = "assistant") -> tuple[str, bool]:
    """One tool call exactly as tau2's orchestrator makes it for an agent: (message content, error flag)."""
    message = env.get_response(ToolCall(id="conformance", name=name, arguments=arguments, requestor=requestor))
    return message.content, bool(message.error)


def record_diffs(ours: dict[str, Any], theirs: dict[str, Any], limit: int = 5) -> list[str]:
    """Where two tau2-shaped DBs (or record maps) differ, as short readable lines (at most ``limit``)."""
    out: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                if key not in a or key not in b:
                    out.append(f"{path}/{key}: ours={a.get(key, '<absent>')!r} tau2={b.get(key, '<absent>')!r}")
                else:
                    walk(a[key], b[key], f"{path}/{key}")
                if len(out) >= limit:
                    return
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]")
        elif a != b:
            out.append(f"{path}: ours={a!r} tau2={b!r}")

    walk(normalise(ours), normalise(theirs), "")
    return out


class _ReachedRecords(dict):
    """A top-level record map (e.g. ``db.reservations``) that notes which records tau2's code reached through it.

    tau2's tools only ever get at a record through these maps (subscript or ``get``), so a record not reached
    since the last reset cannot have changed; iterating over the records (the flight searches) counts as
    reaching them all. Lookups with unhashable keys still fail exactly as in a plain dict.
    """

    def __init__(self, records: dict[str, Any]) -> None:
        super().__init__(records)
        self.reached: set[Any] = set()
        self.everything = False

    def _reach(self, key: Any) -> None:
        try:
            self.reached.add(key)
        except TypeError:  # unhashable: the dict operation itself raises the same error
            pass

    def __getitem__(self, key: Any) -> Any:
        self._reach(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._reach(key)
        return super().get(key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._reach(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._reach(key)
        super().__delitem__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._reach(key)
        return super().pop(key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._reach(key)
        return super().setdefault(key, default)

    def _all(self) -> None:
        self.everything = True

    def values(self) -> Any:
        self._all()
        return super().values()

    def items(self) -> Any:
        self._all()
        return super().items()

    def __iter__(self) -> Any:
        self._all()
        return super().__iter__()

    def popitem(self) -> Any:
        self._all()
        return super().popitem()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._all()
        super().update(*args, **kwargs)

    def clear(self) -> None:
        self._all()
        super().clear()

    def forget(self) -> None:
        self.reached.clear()
        self.everything = False


class Tau2Reference:
    """One tau2 domain's Environment with a cheap, exact reset to its shipped db.json.

    ``reset`` does not rebuild the whole DB: records that differ from a pristine, never-used copy are replaced
    by freshly validated ones from the parsed db.json (records added since are dropped again), which yields
    the same state as a new environment. ``changed()`` lists those records (tau2's models compare by value).
    A full rebuild happens only when records were removed or reordered.

    With ``track_reached`` the top-level record maps note which records tau2 reached (:class:`_ReachedRecords`)
    and ``changed()`` compares only those against the pristine copy instead of every record; a record tau2
    changed without reaching it through the maps would stay changed after ``reset`` and so show up in the next
    full comparison of the DBs.
    """

    def __init__(self, db_model: Any, db_path: str, record_models: dict[str, Any],
                 make_environment: Callable[..., Any], track_reached: bool = False) -> None:
        with open(db_path, encoding="utf-8") as fh:
            self.raw: dict[str, Any] = json.load(fh)
        self.db_model, self.record_models, self.track_reached = db_model, record_models, track_reached
        self.pristine = db_model.model_validate(self.raw)  # never handed to the environment
        self.env = make_environment(db=self._tracked(db_model.model_validate(self.raw)))
        self._dirty_shape = False

    def _tracked(self, db: Any) -> Any:
        if self.track_reached:
            for table in self.record_models:
                setattr(db, table, _ReachedRecords(getattr(db, table)))
        return db

    @property
    def db(self) -> Any:
        return self.env.tools.db

    def call(self, name: Any, arguments: dict[str, Any]) -> tuple[str, bool]:
        return tau2_call(self.env, name, arguments)

    def pristine_env(self) -> Any:
        """The environment, reset to the shipped DB: the state of a new one (for airline ≈40 ms, not ≈430 ms)."""
        self.reset()
        return self.env

    def changed(self) -> dict[str, set[str]]:
        """Records (by table) that differ from the shipped DB, added ones included."""
        out: dict[str, set[str]] = {}
        for table in self.record_models:
            now, base = getattr(self.db, table), getattr(self.pristine, table)
            if isinstance(now, _ReachedRecords) and not now.everything:
                candidates = (now.reached & (now.keys() | base.keys())) | (now.keys() ^ base.keys())
            else:
                candidates = now.keys() | base.keys()
            keys = {k for k in candidates if dict.get(now, k) != base.get(k)}
            if len(now) < len(base) or list(now.keys())[:len(base)] != list(base):  # removed or reordered
                self._dirty_shape = True
            if keys:
                out[table] = keys
        return out

    def reset(self, changed: dict[str, set[str]] | None = None) -> None:
        """Back to the shipped DB (``changed``: the result of :meth:`changed` if just computed)."""
        changed = self.changed() if changed is None else changed
        if self._dirty_shape:  # records were removed or reordered: rebuild everything
            self.env.tools.db = self._tracked(self.db_model.model_validate(self.raw))
            self._dirty_shape = False
            return
        for table, keys in changed.items():
            records, model, base = getattr(self.db, table), self.record_models[table], self.raw[table]
            for key in keys:
                if key in base:
                    records[key] = model.model_validate(base[key])
                else:  # added since: appended at the end, so dropping it restores the order too
                    del records[key]
        for table in self.record_models:
            if isinstance(getattr(self.db, table), _ReachedRecords):
                getattr(self.db, table).forget()

    def record(self, table: str, key: str) -> Any:
        """One record as tau2 dumps it (None if absent)."""
        found = dict.get(getattr(self.db, table), key)
        return None if found is None else found.model_dump()

    def dump(self) -> dict[str, Any]:
        return self.db.model_dump()


class Tau2Retail(Tau2Reference):
    """tau2's retail Environment (see :class:`Tau2Reference`)."""

    def __init__(self) -> None:
        super().__init__(RetailDB, RETAIL_DB_PATH, _RECORD_MODELS, get_environment)


class Tau2Airline(Tau2Reference):
    """tau2's airline Environment (see :class:`Tau2Reference`)."""

    def __init__(self) -> None:
        super().__init__(airline_model.FlightDB, AIRLINE_DB_PATH, _AIRLINE_RECORD_MODELS, get_airline_environment,
                         track_reached=True)


class Tau2Telecom:
    """Makes tau2 telecom environments from copies of the parsed db.toml and user_db.toml, each with its own VPN
    profile.

    tau2's VPN profile is one object of the whole process: ``break_vpn`` in one environment makes every later
    ``connect_vpn`` in every environment poor. Each environment made here gets its own profile (an instance
    attribute shadowing the class one), as in a fresh tau2 process.
    """

    def __init__(self) -> None:
        self.db = TelecomDB.load(TELECOM_DB_PATH)
        self.user_db = TelecomUserDB.load(TELECOM_USER_DB_PATH)

    def new_env(self, fresh: bool = False) -> Any:
        """``fresh``: built by a plain ``get_environment()`` (the toml files read again); else from copies."""
        env = get_telecom_environment() if fresh else get_telecom_environment(
            db=self.db.model_copy(deep=True), user_db=self.user_db.model_copy(deep=True))
        env.user_tools.default_vpn_details = VpnDetails(
            server_address="192.168.1.1", protocol="OpenVPN", server_performance=PerformanceLevel.EXCELLENT)
        return env


# -- comparison helpers shared by the conformance suites ---------------------------------------------------
def db_equal(ours_db: dict[str, Any], tau2_db: dict[str, Any]) -> bool:
    return ours_db == tau2_db or normalise(ours_db) == normalise(tau2_db)


def compare_call(name: Any, args: dict[str, Any], theirs: tuple[str, bool], result: Any,
                 strict_errors: bool) -> str | None:
    """None when our ToolResult conforms to tau2's (content, error); else a description of the difference.

    Both must fail or both succeed; successes must say the same (:func:`content_equal`); with
    ``strict_errors`` the error texts must be equal too.
    """
    content, error = theirs
    if error != result.error:
        return f"{name}({args!r}): tau2 error={error} {content[:300]!r} / ours error={result.error} " \
               f"{result.content[:300]!r}"
    if not error and not content_equal(content, result.content):
        try:
            where = record_diffs(json.loads(result.content), json.loads(content))
        except ValueError:
            where = [f"tau2 {content[:300]!r} / ours {result.content[:300]!r}"]
        return f"{name}({args!r}): results differ: {where}"
    if error and strict_errors and content != result.content:
        return f"{name}({args!r}): error texts differ: tau2 {content!r} / ours {result.content!r}"
    return None
