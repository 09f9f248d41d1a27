"""tau2's telecom user DB (``user_db.toml``: the phone and its surroundings) in and out of our tables.

:func:`load_phone_db` fills ``phone``, ``phone_apps`` and ``surroundings`` from tau2's user DB as a dict (the
parsed TOML: ``read_user_db(path)``); whatever the dict leaves out takes tau2's model defaults (the shipped file
has no ``surroundings`` at all). :func:`export_phone_db` writes the tables back in tau2's shape: after a JSON
round trip it equals ``TelecomUserDB.model_dump()``, so :func:`phone_db_hash` equals tau2's
``get_user_db_hash()``.

Limits (none reachable from tau2's shipped data): an app's key must equal its ``app_name``; ``signal_strength``
must give the four technologies 2G, 3G, 4G and 5G (our table has one column each).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import Connection, insert

from mua_gym.domains.telecom.phone import APPS, PHONE, SURROUNDINGS
from mua_gym.domains.telecom.schema import phone, phone_apps, surroundings
from mua_gym.world import World

__all__ = ["export_phone_db", "load_phone_db", "phone_db_hash", "read_user_db"]

SIGNALS = ("none", "poor", "fair", "good", "excellent")
PERFORMANCES = ("unknown", "poor", "fair", "good", "excellent")
PERMISSIONS = ("sms", "storage", "phone", "network")
# tau2's device fields in dump order, with their defaults (None for the nested ones, handled apart).
DEVICE_DEFAULTS: dict[str, Any] = {
    "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
    "network_signal_strength": "good", "network_technology_connected": "5G",
    "network_connection_status": "connected", "battery_level": 80, "data_enabled": True, "roaming_enabled": False,
    "network_mode_preference": "4g_5g_preferred", "active_apn_settings": None, "wifi_enabled": False,
    "wifi_connected": False, "wifi_ssid": None, "wifi_signal_strength": "none", "wifi_calling_enabled": False,
    "wifi_calling_mms_over_wifi": False, "data_saver_mode": False, "vpn_enabled_setting": False,
    "vpn_connected": False, "vpn_details": None, "app_statuses": None,
}
APN_DEFAULTS: dict[str, Any] = {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
                                "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}
VPN_DEFAULTS: dict[str, Any] = {"server_address": None, "protocol": None, "server_performance": "unknown"}
APP_DEFAULTS: dict[str, dict[str, bool]] = {
    "messaging": {"sms": True, "storage": True, "phone": True, "network": False},
    "browser": {"sms": False, "storage": True, "phone": False, "network": True},
}
SIGNAL_DEFAULTS = {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}
SURROUNDINGS_DEFAULTS: dict[str, Any] = {
    "name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False, "signal_strength": None,
    "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None,
}
ENUMS = {
    "sim_card_status": ("active", "missing", "locked_pin", "locked_puk"),
    "network_signal_strength": SIGNALS, "wifi_signal_strength": SIGNALS,
    "network_technology_connected": ("none", "2G", "3G", "4G", "5G"),
    "network_connection_status": ("connected", "searching", "no_service", "emergency_only"),
    "network_mode_preference": ("4g_5g_preferred", "4g_only", "3g_only", "2g_only"),
    "apn_name": ("internet", "broken"), "server_performance": PERFORMANCES,
}
BOOLS = {"sim_card_missing", "airplane_mode", "data_enabled", "roaming_enabled", "wifi_enabled", "wifi_connected",
         "wifi_calling_enabled", "wifi_calling_mms_over_wifi", "data_saver_mode", "vpn_enabled_setting",
         "vpn_connected", "reset_at_reboot", "is_abroad", "roaming_allowed", "mobile_data_usage_exceeded",
         "line_active", "paid", *PERMISSIONS}


def read_user_db(path: Any) -> dict[str, Any]:
    """tau2's ``user_db.toml`` as a dict (``tomllib``: Python 3.11+)."""
    import tomllib

    with open(path, "rb") as f:
        return tomllib.load(f)


def _merged(what: str, data: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` overridden by ``data``, checked like tau2's models (no unknown keys, enum values, booleans)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{what}: expected a table, got {type(data).__name__}")
    unknown = sorted(set(data) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown field(s) {', '.join(unknown)}")
    out = {**defaults, **data}
    for key, value in out.items():
        if key in ENUMS and value not in ENUMS[key]:
            raise ValueError(f"{what}.{key}: {value!r} is not one of {', '.join(ENUMS[key])}")
        if key in BOOLS and not isinstance(value, bool):
            raise ValueError(f"{what}.{key}: expected a boolean, got {value!r}")
    return out


def load_phone_db(conn: Connection, user_db: dict[str, Any]) -> None:
    """Inserts the phone (row 1), its apps and the surroundings (row 1) of tau2's user DB ``user_db``."""
    unknown = sorted(set(user_db) - {"device", "surroundings"})
    if unknown:
        raise ValueError(f"user DB: unknown field(s) {', '.join(unknown)}")
    dev = _merged("device", user_db.get("device"), DEVICE_DEFAULTS)
    apn = _merged("device.active_apn_settings", dev["active_apn_settings"], APN_DEFAULTS)
    vpn = None if dev["vpn_details"] is None else _merged("device.vpn_details", dev["vpn_details"], VPN_DEFAULTS)
    apps = dev["app_statuses"]
    if apps is None:
        apps = {name: {"app_name": name, "permissions": perms} for name, perms in APP_DEFAULTS.items()}
    conn.execute(insert(phone).values(
        id=1, **{k: dev[k] for k in DEVICE_DEFAULTS if k not in ("active_apn_settings", "vpn_details",
                                                                  "app_statuses")},
        apn_name=apn["apn_name"], apn_reset_at_reboot=apn["reset_at_reboot"], mms_apn=apn["mms_apn"],
        mmsc_url=apn["mmsc_url"], mms_proxy=apn["mms_proxy"], mms_port=apn["mms_port"],
        has_vpn_details=vpn is not None,
        vpn_server_address=None if vpn is None else vpn["server_address"],
        vpn_protocol=None if vpn is None else vpn["protocol"],
        vpn_server_performance=None if vpn is None else vpn["server_performance"],
    ))
    for position, (key, app) in enumerate(apps.items()):
        if not isinstance(app, dict) or app.get("app_name") != key:
            raise ValueError(f"device.app_statuses.{key}: app_name must be given and equal its key")
        app = _merged(f"device.app_statuses.{key}", app, {"app_name": key, "permissions": None})
        perms = _merged(f"device.app_statuses.{key}.permissions", app["permissions"], dict.fromkeys(PERMISSIONS, False))
        conn.execute(insert(phone_apps).values(app_name=key, position=position,
                                               **{f"perm_{p}": perms[p] for p in PERMISSIONS}))
    surr = _merged("surroundings", user_db.get("surroundings"), SURROUNDINGS_DEFAULTS)
    signal = SIGNAL_DEFAULTS if surr["signal_strength"] is None else surr["signal_strength"]
    if not isinstance(signal, dict) or set(signal) != set(SIGNAL_DEFAULTS) or any(
            v not in SIGNALS for v in signal.values()):
        raise ValueError("surroundings.signal_strength: give a signal (none ... excellent) for each of 2G, 3G, 4G, 5G")
    request = surr["payment_request"]
    if request is not None:
        request = _merged("surroundings.payment_request", request, {"bill_id": None, "amount_due": None, "paid": False})
        if not isinstance(request["bill_id"], str) or not isinstance(request["amount_due"], (int, float)):
            raise ValueError("surroundings.payment_request: bill_id (text) and amount_due (a number) are required")
    conn.execute(insert(surroundings).values(
        id=1, name=surr["name"], phone_number=surr["phone_number"], is_abroad=surr["is_abroad"],
        roaming_allowed=surr["roaming_allowed"], signal_2g=signal["2G"], signal_3g=signal["3G"],
        signal_4g=signal["4G"], signal_5g=signal["5G"],
        mobile_data_usage_exceeded=surr["mobile_data_usage_exceeded"], line_active=surr["line_active"],
        payment_bill_id=None if request is None else request["bill_id"],
        payment_amount_due=None if request is None else float(request["amount_due"]),
        payment_paid=None if request is None else request["paid"],
    ))


def export_phone_db(world: World) -> dict[str, Any]:
    """The phone and its surroundings in tau2's user-DB shape (``TelecomUserDB.model_dump()``, JSON values)."""
    dev = world.fetch_one(PHONE)
    surr = world.fetch_one(SURROUNDINGS)
    assert dev is not None and surr is not None
    device: dict[str, Any] = {}
    for key in DEVICE_DEFAULTS:
        if key == "active_apn_settings":
            device[key] = {"apn_name": dev["apn_name"], "reset_at_reboot": bool(dev["apn_reset_at_reboot"]),
                           "mms_apn": dev["mms_apn"], "mmsc_url": dev["mmsc_url"], "mms_proxy": dev["mms_proxy"],
                           "mms_port": dev["mms_port"]}
        elif key == "vpn_details":
            device[key] = None if not dev["has_vpn_details"] else {
                "server_address": dev["vpn_server_address"], "protocol": dev["vpn_protocol"],
                "server_performance": dev["vpn_server_performance"]}
        elif key == "app_statuses":
            device[key] = {a["app_name"]: {"app_name": a["app_name"],
                                           "permissions": {p: bool(a[f"perm_{p}"]) for p in PERMISSIONS}}
                           for a in world.fetch_all(APPS)}
        else:
            device[key] = bool(dev[key]) if key in BOOLS else dev[key]
    request = None
    if surr["payment_bill_id"] is not None:
        request = {"bill_id": surr["payment_bill_id"], "amount_due": surr["payment_amount_due"],
                   "paid": bool(surr["payment_paid"])}
    return {
        "device": device,
        "surroundings": {
            "name": surr["name"], "phone_number": surr["phone_number"], "is_abroad": bool(surr["is_abroad"]),
            "roaming_allowed": bool(surr["roaming_allowed"]),
            "signal_strength": {"2G": surr["signal_2g"], "3G": surr["signal_3g"], "4G": surr["signal_4g"],
                                "5G": surr["signal_5g"]},
            "mobile_data_usage_exceeded": bool(surr["mobile_data_usage_exceeded"]),
            "line_active": bool(surr["line_active"]), "payment_request": request,
        },
    }


def phone_db_hash(world: World) -> str:
    """tau2's user-DB hash: sha256 of the sorted-key JSON of the export (``env.get_user_db_hash()``)."""
    return hashlib.sha256(json.dumps(export_phone_db(world), sort_keys=True, default=str).encode()).hexdigest()
