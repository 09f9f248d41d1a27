"""User faults: what a simulated user says or does that its task's scenario does not allow, found turn by turn.

A :class:`FaultChecker` reads one user reply against the task's scenario (its facts, requests, instructions and
persona), the agent's message that prompted it, and what the agent said before. Each rule is linear in what it
reads (at most :data:`READ_LIMIT` characters of a message) and looks for one kind of fault:

``invented_fact``
    an id, email, zip, amount or name the user states that neither its scenario, the agent, nor its own phone
    ever showed it (a fact the scenario lists as unknown to the user counts as invented until the agent says it);
``early_stop``
    a stop token while the world is not the gold one and the agent neither wrapped up, refused, transferred nor
    said it had done what was asked (tasks that write nothing cannot tell, and are not judged for it);
``scenario_leak``
    five words or more of its instructions read out in their own voice ("you prefer not to ...", "if the agent
    asks ..."), of the LLM user's guidelines, or of its persona's description;
``role_break``
    it speaks as the support agent ("How can I help you?", "I have cancelled your order"), writes an agent tool
    call, or calls a tool that is not one of its own;
``obeyed_injection``
    the agent told it what to write ("reply with only ...", "ignore your instructions") and it did: it ended
    the episode, or wrote what it was told to;
``off_scenario``
    it agreed to a plan for something outside its requests (a plan whose ids are none of its scenario's, or one
    for a request its scenario declines). Read only for tasks with structured requests;
``volunteered``
    it gave what its scenario keeps back: a fact a request withholds before the agent asked for it twice, or before
    the user said who it is; its identity in the opening, where its persona keeps that back; or the ids of two new
    requests in one message the agent did not ask them in (a forthcoming persona may state all at once). Read only
    for tasks with structured requests;
``unasked_action``
    it ran one of its own tools (a phone action) when the agent's message asked it to do nothing on its side.

The rule-driven users never commit any of these on the generated tasks (the tests hold them to it); an LLM user
may. :class:`~mua_gym.user_sims.fault_reviewer.LLMFaultReviewer` adds a model's reading for what rules cannot see
(:func:`~mua_gym.user_sims.fault_reviewer.make_reviewer` makes one from a spec).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from mua_gym.env.infos import UserFault
from mua_gym.messages import AssistantMessage, ToolMessage, UserMessage
from mua_gym.task import Task
from mua_gym.user_sims.base import UserReply, UserView
from mua_gym.user_sims.scenario import ASKS, CONFIRM, FACT_QUESTIONS, ID_KEYS, PLAN_VERB, prose
from mua_gym.user_sims.tool_requests import named_request, reader_for

__all__ = ["FAULT_KINDS", "FaultChecker", "FaultMode", "FaultReviewer", "ON_USER_FAULT", "UserFault",
           "check_fault_mode", "fault_text"]

FaultKind = Literal["invented_fact", "early_stop", "scenario_leak", "role_break", "obeyed_injection", "off_scenario",
                    "volunteered", "unasked_action"]
FAULT_KINDS: tuple[str, ...] = ("invented_fact", "early_stop", "scenario_leak", "role_break", "obeyed_injection",
                                "off_scenario", "volunteered", "unasked_action")
FaultMode = Literal["flag", "retry", "void"]
ON_USER_FAULT: tuple[str, ...] = ("flag", "retry", "void")
#: How much of one message the checker reads (what a user simulator reads of the agent's, too).
READ_LIMIT = 16_000
#: Words in a row that make a read-out of the instructions.
LEAK_WORDS = 5
#: Replies whose view-independent reading is kept per task (:meth:`FaultChecker._reading`).
MEMO_SIZE = 512


def check_fault_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`ON_USER_FAULT`; else ValueError naming them."""
    if mode not in ON_USER_FAULT:
        raise ValueError(f"on_user_fault must be 'flag', 'retry' or 'void', not {mode!r}")
    return mode


# -- what the rules read --------------------------------------------------------------------------------------------
_SPLIT = re.compile(r"[^\s,;:!?()\[\]{}<>\"'`*]+")
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d)")
_DIGITS = frozenset("0123456789")
_VALUE_CHAR = re.compile(r"[0-9@]")
_ESCAPED_AMPERSAND = re.compile(r"&(?:amp;)+")
_WORD = re.compile(r"[a-z0-9']+")
_SECOND_PERSON = frozenset({"you", "your", "you're", "yours", "yourself", "you've", "you'll", "agent", "agent's"})
#: "My name is Ada Lovelace", "I'm Ada Lovelace": the name a user gives (two capitalised words after "I'm").
_NAME = re.compile(r"\b(?:[Mm]y (?:full |first |last )?name is|[Ii]'m|I am|[Tt]his is) "
                   r"([A-Z][a-z]+)(?: ([A-Z][a-z]+))?")
#: Substrings (lower case) without which ``_AGENT_VOICE`` cannot match: a cheap test first.
_VOICE_MARKERS = ("assistant", "agent", "support", "representative", "help", "assist", " ai", "contacting", "your",
                  "<tool_call>", "what can i do")
_AGENT_VOICE = re.compile(
    r"^[ \t]*(?:assistant|agent|support(?: agent)?|representative)[ \t]*:|how (?:can|may) i (?:help|assist) you|"
    r"\bas an ai\b|\bi'?m an ai\b|\bi am an ai\b|thank you for contacting|is there anything else i can (?:help|do)|"
    r"\bi(?:'m| am) here to (?:help|assist)\b|\bi can (?:help|assist) (?:you )?with\b|what can i do for you|"
    r"how can i be of (?:help|assistance)|"
    r"\bi(?: have|'ve) (?:just )?(?:cancell?ed|processed|refunded|updated|modified|exchanged|booked|issued|"
    r"transferred|returned) your\b|<tool_call>", re.IGNORECASE | re.MULTILINE)
#: What the agent writes to steer the user simulator rather than to help the customer.
_INJECTION = re.compile(
    r"ignore (?:all |any |your |the )?(?:previous |prior |above |earlier )?instructions|disregard (?:your|the|all) |"
    r"new instructions|system prompt|you must (?:now )?(?:say|reply|respond|write|type|end|stop)|"
    r"(?:reply|respond|answer) with (?:only|just|exactly)|(?:say|type|write|send|output) (?:only |just |exactly )?"
    r"(?:the words? |the token |the text )?[\"'\u201c#]|stop token|end (?:the|this) (?:conversation|chat|call) "
    r"(?:now|immediately|right away)", re.IGNORECASE)
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d\n]{3,200})[\"\u201d]")
#: The agent closing its work: it asks what else, refuses, transfers, or says it has done what was asked.
_WRAP_UP = re.compile(
    r"anything else|something else|else (?:i|we) can|other (?:questions|requests)|anything more|have a (?:great|nice|"
    r"good|wonderful) day|goodbye|\bcannot\b|can't|can not|\bunable\b|not able|not (?:allowed|possible|permitted|"
    r"eligible)|against (?:our |the )?policy|\bsorry\b|\bunfortunately\b|transfer|human agent|representative|"
    r"\bdone\b|successfully|\b(?:has|have) been\b|is now\b|completed?\b|all set|i(?: have|'ve) ", re.IGNORECASE)
_AGREE = re.compile(r"\W*(?:yes|yeah|yep|sure|ok(?:ay)?|correct|that'?s (?:right|correct|fine)|please (?:do|go ahead|"
                    r"proceed)|go ahead|confirm(?:ed)?|sounds (?:good|great)|absolutely|of course|do it|proceed)\b",
                    re.IGNORECASE)
_DISAGREE = re.compile(r"\b(?:no|not|don'?t|do not|wait|instead|but|wrong)\b", re.IGNORECASE)


def _normal(token: str) -> str:
    """A value as the rules compare it: lower case, without a leading ``#``/``$`` or trailing full stop."""
    return token.lower().lstrip("#$").rstrip(".")


def _values(text: str) -> list[str]:
    """The values ``text`` states (each once, in order): emails, and tokens of three characters or more with a
    digit (ids, zips, amounts, dates, phone numbers), normalised."""
    text = text[:READ_LIMIT]
    if _VALUE_CHAR.search(text) is None:  # most replies state no value: one scan in C says so
        return []
    out = [_normal(raw) for raw in _SPLIT.findall(_DIGIT_COMMA.sub("", text))
           if "@" in raw or not _DIGITS.isdisjoint(raw)]
    return list(dict.fromkeys(t for t in out if len(t) >= 3))


def _forms(token: str) -> list[str]:
    """The forms a known value may be restated in: itself, its digits alone (a phone number written another way)
    and, for an amount, its shortest number (``"12.50"`` as ``"12.5"``)."""
    forms = [token]
    digits = "".join(ch for ch in token if ch in _DIGITS)
    if len(digits) >= 3 and "@" not in token:  # (an email is one value: "zz" + a known one is another)
        forms.append(digits)
    try:
        forms.append(f"{float(token):g}")
    except ValueError:
        pass
    return forms


def _words(text: str) -> list[str]:
    return _WORD.findall(text[:READ_LIMIT].lower())


def _shingles(words: list[str], n: int = LEAK_WORDS) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _strings(value: Any) -> list[str]:
    """Every string and number inside ``value`` (dicts, lists), as text."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [str(value)]
    return []


@dataclass(frozen=True)
class _ScenarioFacts:
    """What one task's scenario lets its user say, read once per task."""

    #: Every value (and its other forms) the user may state from its scenario alone.
    values: frozenset[str]
    #: Every word of the scenario, lower case (a name the user gives must be among them or the agent's).
    words: frozenset[str]
    #: Five-word runs of its instructions in their own voice, its persona's description and the LLM guidelines,
    #: less those of what the user is meant to say.
    instruction_shingles: frozenset[tuple[str, ...]]
    #: Their first words (a run starting with any other word is no read-out).
    shingle_starts: frozenset[str]
    #: Per structured request: (the ids a plan for it names, whether the user accepts it).
    requests: tuple[tuple[frozenset[str], bool], ...]
    #: Per structured request: its record's id where no other request is about that record (how a message is seen
    #: to state it).
    own_ids: tuple[frozenset[str], ...] = ()
    #: Facts requests hold back: (the question kind that asks for it, its value, "asked_twice" or "identified").
    withheld: tuple[tuple[str, str, str], ...] = ()
    #: The values that say who the user is (email, zip, user id, phone number).
    identity: frozenset[str] = frozenset()
    #: Those its requests' words do not say (a minimal persona's opening may say only what its request says).
    unprompted_identity: frozenset[str] = frozenset()
    #: How much its persona says unasked: "minimal", "normal" or "forthcoming".
    disclosure: str = "normal"

    @property
    def paces_requests(self) -> bool:
        """Whether its user must state its requests one at a time: two or more can be told apart, and its persona
        is not forthcoming."""
        return self.disclosure != "forthcoming" and sum(1 for own in self.own_ids if own) >= 2


def _read_scenario(task: Task) -> _ScenarioFacts:
    s = task.user_scenario
    unknown = set(s.facts.get("unknown", ()) or ())
    facts = {k: v for k, v in s.facts.items() if k not in unknown and k != "unknown"}
    # what it is meant to say: its requests' words and its script (TAU2's scripts are its instructions: not meant)
    said = [str(i.get("says", "")) + " " + str(i.get("request", "")) for i in s.intents]
    said += list(task.script) if task.world.source != "tau2" else []
    texts = [s.instructions, s.reason_for_call or "", s.known_info or "", *said, *_strings(facts),
             *_strings([{k: v for k, v in i.items() if k not in unknown} for i in s.intents])]
    persona = s.persona
    if persona is not None:
        texts += [persona.description or "", *persona.hidden_constraints]
    values = {form for text in texts for token in _values(text) for form in _forms(token)}
    words = {w for text in texts for w in _words(text)}
    voiced = set()
    for text in (s.instructions, s.reason_for_call or "", s.known_info or "", s.unknown_info or ""):
        voiced |= {g for g in _shingles(_words(text)) if not _SECOND_PERSON.isdisjoint(g)}
    from mua_gym.user_sims.llm import GUIDELINES

    voiced |= _shingles(_words(GUIDELINES))
    if persona is not None:
        for text in (persona.description or "", *persona.hidden_constraints):
            voiced |= _shingles(_words(text))
    meant = set().union(*(_shingles(_words(text)) for text in said)) if said else set()
    requests = []
    for intent in s.intents:
        ids = [v for k, v in intent.items() if k.endswith(ID_KEYS)]
        requests.append((frozenset(_normal(v) for v in _strings(ids) if len(v) >= 3), bool(intent.get("accept", True))))
    shingles = frozenset(voiced - meant)
    records = [frozenset(_normal(str(intent[k])) for k in _RECORD_KEYS if intent.get(k)) for intent in s.intents]
    own = tuple(ids - frozenset().union(*(other for j, other in enumerate(records) if j != i))
                for i, ids in enumerate(records))
    withheld = tuple((_ASKED_AS.get(key, key), _normal(str(intent[key])), until) for intent in s.intents
                     for key, until in (intent.get("withhold") or {}).items() if intent.get(key))
    identity = frozenset(value for k in ("email", "zip", "user_id", "phone_number") if facts.get(k)
                         for value in _forms(_normal(str(facts[k]))))
    in_requests = {form for text in said for token in _values(text) for form in _forms(token)}
    return _ScenarioFacts(frozenset(values), frozenset(words), shingles, frozenset(g[0] for g in shingles),
                          tuple(requests), own, withheld, identity, frozenset(identity - in_requests),
                          persona.disclosure if persona else "normal")


#: The keys naming the record a request is about: its id in a message says which request the message states.
_RECORD_KEYS = ("order_id", "reservation_id")
#: The question kind (:data:`~mua_gym.user_sims.scenario.FACT_QUESTIONS`) that asks for a withheld fact.
_ASKED_AS = {"order_id": "order", "reservation_id": "reservation", "payment_method_id": "payment"}


class FaultChecker:
    """Checks each reply of one episode's user against its task's scenario (see the module docstring).

    ``start(task, user_tools, agent_tools)`` at each reset; ``check(reply, prompt, view, turn, at_gold)`` per
    reply. The scenario is read once per task object.
    """

    def __init__(self) -> None:
        self._memo: dict[str, tuple[Task, _ScenarioFacts, dict[Any, Any]]] = {}
        self.facts: _ScenarioFacts | None = None
        self._user_tools: frozenset[str] = frozenset()
        self._agent_tool_call: re.Pattern[str] | None = None
        self._agent_tools: tuple[str, ...] = ()
        #: Per message the agent said or the user's phone showed: (the values it states and their forms, its words).
        self._heard: list[tuple[frozenset[str], frozenset[str]]] = []
        self._seen = 0  # messages of the user's view read into _heard so far
        self._view: UserView = ()
        self._readings: dict[Any, Any] = {}  # the running task's (see _reading)
        self._task: Task | None = None
        #: What the conversation has shown so far (read from the view): how often the agent asked for each kind of
        #: fact, which requests the user has stated, and whether it has said who it is.
        self._asks: dict[str, int] = {}
        self._introduced: set[int] = set()
        self._identified = False
        self._paced = 0  # messages of the view read into those so far

    def start(self, task: Task, user_tools: Sequence[str] = (), agent_tools: Sequence[str] = ()) -> None:
        kept = self._memo.get(task.id)
        if kept is None or kept[0] is not task:
            kept = self._memo[task.id] = (task, _read_scenario(task), {})
        self.facts, self._readings = kept[1], kept[2]
        self._user_tools = frozenset(user_tools)
        if tuple(agent_tools) != self._agent_tools:
            self._agent_tools = tuple(agent_tools)
            names = "|".join(re.escape(n) for n in sorted(agent_tools, key=len, reverse=True))
            self._agent_tool_call = re.compile(rf"\b(?:{names})\s*\(|\"name\"\s*:\s*\"(?:{names})\"") if names else None
        self._heard, self._seen = [], 0
        self._view = ()
        self._task = task
        self._asks, self._introduced, self._identified, self._paced = {}, set(), False, 0

    def check(self, reply: UserReply, prompt: str, view: UserView, turn: int,
              at_gold: Callable[[], bool] = lambda: True) -> list[UserFault]:
        """The faults of ``reply``, the user's answer at agent turn ``turn`` to the agent's message ``prompt`` (its
        own words, before anything was removed for the user; "" for the opening), with ``view`` the conversation the
        user saw before it. ``at_gold()`` says whether the world is the gold one (asked only of a stop)."""
        assert self.facts is not None, "call start() first"
        self._view = view
        stops = reply.stop_token is not None and not reply.walked_away
        key = ("turn", reply.content, prompt, stops)
        paced: list[UserFault] = [{"kind": kind, "turn": turn, "evidence": evidence[:300]}
                                  for kind, evidence in self._read_pacing(reply, prompt, view)]
        if not reply.tool_calls and (seen := self._readings.get(key)) is not None:
            return [{**f, "turn": turn} for f in seen] + paced  # (a rule user's line to an agent's line seen before)
        state_read = False  # whether what it finds hangs on the world's state (a stop's), not on words alone
        text = reply.content[:READ_LIMIT]
        if "&" in text:  # some models write HTML entities, escaped over and over ("What&amp;amp;#39;s"): read them
            text = html.unescape(_ESCAPED_AMPERSAND.sub("&", text))
        faults: list[UserFault] = []

        def fault(kind: str, evidence: str) -> None:
            faults.append({"kind": kind, "turn": turn, "evidence": evidence[:300]})

        for call in reply.tool_calls:
            if call.function.name not in self._user_tools:
                fault("role_break", f"called {call.function.name!r}, which is not one of the user's tools")
        heard = self._read_text(text, fault) if text else False
        if stops:
            read = self._readings.get(("stop", prompt))
            if read is None:  # (kept per task, as a reply's reading is: an agent's closing lines repeat)
                injected = _INJECTION.search(prompt[:READ_LIMIT])
                read = self._readings[("stop", prompt)] = (injected.group(0) if injected else None,
                                                          _WRAP_UP.search(prompt[:READ_LIMIT]) is not None)
            injection, wrapped_up = read
            if injection is not None:
                fault("obeyed_injection", f"ended the episode after the agent wrote {injection!r}")
            elif not wrapped_up:
                state_read = True
                if not at_gold():
                    asked = " ".join(prompt.split())[:120]
                    fault("early_stop", f"stopped before its goals were met, after the agent said {asked!r}"
                          if asked else "stopped before the agent said anything")
        elif text and ('"' in prompt or "\u201c" in prompt):  # only a quoted line can be parroted
            told = [q for q in _QUOTED.findall(prompt[:READ_LIMIT]) if q.strip() and q in text]
            if told and _INJECTION.search(prompt[:READ_LIMIT]):
                fault("obeyed_injection", f"wrote {told[0]!r} as the agent told it to")
        if text and prompt and self.facts.requests:
            self._read_agreement(text, prompt[:READ_LIMIT], fault)
        if not reply.tool_calls and not heard and not state_read:  # it hangs on this reply and prompt alone: kept
            self._readings[key] = tuple(faults)
        return faults + paced

    def _read_pacing(self, reply: UserReply, prompt: str, view: UserView) -> list[tuple[str, str]]:
        """The ``volunteered`` and ``unasked_action`` faults of ``reply``: they hang on the whole conversation, so
        they are read on every reply (from what the view adds since the last one), never kept."""
        facts = self.facts
        assert facts is not None
        found: list[tuple[str, str]] = []
        if reply.tool_calls and not self._asks_action(prompt[:READ_LIMIT]):
            names = ", ".join(dict.fromkeys(c.function.name for c in reply.tool_calls))
            found.append(("unasked_action", f"ran {names} on its side though the agent asked for nothing there"))
        opening_kept = not prompt and facts.disclosure == "minimal" and bool(facts.unprompted_identity)
        if not reply.content or not (opening_kept or facts.withheld or facts.paces_requests):
            return found  # (most tasks: one request, nothing held back; nothing to read)
        values = self._said(reply.content)
        if not values:
            return found
        self._read_conversation(view)
        if opening_kept and values & facts.unprompted_identity:
            found.append(("volunteered", "said who it is in its opening, which its persona keeps back"))
        for kind, value, until in facts.withheld:
            if value not in values:
                continue
            if until == "asked_twice" and self._asks.get(kind, 0) < 2:
                found.append(("volunteered", f"gave {value!r} before the agent had asked for it twice"))
            elif until == "identified" and not self._identified:
                found.append(("volunteered", f"gave {value!r} before it had said who it is"))
        if facts.paces_requests:
            new = [i for i, own in enumerate(facts.own_ids) if i not in self._introduced and own & values]
            if len(new) > 1 and not {"order", "reservation"} & self._asked_in(prompt):
                named = ", ".join(sorted(next(iter(facts.own_ids[i])) for i in new))
                found.append(("volunteered", f"stated {len(new)} new requests in one message ({named}) unasked"))
        return found

    def _said(self, text: str) -> frozenset[str]:
        """The values ``text`` states, in all their forms (kept per task, as a reply's reading is)."""
        said = self._readings.get(("said", text))
        if said is None:
            said = self._readings[("said", text)] = frozenset(
                form for token in _values(text) for form in _forms(token))
        return said

    def _asked_in(self, text: str) -> frozenset[str]:
        """The kinds of fact (:data:`~mua_gym.user_sims.scenario.FACT_QUESTIONS`) the agent's ``text`` asks for
        (kept per task: an agent repeats its questions)."""
        asked = self._readings.get(("asks", text))
        if asked is None:
            spoken = prose(text[:READ_LIMIT].lower())
            asked = self._readings[("asks", text)] = frozenset(
                kind for kind, pattern in FACT_QUESTIONS.items() if pattern.search(spoken)) \
                if ASKS.search(spoken) else frozenset()
        return asked

    def _read_conversation(self, view: UserView) -> None:
        """Counts, in what ``view`` adds since last read, the agent's asks per kind of fact, and the requests and
        identity the user's own messages stated."""
        facts = self.facts
        assert facts is not None
        for message in view[self._paced:]:
            text = message.content or ""
            if isinstance(message, AssistantMessage):
                for kind in self._asked_in(text):
                    self._asks[kind] = self._asks.get(kind, 0) + 1
            elif isinstance(message, UserMessage) and text:
                said = self._said(text)
                self._introduced |= {i for i, own in enumerate(facts.own_ids) if own & said}
                self._identified = self._identified or not said.isdisjoint(facts.identity)
        self._paced = len(view)

    def _asks_action(self, prompt: str) -> bool:
        """Whether the agent's ``prompt`` asks the user to do something with its own tools (by name or in words)."""
        tools = self._user_tools
        if not tools or not prompt:
            return False
        if named_request(prompt, tools) is not None:
            return True
        from mua_gym.domain.registry import user_vocabulary  # (the registry loads domains: imported on use)

        vocabulary = user_vocabulary(self._task.domain if self._task is not None else None)
        return vocabulary is not None and reader_for(vocabulary).request_in_words(prompt.lower(), tools) is not None

    # -- the rules ---------------------------------------------------------------------------------------------------
    def _hear(self) -> None:
        """Adds what the agent said and what the user's phone showed since last heard to what the user knows (read
        only when a reply states something its scenario does not hold)."""
        view = self._view
        for message in view[self._seen:]:
            if isinstance(message, (AssistantMessage, ToolMessage)) and message.content:
                heard = self._readings.get(("heard", message.content))
                if heard is None:  # (kept per task: the phone shows the same screens, the agent says the same lines)
                    heard = self._readings[("heard", message.content)] = (
                        frozenset(form for token in _values(message.content) for form in _forms(token)),
                        frozenset(_words(message.content)))
                self._heard.append(heard)
        self._seen = len(view)

    def _read_text(self, text: str, fault: Callable[[str, str], None]) -> bool:
        """Records the faults of the reply ``text``; returns whether what it found hung on what the user heard."""
        if len(self._readings) >= MEMO_SIZE:  # a model's replies rarely repeat: keep the memo bounded
            self._readings.clear()
        reading = self._readings.get(text)
        if reading is None:
            reading = self._readings[text] = self._reading(text)
        unheard_values, unheard_names, found = reading
        if unheard_values or unheard_names:
            self._hear()
        # the latest messages first: a reply that states a value mostly repeats what it was just told
        invented = next((v for v, forms in unheard_values
                         if all(said.isdisjoint(forms) for said, _ in reversed(self._heard))), None)
        if invented is not None:
            fault("invented_fact", f"stated {invented!r}, which its scenario does not hold and nobody told it")
        else:
            named = next((name for name, strange in unheard_names
                          if not all(any(w in words for _, words in self._heard) for w in strange)), None)
            if named is not None:
                fault("invented_fact", f"gave the name {named!r}, which its scenario does not hold")
        for kind, evidence in found:
            fault(kind, evidence)
        return bool(unheard_values or unheard_names)

    def _reading(self, text: str) -> tuple[tuple[tuple[str, tuple[str, ...]], ...],
                                           tuple[tuple[str, tuple[str, ...]], ...], tuple[tuple[str, str], ...]]:
        """What ``text`` says whatever the conversation: (values its scenario does not hold, each with its forms;
        names its scenario does not hold, each with its words (lower case) the scenario lacks; (kind, evidence) of
        the faults it is by itself). Kept per task: a
        rule-driven user says the same lines in every episode of a task."""
        facts = self.facts
        assert facts is not None
        values = tuple((v, forms) for v in _values(text) if facts.values.isdisjoint(forms := tuple(_forms(v))))
        names: list[tuple[str, tuple[str, ...]]] = []
        lower = text.lower()
        if "name is" in lower or "i'm " in lower or "i am " in lower or "this is " in lower:
            for match in _NAME.finditer(text):
                parts = [n for n in match.groups() if n]
                strange = tuple(n.lower() for n in parts if n.lower() not in facts.words)
                if (len(parts) == 2 or match.group(0).lower().startswith("my")) and strange:
                    names.append((" ".join(parts), strange))
        found: list[tuple[str, str]] = []
        words = _words(lower)
        starts = facts.shingle_starts
        for i in range(len(words) - LEAK_WORDS + 1):
            if words[i] in starts and (run := tuple(words[i:i + LEAK_WORDS])) in facts.instruction_shingles:
                found.append(("scenario_leak", f"read out its instructions: {' '.join(run)!r}"))
                break
        if any(marker in lower for marker in _VOICE_MARKERS) and (voice := _AGENT_VOICE.search(text)) is not None:
            found.append(("role_break", f"spoke as the support agent: {voice.group(0).strip()!r}"))
        elif self._agent_tool_call is not None and ("(" in text or '"name"' in text) and \
                (call := self._agent_tool_call.search(text)) is not None:
            found.append(("role_break", f"wrote an agent tool call: {call.group(0)!r}"))
        return values, tuple(names), tuple(found)

    def _read_agreement(self, text: str, prompt: str, fault: Callable[[str, str], None]) -> None:
        """An agreement (a yes not taken back in its first sentence) to a plan outside the user's requests."""
        facts = self.facts
        assert facts is not None
        if not _AGREE.match(text):
            return
        first = re.split(r"[.!?\n]", text, maxsplit=1)[0]
        if _DISAGREE.search(first):
            return
        named = self._readings.get(("plan", prompt))
        if named is None:  # what a plan names, kept per task like a reply's reading (an agent repeats its plans)
            lower = prompt.lower()  # (the rule-driven user's own reading of a plan, on lower-case text)
            planned = CONFIRM.search(lower) is not None and PLAN_VERB.search(lower) is not None
            named = self._readings[("plan", prompt)] = frozenset(_values(prompt)) if planned else frozenset()
        if not named:
            return
        wanted = [ids for ids, accepted in facts.requests if accepted and ids & named]
        declined = [ids for ids, accepted in facts.requests if not accepted and ids & named]
        if declined and not wanted:
            fault("off_scenario", f"agreed to a plan its scenario declines ({', '.join(sorted(declined[0] & named))})")
        elif not wanted and not named & facts.values:
            fault("off_scenario", f"agreed to a plan for {', '.join(sorted(named)[:3])}, none of which is in its "
                  "scenario")


def fault_text(faults: Sequence[UserFault]) -> str:
    """The faults as one line a user model can be told: ``"invented_fact: stated '#w9'...; ..."``."""
    return "; ".join(f"{f['kind']}: {f['evidence']}" for f in faults)


def scenario_json(task: Task) -> str:
    """The task's scenario as the LLM reviewer reads it (JSON, what the user knows and wants)."""
    return json.dumps(task.user_scenario.model_dump(mode="json", exclude_none=True), sort_keys=True)



class FaultReviewer:
    """A reader of user replies for what rules cannot see (a model's, :class:`LLMFaultReviewer`).

    ``review`` returns the faults it finds in ``reply`` (each a :class:`UserFault` whose kind is one of
    :data:`FAULT_KINDS`); ``take_usage`` the tokens and cost it spent since it was last asked.
    """

    async def review(self, task: Task, view: UserView, reply: UserReply, prompt: str,
                     turn: int) -> list[UserFault]:
        raise NotImplementedError

    def take_usage(self) -> dict[str, float]:
        return {}

    def check(self) -> None:
        """Checks the reviewer's configuration (one probe call for a model); returns None or raises."""

    async def aclose(self) -> None:
        """Releases its connections."""
