"""How the scenario user reads an agent's request to do something on its phone (dual-control domains).

The user acts only when asked to do that very thing:

- a user tool named outright (``toggle_data``, ``set_network_mode_preference({"mode": "4g_5g_preferred"})``) runs
  as named, with the JSON object in brackets as its arguments, unless its clause says not to ("don't run ...");
  arguments that are not a readable JSON object are answered with a question, and nothing runs;
- in words, a sentence that asks (a :data:`REQUEST_WORDS` word) and names a phone setting (:data:`SETTINGS`) is
  either a **check** ("check airplane mode", "what does your status bar show?"): the setting's read tool runs and
  the user reports what it shows, changing nothing; or an **action** on that setting ("turn airplane mode off",
  "reseat the SIM card"): its action tool runs. An on/off action is a **set**: the user first reads the setting
  and leaves it alone when it already is as asked ("It's already off"); a bare "toggle" flips it.

A request is read in its clause (the part of the sentence between breaks such as "," "and" "then" "so"): a clause
about the agent's own step ("so I can check your signal", "shall I enable roaming?") or a negated one ("do not",
"don't", "never", "no need to") asks nothing, and the next setting named in the message is looked at instead.

Only the first request of a message is taken (the policy asks for one phone action at a time). Every pattern is
a flat alternation of words without nested or unbounded repetition, and each sentence is scanned a fixed number
of times, so any text is read in time linear in its length.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Iterable, Literal

__all__ = ["REQUEST_WORDS", "SETTINGS", "PhoneRequest", "Setting", "named_request", "request_in_words",
           "switch_state"]

#: Words that make a sentence a request for the user to do something.
REQUEST_WORDS = ("please", "could you", "can you", "would you", "try", "go to", "turn", "toggle", "tap", "open",
                 "check", "run", "grant", "allow", "look at", "tell me", "let me know", "what does",
                 "what do you see", "restart", "reboot")
_REQUEST = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in REQUEST_WORDS) + r")\b")
_SENTENCE_END = re.compile(r"[.;!?\n]")
#: A clause about the agent's own step ("shall I enable roaming?") asks the user to do nothing.
_AGENTS_OWN = re.compile(r"\b(?:shall i|should i|may i|can i|want me to|like me to|i will|i'll|i can|i am going to|"
                         r"i'm going to|we will|we'll)\b")
#: A clause that asks the user not to do something ("please don't turn it off"); "don't forget to" still asks.
_NEGATED = re.compile(r"\b(?:do not|don't|don’t|dont|never|no need to)\b(?! forget| hesitate)")
#: What separates two instructions inside a sentence ("check X, then turn Y off").
_CLAUSE_END = re.compile(r",|\b(?:and|then|but|if|once|after|when|so)\b")
_OFF = re.compile(r"\b(?:off|disable|deactivate|disconnect)\b")
#: "on", except where it says where ("on your phone") rather than what.
_ON = re.compile(r"\b(?:enable|activate)\b|\bon\b(?! (?:your|the|my) (?:phone|device|screen|settings|home screen)\b)")
_SWITCH_VERB = re.compile(r"\b(?:turn|switch|put|set|enable|disable|activate|deactivate|connect|disconnect)\b")
_FLIP_VERB = re.compile(r"\b(?:toggle|flip)\b")
_CYCLE = re.compile(r"\b(?:on and (?:then )?(?:back )?off|off and (?:then )?(?:back )?on|cycle)\b")
_MODES = (("4g_5g_preferred", re.compile(r"4g ?(?:/|_|and|or)? ?5g|5g[ _]preferred|lte/5g")),
          ("4g_only", re.compile(r"4g[ _]only|lte only")), ("3g_only", re.compile(r"3g[ _]only")),
          ("2g_only", re.compile(r"2g[ _]only")))
_PERMISSIONS = (("sms", re.compile(r"\bsms\b|\btext messages?\b|\btexting\b")), ("storage", re.compile(r"\bstorage\b")),
                ("phone", re.compile(r"\bphone permission")), ("network", re.compile(r"\bnetwork permission")))
_BROWSER = re.compile(r"\bbrowser\b")


@dataclass(frozen=True)
class Setting:
    """One thing on the phone an agent may ask about: how it is named, read, and changed."""

    key: str
    #: How an agent names it (a regular expression over lower-case text).
    topic: str
    #: The read tool that shows it (None: it can only be acted on, e.g. a restart).
    read: str | None
    #: How an agent asks about it; the user recognises each (the blind baselines and the tests use them).
    examples: tuple[str, ...]
    #: An on/off setting: the tool that flips it, and the pattern whose group 1 reads its state in ``read``'s text.
    toggle: str | None = None
    state: str | None = None
    #: Tools that switch it on / off directly (the VPN), where there is no toggle.
    on_tool: str | None = None
    off_tool: str | None = None
    #: A one-shot action: the verbs that ask for it (None: naming the setting asks for it) and its tool.
    verbs: str | None = None
    action: str | None = None


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
            verbs=r"\b(?:set|change|switch|select|choose|pick|put|update)\b", action="set_network_mode_preference"),
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
            verbs=r"\b(?:grant|allow|give|enable|add)\b|\bturn on\b", action="grant_app_permission"),
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
_TOPIC = re.compile("|".join(f"(?P<s{i}>{s.topic})" for i, s in enumerate(SETTINGS)))
_VERBS = {s.key: re.compile(s.verbs) for s in SETTINGS if s.verbs}
_STATES = {s.key: re.compile(s.state, re.IGNORECASE) for s in SETTINGS if s.state}


@dataclass(frozen=True)
class PhoneRequest:
    """What an agent's message asks the user to do on the phone.

    ``kind``: ``check`` (run ``calls``, all reads, and report), ``act`` (run ``calls`` and report), ``set`` (run
    the read in ``calls``, then flip ``setting`` unless it already is ``want``; ``cycle``: off and on again),
    ``ask`` (run nothing, say ``reply``).
    """

    kind: Literal["check", "act", "set", "ask"]
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    setting: Setting | None = None
    want: bool | None = None
    cycle: bool = False
    reply: str = ""


def _names_pattern(tools: Iterable[str]) -> re.Pattern[str] | None:
    names = sorted(tools, key=len, reverse=True)
    return re.compile(r"(?<!\w)(" + "|".join(re.escape(n) for n in names) + r")(?!\w)", re.IGNORECASE) if names \
        else None


#: Per tool set: the pattern naming its tools, and whether every name has an underscore (text without one names none).
_NAMED_CACHE: dict[frozenset[str], tuple[re.Pattern[str] | None, bool]] = {}


#: How far before a named tool its clause is read for a "do not" (a clause that asks is a few words long).
_NEGATION_REACH = 200


def _negated_before(raw: str, at: int) -> bool:
    """Whether the clause of ``raw`` that leads up to ``at`` (at most :data:`_NEGATION_REACH` characters of it)
    says not to do it ("please don't run toggle_data")."""
    window = max(0, at - _NEGATION_REACH)
    start = max(raw.rfind(mark, window, at) for mark in ".;!?\n") + 1  # past the sentence's end before it, if any
    lead = raw[max(start, window):at].lower()
    clause = 0
    for mark in _CLAUSE_END.finditer(lead):
        clause = mark.end()
    return _NEGATED.search(lead, clause) is not None


def named_request(raw: str, tools: frozenset[str]) -> PhoneRequest | None:
    """The user tool ``raw`` names outright, with the JSON object in brackets after it as its arguments.

    Returns None when no user tool is named, or when the clause naming the first one says not to run it ("do not
    run toggle_data"); an ``ask`` request when the arguments are not a readable JSON object (a malformed or
    oversized literal is never run, and never raises).
    """
    if tools not in _NAMED_CACHE:
        _NAMED_CACHE[tools] = _names_pattern(tools), all("_" in t for t in tools)
    pattern, underscored = _NAMED_CACHE[tools]
    if pattern is None or (underscored and "_" not in raw):
        return None
    found = pattern.search(raw)
    if found is None or _negated_before(raw, found.start()):
        return None
    name = found.group(1).lower()
    rest = raw[found.end():].lstrip()
    if not rest.startswith("("):
        return PhoneRequest("act", ((name, {}),))
    close = rest.find(")")
    body = rest[1:close] if close >= 0 else rest[1:]
    if not body.strip():
        return PhoneRequest("act", ((name, {}),))
    try:
        args = json.loads(body)
    except (ValueError, RecursionError):  # JSONDecodeError, an over-long integer literal, deep nesting
        args = None
    if not isinstance(args, dict):
        return PhoneRequest("ask", reply=f"I couldn't make sense of the settings you gave for {name}. What exactly "
                                         "should I do?")
    return PhoneRequest("act", ((name, args),))


def _sentences_with_requests(text: str) -> Iterable[tuple[int, int]]:
    """(start, end) of each sentence of ``text`` that holds a request word, in order; one pass over the text."""
    at = 0
    while True:
        word = _REQUEST.search(text, at)
        if word is None:
            return
        end_mark = _SENTENCE_END.search(text, word.end())
        end = end_mark.start() if end_mark is not None else len(text)
        start = at
        for mark in _SENTENCE_END.finditer(text, at, word.start()):
            start = mark.end()
        yield start, end
        at = end + 1


def _clause_bounds(starts: list[int], ends: list[int], topic: re.Match[str], start: int, end: int) -> tuple[int, int]:
    """(start, end) of the clause around ``topic`` in the sentence ``[start, end)``: from the last clause break
    before it to the first one after it (``starts``/``ends``: the sentence's breaks, in order)."""
    before = bisect_right(ends, topic.start())
    after = bisect_left(starts, topic.end())
    return ends[before - 1] if before else start, starts[after] if after < len(starts) else end


def _switch(setting: Setting, clause: str, sentence: str) -> PhoneRequest:
    read_call = ((setting.read, {}),) if setting.read else ()
    if _SWITCH_VERB.search(clause) is None:  # "check whether it is on" describes a state; it asks for none
        if _FLIP_VERB.search(clause) and setting.toggle:
            return PhoneRequest("act", ((setting.toggle, {}),))
        return PhoneRequest("check", read_call)
    if _CYCLE.search(sentence) and setting.toggle:
        return PhoneRequest("set", read_call, setting, cycle=True)
    off, on = _OFF.search(clause), _ON.search(clause)
    if off is None and on is None:
        return PhoneRequest("ask", reply="Should I switch it on or off?")
    want = off is None or (on is not None and on.start() < off.start())  # the first state named after the verb
    if setting.toggle:
        return PhoneRequest("set", read_call, setting, want=want)
    tool = setting.on_tool if want else setting.off_tool
    return PhoneRequest("act", ((tool, {}),)) if tool else PhoneRequest("check", read_call)


def _action(setting: Setting, clause: str, sentence: str) -> PhoneRequest:
    if setting.action is None:  # a read-only setting (the status bar, a speed test): any request is a check
        return PhoneRequest("check", ((setting.read, {}),))  # type: ignore[arg-type]
    verbs = _VERBS.get(setting.key)
    asked = verbs is None or verbs.search(clause) is not None
    if setting.key == "permission":
        app = "browser" if _BROWSER.search(sentence) else "messaging"
        if not asked:
            return PhoneRequest("check", ((setting.read, {"app_name": app}),))  # type: ignore[arg-type]
        wanted = [p for p, pattern in _PERMISSIONS if pattern.search(sentence)]
        if not wanted:
            return PhoneRequest("ask", reply="Which permission should I allow?")
        return PhoneRequest("act", tuple(("grant_app_permission", {"app_name": app, "permission": p})
                                         for p in wanted))
    if not asked and setting.read:
        return PhoneRequest("check", ((setting.read, {}),))
    if setting.key == "network_mode":
        mode = next((m for m, pattern in _MODES if pattern.search(sentence)), None)
        if mode is None:
            return PhoneRequest("ask", reply="Which network mode should I choose?")
        return PhoneRequest("act", (("set_network_mode_preference", {"mode": mode}),))
    return PhoneRequest("act", ((setting.action, {}),))  # type: ignore[arg-type]


def request_in_words(text: str, tools: frozenset[str]) -> PhoneRequest | None:
    """The first phone request that lower-case ``text`` makes in words, as the user understands it, or None.

    Only settings whose tools the user has count. Linear in ``len(text)``.
    """
    for start, end in _sentences_with_requests(text):
        breaks: tuple[list[int], list[int]] | None = None  # the sentence's clause breaks, found at its first topic
        at = start
        while (topic := _TOPIC.search(text, at, end)) is not None:
            at = topic.end()
            setting = SETTINGS[int(topic.lastgroup[1:])]  # type: ignore[index]
            needed = [t for t in (setting.read, setting.toggle, setting.action, setting.on_tool, setting.off_tool) if t]
            if not all(t in tools for t in needed):
                continue
            if breaks is None:
                marks = [(m.start(), m.end()) for m in _CLAUSE_END.finditer(text, start, end)]
                breaks = [m[0] for m in marks], [m[1] for m in marks]
            lo, hi = _clause_bounds(*breaks, topic, start, end)
            if _AGENTS_OWN.search(text, lo, hi) or _NEGATED.search(text, lo, hi):  # the agent's step, or "do not"
                at = max(at, hi)  # nothing in this clause is asked of the user: go on from the next one
                continue
            clause, sentence = text[lo:hi], text[start:end]
            if setting.toggle or setting.on_tool:
                return _switch(setting, clause, sentence)
            return _action(setting, clause, sentence)
    return None


def switch_state(setting: Setting, read_text: str) -> bool | None:
    """Whether ``setting`` is on, as its read tool's text shows it (None when the text does not say)."""
    pattern = _STATES.get(setting.key)
    found = pattern.search(read_text) if pattern is not None else None
    if found is None:
        return None
    return found.group(1).lower() in ("on", "yes")
