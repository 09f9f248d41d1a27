"""A seeded generator of telecom worlds: a carrier's accounts and one customer's phone, of our own making.

:func:`build_generated` fills an empty telecom schema: a handful of plans (data limits, monthly prices, refuel
prices), customers (names, birthdays, addresses, payment methods), their 1-4 lines (unique phone numbers, mostly
active, some suspended, a few pending activation or closed; each with its device; a suspended account's lines are
all suspended, and an account pending verification has only lines pending activation and no bills), their bills
(monthly bills in several statuses with line items, and most with an empty draft for next month), a few spare
devices, and the phone side: one phone (row 1) in a healthy state (SIM active, 5G, connected, data on, APN
``internet`` with an MMSC URL, messaging and browser apps with their usual permissions, and a few more apps) and
its surroundings (row 1: at home, every technology's signal, no user yet: tasks name the user with
``set_user_info``).

The clock is the account tools' (today is 2025-02-25). Only ``numpy.random.default_rng(seed)`` is drawn from, in
a fixed order, so a seed and a size always give the same database, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Connection

from mua_gym.domains.telecom.schema import (
    bill_line_items, bills, customer_bills, customer_lines, customer_payment_methods, customers, devices, lines,
    phone, phone_apps, plans, surroundings,
)
from mua_gym.kit.people import UniqueIds, unique
from mua_gym.kit.records import insert_rows
from mua_gym.kit.sampling import scaled_size, weighted_index

__all__ = ["PLANS", "SIZES", "build_generated"]

# ---------------------------------------------------------------------------------------------------------
# Plans: id, name, data limit (GB), price per month, refuel price per GB. Ids start with "P" (the agent's
# get_details_by_id dispatches on the first letter), as customers' start with "C", lines' "L", bills' "B" and
# devices' "D".
PLANS: tuple[tuple[str, str, float, float, float], ...] = (
    ("P2101", "Lite 3", 3.0, 24.0, 6.0),
    ("P2102", "Go 8", 8.0, 38.0, 4.5),
    ("P2103", "Everyday 15", 15.0, 52.0, 3.0),
    ("P2104", "Plus 30", 30.0, 68.0, 2.5),
    ("P2105", "Ultra 80", 80.0, 92.0, 1.5),
    ("P2106", "Family Pool 50", 50.0, 135.0, 2.0),
    ("P2107", "Wearable Link 1", 1.0, 12.0, 8.0),
)
PLAN_BY_ID = {plan[0]: plan for plan in PLANS}
PHONE_PLANS = (0, 1, 2, 3, 4, 5)
PHONE_PLAN_WEIGHTS = (0.12, 0.2, 0.25, 0.2, 0.13, 0.1)
TABLET_PLANS, ROUTER_PLANS, WATCH_PLANS = (1, 2), (3, 4), (6,)

FIRST_NAMES = (
    "Abigail", "Adaeze", "Ahmed", "Alina", "Andre", "Annika", "Ari", "Beatriz", "Bilal", "Bronwyn", "Caleb",
    "Chiara", "Cyrus", "Dana", "Darius", "Delphine", "Desmond", "Elena", "Emeka", "Esme", "Fatima", "Finn",
    "Freya", "Gabriel", "Greta", "Hector", "Ines", "Ivan", "Jasmine", "Joaquin", "Jun", "Kamala", "Kenji",
    "Laila", "Leon", "Lucia", "Magnus", "Maya", "Mehmet", "Mirela", "Nadia", "Nathaniel", "Niamh", "Omar",
    "Oona", "Pablo", "Priya", "Rafael", "Renata", "Ruth", "Samir", "Saoirse", "Tariq", "Thea", "Tobias",
    "Uma", "Victor", "Wanjiru", "Yara", "Yusuf",
)
LAST_NAMES = (
    "Acosta", "Adeyemi", "Bauer", "Bergstrom", "Calloway", "Castellanos", "Delacroix", "Dimitrov", "Eriksen",
    "Farouk", "Fitzgerald", "Galloway", "Haddad", "Halvorsen", "Ibarra", "Jankowski", "Kapoor", "Kowalczyk",
    "Lindqvist", "Lozano", "Mahler", "Marchetti", "Mbeki", "Novak", "Okafor", "Oyelaran", "Pacheco", "Petrov",
    "Quintero", "Rasmussen", "Rinaldi", "Sandoval", "Schreiber", "Sokolov", "Takahashi", "Thornton", "Umarov",
    "Valdez", "Vasquez", "Whitfield", "Yamamoto", "Zielinski",
)
# city, state, zip prefix, area code of its phone numbers
CITIES = (
    ("Sacramento", "CA", "958", "916"), ("Fresno", "CA", "937", "559"), ("Eugene", "OR", "974", "541"),
    ("Spokane", "WA", "992", "509"), ("Boise", "ID", "837", "208"), ("Tucson", "AZ", "857", "520"),
    ("Santa Fe", "NM", "875", "505"), ("Omaha", "NE", "681", "402"), ("Des Moines", "IA", "503", "515"),
    ("Milwaukee", "WI", "532", "414"), ("Indianapolis", "IN", "462", "317"), ("Louisville", "KY", "402", "502"),
    ("Memphis", "TN", "381", "901"), ("Raleigh", "NC", "276", "919"), ("Charleston", "SC", "294", "843"),
    ("Jacksonville", "FL", "322", "904"), ("Birmingham", "AL", "352", "205"), ("Little Rock", "AR", "722", "501"),
    ("Tulsa", "OK", "741", "918"), ("Wichita", "KS", "672", "316"), ("Buffalo", "NY", "142", "716"),
    ("Providence", "RI", "029", "401"), ("Hartford", "CT", "061", "860"), ("Burlington", "VT", "054", "802"),
    ("Portland", "ME", "041", "207"),
)
STREETS = (
    "Alder", "Aspen", "Bayview", "Blossom", "Canyon", "Chestnut", "Coral", "Dogwood", "Driftwood", "Fern",
    "Foxglove", "Granite", "Harbor", "Heron", "Juniper", "Laurel", "Linden", "Magnolia", "Marigold", "Orchard",
    "Osprey", "Pinecrest", "Redwood", "Ridge", "Riverbend", "Sparrow", "Spruce", "Sunset", "Willow", "Wren",
)
STREET_KINDS = ("St", "Ave", "Rd", "Ln", "Dr", "Blvd", "Ct", "Way", "Terrace")
DEVICE_TYPES = ("phone", "tablet", "watch", "router")
EXTRA_LINE_TYPE_WEIGHTS = (0.6, 0.15, 0.15, 0.1)  # lines after a customer's first (always a phone)
MODELS = {
    "phone": ("Nimbus X2", "Nimbus X2 Mini", "Pulse 9", "Pulse 9 Pro", "Orion S", "Orion S Lite", "Kestrel 5G",
              "Vega One"),
    "tablet": ("Slate 11", "Slate 11 Air", "Canvas Tab 10"),
    "watch": ("Tempo Watch 3", "Pulse Band LTE"),
    "router": ("HomeLink 5G Hub", "AirNode Mini"),
    "other": ("TrackTag GPS",),
}
ESIM_SHARE = {"phone": 0.7, "tablet": 0.5, "watch": 0.9, "router": 0.1, "other": 0.3}
LINE_STATUSES = ("Active", "Suspended", "Pending Activation", "Closed")
LINE_STATUS_WEIGHTS = (0.84, 0.09, 0.04, 0.03)
ACCOUNT_STATUSES = ("Active", "Suspended", "Pending Verification")
ACCOUNT_STATUS_WEIGHTS = (0.92, 0.04, 0.04)
METHOD_TYPES = ("Credit Card", "Debit Card", "PayPal")
LINE_COUNT_WEIGHTS = (0.45, 0.3, 0.15, 0.1)  # 1-4 lines
METHOD_COUNT_WEIGHTS = (0.55, 0.35, 0.1)  # 1-3 payment methods
BILL_MONTHS_WEIGHTS = (0.3, 0.4, 0.3)  # 2-4 monthly bills
LATEST_BILL_STATUSES = ("Paid", "Issued", "Awaiting Payment", "Overdue", "Disputed")
LATEST_BILL_WEIGHTS = (0.64, 0.2, 0.05, 0.06, 0.05)
OLDER_BILL_STATUSES = ("Paid", "Disputed")
OLDER_BILL_WEIGHTS = (0.95, 0.05)
DRAFT_SHARE = 0.85  # customers with an empty draft bill for next month
EXTRA_APPS = (  # name, sms, storage, phone, network
    ("camera", False, True, False, False),
    ("maps", False, False, False, True),
    ("mail", False, True, False, True),
    ("music", False, True, False, True),
    ("banking", True, False, False, True),
    ("notes", False, True, False, False),
)

TODAY = date(2025, 2, 25)
LATEST_MONTH = date(2025, 2, 1)  # the last billed month; the draft bill is for the month after

DEFAULT_CUSTOMERS = 50
SIZES: dict[str, int] = {"tiny": 5, "small": 20, "default": DEFAULT_CUSTOMERS, "large": 10 * DEFAULT_CUSTOMERS}


def _customer_count(size: str | float) -> int:
    return scaled_size(size, SIZES, lambda k: max(1, round(DEFAULT_CUSTOMERS * k)))


def _day(rng: np.random.Generator, first: date, last: date) -> date:
    return first + timedelta(days=int(rng.integers((last - first).days + 1)))


def _stamp(rng: np.random.Generator, first: date, last: date) -> str:
    """A datetime between two days, rendered as the account tables keep them ("2025-01-15 10:30:00")."""
    day = _day(rng, first, last)
    moment = datetime(day.year, day.month, day.day, int(rng.integers(8, 21)), int(rng.integers(60)),
                      int(rng.integers(60)))
    return str(moment)


def _month_back(month: date, k: int) -> date:
    year, m = divmod(month.year * 12 + month.month - 1 - k, 12)
    return date(year, m + 1, 1)


def _month_end(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)


# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Tables:
    """The account side's rows as they are drawn, table by table, and the ids, phone numbers and emails taken."""

    ids: UniqueIds  # draws from the world's one rng
    customers: list[dict[str, Any]] = field(default_factory=list)
    methods: list[dict[str, Any]] = field(default_factory=list)
    customer_lines: list[dict[str, Any]] = field(default_factory=list)
    customer_bills: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    devices: list[dict[str, Any]] = field(default_factory=list)
    bills: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    used_numbers: set[str] = field(default_factory=set)
    emails: set[str] = field(default_factory=set)

    @property
    def rng(self) -> np.random.Generator:
        return self.ids.rng

    def new_id(self, prefix: str, digits: int) -> str:
        """An id no record has yet: ``prefix`` and ``digits`` digits."""
        return self.ids.take(digits, 1, prefix)[0]

    def new_number(self, area: str) -> str:
        """A phone number in ``area`` that nobody has yet."""
        rng = self.rng
        return unique(self.used_numbers,
                      lambda: f"{area}-{int(rng.integers(200, 1000))}-{int(rng.integers(10000)):04d}")


def build_generated(conn: Connection, *, seed: int = 0, size: str | float = "default") -> None:
    """Fills an empty telecom schema with a seeded world of our own.

    ``size`` is ``"tiny"`` (5 customers), ``"small"`` (20), ``"default"`` (50), ``"large"`` (500), or a number
    that multiplies the default customers. Plans, the phone and its surroundings do not scale.
    """
    n_customers = _customer_count(size)
    tables = _Tables(UniqueIds(np.random.default_rng(seed)))
    for position in range(n_customers):
        _add_customer(tables, position)
    # A few spare devices on no line (old phones, trackers), never activated.
    for _ in range(max(1, n_customers // 10)):
        _add_device(tables, ("phone", "tablet", "other")[int(tables.rng.integers(3))], False)
    apps = _phone_apps(tables.rng)  # drawn before the phone's battery level
    _insert(conn, tables, apps, _healthy_phone(tables.rng))


def _add_customer(t: _Tables, position: int) -> None:
    """Adds one customer with their lines (and devices), payment methods and bills."""
    rng = t.rng
    customer_id = t.new_id("C", 5)
    first, last = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))], LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
    city, state, zip3, area = CITIES[int(rng.integers(len(CITIES)))]
    dob = _day(rng, date(1948, 1, 1), date(2005, 12, 31))
    account_status = ACCOUNT_STATUSES[weighted_index(rng, ACCOUNT_STATUS_WEIGHTS)]
    my_lines = _add_lines(t, customer_id, area, account_status)

    # The contact number: mostly the customer's own phone line, sometimes another number of theirs.
    contact = my_lines[0]["phone_number"] if rng.random() < 0.85 else t.new_number(area)
    email = unique(t.emails, lambda: f"{first.lower()}.{last.lower()}{int(rng.integers(10, 100))}@example.net")
    t.customers.append(dict(
        customer_id=customer_id, position=position, full_name=f"{first} {last}", date_of_birth=str(dob), email=email,
        phone_number=contact,
        street=f"{int(rng.integers(10, 9900))} {STREETS[int(rng.integers(len(STREETS)))]} "
               f"{STREET_KINDS[int(rng.integers(len(STREET_KINDS)))]}",
        city=city, state=state, zip_code=f"{zip3}{int(rng.integers(100)):02d}", account_status=account_status,
        created_at=_stamp(rng, date(2016, 1, 1), date(2020, 12, 31)),
        last_extension_date=str(_day(rng, date(2024, 3, 1), date(2025, 1, 31))) if rng.random() < 0.15
        else None,
        goodwill_credit_used_this_year=(0.0, 0.0, 0.0, 0.0, 10.0, 15.0, 25.0)[int(rng.integers(7))]))

    for k in range(1 + weighted_index(rng, METHOD_COUNT_WEIGHTS)):
        t.methods.append(dict(
            customer_id=customer_id, position=k, method_type=METHOD_TYPES[int(rng.integers(len(METHOD_TYPES)))],
            account_number_last_4=f"{int(rng.integers(10000)):04d}",
            expiration_date=f"{int(rng.integers(1, 13)):02d}/{int(rng.integers(2025, 2031))}"))
    _add_bills(t, customer_id, account_status, my_lines)


def _add_lines(t: _Tables, customer_id: str, area: str, account_status: str) -> list[dict[str, Any]]:
    """Adds a customer's 1-4 lines and their devices, and returns the lines' rows (the first is the customer's own
    phone, active on an active account)."""
    rng = t.rng
    my_lines: list[dict[str, Any]] = []
    for k in range(1 + weighted_index(rng, LINE_COUNT_WEIGHTS)):
        kind = "phone" if k == 0 else DEVICE_TYPES[weighted_index(rng, EXTRA_LINE_TYPE_WEIGHTS)]
        status = _line_status(LINE_STATUSES[weighted_index(rng, LINE_STATUS_WEIGHTS)], account_status, k)
        plan = _line_plan(rng, kind)
        limit = PLANS[plan][2]
        line_id = t.new_id("L", 5)
        number = t.new_number(area)
        device_id = _add_device(t, kind, status in ("Active", "Suspended"))
        used = round(float(rng.uniform(0.0, 0.9)) * limit, 1) if status == "Active" else 0.0
        refuel = (0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0)[int(rng.integers(7))] if status == "Active" else 0.0
        roaming = bool(rng.random() < 0.35)
        contract = str(_day(rng, date(2025, 4, 1), date(2027, 12, 31))) if rng.random() < 0.7 else None
        plan_change = str(_day(rng, date(2023, 1, 1), date(2025, 2, 20))) if rng.random() < 0.4 else None
        sim = str(_day(rng, date(2022, 6, 1), date(2025, 2, 20))) if rng.random() < 0.25 else None
        suspended = str(_day(rng, date(2024, 12, 1), date(2025, 2, 20))) if status == "Suspended" else None
        row = dict(line_id=line_id, position=len(t.lines), phone_number=number, status=status,
                   plan_id=PLANS[plan][0], device_id=device_id, data_used_gb=used, data_refueling_gb=refuel,
                   roaming_enabled=roaming, contract_end_date=contract, last_plan_change_date=plan_change,
                   last_sim_replacement_date=sim, suspension_start_date=suspended)
        t.lines.append(row)
        my_lines.append(row)
        t.customer_lines.append(dict(customer_id=customer_id, position=k, line_id=line_id))
    return my_lines


def _line_status(drawn: str, account_status: str, k: int) -> str:
    """The status of a customer's line ``k``, as drawn unless the account decides it."""
    if account_status == "Suspended":  # every line of a suspended account is suspended
        return "Suspended"
    if account_status == "Pending Verification":  # nothing is active before the account is verified
        return "Pending Activation"
    return "Active" if k == 0 else drawn


def _line_plan(rng: np.random.Generator, kind: str) -> int:
    """The index in :data:`PLANS` of a plan for a line of device ``kind``."""
    if kind == "phone":
        return PHONE_PLANS[weighted_index(rng, PHONE_PLAN_WEIGHTS)]
    choices = {"tablet": TABLET_PLANS, "router": ROUTER_PLANS, "watch": WATCH_PLANS}[kind]
    return choices[int(rng.integers(len(choices)))]


def _add_device(t: _Tables, kind: str, active: bool) -> str:
    """Adds a device of ``kind`` (activated or not) and returns its id."""
    rng = t.rng
    device_id = t.new_id("D", 5)
    models = MODELS[kind]
    model = models[int(rng.integers(len(models)))]
    has_imei = kind != "router" or rng.random() < 0.5
    imei = "".join(str(int(d)) for d in rng.integers(10, size=15)) if has_imei else None
    esim = bool(rng.random() < ESIM_SHARE[kind])
    activation = _stamp(rng, date(2021, 1, 1), date(2025, 2, 20)) if active else None
    transfer = _stamp(rng, date(2023, 1, 1), date(2025, 2, 20)) if esim and rng.random() < 0.2 else None
    if activation is not None and transfer is not None and transfer < activation:
        transfer = None
    t.devices.append(dict(device_id=device_id, position=len(t.devices), device_type=kind, model=model, imei=imei,
                          is_esim_capable=esim, activated=active, activation_date=activation,
                          last_esim_transfer_date=transfer))
    return device_id


def _add_bills(t: _Tables, customer_id: str, account_status: str, my_lines: list[dict[str, Any]]) -> None:
    """Adds a billed customer's monthly bills up to February (oldest first, as the customer's list keeps them), and
    mostly a draft for March."""
    rng = t.rng
    billed = [ln for ln in my_lines if ln["status"] in ("Active", "Suspended")]
    months = 2 + weighted_index(rng, BILL_MONTHS_WEIGHTS) if billed else 0
    for position, k in enumerate(reversed(range(months))):
        status = (LATEST_BILL_STATUSES[weighted_index(rng, LATEST_BILL_WEIGHTS)] if k == 0
                  else OLDER_BILL_STATUSES[weighted_index(rng, OLDER_BILL_WEIGHTS)])
        if k == 0 and account_status == "Suspended":
            status = "Overdue"
        bill_id = t.new_id("B", 7)  # drawn before the bill's items
        _add_bill(t, customer_id, position, bill_id, _month_back(LATEST_MONTH, k), status, _bill_items(rng, billed))
    if billed and rng.random() < DRAFT_SHARE:
        _add_bill(t, customer_id, months, t.new_id("B", 7), _month_back(LATEST_MONTH, -1), "Draft", [])


def _bill_items(rng: np.random.Generator, billed: list[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """A monthly bill's items (description, amount, kind): each billed line's plan, and sometimes an overage, a
    late fee or a loyalty credit."""
    items = [(f"Monthly plan {PLAN_BY_ID[ln['plan_id']][1]} ({ln['phone_number']})", PLAN_BY_ID[ln["plan_id"]][3],
              "Plan Charge") for ln in billed]
    if rng.random() < 0.15:
        items.append(("Data overage", float(rng.integers(1, 5)) * 5.0, "Overage"))
    if rng.random() < 0.08:
        items.append(("Late payment fee", 7.5, "Fee"))
    if rng.random() < 0.1:
        items.append(("Loyalty credit", -float(rng.integers(1, 3)) * 5.0, "Credit"))
    return items


def _add_bill(t: _Tables, customer_id: str, position: int, bill_id: str, start: date, status: str,
              items: list[tuple[str, float, str]]) -> None:
    """Adds the bill of the month from ``start`` with its items (a draft has none) as the customer's ``position``th."""
    for j, (description, amount, kind) in enumerate(items):
        t.items.append(dict(bill_id=bill_id, position=j, description=description, amount=amount, date=str(start),
                            item_type=kind))
    t.bills.append(dict(bill_id=bill_id, position=len(t.bills), customer_id=customer_id, period_start=str(start),
                        period_end=str(_month_end(start)), issue_date=str(start),
                        total_due=round(sum((a for _, a, _ in items), 0.0), 2),
                        due_date=str(start + timedelta(days=14)), status=status))
    t.customer_bills.append(dict(customer_id=customer_id, position=position, bill_id=bill_id))


def _phone_apps(rng: np.random.Generator) -> list[dict[str, Any]]:
    """The phone's apps: messaging and browser with their usual permissions, and 1-3 more."""
    extra = sorted(rng.choice(len(EXTRA_APPS), size=int(rng.integers(1, 4)), replace=False).tolist())
    app_rows = [dict(app_name="messaging", position=0, perm_sms=True, perm_storage=True, perm_phone=True,
                     perm_network=False),
                dict(app_name="browser", position=1, perm_sms=False, perm_storage=True, perm_phone=False,
                     perm_network=True)]
    for k in extra:
        name, sms, storage, call, network = EXTRA_APPS[k]
        app_rows.append(dict(app_name=name, position=len(app_rows), perm_sms=sms, perm_storage=storage,
                             perm_phone=call, perm_network=network))
    return app_rows


def _healthy_phone(rng: np.random.Generator) -> dict[str, Any]:
    """The phone's row: SIM active, 5G, connected, data on, APN ``internet`` with an MMSC URL, no VPN."""
    return dict(
        id=1, sim_card_status="active", sim_card_missing=False, airplane_mode=False, network_signal_strength="good",
        network_technology_connected="5G", network_connection_status="connected",
        battery_level=int(rng.integers(35, 101)), data_enabled=True, roaming_enabled=False,
        network_mode_preference="4g_5g_preferred", apn_name="internet", apn_reset_at_reboot=False, mms_apn="mms",
        mmsc_url="http://mms.carrier.com/mms/wapenc", mms_proxy=None, mms_port=None, wifi_enabled=False,
        wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none", wifi_calling_enabled=False,
        wifi_calling_mms_over_wifi=False, data_saver_mode=False, vpn_enabled_setting=False, vpn_connected=False,
        has_vpn_details=False, vpn_server_address=None, vpn_protocol=None, vpn_server_performance=None)


#: The phone's surroundings: at home, every technology's signal, no user until a task sets one.
SURROUNDINGS = dict(
    id=1, name=None, phone_number=None, is_abroad=False, roaming_allowed=False, signal_2g="poor", signal_3g="fair",
    signal_4g="good", signal_5g="excellent", mobile_data_usage_exceeded=False, line_active=True, payment_bill_id=None,
    payment_amount_due=None, payment_paid=None)


def _insert(conn: Connection, t: _Tables, app_rows: list[dict[str, Any]], phone_row: dict[str, Any]) -> None:
    """Writes every table, in the order the world's image has always been written (a world whose customers have no
    bills has no bill rows)."""
    plan_rows = [dict(plan_id=pid, position=i, name=name, data_limit_gb=limit, price_per_month=price,
                      data_refueling_price_per_gb=refuel)
                 for i, (pid, name, limit, price, refuel) in enumerate(PLANS)]
    insert_rows(conn, [
        (plans, plan_rows), (devices, t.devices), (lines, t.lines), (customers, t.customers),
        (customer_payment_methods, t.methods), (customer_lines, t.customer_lines),
        (customer_bills, t.customer_bills), (bills, t.bills), (bill_line_items, t.items), (phone, [phone_row]),
        (phone_apps, app_rows), (surroundings, [dict(SURROUNDINGS)])])
