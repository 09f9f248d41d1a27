"""What telecom's user understands in words: the phone settings an agent may ask about (its user vocabulary).

Each :class:`~mua_gym.domain.vocabulary.Setting` names one thing on the phone, the tool that reads it and those that
change it; :data:`VOCABULARY` is what ``DOMAIN.user_vocabulary`` declares, and the scenario user reads an agent's
request with it (:mod:`mua_gym.user_sims.tool_requests`).
"""

from __future__ import annotations

from mua_gym.domain.vocabulary import Choice, Setting, UserVocabulary

__all__ = ["FIXES", "SAMPLES", "SETTINGS", "VOCABULARY"]

#: The network mode a "set your network mode" request names.
MODE = Choice("mode", (("4g_5g_preferred", r"4g ?(?:/|_|and|or)? ?5g|5g[ _]preferred|lte/5g"),
                       ("4g_only", r"4g[ _]only|lte only"), ("3g_only", r"3g[ _]only"), ("2g_only", r"2g[ _]only")),
              question="Which network mode should I choose?")
#: The app whose permissions are checked or granted: the browser where the sentence says so, else messaging.
APP = Choice("app_name", (("browser", r"\bbrowser\b"),), default="messaging", read=True)
#: The permissions a "grant" request names: each is granted.
PERMISSIONS = Choice("permission", (("sms", r"\bsms\b|\btext messages?\b|\btexting\b"), ("storage", r"\bstorage\b"),
                                    ("phone", r"\bphone permission"), ("network", r"\bnetwork permission")),
                     question="Which permission should I allow?", each=True)

SETTINGS: tuple[Setting, ...] = (
    Setting("airplane", r"\bairplane mode\b|\bairplane\b|\bflight mode\b", "check_network_status",
            ("turn off airplane mode", "switch airplane mode on", "toggle airplane mode",
             "check whether airplane mode is on"),
            toggle="toggle_airplane_mode", state=r"airplane mode: (on|off)"),
    Setting("data_saver", r"\bdata saver\b|\bdata restrictions?\b|\bdata restriction status\b",
            "check_data_restriction_status",
            ("turn off data saver mode", "turn on data saver", "check your data restriction status"),
            toggle="toggle_data_saver_mode", state=r"data saver mode is (on|off)"),
    Setting("roaming", r"\bdata roaming\b|\broaming\b", "check_network_status",
            ("turn on data roaming", "turn roaming off on your phone", "check whether roaming is on"),
            toggle="toggle_roaming", state=r"data roaming enabled: (yes|no)"),
    Setting("wifi_calling", r"\bwi-?fi calling\b", "check_wifi_calling_status",
            ("turn off wi-fi calling", "turn on wifi calling", "check your wi-fi calling status"),
            toggle="toggle_wifi_calling", state=r"wi-fi calling is currently turned (on|off)"),
    Setting("wifi", r"\bwi-?fi\b", "check_wifi_status",
            ("turn wi-fi off", "turn on your wifi", "check your wi-fi status"),
            toggle="toggle_wifi", state=r"wi-fi is (?:turned )?(on|off)"),
    Setting("mobile_data", r"\b(?:mobile|cellular) data\b|\bdata\b(?! saver| roaming| restriction| usage| plan"
                           r"| allowance| limit| top| refuel)",
            "check_network_status",
            ("turn on mobile data", "turn your cellular data off", "check whether mobile data is on"),
            toggle="toggle_data", state=r"mobile data enabled: (yes|no)"),
    Setting("vpn", r"\bvpn\b", "check_vpn_status",
            ("disconnect the vpn", "turn on the vpn", "check your vpn status"),
            on_tool="connect_vpn", off_tool="disconnect_vpn"),
    Setting("network_mode", r"\bnetwork mode\b|\bmode preference\b|\bpreferred network\b|"
                            r"\bnetwork (?:type )?preference\b|\b4g/5g\b|\b5g preferred\b|\b4g_5g",
            "check_network_mode_preference",
            ("set your network mode preference to 4g/5g preferred", "check your network mode preference"),
            verbs=r"\b(?:set|change|switch|select|choose|pick|put|update)\b", action="set_network_mode_preference",
            choices=(MODE,)),
    Setting("sim", r"\bsim\b", "check_sim_status",
            ("reseat your sim card", "take the sim card out and put it back in", "check your sim status"),
            verbs=r"\bre-?seat|\bre-?insert|\btake (?:it |the sim |the sim card |your sim |your sim card )?out\b|"
                  r"\bpop (?:it )?out\b|\bput (?:it )?back\b",
            action="reseat_sim_card"),
    Setting("apn", r"\bapn\b|\baccess point\b", "check_apn_settings",
            ("reset your apn settings", "check your apn settings"),
            verbs=r"\b(?:reset|restore)\b|\bdefaults?\b", action="reset_apn_settings"),
    Setting("reboot", r"\brestart\b|\breboot\b|\bpower cycle\b|\b(?:turn|switch) (?:it|your phone|the phone|your "
                      r"device) off and (?:then )?(?:back )?on\b",
            None, ("restart your phone", "reboot your device"), action="reboot_device"),
    Setting("permission", r"\bpermissions?\b", "check_app_permissions",
            ("grant the messaging app the sms permission", "allow storage permission for messaging",
             "check the messaging app's permissions"),
            verbs=r"\b(?:grant|allow|give|enable|add)\b|\bturn on\b", action="grant_app_permission",
            choices=(APP, PERMISSIONS)),
    Setting("payment", r"\bpayment\b|\bpay\b|\bbill\b", "check_payment_request",
            ("check your payment request", "pay the bill", "make the payment on your phone"),
            verbs=r"\bpay\b|\bmake (?:the |a )?payment\b|\b(?:accept|approve|complete|authori[sz]e)\b",
            action="make_payment"),
    Setting("speed_test", r"\bspeed ?test\b|\binternet speed\b|\bspeed\b", "run_speed_test",
            ("run a speed test", "check your internet speed")),
    Setting("status_bar", r"\bstatus bar\b|\bsignal bars\b|\bbars\b", "check_status_bar",
            ("check your status bar", "tell me what the status bar shows")),
    Setting("mms", r"\bmms\b|\bpicture messages?\b|\bphoto messages?\b|\bmultimedia messages?\b",
            "can_send_mms", ("check whether you can send an mms", "try sending a picture message")),
    Setting("network_status", r"\bnetwork status\b|\bnetwork connection\b|\bcellular connection\b|"
                              r"\bconnection status\b|\bsignal\b", "check_network_status",
            ("check your network status", "look at your cellular connection")),
)
#: What the fuzzer says to the phone's user (mua_gym.eval.fuzz): a set, a toggle, an action, and two in a sentence.
SAMPLES = ("please turn on airplane mode", "could you toggle your data", "please reboot the phone",
           "please restart your phone and turn off the wifi calling")
#: Every phone fix in the direction that mends it, with no diagnosis (the "lookup-shotgun" exploit says them all).
FIXES = tuple(e for s in SETTINGS for e in s.examples[:1] if not e.startswith(("check", "tell"))) + (
    "allow storage permission for messaging",)
VOCABULARY = UserVocabulary(SETTINGS, samples=SAMPLES, fixes=FIXES)
