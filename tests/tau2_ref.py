"""The reference side of the retail conformance tests: tau2's own retail environment, run in-process.

Only imported by ``test_retail_conformance.py`` after ``pytest.importorskip("tau2")``. Nothing here stores
expected results: every answer comes from the installed tau2 at run time.
"""

from __future__ import annotations

import json
import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from loguru import logger  # noqa: E402  (tau2 logs every tool response through loguru)

logger.remove()

from tau2.data_model.message import ToolCall  # noqa: E402
from tau2.domains.retail.data_model import Order, Product, RetailDB, User  # noqa: E402
from tau2.domains.retail.environment import get_environment, get_tasks  # noqa: E402
from tau2.domains.retail.utils import RETAIL_DB_PATH  # noqa: E402

__all__ = ["RETAIL_DB_PATH", "Tau2Retail", "content_equal", "get_environment", "get_tasks", "normalise",
           "record_diffs", "tau2_call"]

_RECORD_MODELS = {"orders": Order, "users": User, "products": Product}


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


class Tau2Retail:
    """tau2's retail Environment with a cheap, exact reset to the shipped db.json.

    ``reset`` does not rebuild the whole DB (≈40 ms): records that differ from a pristine, never-used copy
    are replaced by freshly validated ones from the parsed db.json, which yields the same state as a new
    ``get_environment()``. ``changed()`` lists those records (tau2's models compare by value).
    """

    def __init__(self) -> None:
        with open(RETAIL_DB_PATH, encoding="utf-8") as fh:
            self.raw: dict[str, Any] = json.load(fh)
        self.pristine = RetailDB.model_validate(self.raw)  # never handed to the environment
        self.env = get_environment(db=RetailDB.model_validate(self.raw))
        self._dirty_shape = False

    @property
    def db(self) -> RetailDB:
        return self.env.tools.db

    def call(self, name: Any, arguments: dict[str, Any]) -> tuple[str, bool]:
        return tau2_call(self.env, name, arguments)

    def changed(self) -> dict[str, set[str]]:
        """Records (by table: orders, users, products) that differ from the shipped DB."""
        out: dict[str, set[str]] = {}
        for table in _RECORD_MODELS:
            now, base = getattr(self.db, table), getattr(self.pristine, table)
            keys = {k for k in now.keys() | base.keys() if now.get(k) != base.get(k)}
            if now.keys() != base.keys() or list(now) != list(base):
                self._dirty_shape = True
            if keys:
                out[table] = keys
        return out

    def reset(self, changed: dict[str, set[str]] | None = None) -> None:
        """Back to the shipped DB (``changed``: the result of :meth:`changed` if just computed)."""
        changed = self.changed() if changed is None else changed
        if self._dirty_shape:  # records were added or removed: rebuild everything
            self.env.tools.db = RetailDB.model_validate(self.raw)
            self._dirty_shape = False
            return
        for table, keys in changed.items():
            records, model = getattr(self.db, table), _RECORD_MODELS[table]
            for key in keys:
                records[key] = model.model_validate(self.raw[table][key])

    def record(self, table: str, key: str) -> Any:
        """One record as tau2 dumps it (None if absent)."""
        found = getattr(self.db, table).get(key)
        return None if found is None else found.model_dump()

    def dump(self) -> dict[str, Any]:
        return self.db.model_dump()
