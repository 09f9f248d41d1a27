"""``ScenarioUser``: a rule-driven customer that plays a task's structured scenario. No model, deterministic.

It recognises what the agent asks for (identity, order ids, payment methods, confirmation, "anything
else?", a transfer) and answers from the scenario's facts and intents; it states its next intent when asked
what else, and stops when its intents are done. The persona sets how much it says up front (never what it
answers: a plain question about a fact it holds always gets the fact), how long it
waits before walking away, and how wordy it is. Tasks without structured intents fall back to their
scripted opening line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mua_gym.messages import AssistantMessage, ToolCall, ToolMessage
from mua_gym.task import Persona, Task
from mua_gym.user_sims.base import STOP, TRANSFER, UserReply, UserSimulator, UserView
from mua_gym.user_sims.persona import PersonaMode, resolve_persona

__all__ = ["ScenarioUser"]

#: Words that make an agent's message a request for the user to do something.
REQUEST_WORDS = (r"please", r"could you", r"can you", r"would you", r"\btry\b", r"\bgo to\b", r"\bturn\b",
                 r"\btoggle\b", r"\btap\b", r"\bopen\b", r"\bcheck\b", r"\brun\b", r"\bgrant\b", r"\ballow\b")
#: How an agent asks in words for a phone action: (patterns that must all match, user tool, arguments).
PHONE_PHRASES: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    ((r"airplane|flight mode",), "toggle_airplane_mode", {}),
    ((r"re-?seat|re-?insert|take out.*sim|sim.*(out|again)",), "reseat_sim_card", {}),
    ((r"data saver",), "toggle_data_saver_mode", {}),
    ((r"roaming",), "toggle_roaming", {}),
    ((r"(network|preferred) mode|4g/5g|5g preferred",), "set_network_mode_preference", {"mode": "4g_5g_preferred"}),
    ((r"reset.*apn|apn.*reset",), "reset_apn_settings", {}),
    ((r"restart|reboot|turn.*(off and on|on and off)",), "reboot_device", {}),
    ((r"wi-?fi calling",), "toggle_wifi_calling", {}),
    ((r"permission", r"sms"), "grant_app_permission", {"app_name": "messaging", "permission": "sms"}),
    ((r"permission", r"storage"), "grant_app_permission", {"app_name": "messaging", "permission": "storage"}),
    ((r"vpn",), "disconnect_vpn", {}),
    ((r"\bpay\b|payment",), "make_payment", {}),
    ((r"mobile data|cellular data|turn (on|off) (your )?data",), "toggle_data", {}),
    ((r"speed test",), "run_speed_test", {}),
    ((r"status bar",), "check_status_bar", {}),
    ((r"\bmms\b|picture message",), "can_send_mms", {}),
]


def _has(text: str, *patterns: str) -> bool:
    return any(re.search(p, text) for p in patterns)


def _prose(text: str) -> str:
    """``text`` without what lies inside braces (a plan's JSON arguments), in one pass."""
    if "{" not in text:
        return text
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


class ScenarioUser(UserSimulator):
    name = "scenario"
    immediate = True

    def __init__(self, persona: PersonaMode = "task") -> None:
        self.persona_mode = persona
        self.persona = Persona()
        self.task: Task | None = None
        self.facts: dict[str, Any] = {}
        self.intents: list[dict[str, Any]] = []
        self.stated = 0  # intents told to the agent so far
        self.agent_turns = 0
        self.tools: frozenset[str] = frozenset()  # the user's own tools (dual control)
        self._tools_from: list[dict[str, Any]] | None = None  # the schemas they were read from (the same each reset)

    # -- protocol ----------------------------------------------------------------------------------
    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        self.task = task
        self.persona = resolve_persona(task, self.persona_mode, seed)
        self.facts = dict(task.user_scenario.facts)
        self.intents = [dict(i) for i in task.user_scenario.intents]
        self.agent_turns = 0
        if tools is not self._tools_from:
            self._tools_from, self.tools = tools, frozenset(t["function"]["name"] for t in tools or [])
        if not self.intents:  # no structure: say what the task's script opens with
            self.stated = 0
            opening = task.script[0] if task.script else (task.user_scenario.reason_for_call or
                                                          task.user_scenario.instructions or "Hi, I need help.")
            return UserReply(content=opening)
        return UserReply(content=self._opening())

    async def respond(self, view: UserView) -> UserReply:
        last = view[-1] if view else None
        if isinstance(last, ToolMessage):  # the result of a phone action the agent asked for
            return UserReply(content=self._say(f"Done. It says: {last.content[:200]}"))
        text = (last.content or "") if isinstance(last, AssistantMessage) else ""
        self.agent_turns += 1
        if self.agent_turns > self.persona.patience:
            return UserReply(content="This is taking too long; I'll try another time. " + STOP, walked_away=True)
        return self._answer(text.lower(), text)

    # -- what to say -------------------------------------------------------------------------------
    def _identity(self) -> str:
        f = self.facts
        if "phone_number" in f:
            return f"My name is {f.get('name') or 'on the account'}, and my phone number is {f['phone_number']}."
        if "email" in f:
            return f"My email is {f['email']}."
        if "first_name" in f:
            return f"I'm {f['first_name']} {f['last_name']}, zip code {f['zip']}."
        if self._knows_user_id():
            return f"My user id is {f['user_id']}."
        return ""

    def _intent_text(self, index: int) -> str:
        intent = self.intents[index]
        return intent.get("says") or intent.get("request") or f"I need help with {intent.get('category', 'an issue')}."

    def _opening(self) -> str:
        disclosure = self.persona.disclosure
        if disclosure == "forthcoming":
            self.stated = len(self.intents)
            body = " Also, ".join(self._intent_text(i) for i in range(len(self.intents)))
            return self._say(f"Hi! {self._identity()} {body}")
        self.stated = 1
        if disclosure == "minimal":
            return self._say(f"Hi. {self._intent_text(0)}")
        return self._say(f"Hi! {self._identity()} {self._intent_text(0)}")

    def _say(self, text: str) -> str:
        text = " ".join(text.split())
        if self.persona.verbosity == "chatty":
            return f"{text} Thanks so much for your help, I really appreciate it."
        return text

    def _current(self) -> dict[str, Any]:
        return self.intents[max(0, min(self.stated, len(self.intents)) - 1)] if self.intents else {}

    def _next_or_stop(self) -> UserReply:
        if self.stated < len(self.intents):
            self.stated += 1
            return UserReply(content=self._say(f"One more thing: {self._intent_text(self.stated - 1)}"))
        return UserReply(content=STOP)

    def _phone_action(self, raw: str, in_words: bool) -> UserReply | None:
        """The user tool the agent asks for, named outright (``toggle_data`` / ``set_x({...})``) or in words."""
        for name in sorted(self.tools, key=len, reverse=True):
            at = raw.find(name)
            if at < 0:
                continue
            args: Any = {}
            rest = raw[at + len(name):].lstrip()
            if rest.startswith("("):
                body = rest[1:rest.find(")")] if ")" in rest else rest[1:]
                try:
                    args = json.loads(body) if body.strip() else {}
                except json.JSONDecodeError:
                    args = {}
            return UserReply(tool_calls=[ToolCall.make(f"user_{self.agent_turns}_{name}", name,
                                                       args if isinstance(args, dict) else {})])
        text = raw.lower()
        if not in_words or not _has(text, *REQUEST_WORDS):
            return None
        for patterns, name, args in PHONE_PHRASES:
            if name in self.tools and all(re.search(p, text) for p in patterns):
                return UserReply(tool_calls=[ToolCall.make(f"user_{self.agent_turns}_{name}", name, args)])
        return None

    # -- disclosure of facts: a plain question always gets its answer (the persona only sets what is volunteered)
    def _knows_user_id(self) -> bool:
        """Whether the user knows their user id (a task may list it among ``facts["unknown"]``)."""
        return "user_id" in self.facts and "user_id" not in self.facts.get("unknown", ())

    def _stated(self, *keys: str) -> list[Any]:
        """The distinct values of ``keys`` in the requests stated so far, in order."""
        out: list[Any] = []
        for intent in self.intents[:self.stated]:
            for key in keys:
                if key in intent and intent[key] not in out:
                    out.append(intent[key])
        return out

    def _disclose(self, text: str) -> UserReply | None:
        """The user's answer to every fact the agent asks for in ``text`` (lower case), or None if it asks none.

        Facts: user id, email, name and zip, phone number, order ids, reservation ids, payment methods, passengers
        (of the requests stated so far). Only the prose is read: a plan's JSON arguments ask nothing.
        """
        prose = _prose(text)
        if not _has(prose, r"\?", r"\btell me\b", r"\bprovide\b", r"\bgive me\b", r"\bshare\b", r"let me know",
                    r"\bneed\b"):
            return None
        f, parts = self.facts, []
        identity = self._identity()
        if _has(prose, r"user ?id"):
            parts.append(f"My user id is {f['user_id']}." if self._knows_user_id() else
                         f"I don't know my user id. {identity}")
        if _has(prose, r"e-?mail") and "email" in f:
            parts.append(f"My email is {f['email']}.")
        if _has(prose, r"phone number", r"\bnumber\b", r"\bname\b") and "phone_number" in f:
            parts.append(identity)
        if _has(prose, r"\bname\b", r"\bzip\b", r"postal") and "first_name" in f:
            parts.append(f"I'm {f['first_name']} {f['last_name']}, zip code {f['zip']}.")
        if not parts and identity and _has(prose, r"verify", r"identif", r"authenticat"):
            parts.append(identity)
        orders = self._stated("order_id")
        if orders and _has(prose, r"order (id|number)", r"which order"):
            parts.append(f"It's order {' and '.join(orders)}.")
        reservations = self._stated("reservation_id")
        if reservations and _has(prose, r"reservation (id|number|code)", r"booking (reference|code)",
                                 r"which reservation"):
            parts.append(f"It's reservation {' and '.join(reservations)}.")
        if _has(prose, r"payment method", r"which card", r"how would you like to pay", r"refund to"):
            methods = self._stated("payment_method_id", "payment_id")
            methods += [f"{p[0]} for {p[1]} dollars" for plan in self._stated("payments") for p in plan]
            if methods:
                parts.append(f"Please use {' and '.join(methods)}.")
        if _has(prose, r"passengers?'? names?", r"dates? of birth", r"who (is|are) (travell?ing|flying)"):
            people = [p for group in self._stated("passengers") for p in group]
            if people:
                parts.append("The passengers are " + " and ".join(
                    f"{p['first_name']} {p['last_name']}, born {p['dob']}" for p in people) + ".")
        parts = list(dict.fromkeys(p for p in parts if p))
        return UserReply(content=self._say(" ".join(parts))) if parts else None

    def _answer(self, text: str, raw: str = "") -> UserReply:
        if self.tools:
            action = self._phone_action(raw or text, in_words=False)
            if action is not None:
                return action
        if _has(text, r"transfer", r"human agent", r"representative") and not _has(text, r"\?$"):
            return UserReply(content=TRANSFER)
        if _has(text, r"anything else", r"something else", r"else (i|we) can", r"other (questions|requests)"):
            return self._next_or_stop()
        disclosed = self._disclose(text)
        if disclosed is not None:
            return disclosed
        if _has(text, r"shall i", r"should i", r"would you like me to", r"do you want me to", r"proceed", r"confirm",
                r"go ahead", r"yes/no", r"\(yes", r"is (that|this) (correct|right|ok)", r"sound good"):
            if self._current().get("accept", True):
                return UserReply(content=self._say("Yes, please go ahead."))
            return UserReply(content=self._say("No, please don't do that."))
        if self.tools:
            action = self._phone_action(raw or text, in_words=True)
            if action is not None:
                return action
        if _has(text, r"\?$", r"\?\s*$"):
            return UserReply(content=self._say("I'm not sure; I've told you what I know."))
        if self.stated < len(self.intents):
            return self._next_or_stop()
        return UserReply(content=self._say("Thank you."))
