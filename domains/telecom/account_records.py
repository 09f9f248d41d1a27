"""Reading telecom account rows back as tau2-shaped records (what the agent's tools return, and the export).

Each record has the field order of tau2's ``model_dump`` for the same object, and is declared once (see
:mod:`mua_gym.kit.records`): the same declaration loads tau2's ``db.toml``. Values are stored as tau2's models
hold them after validation: numbers as floats, dates and datetimes as the text tau2 renders (``"2025-02-25"``,
``"2025-01-15 10:30:00"``), missing optional fields as tau2's defaults. Booleans come back from SQLite as 0/1
and are turned back into ``bool``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import bindparam, select

from mua_gym.domains.telecom.schema import (
    bill_line_items, bills, customer_bills, customer_lines, customer_payment_methods, customers, devices, lines,
    plans,
)
from mua_gym.kit.records import REQUIRED, Column, Database, Group, Ids, Many, Record

P = bindparam

PLAN = select(plans).where(plans.c.plan_id == P("pid"))
DEVICE = select(devices).where(devices.c.device_id == P("did"))
LINE = select(lines).where(lines.c.line_id == P("lid"))
BILL = select(bills).where(bills.c.bill_id == P("bid"))
CUSTOMER = select(customers).where(customers.c.customer_id == P("cid"))
CUSTOMER_BILL_IDS = (select(customer_bills.c.bill_id).where(customer_bills.c.customer_id == P("cid"))
                     .order_by(customer_bills.c.position))
ALL_LINES = select(lines).order_by(lines.c.position)
ALL_BILLS = select(bills).order_by(bills.c.position)
ALL_CUSTOMERS = select(customers).order_by(customers.c.position)

DEFAULT_CREATED_AT = "2025-01-01"  # tau2's default for ``created_at`` is a date, kept unvalidated


def _date(value: Any) -> str:
    """A date as tau2 renders it (pydantic parses ISO text; TOML may give a date already)."""
    if isinstance(value, datetime):
        return str(value.date())
    if isinstance(value, date):
        return str(value)
    return str(date.fromisoformat(str(value)))


def _datetime(value: Any) -> str:
    """A datetime as tau2 renders it: ``YYYY-MM-DD HH:MM:SS`` (a date alone is midnight)."""
    if isinstance(value, datetime):
        return str(value)
    if isinstance(value, date):
        return str(datetime(value.year, value.month, value.day))
    return str(datetime.fromisoformat(str(value)))


def _number(name: str, default: Any = REQUIRED) -> Column:
    return Column(name, load=float, default=default)


def _flag(name: str, default: Any = REQUIRED) -> Column:
    return Column(name, load=bool, read=bool, default=default)


def _day(name: str) -> Column:
    return Column(name, load=_date, default=None)


PLANS = Record(plans, {"plan_id": "plan_id", "name": "name", "data_limit_gb": _number("data_limit_gb"),
                       "price_per_month": _number("price_per_month"),
                       "data_refueling_price_per_gb": _number("data_refueling_price_per_gb")})
DEVICES = Record(devices, {
    "device_id": "device_id", "device_type": "device_type", "model": "model", "imei": Column("imei", default=None),
    "is_esim_capable": _flag("is_esim_capable"), "activated": _flag("activated", default=False),
    "activation_date": Column("activation_date", load=_datetime, default=None),
    "last_esim_transfer_date": Column("last_esim_transfer_date", load=_datetime, default=None),
})
LINES = Record(lines, {
    "line_id": "line_id", "phone_number": "phone_number", "status": Column("status", default="Pending Activation"),
    "plan_id": "plan_id", "device_id": Column("device_id", default=None),
    "data_used_gb": _number("data_used_gb", default=0.0),
    "data_refueling_gb": _number("data_refueling_gb", default=0.0),
    "roaming_enabled": _flag("roaming_enabled", default=False),
    **{k: _day(k) for k in ("contract_end_date", "last_plan_change_date", "last_sim_replacement_date",
                            "suspension_start_date")},
})
BILLS = Record(bills, {
    "bill_id": "bill_id", "customer_id": "customer_id",
    **{k: Column(k, load=_date) for k in ("period_start", "period_end", "issue_date")},
    "total_due": _number("total_due"), "due_date": Column("due_date", load=_date),
    "line_items": Many(Record(bill_line_items, {"description": "description", "amount": _number("amount"),
                                                "date": Column("date", load=_date), "item_type": "item_type"}),
                       default_empty=True),
    "status": Column("status", default="Draft"),
})
CUSTOMERS = Record(customers, {
    "customer_id": "customer_id", "full_name": "full_name", "date_of_birth": "date_of_birth", "email": "email",
    "phone_number": "phone_number", "address": Group({k: k for k in ("street", "city", "state", "zip_code")}),
    "account_status": Column("account_status", default="Pending Verification"),
    "payment_methods": Many(Record(customer_payment_methods, {
        "method_type": "method_type", "account_number_last_4": "account_number_last_4",
        "expiration_date": "expiration_date"}), default_empty=True),
    "line_ids": Ids(customer_lines, "line_id", default_empty=True),
    "bill_ids": Ids(customer_bills, "bill_id", default_empty=True),
    # a given value goes through tau2's datetime field; the default does not
    "created_at": Column("created_at", load=_datetime, default=DEFAULT_CREATED_AT),
    "last_extension_date": _day("last_extension_date"),
    "goodwill_credit_used_this_year": _number("goodwill_credit_used_this_year", default=0.0),
})

# the order of tau2's ``TelecomDB.model_dump()``
ACCOUNT_DB = Database({name: Many(record, default_empty=True) for name, record in (
    ("plans", PLANS), ("customers", CUSTOMERS), ("lines", LINES), ("bills", BILLS), ("devices", DEVICES))})


# what the tools and the conformance tests call: each record's compiled reader
plan_record = PLANS.read
device_record = DEVICES.read
line_record = LINES.read
bill_record = BILLS.read
customer_record = CUSTOMERS.read
