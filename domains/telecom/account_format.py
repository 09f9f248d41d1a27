"""TAU2's telecom account data in and out: read its ``db.toml`` into our account tables, and export a world back
to the shape of tau2's agent DB (``TelecomDB.model_dump()``: five lists, plans, customers, lines, bills, devices).
The mapping itself is declared once, in :mod:`account_records`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from mua_gym.domain import tau2
from mua_gym.domains.telecom.account_records import ACCOUNT_DB
from mua_gym.world import World

__all__ = ["build_account_only", "export_account_db", "load_account_db", "read_account_db"]


def load_account_db(conn: Connection, db: dict[str, Any]) -> None:
    """Fills empty account tables from a TAU2 telecom agent DB (the parsed ``db.toml``)."""
    ACCOUNT_DB.load(conn, db)


def read_account_db(path: str | Path | None = None) -> dict[str, Any]:
    """TAU2's telecom ``db.toml``, parsed (from the installed tau2 package, or the folder ``path``)."""
    file = tau2.data_dir("telecom", path) / "db.toml"
    if not file.is_file():
        raise tau2.Tau2NotFound(f"missing TAU2 file {file}")
    with open(file, "rb") as fh:
        return tomllib.load(fh)


def build_account_only(conn: Connection, *, seed: int = 0, path: str | Path | None = None) -> None:
    """Only the account side of TAU2's telecom world (the phone tables stay empty)."""
    load_account_db(conn, read_account_db(path))


def export_account_db(world: World) -> dict[str, Any]:
    """The account tables in the shape of tau2's telecom agent DB."""
    return ACCOUNT_DB.export(world)
