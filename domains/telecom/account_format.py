"""TAU2's telecom account data in and out: load its ``db.toml`` into our account tables, and export a world back
to the shape of tau2's agent DB (``TelecomDB.model_dump()``: five lists, plans, customers, lines, bills, devices).

Values are stored as tau2's models hold them after validation: numbers as floats, dates and datetimes as the text
tau2 renders (``"2025-02-25"``, ``"2025-01-15 10:30:00"``), missing optional fields as tau2's defaults.
"""

from __future__ import annotations

import tomllib
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert

from mua_gym import tau2
from mua_gym.domains.telecom.account_records import (
    ALL_BILLS, ALL_CUSTOMERS, ALL_DEVICES, ALL_LINES, ALL_PLANS, bill_record, customer_record, device_record,
    line_record, plan_record,
)
from mua_gym.domains.telecom.schema import (
    bill_line_items, bills, customer_bills, customer_lines, customer_payment_methods, customers, devices, lines,
    plans,
)
from mua_gym.world import World

__all__ = ["build_account_only", "export_account_db", "load_account_db", "read_account_db"]

DEFAULT_CREATED_AT = "2025-01-01"  # tau2's default for ``created_at`` is a date, kept unvalidated


def _date(value: Any) -> str | None:
    """A date as tau2 renders it (pydantic parses ISO text; TOML may give a date already)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return str(value.date())
    if isinstance(value, date):
        return str(value)
    return str(date.fromisoformat(str(value)))


def _datetime(value: Any) -> str | None:
    """A datetime as tau2 renders it: ``YYYY-MM-DD HH:MM:SS`` (a date alone is midnight)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return str(value)
    if isinstance(value, date):
        return str(datetime(value.year, value.month, value.day))
    return str(datetime.fromisoformat(str(value)))


def _float(value: Any) -> float:
    return float(value)


def load_account_db(conn: Connection, db: dict[str, Any]) -> None:
    """Fills empty account tables from a TAU2 telecom agent DB (the parsed ``db.toml``)."""
    rows: dict[Any, list[dict[str, Any]]] = {t: [] for t in (
        plans, devices, lines, customers, customer_payment_methods, customer_lines, customer_bills, bills,
        bill_line_items)}
    for i, p in enumerate(db.get("plans", [])):
        rows[plans].append({"plan_id": p["plan_id"], "position": i, "name": p["name"],
                            "data_limit_gb": _float(p["data_limit_gb"]),
                            "price_per_month": _float(p["price_per_month"]),
                            "data_refueling_price_per_gb": _float(p["data_refueling_price_per_gb"])})
    for i, d in enumerate(db.get("devices", [])):
        rows[devices].append({"device_id": d["device_id"], "position": i, "device_type": d["device_type"],
                              "model": d["model"], "imei": d.get("imei"), "is_esim_capable": bool(d["is_esim_capable"]),
                              "activated": bool(d.get("activated", False)),
                              "activation_date": _datetime(d.get("activation_date")),
                              "last_esim_transfer_date": _datetime(d.get("last_esim_transfer_date"))})
    for i, ln in enumerate(db.get("lines", [])):
        rows[lines].append({
            "line_id": ln["line_id"], "position": i, "phone_number": ln["phone_number"],
            "status": ln.get("status", "Pending Activation"), "plan_id": ln["plan_id"],
            "device_id": ln.get("device_id"),
            "data_used_gb": _float(ln.get("data_used_gb", 0.0)),
            "data_refueling_gb": _float(ln.get("data_refueling_gb", 0.0)),
            "roaming_enabled": bool(ln.get("roaming_enabled", False)),
            **{k: _date(ln.get(k)) for k in ("contract_end_date", "last_plan_change_date", "last_sim_replacement_date",
                                             "suspension_start_date")}})
    for i, c in enumerate(db.get("customers", [])):
        cid = c["customer_id"]
        created = c.get("created_at")
        rows[customers].append({
            "customer_id": cid, "position": i, "full_name": c["full_name"], "date_of_birth": c["date_of_birth"],
            "email": c["email"], "phone_number": c["phone_number"],
            **{k: c["address"][k] for k in ("street", "city", "state", "zip_code")},
            "account_status": c.get("account_status", "Pending Verification"),
            "created_at": DEFAULT_CREATED_AT if created is None else _datetime(created),
            "last_extension_date": _date(c.get("last_extension_date")),
            "goodwill_credit_used_this_year": _float(c.get("goodwill_credit_used_this_year", 0.0))})
        rows[customer_payment_methods] += [
            {"customer_id": cid, "position": j, "method_type": m["method_type"],
             "account_number_last_4": m["account_number_last_4"], "expiration_date": m["expiration_date"]}
            for j, m in enumerate(c.get("payment_methods", []))]
        rows[customer_lines] += [{"customer_id": cid, "position": j, "line_id": lid}
                                 for j, lid in enumerate(c.get("line_ids", []))]
        rows[customer_bills] += [{"customer_id": cid, "position": j, "bill_id": bid}
                                 for j, bid in enumerate(c.get("bill_ids", []))]
    for i, b in enumerate(db.get("bills", [])):
        bid = b["bill_id"]
        rows[bills].append({
            "bill_id": bid, "position": i, "customer_id": b["customer_id"], "period_start": _date(b["period_start"]),
            "period_end": _date(b["period_end"]), "issue_date": _date(b["issue_date"]),
            "total_due": _float(b["total_due"]), "due_date": _date(b["due_date"]), "status": b.get("status", "Draft")})
        rows[bill_line_items] += [
            {"bill_id": bid, "position": j, "description": item["description"], "amount": _float(item["amount"]),
             "date": _date(item["date"]), "item_type": item["item_type"]}
            for j, item in enumerate(b.get("line_items", []))]
    for table, batch in rows.items():
        if batch:
            conn.execute(insert(table), batch)


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
    return {
        "plans": [plan_record(row) for row in world.fetch_all(ALL_PLANS)],
        "customers": [customer_record(world, row) for row in world.fetch_all(ALL_CUSTOMERS)],
        "lines": [line_record(row) for row in world.fetch_all(ALL_LINES)],
        "bills": [bill_record(world, row) for row in world.fetch_all(ALL_BILLS)],
        "devices": [device_record(row) for row in world.fetch_all(ALL_DEVICES)],
    }
