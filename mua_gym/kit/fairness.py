"""Is a task fair: could an agent that knows only the conversation make every gold call?

A task is fair when every leaf value of every gold call's arguments (strings, numbers, list items, nested dict
values) is *known* at that call, and every string the agent must communicate is known at the end. What an agent
is told:

- the policy text and the tool schemas (the agent's and, in dual control, the user's);
- the result of every earlier gold call: the agent's own, and the user's phone actions and checks, which the user
  reports as its phone shows them;
- what the scenario user says when asked in plain words: its opening at the least forthcoming disclosure, and its
  replies to :data:`PLAIN_QUESTIONS` about each request it states (it states the next when asked "anything
  else?"). The user is asked, not read: :func:`user_disclosures` plays :class:`ScenarioUser` itself.

When a value counts as known (:class:`Knowledge`):

- a string: its lower-cased text occurs in what was told, not as part of a longer word ("no" is not in "not");
  empty strings, booleans and ``None`` carry nothing to tell;
- a number: it was told, or it is a count from 0 to :data:`MAX_COUNT` (passengers, bags: what an agent counts),
  or it is ``a + b``, ``a - b`` or ``a * b`` of two known numbers (a policy rate times a count, a reservation's
  bags plus the ones asked for); deeper arithmetic is not credited;
- an arithmetic expression (for a calculator tool): every number in it is known;
- an argument that the ACTION reward does not compare (outside a call's ``compare_args``) is the agent's own
  words (a transfer summary) and needs no source.

The check is static and runs once per generated task (from :func:`mua_gym.kit.generation.check_task`). A string
lookup is a literal search, linear in the text told (times the few matches that sit inside longer words); a number's
derivations are one pass over the told numbers.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from mua_gym.messages import AssistantMessage
from mua_gym.task import Action, Persona, Task, leaf_values

if TYPE_CHECKING:
    from mua_gym.domain import Domain
    from mua_gym.tools import ToolResult

__all__ = ["ARGUMENT_QUESTIONS", "Knowledge", "MAX_COUNT", "PLAIN_QUESTIONS", "domain_knowledge", "episode_knowledge",
           "leaf_values", "unfair_values", "user_disclosures"]

#: Small counts an agent forms by counting what it has seen (passengers, bags, items).
MAX_COUNT = 10
#: What a fair agent asks, in plain words, for a value of each argument it has not seen (the scenario user answers
#: each of these questions for every fact it holds).
ARGUMENT_QUESTIONS = {
    "user_id": "What is your user id?", "email": "What is your email address?",
    "first_name": "What is your name and zip code?", "last_name": "What is your name and zip code?",
    "zip": "What is your name and zip code?", "phone_number": "What is your phone number?",
    "order_id": "Which order is it about? What is the order id?",
    "reservation_id": "What is the reservation number?",
    "payment_method_id": "Which payment method would you like to use?",
    "payment_id": "Which payment method would you like to use?",
    "payment_methods": "Which payment method would you like to use?",
    "passengers": "What are the passengers' names and dates of birth?",
    "gb_amount": "How much data would you like to add, in GB?",
}
#: Every plain question, once each.
PLAIN_QUESTIONS = tuple(dict.fromkeys(ARGUMENT_QUESTIONS.values()))
#: How a fair agent hears the user's next request.
NEXT_REQUEST = "Is there anything else I can help you with?"

_WORD = re.compile(r"\w")
#: A number as a value of its own: not part of a word, an id or a date ("credit_card_7", "2024-05-16" hold none).
_TOLD_NUMBER = re.compile(r"(?<![\w.\-])\d+(?:\.\d+)?(?![\w\-])")
_EXPRESSION_CHARS = frozenset("0123456789.()+-*/ ")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _key(x: float) -> float:
    return round(float(x), 2)


def _is_count(x: float) -> bool:
    return x.is_integer() and 0 <= x <= MAX_COUNT


class Knowledge:
    """What an agent has been told, searchable for values; optionally layered on a shared base (policy, schemas).

    Learning only keeps the lower-cased text; a value is looked up by a literal search, and the numbers of a text
    are read from it the first time a number is looked up.
    """

    def __init__(self, base: "Knowledge | None" = None) -> None:
        self.base = base
        self.texts: list[str] = []
        self._numbers: set[float] = set()
        self._read = 0  # texts whose numbers are in _numbers

    def learn(self, text: str) -> None:
        """Adds ``text`` (any message, result or schema) to what is known."""
        if text:
            self.texts.append(text.lower())

    def _has_text(self, phrase: str) -> bool:
        """Whether ``phrase`` (lower case) occurs in a text, not as part of a longer word."""
        starts_word, ends_word = bool(_WORD.match(phrase[0])), bool(_WORD.match(phrase[-1]))
        for text in self.texts:
            at = text.find(phrase)
            while at >= 0:
                end = at + len(phrase)
                if not (starts_word and at and _WORD.match(text[at - 1])) and \
                        not (ends_word and end < len(text) and _WORD.match(text[end])):
                    return True
                at = text.find(phrase, at + 1)
        return self.base is not None and self.base._has_text(phrase)

    def told_numbers(self) -> set[float]:
        """Every number told so far (rounded to cents), the base's included."""
        for text in self.texts[self._read:]:
            self._numbers.update(_key(float(n)) for n in _TOLD_NUMBER.findall(text))
        self._read = len(self.texts)
        return self._numbers | self.base.told_numbers() if self.base is not None else self._numbers

    def knows_number(self, x: float) -> bool:
        """A count up to :data:`MAX_COUNT`, told, the sum or difference of two told numbers, or a told number times
        a told number or a count."""
        target = _key(x)
        if _is_count(target):
            return True
        told = self.told_numbers()
        if target in told:
            return True
        for a in told:
            if _key(target - a) in told or _key(a - target) in told:
                return True
            if a not in (0.0, 1.0):
                b = _key(target / a)
                if abs(b * a - target) < 0.005 and (b in told or _is_count(b)):
                    return True
        return False

    def knows(self, value: Any) -> bool:
        """Whether a leaf value (string, number, bool or None) is known (see the module's rules)."""
        if value is None or isinstance(value, bool):
            return True
        if isinstance(value, (int, float)):
            return self.knows_number(value)
        text = str(value).strip().lower()
        if not text or self._has_text(text):
            return True
        return _is_expression(text) and all(self.knows_number(float(n)) for n in _NUMBER.findall(text))


def _is_expression(text: str) -> bool:
    """Whether ``text`` is arithmetic on numbers (digits, operators, parentheses), checked in one pass."""
    return set(text) <= _EXPRESSION_CHARS and any(op in text for op in "+-*/") and len(_NUMBER.findall(text)) > 1


def free_arguments(call: Action) -> frozenset[str]:
    """The arguments of ``call`` that no reward compares (its ``compare_args`` leave them out): the agent's words."""
    if call.compare_args is None:
        return frozenset()
    return frozenset(call.arguments) - frozenset(call.compare_args)


_BASES: dict[tuple["Domain", str], Knowledge] = {}


def domain_knowledge(domain: "Domain", source: str = "generated") -> Knowledge:
    """The policy and the tool schemas of ``domain`` for ``source`` as shared knowledge (built once per domain
    object: another domain registered under the same name gets its own)."""
    key = (domain, source)
    found = _BASES.get(key)
    if found is None:
        found = _BASES[key] = _base(domain, domain.policy_text(source), domain.toolkit(source).schemas())
    return found


def _base(domain: "Domain", policy: str, tools: list[dict[str, Any]]) -> Knowledge:
    """A policy and the agent's tool schemas, with the domain's user tools, as one knowledge base."""
    found = Knowledge()
    found.learn(policy)
    found.learn(json.dumps(tools))
    if domain.user_tools is not None:
        found.learn(json.dumps(domain.user_tools.schemas()))
    return found


def episode_knowledge(domain: "Domain", source: str, info: dict[str, Any]) -> Knowledge:
    """What an agent knows before an episode's first message: the policy and tool schemas its ``env.reset`` info
    shows (a curriculum's ``policy=`` and ``tools=`` narrow them), else the domain's (:func:`domain_knowledge`)."""
    policy, tools = info.get("policy"), info.get("tools")
    if policy is None and tools is None:
        return domain_knowledge(domain, source)
    key = (domain, source, policy, json.dumps(tools))
    found = _EPISODE_BASES.get(key)
    if found is None:
        found = _EPISODE_BASES[key] = _base(domain, domain.policy_text(source) if policy is None else policy,
                                            domain.toolkit(source).schemas() if tools is None else tools)
    return found


_EPISODE_BASES: dict[tuple["Domain", str, str | None, str], Knowledge] = {}

#: The persona that volunteers nothing and never walks away (for tasks without a persona of their own).
_QUIET = Persona(disclosure="minimal", patience=10 ** 6)


def user_disclosures(task: Task) -> list[str]:
    """What the scenario user says to a fair agent: its opening, each further request (asked "anything else?"
    until it has stated them all), its replies to :data:`PLAIN_QUESTIONS` asked twice (it answers for every request
    stated; some users hold a fact back, or give a wrong one, the first time), and, for a request that changes on
    confirmation, what it says when asked to confirm a plan for it (then the questions once more).
    It plays the task's persona at minimal disclosure (nothing volunteered) and unlimited patience, so only plain
    answers count."""
    from mua_gym.user_sims.base import run_immediate
    from mua_gym.user_sims.scenario import ScenarioUser

    own = task.user_scenario.persona
    persona = _QUIET if own is None else own.model_copy(update={"disclosure": "minimal", "patience": 10 ** 6})
    user = ScenarioUser(persona=persona)
    said = [run_immediate(user.start(task)).content]
    nudge = [AssistantMessage(content=NEXT_REQUEST)]
    for _ in range(len(task.user_scenario.intents) - user.stated):
        said.append(run_immediate(user.respond(nudge)).content)
    questions = [AssistantMessage(content=" ".join(PLAIN_QUESTIONS))]
    # twice: a user may hold a fact back, or give a wrong one, the first time it is asked
    said += [run_immediate(user.respond(questions)).content for _ in range(2)]
    changing = [(i, strong or own) for i, (intent, own, strong) in enumerate(user._plan_anchors())
                if intent.get("on_confirm") and (strong or own)]
    for _, own in changing:  # a plan for a request that changes on confirmation: what the user wants instead
        plan = AssistantMessage(content=f"Here is what I will do: change {own[0]}. Shall I proceed?")
        said.append(run_immediate(user.respond([plan])).content)
    if changing:
        said.append(run_immediate(user.respond(questions)).content)
    return said


def unfair_values(domain: "Domain", task: Task, results: Sequence["ToolResult"],
                  disclosures: Iterable[str] | None = None) -> list[str]:
    """The gold values an agent cannot know, as ``"call.argument=value"`` (empty: the task is fair); what the agent
    must tell the user (``communicate_info``) must be known after the last call, listed as ``"communicate=text"``.

    ``results`` are the gold calls' results in order (``PreparedTask.gold_results``); ``disclosures`` what the
    user says (default: :func:`user_disclosures`).
    """
    known = Knowledge(domain_knowledge(domain, task.world.source))
    for text in user_disclosures(task) if disclosures is None else disclosures:
        known.learn(text)
    missing: list[str] = []
    for call, result in zip(task.gold_actions, results):
        free = free_arguments(call)
        for name, value in call.arguments.items():
            if name in free:
                continue
            for leaf in leaf_values(value):
                if not known.knows(leaf):
                    missing.append(f"{call.name}.{name}={leaf!r}")
        known.learn(result.content)  # the agent's result, or what the user reports its phone shows
    missing += [f"communicate={text!r}" for text in task.evaluation.communicate_info if not known.knows(text)]
    return missing
