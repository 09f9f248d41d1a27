"""How the scenario user reads an agent's request to do something with its own tools (dual-control domains).

The user acts only when asked to do that very thing:

- a user tool named outright (``toggle_data``, ``set_network_mode_preference({"mode": "4g_5g_preferred"})``) runs
  as named, with the JSON object in brackets as its arguments, unless its clause says not to ("don't run ...");
  arguments that are not a readable JSON object are answered with a question, and nothing runs;
- in words, a sentence that asks (a :data:`REQUEST_WORDS` word) and names a setting of the domain's
  :class:`~mua_gym.domain.vocabulary.UserVocabulary` is either a **check** ("check airplane mode", "what does your
  status bar show?"): the setting's read tool runs and the user reports what it shows, changing nothing; or an
  **action** on that setting ("turn airplane mode off", "reseat the SIM card"): its action tool runs, with the
  arguments its choices read off the sentence. An on/off action is a **set**: the user first reads the setting
  and leaves it alone when it already is as asked ("It's already off"); a bare "toggle" flips it.

A request is read in its clause (the part of the sentence between breaks such as "," "and" "then" "so"): a clause
about the agent's own step ("so I can check your signal", "shall I enable roaming?") or a negated one ("do not",
"don't", "never", "no need to") asks nothing, and the next setting named in the message is looked at instead.

Only the first request of a message is taken (a policy asks for one action at a time). Every pattern is a flat
alternation of words without nested or unbounded repetition (a domain's own patterns should be too), and each
sentence is scanned a fixed number of times, so any text is read in time linear in its length.
"""

from __future__ import annotations

import itertools
import json
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Iterable, Literal

from mua_gym.domain.vocabulary import Choice, Setting, UserVocabulary, Value

__all__ = ["REQUEST_WORDS", "RequestReader", "ToolRequest", "named_request", "reader_for", "request_in_words",
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


@dataclass(frozen=True)
class ToolRequest:
    """What an agent's message asks the user to do with their own tools.

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


def named_request(raw: str, tools: frozenset[str]) -> ToolRequest | None:
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
        return ToolRequest("act", ((name, {}),))
    close = rest.find(")")
    body = rest[1:close] if close >= 0 else rest[1:]
    if not body.strip():
        return ToolRequest("act", ((name, {}),))
    try:
        args = json.loads(body)
    except (ValueError, RecursionError):  # JSONDecodeError, an over-long integer literal, deep nesting
        args = None
    if not isinstance(args, dict):
        return ToolRequest("ask", reply=f"I couldn't make sense of the settings you gave for {name}. What exactly "
                                         "should I do?")
    return ToolRequest("act", ((name, args),))


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


def _switch(setting: Setting, clause: str, sentence: str) -> ToolRequest:
    """What a request about the on/off ``setting`` in ``clause`` asks: a check, a flip, a set (read first, then
    flipped unless already as asked), a cycle, or a question when it says neither on nor off."""
    read_call = ((setting.read, {}),) if setting.read else ()
    if _SWITCH_VERB.search(clause) is None:  # "check whether it is on" describes a state; it asks for none
        if _FLIP_VERB.search(clause) and setting.toggle:
            return ToolRequest("act", ((setting.toggle, {}),))
        return ToolRequest("check", read_call)
    if _CYCLE.search(sentence) and setting.toggle:
        return ToolRequest("set", read_call, setting, cycle=True)
    off, on = _OFF.search(clause), _ON.search(clause)
    if off is None and on is None:
        return ToolRequest("ask", reply="Should I switch it on or off?")
    want = off is None or (on is not None and on.start() < off.start())  # the first state named after the verb
    if setting.toggle:
        return ToolRequest("set", read_call, setting, want=want)
    tool = setting.on_tool if want else setting.off_tool
    return ToolRequest("act", ((tool, {}),)) if tool else ToolRequest("check", read_call)


class RequestReader:
    """One :class:`UserVocabulary`, its patterns compiled once: reads the requests its user understands."""

    def __init__(self, vocabulary: UserVocabulary) -> None:
        self.settings = vocabulary.settings
        self._topic = re.compile("|".join(f"(?P<s{i}>{s.topic})" for i, s in enumerate(self.settings))) \
            if self.settings else None
        self._needed = [frozenset(s.tools) for s in self.settings]
        self._verbs = {s.key: re.compile(s.verbs) for s in self.settings if s.verbs}
        self._states = {s.key: re.compile(s.state, re.IGNORECASE) for s in self.settings if s.state}
        for key, state in self._states.items():
            if state.groups < 1:  # switch_state reads the state from group 1
                raise ValueError(f"the state pattern of setting {key!r} must capture 'on'/'off' (or 'yes'/'no') in a "
                                 f"group: {state.pattern!r}")
        #: Each setting's choices, with their values' patterns compiled.
        self._choices: dict[str, tuple[tuple[Choice, tuple[tuple[Value, re.Pattern[str]], ...]], ...]] = {
            s.key: tuple((c, tuple((v, re.compile(p)) for v, p in c.values)) for c in s.choices) for s in self.settings}

    def request_in_words(self, text: str, tools: frozenset[str]) -> ToolRequest | None:
        """The first request that lower-case ``text`` makes in words, as the user understands it, or None.

        Only settings whose tools the user has count. Linear in ``len(text)``.
        """
        if self._topic is None:
            return None
        for start, end in _sentences_with_requests(text):
            breaks: tuple[list[int], list[int]] | None = None  # the sentence's clause breaks, found at its first topic
            at = start
            # a topic that matches nothing (a nullable pattern) still moves ``at`` on, and past ``end`` it stops: a
            # search from beyond ``end`` would find that empty match at ``end`` again
            while at <= end and (topic := self._topic.search(text, at, end)) is not None:
                at = max(topic.end(), topic.start() + 1)
                index = int(topic.lastgroup[1:])  # type: ignore[index]
                if not self._needed[index].issubset(tools):
                    continue
                if breaks is None:
                    marks = [(m.start(), m.end()) for m in _CLAUSE_END.finditer(text, start, end)]
                    breaks = [m[0] for m in marks], [m[1] for m in marks]
                lo, hi = _clause_bounds(*breaks, topic, start, end)
                if _AGENTS_OWN.search(text, lo, hi) or _NEGATED.search(text, lo, hi):  # the agent's step, "do not"
                    at = max(at, hi)  # nothing in this clause is asked of the user: go on from the next one
                    continue
                setting, clause, sentence = self.settings[index], text[lo:hi], text[start:end]
                if setting.switch:
                    return _switch(setting, clause, sentence)
                return self._action(setting, clause, sentence)
        return None

    def _action(self, setting: Setting, clause: str, sentence: str) -> ToolRequest:
        if setting.action is None:  # a read-only setting (the status bar, a speed test): any request is a check
            return self._calls("check", setting.read, setting, sentence)  # type: ignore[arg-type]
        verbs = self._verbs.get(setting.key)
        if verbs is not None and verbs.search(clause) is None and setting.read:  # named, not asked to act on
            return self._calls("check", setting.read, setting, sentence)
        return self._calls("act", setting.action, setting, sentence)

    def _calls(self, kind: Literal["check", "act"], tool: str, setting: Setting, sentence: str) -> ToolRequest:
        """A ``kind`` request of one call of ``tool`` per set of arguments ``sentence`` gives it (``ask`` where it
        leaves a choice open)."""
        calls = self._arguments(setting, sentence, kind == "check")
        if isinstance(calls, str):
            return ToolRequest("ask", reply=calls)
        return ToolRequest(kind, tuple((tool, arguments) for arguments in calls))

    def _arguments(self, setting: Setting, sentence: str, read: bool) -> list[dict[str, Any]] | str:
        """The arguments of each call of ``setting``'s read tool (``read``) or action that ``sentence`` asks for, in
        order; the question to ask instead where it names no value of a choice without a default."""
        names, options = [], []
        for choice, values in self._choices[setting.key]:
            if read and not choice.read:
                continue
            named = [v for v, pattern in values if pattern.search(sentence)]
            if not named and choice.default is None:
                return choice.question or f"Which {choice.argument.replace('_', ' ')} should I choose?"
            names.append(choice.argument)
            options.append((named if choice.each else named[:1]) or [choice.default])
        return [dict(zip(names, picked)) for picked in itertools.product(*options)]

    def switch_state(self, setting: Setting, read_text: str) -> bool | None:
        """Whether ``setting`` is on, as its read tool's text shows it (None when the text does not say)."""
        pattern = self._states.get(setting.key)
        found = pattern.search(read_text) if pattern is not None else None
        state = found.group(1) if found is not None else None  # None too where the group is optional and unmatched
        return state.lower() in ("on", "yes") if state is not None else None


#: The readers made, by the id of their vocabulary (kept with it, so that id is not reused while it is here).
_READERS: dict[int, tuple[UserVocabulary, RequestReader]] = {}
_READERS_KEPT = 32


def reader_for(vocabulary: UserVocabulary) -> RequestReader:
    """The reader of ``vocabulary``, compiled on first use and kept.

    Found by identity, not by value: a dataclass's hash walks every setting on each call, and a vocabulary declared
    with lists where tuples are meant has none.
    """
    kept = _READERS.get(id(vocabulary))
    if kept is None:
        if len(_READERS) >= _READERS_KEPT:  # many vocabularies made and dropped (tests): compile afresh
            _READERS.clear()
        kept = _READERS[id(vocabulary)] = (vocabulary, RequestReader(vocabulary))
    return kept[1]


def request_in_words(text: str, tools: frozenset[str], vocabulary: UserVocabulary) -> ToolRequest | None:
    """The first request of ``vocabulary`` that lower-case ``text`` makes in words, or None (see
    :meth:`RequestReader.request_in_words`)."""
    return reader_for(vocabulary).request_in_words(text, tools)


def switch_state(setting: Setting, read_text: str, vocabulary: UserVocabulary) -> bool | None:
    """Whether ``setting`` of ``vocabulary`` is on, as its read tool's text shows it (None when it does not say)."""
    return reader_for(vocabulary).switch_state(setting, read_text)
