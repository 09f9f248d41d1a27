"""tau2's telecom user DB (``user_db.toml``: the phone and its surroundings) in and out of our tables.

The mapping is declared once (see :mod:`mua_gym.kit.records`): the device is the one row of ``phone`` (its APN
settings and VPN details are groups of columns of that row), its apps are ``phone_apps``, and the surroundings
are the one row of ``surroundings``. Whatever tau2's file leaves out takes tau2's model defaults (the shipped
file has no ``surroundings`` at all), and values are checked as tau2's models check them: no unknown keys, enum
values, booleans. :func:`export_phone_db` gives the tables back in tau2's shape: after a JSON round trip it equals
``TelecomUserDB.model_dump()``, so :func:`phone_db_hash` equals tau2's ``get_user_db_hash()``.

Limits (none reachable from tau2's shipped data): an app's ``app_name`` must equal its key; ``signal_strength``
must give all four technologies 2G, 3G, 4G and 5G (our table has one column each).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import Connection

from mua_gym.domains.telecom.schema import phone, phone_apps, surroundings
from mua_gym.kit.records import REQUIRED, Column, Database, Group, Many, One, Record, boolean, number, one_of, text
from mua_gym.world import World

__all__ = ["APN_DEFAULTS", "PERMISSIONS", "PHONE_DB", "export_phone_db", "load_phone_db", "phone_db_hash",
           "read_user_db"]

SIGNALS = ("none", "poor", "fair", "good", "excellent")
PERMISSIONS = ("sms", "storage", "phone", "network")


def _enum(column: str, values: tuple[str, ...], default: Any = REQUIRED) -> Column:
    return Column(column, load=one_of(*values), default=default)


def _flag(column: str, default: bool) -> Column:
    return Column(column, load=boolean, read=bool, default=default)


APN = Group({
    "apn_name": _enum("apn_name", ("internet", "broken"), "internet"),
    "reset_at_reboot": _flag("apn_reset_at_reboot", False),
    "mms_apn": Column("mms_apn", default="mms"),
    "mmsc_url": Column("mmsc_url", default="http://mms.carrier.com/mms/wapenc"),
    "mms_proxy": Column("mms_proxy", default=None),
    "mms_port": Column("mms_port", default=None),
}, default={})
#: the APN columns as a reset leaves them (tau2's ``APNSettings()``)
APN_DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in APN.fields.values()}  # type: ignore[union-attr]

APP = Record(phone_apps, {
    "app_name": "app_name",
    "permissions": Group({p: _flag(f"perm_{p}", False) for p in PERMISSIONS}, default={}),
}, key="app_name", strict=True)

DEVICE = Record(phone, {
    "sim_card_status": _enum("sim_card_status", ("active", "missing", "locked_pin", "locked_puk"), "active"),
    "sim_card_missing": _flag("sim_card_missing", False),
    "airplane_mode": _flag("airplane_mode", False),
    "network_signal_strength": _enum("network_signal_strength", SIGNALS, "good"),
    "network_technology_connected": _enum("network_technology_connected", ("none", "2G", "3G", "4G", "5G"), "5G"),
    "network_connection_status": _enum("network_connection_status",
                                       ("connected", "searching", "no_service", "emergency_only"), "connected"),
    "battery_level": Column("battery_level", default=80),
    "data_enabled": _flag("data_enabled", True),
    "roaming_enabled": _flag("roaming_enabled", False),
    "network_mode_preference": _enum("network_mode_preference",
                                     ("4g_5g_preferred", "4g_only", "3g_only", "2g_only"), "4g_5g_preferred"),
    "active_apn_settings": APN,
    "wifi_enabled": _flag("wifi_enabled", False),
    "wifi_connected": _flag("wifi_connected", False),
    "wifi_ssid": Column("wifi_ssid", default=None),
    "wifi_signal_strength": _enum("wifi_signal_strength", SIGNALS, "none"),
    "wifi_calling_enabled": _flag("wifi_calling_enabled", False),
    "wifi_calling_mms_over_wifi": _flag("wifi_calling_mms_over_wifi", False),
    "data_saver_mode": _flag("data_saver_mode", False),
    "vpn_enabled_setting": _flag("vpn_enabled_setting", False),
    "vpn_connected": _flag("vpn_connected", False),
    "vpn_details": Group({
        "server_address": Column("vpn_server_address", default=None),
        "protocol": Column("vpn_protocol", default=None),
        "server_performance": _enum("vpn_server_performance",
                                    ("unknown", "poor", "fair", "good", "excellent"), "unknown"),
    }, optional=True, present="has_vpn_details"),
    "app_statuses": Many(APP, keyed=True, linked=False, default={
        "messaging": {"app_name": "messaging",
                      "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
        "browser": {"app_name": "browser",
                    "permissions": {"sms": False, "storage": True, "phone": False, "network": True}},
    }),
}, strict=True)

SURROUNDINGS = Record(surroundings, {
    "name": Column("name", default=None),
    "phone_number": Column("phone_number", default=None),
    "is_abroad": _flag("is_abroad", False),
    "roaming_allowed": _flag("roaming_allowed", False),
    "signal_strength": Group({tech: _enum(f"signal_{tech.lower()}", SIGNALS) for tech in ("2G", "3G", "4G", "5G")},
                             default={"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}),
    "mobile_data_usage_exceeded": _flag("mobile_data_usage_exceeded", False),
    "line_active": _flag("line_active", True),
    "payment_request": Group({
        "bill_id": Column("payment_bill_id", load=text),
        "amount_due": Column("payment_amount_due", load=number),
        "paid": _flag("payment_paid", False),
    }, optional=True, present="payment_bill_id"),
}, strict=True)

PHONE_DB = Database({"device": One(DEVICE, fixed={"id": 1}, default={}),
                     "surroundings": One(SURROUNDINGS, fixed={"id": 1}, default={})}, strict=True)


def read_user_db(path: Any) -> dict[str, Any]:
    """tau2's ``user_db.toml`` as a dict (``tomllib``: Python 3.11+)."""
    import tomllib

    with open(path, "rb") as f:
        return tomllib.load(f)


def load_phone_db(conn: Connection, user_db: dict[str, Any]) -> None:
    """Inserts the phone (row 1), its apps and the surroundings (row 1) of tau2's user DB ``user_db``.

    A value tau2's models would refuse raises ``ValueError`` saying where; a required key left out,
    ``KeyError``."""
    PHONE_DB.load(conn, user_db)


def export_phone_db(world: World) -> dict[str, Any]:
    """The phone and its surroundings in tau2's user-DB shape (``TelecomUserDB.model_dump()``, JSON values)."""
    return PHONE_DB.export(world)


def phone_db_hash(world: World) -> str:
    """tau2's user-DB hash: sha256 of the sorted-key JSON of the export (``env.get_user_db_hash()``)."""
    return hashlib.sha256(json.dumps(export_phone_db(world), sort_keys=True, default=str).encode()).hexdigest()
