"""Reading telecom account rows back as tau2-shaped records (what the agent's tools return, and the export).

Each record has the field order of tau2's ``model_dump`` for the same object. Dates and datetimes are stored
as the text tau2 renders them, so they come back as they are; booleans come back from SQLite as 0/1 and are
turned back into ``bool`` here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from mua_gym.domains.telecom.schema import (
    bill_line_items, bills, customer_bills, customer_lines, customer_payment_methods, customers, devices, lines,
    plans,
)
from mua_gym.world import World

P = bindparam

PLAN = select(plans).where(plans.c.plan_id == P("pid"))
DEVICE = select(devices).where(devices.c.device_id == P("did"))
LINE = select(lines).where(lines.c.line_id == P("lid"))
BILL = select(bills).where(bills.c.bill_id == P("bid"))
CUSTOMER = select(customers).where(customers.c.customer_id == P("cid"))
CUSTOMER_METHODS = (select(customer_payment_methods.c.method_type, customer_payment_methods.c.account_number_last_4,
                           customer_payment_methods.c.expiration_date)
                    .where(customer_payment_methods.c.customer_id == P("cid"))
                    .order_by(customer_payment_methods.c.position))
CUSTOMER_LINE_IDS = (select(customer_lines.c.line_id).where(customer_lines.c.customer_id == P("cid"))
                     .order_by(customer_lines.c.position))
CUSTOMER_BILL_IDS = (select(customer_bills.c.bill_id).where(customer_bills.c.customer_id == P("cid"))
                     .order_by(customer_bills.c.position))
BILL_ITEMS = (select(bill_line_items.c.description, bill_line_items.c.amount, bill_line_items.c.date,
                     bill_line_items.c.item_type)
              .where(bill_line_items.c.bill_id == P("bid")).order_by(bill_line_items.c.position))

ALL_PLANS = select(plans).order_by(plans.c.position)
ALL_DEVICES = select(devices).order_by(devices.c.position)
ALL_LINES = select(lines).order_by(lines.c.position)
ALL_BILLS = select(bills).order_by(bills.c.position)
ALL_CUSTOMERS = select(customers).order_by(customers.c.position)


def _bool(value: Any) -> Any:
    return None if value is None else bool(value)


def plan_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "plan_id": row["plan_id"],
        "name": row["name"],
        "data_limit_gb": row["data_limit_gb"],
        "price_per_month": row["price_per_month"],
        "data_refueling_price_per_gb": row["data_refueling_price_per_gb"],
    }


def device_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "device_id": row["device_id"],
        "device_type": row["device_type"],
        "model": row["model"],
        "imei": row["imei"],
        "is_esim_capable": _bool(row["is_esim_capable"]),
        "activated": _bool(row["activated"]),
        "activation_date": row["activation_date"],
        "last_esim_transfer_date": row["last_esim_transfer_date"],
    }


def line_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "line_id": row["line_id"],
        "phone_number": row["phone_number"],
        "status": row["status"],
        "plan_id": row["plan_id"],
        "device_id": row["device_id"],
        "data_used_gb": row["data_used_gb"],
        "data_refueling_gb": row["data_refueling_gb"],
        "roaming_enabled": _bool(row["roaming_enabled"]),
        "contract_end_date": row["contract_end_date"],
        "last_plan_change_date": row["last_plan_change_date"],
        "last_sim_replacement_date": row["last_sim_replacement_date"],
        "suspension_start_date": row["suspension_start_date"],
    }


def bill_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "bill_id": row["bill_id"],
        "customer_id": row["customer_id"],
        "period_start": row["period_start"],
        "period_end": row["period_end"],
        "issue_date": row["issue_date"],
        "total_due": row["total_due"],
        "due_date": row["due_date"],
        "line_items": world.fetch_all(BILL_ITEMS, bid=row["bill_id"]),
        "status": row["status"],
    }


def customer_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    cid = row["customer_id"]
    return {
        "customer_id": cid,
        "full_name": row["full_name"],
        "date_of_birth": row["date_of_birth"],
        "email": row["email"],
        "phone_number": row["phone_number"],
        "address": {"street": row["street"], "city": row["city"], "state": row["state"], "zip_code": row["zip_code"]},
        "account_status": row["account_status"],
        "payment_methods": world.fetch_all(CUSTOMER_METHODS, cid=cid),
        "line_ids": world.fetch_column(CUSTOMER_LINE_IDS, cid=cid),
        "bill_ids": world.fetch_column(CUSTOMER_BILL_IDS, cid=cid),
        "created_at": row["created_at"],
        "last_extension_date": row["last_extension_date"],
        "goodwill_credit_used_this_year": row["goodwill_credit_used_this_year"],
    }
