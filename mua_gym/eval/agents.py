"""Reference agents: an oracle that replays a task's gold actions, a random baseline, and any LLM.

Every agent has ``reset(info)`` (the info that ``env.reset`` returned) and ``act(observation) -> action``
(the observation that ``reset`` or ``step`` returned; the action goes to ``env.step``).
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any, Iterable, Iterator

import numpy as np

from mua_gym.kit.fairness import ARGUMENT_QUESTIONS
from mua_gym.llm.client import AgentModelError, acall, add_usage, call, probe, split_call_limits
from mua_gym.llm.redact import Redactor
from mua_gym.task import Task, leaf_values

__all__ = ["Agent", "AgentError", "FairAgent", "LiteLLMAgent", "OracleAgent", "RandomAgent", "check_agent_spec",
           "make_agent"]


class Agent:
    """Plays the agent's side of episodes: ``reset(info)`` at each start, then one action per ``act``.

    ``stopped``: True once the agent has ended the episode itself, as a trainer's loop ends a rollout (a reply
    with no tool call, a token budget); a driver (the eval engine) then scores the world as it stands instead
    of stepping the action. ``stop_reason`` says why.
    """

    stopped: bool = False
    stop_reason: str | None = None

    def reset(self, info: dict[str, Any]) -> None:
        """Called with ``env.reset``'s info at the start of each episode."""

    def act(self, observation: list[dict[str, Any]]) -> Any:
        raise NotImplementedError

    async def aact(self, observation: list[dict[str, Any]]) -> Any:
        return self.act(observation)


class OracleAgent(Agent):
    """Replays the task's gold actions, one call per turn, and talks like a polite agent.

    Before the first state-changing call it states the plan and asks for confirmation (as the policies
    require); at the end it tells the user what it found, saying every string the task requires the agent
    to communicate. On a correct task it scores 1.0.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        self.reset({})

    def reset(self, info: dict[str, Any]) -> None:
        from mua_gym.domain.registry import get_domain

        domain = get_domain(self.task.domain)
        tools = domain.tools
        self._terminal = domain.terminal_tools
        # The user's own gold actions (dual control) become instructions to the user, in order.
        self._pending = [a for a in self.task.gold_actions if a.requestor in ("assistant", "user")]
        self._writes = [a for a in self._pending
                        if a.requestor == "assistant" and a.name in tools and tools[a.name].kind == "write"]
        self._confirmed = not self._writes
        self._step = 0
        self._summarised = False

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        if self._pending and not self._summarised and self._pending[0].name in self._terminal:
            return self._summary()  # a terminal call ends the episode: what must be told is told first
        if self._pending and not self._confirmed and self._pending[0] is self._writes[0]:
            self._confirmed = True
            plan = "; ".join(f"{a.name} with {json.dumps(a.arguments)}" for a in self._writes)
            return {"role": "assistant", "content": f"Here is what I will do: {plan}. Shall I proceed?"}
        if self._pending and self._pending[0].requestor == "user":
            action = self._pending.pop(0)
            return {"role": "assistant", "content": f"Please do this on your phone: {action.name}"
                                                    f"({json.dumps(action.arguments)})."}
        if self._pending:
            action = self._pending.pop(0)
            self._step += 1
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"oracle_{self._step}", "type": "function",
                "function": {"name": action.name, "arguments": json.dumps(action.arguments)},
            }]}
        if not self._summarised:
            return self._summary()
        return {"role": "assistant", "content": "Is there anything else I can help you with today?"}

    def _summary(self) -> dict[str, Any]:
        """The closing message: every string the task requires the agent to tell."""
        self._summarised = True
        facts = self.task.evaluation.communicate_info
        told = f" Here is what you asked for: {', '.join(facts)}." if facts else ""
        return {"role": "assistant", "content": f"Thank you for your patience; that is all done.{told}"}


#: How often the ``fair-retry`` agent makes a failed call again.
RETRIES = 8
#: The errors a client retries: a timeout, throttling, a server error, an unreadable reply, or a service that says
#: it did nothing.
TRANSIENT = re.compile(r"timed out|\b429 Too Many|\b50[0-4] [A-Z]|rate limit|could not parse|"
                       r"request was not applied|nothing was changed", re.IGNORECASE)
#: What makes the user's answer to a plan a change of mind ("Actually, ... instead"): the plan is stated again.
CHANGED_MIND = re.compile(r"\b(?:actually|instead|changed my mind)\b", re.IGNORECASE)
#: What a fair agent writes for an argument no reward compares (a transfer summary): its own words.
OWN_WORDS = "The customer needs help that my tools cannot give; please take over."


#: How many look-ups a fair agent makes for one value it has not seen, and for a whole episode.
LOOKUPS_PER_VALUE = 12
LOOKUPS_PER_EPISODE = 40
#: Arguments that identify the user: a fair agent hears these from the user (it authenticates them), never looks
#: them up.
IDENTITY = frozenset({"user_id", "email", "first_name", "last_name", "zip", "phone_number"})
#: The example value a tool schema gives an argument ("... e.g. 'JFK'.").
_EXAMPLE = re.compile(r"e\.g\.,? '([^']+)'")
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: How many distinct numbers of one result key a fair agent adds up (a few items' prices, a few refunds).
MAX_SUM_TERMS = 16
_RUNS = re.compile(r"[A-Z][a-z]+|[a-z]+|[A-Z]+|\d+|.", re.DOTALL)


def _shape(example: str) -> re.Pattern[str] | None:
    """A pattern for values shaped like a schema's ``example`` (an email, a capitalised name, a code of capitals
    and digits, digits and separators of the same lengths), or None for an example with spaces or none."""
    if not example or " " in example:
        return None
    if "@" in example:
        body = _EMAIL
    elif re.fullmatch(r"[A-Z0-9]+", example) and re.search(r"\d", example) and re.search(r"[A-Z]", example):
        body = rf"[A-Z0-9]{{{len(example)}}}"
    else:
        exact = re.fullmatch(r"[\d\W]+", example) is not None  # a zip, a date, a phone number: lengths matter
        parts = []
        for run in _RUNS.findall(example):
            if run.isdigit():
                parts.append(rf"\d{{{len(run)}}}" if exact else r"\d+")
            elif run[0].isupper() and run[1:].islower():
                parts.append(r"[A-Z][a-z]+")
            elif run.islower():
                parts.append(r"[a-z]+")
            elif run.isupper():
                parts.append(rf"[A-Z]{{{len(run)}}}" if len(run) == len(example) else r"[A-Z]+")
            else:
                parts.append(re.escape(run))
        body = "".join(parts)
    return re.compile(rf"(?<![\w@.#-]){body}(?![\w@-]|\.\w)")


def _id_key(key: str) -> str:
    """The argument name a result key's values fill: ``orders`` and ``order_ids`` fill ``order_id``."""
    key = key.lower()
    if key.endswith("_ids"):
        return key[:-1]
    if key.endswith("ies"):
        key = key[:-3] + "y"
    elif key.endswith("s") and not key.endswith("ss"):
        key = key[:-1]
    return key if key.endswith("_id") else f"{key}_id"


def _result_values(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, value) for every string or number in a tool result, under its own key and, for values in a list or
    keyed collection (``orders``, ``variants``) and their ``id`` fields, under the id argument the collection
    names (``order_id``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if key and isinstance(v, dict) and re.search(r"\d", str(k)):  # a collection keyed by id
                yield _id_key(key), str(k)
            if key and k == "id" and not isinstance(v, (dict, list)):
                yield _id_key(key), str(v)
            yield from _result_values(v, str(k) if not (key and re.search(r"\d", str(k))) else key)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (str, int, float)) and not isinstance(item, bool) and key:
                yield _id_key(key), str(item)
            yield from _result_values(item, key)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool) and key:
        yield key, str(value)


def next_days(value: str) -> list[str]:
    """The days before and after an ISO date (``"2024-05-23"`` gives the 22nd and the 24th); none for other text."""
    if not _DATE.fullmatch(value):
        return []
    try:
        day = datetime.date.fromisoformat(value)
    except ValueError:
        return []
    return [(day + datetime.timedelta(days=d)).isoformat() for d in (-1, 1)]


def is_subset_sum(numbers: Iterable[float], target: float) -> bool:
    """Whether some two or more of ``numbers`` (their sizes, in cents) add up to ``target``: one pass per number over
    the sums reachable so far, none above the target."""
    goal = round(abs(target) * 100)
    reachable: dict[int, int] = {0: 0}  # a sum -> how many terms make it: 0, 1, or 2 for two or more
    for cents in sorted({round(abs(x) * 100) for x in numbers} - {0}):
        for total, terms in list(reachable.items()):
            new = total + cents
            if new <= goal:
                reachable[new] = max(reachable.get(new, 0), min(terms + 1, 2))
    return reachable.get(goal, 0) == 2


def same(a: re.Pattern[str] | None, b: re.Pattern[str] | None) -> bool:
    """Whether two argument shapes are one and the same pattern."""
    return a is not None and b is not None and a.pattern == b.pattern


def adjacent(x: tuple[int, int, int], y: tuple[int, int, int], texts: list[str]) -> bool:
    """Whether the user said the value at ``y`` right after the one at ``x`` (one space apart, one message); values
    that a result listed under their own keys (``origin``, ``destination``) need not be."""
    return x[0] < 0 and y[0] < 0 or x[0] == y[0] >= 0 and texts[x[0]][x[2]:y[1]] == " "


class FairAgent(OracleAgent):
    """Plays the task's gold calls in order, like :class:`OracleAgent`, but uses a value only once it has seen it.

    Of the task it reads the gold calls' names and argument names (its plan), and their values only to check
    whether each has appeared in the conversation: the policy, the tool schemas, user messages and tool results,
    matched by the generator's fairness rules (:class:`mua_gym.kit.fairness.Knowledge`). It never reads the scenario's
    facts. Before a call with unseen values it asks the user for those arguments in plain words
    (:data:`mua_gym.kit.fairness.ARGUMENT_QUESTIONS`; other arguments by their name in words), twice (a user may
    hold a fact back, or give a wrong one, the first time); if they are still unseen it asks whether there is
    anything else (the user then states its next request) and asks again, as often as the task has gold calls;
    before a write it also states the plan as far as it knows it (a user may change its request on hearing it).
    It makes a write only once the user agrees to its full plan; an answer that changes the request
    (:data:`CHANGED_MIND`) gets the plan stated again. A value never seen is never used:
    the agent gives up (``gave_up`` lists the values), apologises and only asks whether there is anything else from
    then on, so the episode fails. Before each write it states that call with its arguments (OracleAgent's plan
    format) and asks to proceed; it makes the write only if the user says yes. Arguments that no reward compares
    (outside ``compare_args``) it fills with its own words (:data:`OWN_WORDS`). It ends like OracleAgent, saying
    the task's communicate strings, if it has seen each (otherwise it gives up).

    ``retries``: how often it makes a call again, unchanged, when the call came back with an error a client
    would retry (:data:`TRANSIENT`: a timeout, throttling, a 5xx, an unreadable reply, or a service saying it
    did nothing, as :class:`mua_gym.perturbations.ToolFaults` fails calls); a domain's own refusal is final.
    0 by default.
    """

    def __init__(self, task: Task, retries: int = 0, lookups: bool | None = None) -> None:
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        self.retries = retries
        #: Whether it looks up what it was not told (default: on TAU2's and other outside tasks, whose gold plans
        #: leave out the look-ups; off on generated tasks, whose gold calls show every value).
        self.look_up = task.world.source != "generated" if lookups is None else lookups
        super().__init__(task)

    def reset(self, info: dict[str, Any]) -> None:
        from mua_gym.kit.fairness import Knowledge, episode_knowledge
        from mua_gym.domain.registry import get_domain

        super().reset(info)
        domain = get_domain(self.task.domain)
        self._tool_kinds = {name: domain.tools[name].kind for name in domain.tools.tools}
        self.seen = Knowledge(episode_knowledge(domain, self.task.world.source, info))
        self.gave_up: list[str] = []
        self._attempts = 0  # questions and nudges made for the next call
        self._proposed = False  # the next call (a write) was stated and awaits the user's answer
        self._replanned = 0  # plans stated again for the next call, after the user changed its mind
        self._done_failing = False
        self._last_call: dict[str, Any] | None = None  # the call just made, to make again if it failed
        self._retried = 0
        tools = info.get("tools") or domain.toolkit(self.task.world.source).schemas()
        self._readers = [(f["name"], list(f.get("parameters", {}).get("properties", {})),
                          {a: _shape(m.group(1)) for a, spec in f.get("parameters", {}).get("properties", {}).items()
                           if (m := _EXAMPLE.search(str(spec.get("description", ""))))})
                         for f in (t.get("function", t) for t in tools) if self._tool_kinds.get(f["name"]) == "read"]
        self._descriptions = {f["name"]: str(f.get("description", "")).lower()
                              for f in (t.get("function", t) for t in tools)}
        self._values: dict[str, dict[str, int]] = {}  # argument name -> value -> when it was seen (its rank)
        self._user_texts: list[str] = []
        self._looked: set[str] = set()  # the look-ups made, as name and arguments
        self._looking_for: Any = None  # the value the last look-ups were for, and how many were made for it
        self._looks_for_value = 0
        #: The look-ups made this episode, in order: (tool, arguments).
        self.lookups: list[tuple[str, dict[str, Any]]] = []
        self._derived: set[str] = set()  # values worked out from what was seen: the days next to a seen date
        self._amounts: dict[str, set[float]] = {}  # result key -> the numbers seen under it, to add up
        self._totals: dict[tuple[float, int], bool] = {}

    def knows(self, value: Any) -> bool:
        """Whether the agent can state ``value``: the conversation showed it (:class:`mua_gym.kit.fairness.Knowledge`),
        it is the day before or after a date a result showed, or it is a total of up to :data:`MAX_SUM_TERMS`
        distinct numbers that results listed under one key (the prices of the items returned, the refunds of
        several changes)."""
        if self.seen.knows(value) or str(value).lower() in self._derived:
            return True
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            return False
        if number is None or not math.isfinite(number):  # ("nan", "Infinity": words, not totals)
            return False
        key = (round(number, 2), sum(map(len, self._amounts.values())))  # the same question on the same numbers
        if key not in self._totals:
            self._totals[key] = any(len(group) <= MAX_SUM_TERMS and is_subset_sum(group, number)
                                    for group in self._amounts.values())
        return self._totals[key]

    def _unseen(self, action: Any) -> list[tuple[str, Any]]:
        """(argument, value) for each leaf of ``action``'s compared arguments that the conversation has not shown."""
        from mua_gym.kit.fairness import free_arguments, leaf_values

        free = free_arguments(action)
        return [(name, leaf) for name, value in action.arguments.items() if name not in free
                for leaf in leaf_values(value) if not self.knows(leaf)]

    def _arguments(self, action: Any) -> dict[str, Any]:
        """The call's arguments, with the ones no reward compares in the agent's own words."""
        from mua_gym.kit.fairness import free_arguments

        free = free_arguments(action)
        return {k: (OWN_WORDS if k in free and isinstance(v, str) else v) for k, v in action.arguments.items()}

    def _is_write(self, action: Any) -> bool:
        return action.requestor == "assistant" and self._tool_kinds.get(action.name) == "write"

    def _say(self, text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": text}

    def _learn(self, observation: list[dict[str, Any]]) -> str:
        """Adds what the observation shows (not the agent's own words) and returns the user's last reply."""
        reply = ""
        for message in observation:
            content = message.get("content")
            if message.get("role") in ("system", "user", "tool") and isinstance(content, str):
                self.seen.learn(content)
                if message.get("role") == "user":
                    reply = content
                    self._user_texts.append(content)
                elif message.get("role") == "tool":
                    try:
                        result = json.loads(content)
                    except ValueError:
                        result = content
                    if isinstance(result, (str, int, float)) and not isinstance(result, bool):
                        for key in self._named(observation):  # a bare value: what the tool's name says it finds
                            self._note(key, str(result))
                    for key, value in _result_values(result):
                        self._note(key, value)
                        self._work_out(key, value)
                    self._note_listing(result)
        return reply

    def _work_out(self, key: str, value: str) -> None:
        """Keeps what a result value lets the agent work out: the days next to a date, the number to add up."""
        for day in next_days(value):
            self._derived.add(day)
            self._note(key, day)
        if re.fullmatch(r"-?\d+(?:\.\d+)?", value):
            self._amounts.setdefault(key, set()).add(abs(float(value)))

    def _note_listing(self, result: Any) -> None:
        """A listing that maps names to ids (``list_all_product_types``): the ids of the names the user said, noted
        for each ``<x>_id`` argument whose ``<x>`` the listing tool's name holds (``product_id``)."""
        if self._last_call is None or not isinstance(result, dict) or \
                not all(isinstance(v, str) for v in result.values()):
            return
        tool = self._last_call["function"]["name"]
        said = " ".join(self._user_texts).lower()
        targets = {a for _, own, _ in self._readers for a in own if a.endswith("_id") and a[:-3] in tool}
        for name, value in result.items():
            if re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", said):
                for argument in targets:
                    self._note(argument, value, -1)

    def _named(self, observation: list[dict[str, Any]]) -> list[str]:
        """The argument names that the name of the read call just made holds beside its own arguments
        (``find_user_id_by_email`` finds a ``user_id``); none if the last action was no call."""
        if self._last_call is None:
            return []
        tool, arguments = self._last_call["function"]["name"], json.loads(self._last_call["function"]["arguments"])
        names = {a for _, own, _ in self._readers for a in own} - set(arguments)
        return [a for a in sorted(names) if a in tool]

    def _note(self, name: str, value: str, rank: int | None = None) -> None:
        """Records ``value`` as seen for arguments like ``name``, ranked by when it was first seen."""
        found = self._values.setdefault(name, {})
        if value not in found or rank is not None and rank < found[value]:
            found[value] = len(self._looked) if rank is None else rank

    def _candidates(self, argument: str, shape: re.Pattern[str] | None) -> list[tuple[int, str, tuple[int, int, int]]]:
        """The seen values that could fill ``argument``: (rank, value, where in the user's words or (-1, 0, 0)) for
        values results listed under a matching key, and values the user said shaped like the schema's example."""
        stem = argument.removesuffix("_id")
        out: dict[str, tuple[int, str, tuple[int, int, int]]] = {}
        for key, values in self._values.items():
            other = key.removesuffix("_id")
            if key == argument or argument == "id" and key.endswith("_id") or \
                    key.endswith("_id") and argument.endswith("_id") and (other.startswith(stem + "_")
                                                                          or stem.startswith(other + "_")):
                for value, rank in values.items():
                    if value not in out or rank < out[value][0]:
                        out[value] = (rank, value, (-1, 0, 0))
        for i, text in enumerate(self._user_texts if shape is not None else ()):
            for m in shape.finditer(text):
                out.setdefault(m.group(), (0, m.group(), (i, m.start(), m.end())))
        return sorted(out.values(), key=lambda c: (c[0], c[2], c[1]))

    def _lookup(self, action: Any, unseen: list[tuple[str, Any]]) -> dict[str, Any] | None:
        """The next read call to make to find the first ``unseen`` value of ``action`` (None: a value to tell the
        user), or None (none left to make, the budget spent, or the value one the user must give). Each argument
        of a look-up is a value the conversation has shown (a result's value under a matching key, a value of a
        gold call already seen, or a value the user said shaped like the schema's example); breadth first (the
        earliest seen values first, the pending call's own first), each distinct call once, none that takes the
        value's own argument (``get_flight_status`` cannot find a flight number). A listing that takes
        no arguments is made only for a value to tell, once, after the look-ups that take some."""
        import itertools

        from mua_gym.kit.fairness import leaf_values

        name, value = unseen[0]
        if len(self.lookups) >= LOOKUPS_PER_EPISODE:
            return None
        target = (getattr(action, "name", None), name, value)
        if self._looking_for != target:
            self._looking_for, self._looks_for_value = target, 0
        if self._looks_for_value >= LOOKUPS_PER_VALUE:
            return None
        for gold in self.task.gold_actions:  # the plan's values the conversation has shown
            for argument, given in gold.arguments.items():
                for leaf in leaf_values(given):
                    if isinstance(leaf, str) and leaf and self.knows(leaf):
                        self._note(argument, leaf, -1 if gold is action else None)
        own = {str(leaf) for given in (action.arguments.values() if action is not None else ())
               for leaf in leaf_values(given) if self.knows(leaf)}
        wanted = name.removesuffix("s").removesuffix("_id")  # flights -> flight, order_id -> order
        best: tuple[tuple[int, int, int, int], str, dict[str, Any]] | None = None
        for order, (tool, arguments, shapes) in enumerate(self._readers):
            if not arguments:  # a listing of everything is no look-up of what the conversation showed
                if action is None and f"{tool} {{}}" not in self._looked and best is None:
                    best = ((LOOKUPS_PER_EPISODE, 0, 0, order), f"{tool} {{}}", {"name": tool, "arguments": {}})
                continue
            if any(a.startswith(wanted) for a in arguments):
                continue  # a look-up that needs the value cannot find it
            shows = wanted in self._descriptions.get(tool, "")
            options = [self._candidates(a, shapes.get(a))[:8] for a in arguments]
            for combo in itertools.product(*options):
                if any(same(shapes.get(a), shapes.get(b))
                       and (x[1] == y[1] or not adjacent(x[2], y[2], self._user_texts))
                       for (a, x), (b, y) in itertools.pairwise(zip(arguments, combo))):
                    continue  # two values of one shape (a first and last name, an origin and destination) differ
                call = dict(zip(arguments, (c[1] for c in combo)))
                key = f"{tool} {json.dumps(call, sort_keys=True)}"
                # the earliest seen values first; among those, a tool that says it shows the value's kind, then the
                # more of the pending call's own values the better
                rank = (max(c[0] for c in combo), -shows, -sum(c[1] in own for c in combo), order)
                if key not in self._looked and (best is None or rank < best[0]):
                    best = (rank, key, {"name": tool, "arguments": call})
        if best is None:
            return None
        self._looked.add(best[1])
        self._looks_for_value += 1
        self.lookups.append((best[2]["name"], best[2]["arguments"]))
        return self._tool_call(best[2]["name"], json.dumps(best[2]["arguments"]))

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        from mua_gym.kit.fairness import NEXT_REQUEST

        reply = self._learn(observation)
        last, self._last_call = self._last_call, None
        error = next((str(m.get("content")) for m in observation if m.get("role") == "tool"
                      and str(m.get("content", "")).startswith("Error:")), "")
        if last is not None and self._retried < self.retries and TRANSIENT.search(error):
            self._retried += 1
            return self._tool_call(last["function"]["name"], last["function"]["arguments"])
        self._retried = 0
        if self._done_failing:
            return self._say(NEXT_REQUEST)
        if not self._pending or (self._pending[0].name in self._terminal and not self._summarised):
            if not self._summarised:
                said = self.task.evaluation.communicate_info
                untold = [c for c in said if not self.knows(c)]
                if untold and self.look_up:
                    lookup = self._lookup(None, [("communicate", untold[0])])
                    if lookup is not None:
                        return lookup
                self.gave_up = [f"communicate={c!r}" for c in said if not self.knows(c)]
                if self.gave_up:  # it would have to say what it was never shown
                    self._done_failing = True
                    return self._say("I'm sorry, I could not find all you asked for.")
            return super().act(observation)
        action = self._pending[0]
        if self._proposed:  # the user answered the plan for this write
            self._proposed = False
            if re.match(r"\s*(no\b|nope)", reply.lower()) or "don't do" in reply.lower():
                self._pending.pop(0)
                return self._say("Understood, I will not do that.")
            if re.match(r"\s*yes\b", reply.lower()) or not CHANGED_MIND.search(reply):
                self._replanned = 0
                return self._call(self._pending.pop(0))
            self._replanned += 1  # it wants something else: the plan is stated again, as it now stands
            if self._replanned > 2:
                self.gave_up = [f"{action.name}: the user did not agree to the plan"]
                self._done_failing = True
                return self._say("I'm sorry, I cannot tell what you would like me to do.")
        unseen = self._unseen(action)
        if unseen:
            wanted = [(name, value) for name, value in unseen if name not in IDENTITY]
            missing = {name for name, _ in unseen}
            said = " ".join(self._user_texts).lower()
            known = {k: v for k, v in self._arguments(action).items()  # the plan as far as the user told it
                     if k not in missing and all(str(leaf).lower() in said for leaf in leaf_values(v))}
            # asked twice (a user may hold a fact back the first time); before a write, the plan as far as the user
            # told it (a user may change its mind on hearing it); then "anything else?"; in turn
            cycle = 4 if self._is_write(action) and known else 3
            if wanted and self.look_up and self._attempts % cycle == 1:  # asked, not told, no identity: look it up
                lookup = self._lookup(action, wanted)
                if lookup is not None:
                    return lookup
            if self._attempts > 4 * len(self.task.gold_actions):
                self.gave_up = [f"{action.name}.{name}={value!r}" for name, value in unseen]
                self._done_failing = True
                return self._say("I'm sorry, I cannot continue without that information.")
            self._attempts += 1
            if self._attempts % cycle == 0:
                return self._say(NEXT_REQUEST)
            if self._attempts % cycle == 3:
                return self._say(f"Here is what I will do so far: {action.name} with {json.dumps(known)}. Shall I "
                                 "proceed?")
            asked = dict.fromkeys(ARGUMENT_QUESTIONS.get(name, f"What is the {name.replace('_', ' ')}?")
                                  for name, _ in unseen)
            return self._say(" ".join(asked))
        self._attempts = 0
        if self._is_write(action):
            self._proposed = True
            return self._say(f"Here is what I will do: {action.name} with {json.dumps(self._arguments(action))}. "
                             "Shall I proceed?")
        return self._call(self._pending.pop(0))

    def _call(self, action: Any) -> dict[str, Any]:
        """The call as a tool call (the assistant's) or as an instruction to the user (a phone action)."""
        arguments = self._arguments(action)
        if action.requestor == "user":
            return self._say(f"Please do this on your phone: {action.name}({json.dumps(arguments)}).")
        return self._tool_call(action.name, json.dumps(arguments))

    def _tool_call(self, name: str, arguments: str) -> dict[str, Any]:
        """The assistant message making one call (remembered, to make again if it fails)."""
        self._step += 1
        call = {"id": f"fair_{self._step}", "type": "function", "function": {"name": name, "arguments": arguments}}
        self._last_call = call
        return {"role": "assistant", "content": None, "tool_calls": [call]}


class RandomAgent(Agent):
    """A baseline: random tool calls with arguments of the right JSON types, or random short texts."""

    WORDS = ["hello", "order", "cancel", "please", "id", "confirm", "yes", "help", "email", "refund"]

    def __init__(self, seed: int | None = None, tool_probability: float = 0.5) -> None:
        self.rng = np.random.default_rng(seed)
        self.tool_probability = tool_probability
        self.tools: list[dict[str, Any]] = []

    def reset(self, info: dict[str, Any]) -> None:
        self.tools = list(info.get("tools", []))

    def _value(self, schema: dict[str, Any]) -> Any:
        kind = schema.get("type")
        if kind == "integer":
            return int(self.rng.integers(0, 10))
        if kind == "number":
            return float(np.round(self.rng.uniform(0, 100), 2))
        if kind == "boolean":
            return bool(self.rng.integers(2))
        if kind == "array":
            return [self._value(schema.get("items", {})) for _ in range(int(self.rng.integers(1, 3)))]
        if kind == "object":
            return {k: self._value(v) for k, v in schema.get("properties", {}).items()}
        return str(self.rng.choice(self.WORDS))

    def act(self, observation: list[dict[str, Any]]) -> Any:
        if self.tools and self.rng.random() < self.tool_probability:
            fn = self.tools[int(self.rng.integers(len(self.tools)))]["function"]
            props = fn.get("parameters", {}).get("properties", {})
            args = {k: self._value(v) for k, v in props.items()}
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": "random", "type": "function", "function": {"name": fn["name"], "arguments": json.dumps(args)}}]}
        words = self.rng.choice(self.WORDS, size=int(self.rng.integers(1, 8)))
        return " ".join(str(w) for w in words)


class AgentError(RuntimeError):
    """The agent's model call failed; the text carries no configured key."""


#: The reply cap of an agent whose model is served on this machine (``api_base`` on loopback), unless its keywords
#: set ``max_tokens``.
LOCAL_MAX_TOKENS = 512


def _on_this_machine(api_base: Any) -> bool:
    from urllib.parse import urlsplit

    if not isinstance(api_base, str):
        return False
    try:
        host = urlsplit(api_base).hostname or ""
    except ValueError:
        return False
    return host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.")


class LiteLLMAgent(Agent):
    """Any chat model that litellm reaches (``model`` plus litellm keywords such as ``api_base``). A model served
    on this machine (``api_base`` on loopback) replies in at most :data:`LOCAL_MAX_TOKENS` tokens unless the
    keywords set ``max_tokens``.

    It keeps the conversation, offers the env's tools, and returns the model's message as the action. A failed
    call raises :class:`AgentError` with the configured keys redacted; :meth:`check` probes the model once.
    """

    def __init__(self, model: str, **litellm_kwargs: Any) -> None:
        self.model = model
        self.kwargs = litellm_kwargs
        if _on_this_machine(litellm_kwargs.get("api_base")) and not {"max_tokens", "max_completion_tokens"} & set(
                litellm_kwargs):  # a small local model may write to its context's end: minutes per reply on a CPU
            self.kwargs = {**litellm_kwargs, "max_tokens": LOCAL_MAX_TOKENS}
        self._redact = Redactor.of(litellm_kwargs)
        self.tools: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.usage: dict[str, float] = {}

    def reset(self, info: dict[str, Any]) -> None:
        self.tools = list(info.get("tools", []))
        self.messages = []
        self.usage = {}

    def _request(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        self.messages.extend(observation)
        request = {"model": self.model, "messages": self.messages, **self.kwargs}
        if self.tools:
            request["tools"] = self.tools
        return request

    def _record(self, response: Any) -> dict[str, Any]:
        message = response.choices[0].message
        action: dict[str, Any] = {"role": "assistant", "content": message.content}
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            action["tool_calls"] = [{"id": c.id, "type": "function",
                                     "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"}}
                                    for c in calls]
        add_usage(self.usage, response)
        self.messages.append(action)
        return action

    def check(self) -> None:
        """Makes one tiny call to the model; raises :class:`AgentModelError` (one line, naming the fix) if it fails."""
        probe(self.model, self.kwargs, role="agent", key_hint="api_key=... (--agent-arg api_key=...)",
              error=AgentModelError)

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        """The model's next message, as an action; raises :class:`AgentError` (redacted) once retrying cannot help.

        ``timeout``, ``max_retries`` and ``backoff`` among the keywords bound the call, as for the LLM user
        (:class:`mua_gym.llm.client.CallLimits`); they are not sent to litellm.
        """
        request, limits = split_call_limits(self._request(observation))
        return self._record(call(request, limits, role="agent", error=AgentError, redactor=self._redact))

    async def aact(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        """:meth:`act` on the running event loop."""
        request, limits = split_call_limits(self._request(observation))
        return self._record(await acall(request, limits, role="agent", error=AgentError, redactor=self._redact))


def check_agent_spec(spec: str, **kwargs: Any) -> str:
    """Returns the kind of agent ``spec`` names (``oracle``, ``fair``, ``random``, ``litellm``); raises
    ``ValueError`` if none.

    Cheap: no world, task or model is touched, so callers check a spec before building anything.
    """
    if spec in ("oracle", "fair", "fair-retry", "random"):
        if kwargs:
            raise ValueError(f"the {spec} agent takes no keywords (got {', '.join(sorted(kwargs))}); "
                             "agent keywords are for litellm:<model>")
        return spec
    if spec.startswith("litellm:") and len(spec) > len("litellm:"):
        return "litellm"
    raise ValueError(f"unknown agent {spec!r}: use oracle, fair, fair-retry, random or litellm:<model>")


def make_agent(spec: str, task: Task | None = None, seed: int | None = None, **kwargs: Any) -> Agent:
    """``"oracle"``, ``"fair"`` or ``"fair-retry"`` (the fair agent making a failed call again, up to
    :data:`RETRIES` times; all three need the task), ``"random"``, or ``"litellm:<model>"`` (``kwargs`` go to
    litellm)."""
    kind = check_agent_spec(spec, **kwargs)
    if kind in ("oracle", "fair", "fair-retry"):
        if task is None:
            raise ValueError(f"the {kind} agent needs the task")
        if kind == "oracle":
            return OracleAgent(task)
        return FairAgent(task, retries=RETRIES if kind == "fair-retry" else 0)
    if kind == "random":
        return RandomAgent(seed)
    return LiteLLMAgent(spec.split(":", 1)[1], **kwargs)
