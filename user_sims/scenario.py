"""``ScenarioUser``: a rule-driven customer that plays a task's structured scenario. No model, deterministic.

It recognises what the agent asks for (identity, order ids, payment methods, confirmation, "anything
else?", a transfer) and answers from the scenario's facts and intents; it states its next intent when asked
what else, and stops when its intents are done. The persona sets how much it says up front (never what it
answers: a plain question about a fact it holds always gets the fact), how long it
waits before walking away, and how wordy it is. TAU2's tasks, whose scenarios are prose, are read by
:mod:`mua_gym.user_sims.tau2_scenario`: their identity and the ids they name become facts, their reason for calling
(in the first person) the opening; a task whose instructions hang on the conversation (only a language model can
follow them) is refused with a ValueError at its start (:meth:`ScenarioUser.refuses` says why beforehand). Other
tasks without structured intents fall back to their scripted opening line.

It cannot be gamed by talk alone: it says "yes" only to a plan that names a change and something of one of its
requests, stated yet or not (an id of it, the data amount asked for), or else its customer, user or line id or
phone number (see ``ScenarioUser._plan``); a bare "shall I proceed?" gets "What exactly will you do?", and a plan
for a request it does not want (``accept: false``) gets "no". A plan is recognised before any question in it, so
"I will cancel order number #W1 ... shall I proceed?" is agreed to, not answered with the order. With its own tools
(dual control: telecom's phone) it does only what it is asked to do, as :mod:`mua_gym.user_sims.tool_requests`
reads the request, in the words of the domain's ``user_vocabulary``: asked to check, it runs the read tool and
reports; asked to switch a setting, it leaves one that already is as asked; asked not to do something, or told of
the agent's own step, it does nothing; it never volunteers a fix. It reads at most :data:`READ_LIMIT` characters
of a message, and every matcher is linear in what it reads.
"""

from __future__ import annotations

import re
from typing import Any

from mua_gym.domain.registry import user_vocabulary
from mua_gym.domain.vocabulary import UserVocabulary
from mua_gym.messages import AssistantMessage, ToolCall, ToolMessage
from mua_gym.task import Persona, Task
from mua_gym.user_sims.base import STOP, TRANSFER, UserReply, UserSimulator, UserView
from mua_gym.user_sims.persona import PersonaMode, resolve_persona
from mua_gym.user_sims.tool_requests import RequestReader, ToolRequest, named_request, reader_for
from mua_gym.user_sims.tau2_scenario import is_prose, playable, read_scenario

__all__ = ["ScenarioUser"]

#: How much of one agent message the customer reads (a person does not read a megabyte): it bounds every matcher.
READ_LIMIT = 16_000
#: Verbs of a plan to change something (the start of a word: "cancel_pending_order", "cancelling").
PLAN_VERB = re.compile(r"\b(?:cancel|return|exchange|modify|change|update|book|upgrade|downgrade|refund|add|remove|"
                        r"pay|send|resume|enable|disable|refuel|top up|suspend|reactivate|restore|place|replace|"
                        r"switch|issue|apply)")
#: Tokens of a request's own words; those with a digit (an order number, a phone number) are what a plan names.
_TOKEN = re.compile(r"[#\w-]+")
_DIGITS = frozenset("0123456789")
#: Intent fields that are prose or bookkeeping, not things a plan names.
_NOT_ANCHORS = frozenset({"category", "says", "faults", "accept", "plan_terms", "on_confirm", "withhold", "first_says"})
#: Intent fields whose values are ids, digits or not (a reservation code such as "LXYJDS").
ID_KEYS = ("_id", "_ids", "_number", "_numbers")


#: What makes a message ask the user to confirm something ("shall I proceed?", "is that correct?").
CONFIRM = re.compile(r"shall i|should i|would you like me to|do you want me to|proceed|confirm|go ahead|yes/no|\(yes|"
                      r"is (?:that|this) (?:correct|right|ok)|sound good")


def _has(text: str, *patterns: str) -> bool:
    return any(re.search(p, text) for p in patterns)


#: Words that make a message ask the user for something.
ASKS = re.compile(r"\?|\btell me\b|\bprovide\b|\bgive me\b|\bshare\b|let me know|\bneed\b")
#: How the agent asks for each fact the user discloses (read in the prose of a message, lower case).
FACT_QUESTIONS = {
    "user_id": re.compile(r"user ?id"),
    "email": re.compile(r"e-?mail"),
    "phone": re.compile(r"phone number|\bnumber\b|\bname\b"),
    "name_zip": re.compile(r"\bname\b|\bzip\b|postal"),
    "identity": re.compile(r"e-?mail|\bname\b|\bzip\b|verify|identif|authenticat"),
    "order": re.compile(r"order (id|number)|which order"),
    "reservation": re.compile(r"reservation (id|number|code)|booking (reference|code)|which reservation"),
    "payment": re.compile(r"payment method|which card|how would you like to pay|refund to"),
    "passengers": re.compile(r"passengers?'? names?|dates? of birth|who (is|are) (travell?ing|flying)"),
    "location": re.compile(r"where are you|are you (abroad|travell?ing|overseas|at home|in another country)|"
                           r"which country|your (current )?location"),
    "data_amount": re.compile(r"how (much|many) (data|gb|gigabytes)|gb amount|amount of data"),
    "home_address": re.compile(r"(?<!e-mail )(?<!email )\baddress|\bcity\b|\bstreet\b"),
}


def prose(text: str) -> str:
    """``text`` without what lies inside braces, the braces included (a plan's JSON arguments); an unclosed ``{``
    hides the rest, a ``}`` outside any braces stays. It jumps from brace to brace with ``str.find``: linear."""
    next_open = text.find("{")
    if next_open < 0:
        return text
    find, out, depth, at = text.find, [], 0, 0
    next_close = find("}")
    while True:  # each find starts past the brace it replaces, so the text is searched once over
        if depth == 0:
            if next_open < 0:
                out.append(text[at:])
                return "".join(out)
            out.append(text[at:next_open])
            depth, at = 1, next_open + 1
            next_open = find("{", at)
            if next_close < at:
                next_close = find("}", at)
        elif next_close < 0:  # braces left open: what follows is inside them
            return "".join(out)
        elif 0 <= next_open < next_close:
            depth, at = depth + 1, next_open + 1
            next_open = find("{", at)
        else:
            depth, at = depth - 1, next_close + 1
            next_close = find("}", at)


def _strings(values: list[Any]) -> list[str]:
    """The strings in ``values`` and in the lists inside them (one level of nesting is what intents hold)."""
    out: list[str] = []
    for value in values:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out += [v for v in value if isinstance(v, str)]
            out += [w for v in value if isinstance(v, (list, tuple)) for w in v if isinstance(w, str)]
    return out


def _ids(text: str) -> tuple[str, ...]:
    """The distinct id-like tokens of ``text`` (with a digit, three characters or more), lower case, in order."""
    return tuple(dict.fromkeys(t.lower().strip("-") for t in _TOKEN.findall(text)
                               if len(t) >= 3 and not _DIGITS.isdisjoint(t)))


class ScenarioUser(UserSimulator):
    """``vocabulary``: what it understands in words with its own tools (None: what the task's domain declares)."""

    name = "scenario"
    immediate = True

    def __init__(self, persona: PersonaMode = "task", vocabulary: UserVocabulary | None = None) -> None:
        self.persona_mode = persona
        self.vocabulary = vocabulary
        self.persona = Persona()
        self.task: Task | None = None
        self.facts: dict[str, Any] = {}
        self.intents: list[dict[str, Any]] = []
        self.requests: dict[str, list[Any]] = {}  # a prose scenario's plain answers, by request key (no intents)
        self.stated = 0  # intents told to the agent so far
        self.agent_turns = 0
        self.tools: frozenset[str] = frozenset()  # the user's own tools (dual control)
        self._tools_from: list[dict[str, Any]] | None = None  # the schemas they were read from (the same each reset)
        self._reader: RequestReader | None = None  # reads requests in words (a user with tools and a vocabulary)
        self._pending: ToolRequest | None = None  # an on/off request waiting for its read's result
        self._checking = False  # whether the phone tools just run were reads only (reported as what it shows)
        # every task's plan anchors, by task id, made on first use (see _plan_anchors)
        self._anchor_memo: dict[str, tuple[Task, list[tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]]]] = {}
        # the behaviours of this episode (mua_gym.kit.behaviours): how often each (request, fact) was asked for,
        # whether the user has said who it is, and which requests changed on confirmation
        self._asked: dict[tuple[int, str], int] = {}
        self._identified = False
        self._changed: set[int] = set()

    # -- protocol ----------------------------------------------------------------------------------
    @staticmethod
    def refuses(task: Task) -> str | None:
        """Why this user cannot play ``task`` (a TAU2 scenario whose instructions hang on the conversation), naming
        the task; None where it can. :meth:`start` raises ValueError for such a task."""
        return playable(task)

    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        self.task = task
        self.persona = resolve_persona(task, self.persona_mode, seed)
        self.facts = dict(task.user_scenario.facts)
        self.intents = [dict(i) for i in task.user_scenario.intents]
        self.requests = {}
        self.agent_turns = 0
        self._pending = None
        self._asked, self._identified, self._changed = {}, False, set()
        if tools is not self._tools_from:
            self._tools_from, self.tools = tools, frozenset(t["function"]["name"] for t in tools or [])
        words = self._words(task) if self.tools else None
        self._reader = reader_for(words) if words is not None else None  # compiled once per vocabulary, and kept
        if is_prose(task):  # TAU2's prose: read, or refused where it hangs on the conversation
            reading = read_scenario(task)
            if reading.refusal is not None:
                raise ValueError(f"the scenario user cannot play {reading.refusal}; play it with an LLM user "
                                 "('litellm:<model>')")
            self.facts = {**reading.facts, **self.facts}
            self.requests, self.stated = reading.requests, 0
            said = self._identity() if self.persona.disclosure != "minimal" else ""
            return UserReply(content=self._say(f"Hi! {said} {reading.opening}"))
        if not self.intents:  # no structure: say what the task's script opens with
            self.stated = 0
            opening = task.script[0] if task.script else (task.user_scenario.reason_for_call or
                                                          task.user_scenario.instructions or "Hi, I need help.")
            return UserReply(content=opening)
        return UserReply(content=self._opening())

    async def respond(self, view: UserView) -> UserReply:
        last = view[-1] if view else None
        if isinstance(last, ToolMessage):  # the result of a phone action or check the agent asked for
            return self._after_phone_tools(view)
        text = (last.content or "") if isinstance(last, AssistantMessage) else ""
        self.agent_turns += 1
        if self.agent_turns > self.persona.patience:
            return UserReply(content="This is taking too long; I'll try another time. " + STOP, walked_away=True)
        raw = text[:READ_LIMIT]
        return self._answer(raw.lower(), raw)

    def _words(self, task: Task) -> UserVocabulary | None:
        """What the user understands in words: its own vocabulary, else the one ``task``'s domain declares (None
        for a domain that declares none, or that is not registered)."""
        return self.vocabulary if self.vocabulary is not None else user_vocabulary(task.domain)

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
        self._identified = disclosure != "minimal" and bool(self._identity())
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

    # -- the phone (dual control): act only when asked to do that very thing ------------------------------------
    def _perform(self, request: ToolRequest) -> UserReply:
        """The user's turn for a phone ``request``: its reply (``ask``) or its tool calls; a set reads first."""
        if request.kind == "ask":
            return UserReply(content=self._say(request.reply))
        if request.kind == "set":
            self._pending = request
        self._checking = request.kind != "act"
        return self._run(request.calls)

    def _run(self, calls: tuple[tuple[str, dict[str, Any]], ...]) -> UserReply:
        return UserReply(tool_calls=[ToolCall.make(f"user_{self.agent_turns}_{i}_{name}", name, args)
                                     for i, (name, args) in enumerate(calls)])

    def _after_phone_tools(self, view: UserView) -> UserReply:
        """The user's word on the phone tools it just ran: a pending on/off set goes on, or it reports them."""
        results: list[ToolMessage] = []
        for message in reversed(view):
            if not isinstance(message, ToolMessage):
                break
            results.append(message)
        results.reverse()
        pending, self._pending = self._pending, None
        if pending is not None and pending.setting is not None and pending.setting.toggle:
            state = self._reader.switch_state(pending.setting, results[-1].content)  # type: ignore[union-attr]
            if pending.cycle:
                self._checking = False
                return self._run(((pending.setting.toggle, {}), (pending.setting.toggle, {})))
            if state is not None and state == pending.want:
                return UserReply(content=self._say(f"It's already {'on' if state else 'off'}, so I left it as it is. "
                                                   f"It shows: {results[-1].content}"), needless=True)
            if state is not None:
                self._checking = False
                return self._run(((pending.setting.toggle, {}),))
        said = " ".join(r.content for r in results)[:600]
        return UserReply(content=self._say(f"It shows: {said}" if self._checking else f"Done. It says: {said}"))

    # -- confirmation: only of a plan that names a change and what it is for -------------------------------------
    def _plan(self, text: str) -> dict[str, Any] | None:
        """The user's request that ``text`` (lower case) states a plan for, or None if it states none.

        A plan names a change (a verb: cancel, book, refuel, ...) and something of one of the user's requests,
        stated yet or not: a value of its ``*_id``/``*_number`` fields (with or without a digit), a token with a
        digit from its other fields or its own words, the data amount it asks for, or one of its ``plan_terms``;
        the request whose own ids (no other request's) it names most, then whose anchors it names most, is returned
        (the first of a tie): two requests may share a card or a date. Failing that, a plan naming the customer's,
        user's or line's id or the phone number is taken as one for the task's last request that would not change on
        hearing a plan. A task without structured requests has nothing to match: there a plan needs a change and any
        token with a digit (``{}`` is returned).
        """
        if PLAN_VERB.search(text) is None:
            return None
        if not self.intents:  # no structured requests to match (tau2's tasks): any named id makes it concrete
            return {} if _ids(text) else None
        anchors = self._plan_anchors()
        best, score = None, (0, 0)
        for intent, own, strong in anchors:  # the request whose own record the plan names, else the most of it
            named = (sum(1 for a in strong if a in text), sum(1 for a in own if a in text))
            if named > score:
                best, score = intent, named
        if best is not None:
            return best
        shared = [str(self.facts[k]).lower() for k in ("customer_id", "line_id", "user_id", "phone_number")
                  if self.facts.get(k)]
        if not any(a in text for a in shared):
            return None
        # a plan naming only who the user is: for its last request, passing over one that would change on hearing
        # a plan (a plan that names nothing of a request is not one it can change its mind about)
        plain = [intent for intent, _, _ in anchors if not intent.get("on_confirm")]
        return plain[-1] if plain else anchors[-1][0] if anchors else {}

    def _plan_anchors(self) -> list[tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]]:
        """(request, the lower-case ids a plan for it may name, those of its ``*_id`` fields no other request names)
        for each of the user's requests, stated or not yet (an agent may act on them in its own order). Kept per
        task (``_anchor_memo``): a task's words do not change between episodes."""
        task = self.task
        if task is None:
            return []
        kept = self._anchor_memo.get(task.id)
        if kept is not None and kept[0] is task and not self._changed:
            return kept[1]
        anchors: list[tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = []
        ids: list[tuple[str, ...]] = []
        for intent in self.intents:
            values = [v for k, v in intent.items() if k not in _NOT_ANCHORS]
            named = [v for k, v in intent.items() if k.endswith(ID_KEYS)]  # ids even without a digit ("LXYJDS")
            own = tuple(dict.fromkeys(tuple(v.lower() for v in _strings(named) if len(v) >= 3) +
                                      _ids(" ".join(_strings(values)) + " " + str(intent.get("says", "")))))
            if isinstance(intent.get("refuel_gb"), (int, float)):
                own += (f"{intent['refuel_gb']:g} gb",)
            own += tuple(str(t).lower() for t in intent.get("plan_terms", ()))  # what its plan names, if given
            ids.append(tuple(v.lower() for v in _strings(named) if len(v) >= 3))
            anchors.append((intent, own, ()))
        for index, (intent, own, _) in enumerate(anchors):
            others = {a for j, (_, theirs, _) in enumerate(anchors) if j != index for a in theirs}
            anchors[index] = (intent, own, tuple(a for a in ids[index] if a not in others))
        if not self._changed:  # a request that changed its mind has other words: this episode's only
            self._anchor_memo[task.id] = (task, anchors)
        return anchors

    # -- disclosure of facts: a plain question always gets its answer (the persona only sets what is volunteered)
    def _knows_user_id(self) -> bool:
        """Whether the user knows their user id (a task may list it among ``facts["unknown"]``)."""
        return "user_id" in self.facts and "user_id" not in self.facts.get("unknown", ())

    def _stated(self, *keys: str) -> list[Any]:
        """The distinct values of ``keys`` in the requests stated so far, in order (a prose scenario's: all it
        names)."""
        out: list[Any] = []
        for key in keys if not self.intents else ():
            out += [v for v in self.requests.get(key, ()) if v not in out]
        for intent in self.intents[:self.stated]:
            for key in keys:
                if key in intent and intent[key] not in out:
                    out.append(intent[key])
        return out

    def _given(self, key: str) -> tuple[list[Any], list[str]]:
        """The values of ``key`` the user gives now for the requests stated so far, and what it says instead of
        those it holds back. A request's ``withhold`` keeps a value back the first time it is asked for
        (``"asked_twice"``) or until the user has said who it is (``"identified"``); its ``first_says`` gives a
        wrong value the first time, the right one after."""
        if not self.intents:
            return self._stated(key), []
        values: list[Any] = []
        excuses: list[str] = []
        for index, intent in enumerate(self.intents[:self.stated]):
            if key not in intent:
                continue
            asked = self._asked[index, key] = self._asked.get((index, key), 0) + 1
            until = (intent.get("withhold") or {}).get(key)
            wrong = (intent.get("first_says") or {}).get(key)
            words = key.removesuffix("_id").replace("_", " ")
            if until == "asked_twice" and asked == 1:
                excuses.append(f"I don't have the {words} number at hand right now.")
                continue
            if until == "identified" and not self._identified:
                excuses.append(f"I'll give you the {words} number once you have verified who I am.")
                continue
            value = wrong if wrong is not None and asked == 1 else intent[key]
            if value not in values:
                values.append(value)
        return values, excuses

    def _correction(self, text: str) -> UserReply | None:
        """The right value of a fact the user gave wrong, where ``text`` (lower case) names the wrong value (the
        agent says its look-up found nothing); None where it names none."""
        for index, intent in enumerate(self.intents[:self.stated]):
            for key, wrong in (intent.get("first_says") or {}).items():
                if self._asked.get((index, key), 0) == 1 and str(wrong).lower() in text:
                    self._asked[index, key] = 2
                    return UserReply(content=self._say(f"Sorry, I gave you the wrong one: it's {intent[key]}."))
        return None

    def _disclose(self, text: str) -> UserReply | None:
        """The user's answer to every fact the agent asks for in ``text`` (lower case), or None if it asks none.

        Facts: user id, email, name and zip, phone number, order ids, reservation ids, payment methods, passengers
        (of the requests stated so far), where the user is, and how much data they want added. Only the prose is
        read: a plan's JSON arguments ask nothing.
        """
        spoken = prose(text)
        if not ASKS.search(spoken):
            return None
        f, parts = self.facts, []
        identity = self._identity()
        asked = {fact for fact, pattern in FACT_QUESTIONS.items() if pattern.search(spoken)}
        if "user_id" in asked:
            parts.append(f"My user id is {f['user_id']}." if self._knows_user_id() else
                         f"I don't know my user id. {identity}")
        if "email" in asked and "email" in f:
            parts.append(f"My email is {f['email']}.")
        if "phone" in asked and "phone_number" in f:
            parts.append(identity)
        if "name_zip" in asked and "first_name" in f:
            parts.append(f"I'm {f['first_name']} {f['last_name']}, zip code {f['zip']}.")
        if not parts and identity and "identity" in asked:
            parts.append(identity)
        excuses: list[str] = []
        orders, held = self._given("order_id") if "order" in asked else ([], [])
        excuses += held
        if orders:
            parts.append(f"It's order {' and '.join(orders)}.")
        reservations, held = self._given("reservation_id") if "reservation" in asked else ([], [])
        excuses += held
        if reservations:
            parts.append(f"It's reservation {' and '.join(reservations)}.")
        if "payment" in asked:
            methods = self._stated("payment_method_id", "payment_id")
            methods += [f"{p[0]} for {p[1]} dollars" for plan in self._stated("payments") for p in plan]
            if methods:
                parts.append(f"Please use {' and '.join(methods)}.")
        if "location" in asked and "location" in f:  # (telecom: a fault abroad is told only when asked)
            parts.append("I'm at home." if f["location"] == "home" else f"I'm in {f['location']} at the moment.")
        if "home_address" in asked and "home_address" in f:  # (a prose scenario's street address)
            parts.append(f"My address is {f['home_address']}.")
        amounts = self._stated("refuel_gb") if "data_amount" in asked else []
        if amounts:
            parts.append(f"I'd like to add {amounts[0]:g} GB of data.")
        if "passengers" in asked:
            people = [p for group in self._stated("passengers") for p in group]
            if people:
                parts.append("The passengers are " + " and ".join(
                    f"{p['first_name']} {p['last_name']}, born {p['dob']}" for p in people) + ".")
        parts = list(dict.fromkeys(p for p in parts + excuses if p))
        if identity and any(identity in p for p in parts):
            self._identified = True  # (after this reply: a fact held until then is given when next asked)
        return UserReply(content=self._say(" ".join(parts))) if parts else None

    def _confirm(self, planned: dict[str, Any] | None) -> UserReply:
        """The answer to "shall I?": what exactly, without a plan; yes to a plan for a request it accepts; else no."""
        if planned is None:  # a bare "shall I proceed?" states no plan to agree to
            return UserReply(content=self._say("What exactly will you do? Please tell me the details first."))
        change = planned.get("on_confirm")
        # (the anchors a task keeps may hold an earlier episode's copy of the request: equal, not the same)
        index = None if not change else next(
            (i for i, intent in enumerate(self.intents) if intent is planned or intent == planned), None)
        if index is not None:  # asked to confirm this request for the first time: it changes its mind
            self.intents[index] = dict(change["becomes"])
            self._changed.add(index)
            return UserReply(content=self._say(change["says"]))
        if planned.get("accept", True):
            return UserReply(content=self._say("Yes, please go ahead."))
        return UserReply(content=self._say("No, please don't do that."))

    def _answer(self, text: str, raw: str) -> UserReply:
        """The user's reply to the agent's message ``raw`` (``text``: the same, lower case)."""
        if self.tools:
            named = named_request(raw, self.tools)
            if named is not None:
                return self._perform(named)
        corrected = self._correction(text) if self.intents else None
        if corrected is not None:
            return corrected
        if _has(text, r"transfer", r"human agent", r"representative") and not _has(text, r"\?$"):
            return UserReply(content=TRANSFER)
        if _has(text, r"anything else", r"something else", r"else (i|we) can", r"other (questions|requests)"):
            return self._next_or_stop()
        confirming = CONFIRM.search(text) is not None
        planned = self._plan(text) if confirming else None
        on_phone: ToolRequest | None = None
        reader = self._reader
        if planned is not None:  # a stated plan is agreed to, even where it says "order number" or "name"
            on_phone = reader.request_in_words(text, self.tools) if reader is not None else None
            if on_phone is None:
                return self._confirm(planned)
        disclosed = self._disclose(text)
        if disclosed is not None:
            return disclosed
        if reader is not None:  # before confirmations: "please go ahead and turn off airplane mode" asks for an action
            if planned is None:
                on_phone = reader.request_in_words(text, self.tools)
            if on_phone is not None:
                return self._perform(on_phone)
        if confirming:
            return self._confirm(planned)
        if _has(text, r"\?$", r"\?\s*$"):
            return UserReply(content=self._say("I'm not sure; I've told you what I know."))
        if self.stated < len(self.intents):
            return self._next_or_stop()
        return UserReply(content=self._say("Thank you."))
