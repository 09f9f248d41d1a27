"""Users who do not say everything straight: behaviours a generator gives one request of a task, as data.

TAU2's users change their minds when asked to confirm, hold a fact back until asked again or until they are
identified, and give a wrong value before correcting it. A generator gives a request (an
:class:`~mua_gym.kit.intent.Intent`) such a behaviour with the functions here; the behaviour travels in the
task's intents, where :class:`~mua_gym.user_sims.scenario.ScenarioUser` plays it, and into the instructions, where an
LLM user reads it (:func:`behaviour_instructions`). Three fields of an intent carry them:

- ``on_confirm``: ``{"says": ..., "becomes": {...}}``: the first time the agent asks to confirm a plan for this
  request, the user says ``says`` and the request becomes ``becomes`` (another request on the same record, or one
  it declines: ``"accept": False``); the gold calls are those of what it becomes;
- ``withhold``: ``{fact: "asked_twice" | "identified"}``: the user does not give that fact the first time it is
  asked, or not before it has told the agent who it is;
- ``first_says``: ``{fact: wrong value}``: the first time it is asked, the user gives the wrong value; asked again,
  or told that the agent's look-up disagrees (the agent names the wrong value), it gives the right one.

Each function returns a new intent, or None where the request cannot carry the behaviour (its words do not name
the fact, say); generators then draw another. Behaviours change what the agent must do to earn the reward (ask
again, listen to the answer before acting), never the reward itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Literal

import numpy as np

if TYPE_CHECKING:
    from mua_gym.kit.intent import Intent

__all__ = ["BEHAVIOURS", "KINDS", "behaviour_instructions", "change_mind", "decline", "give_behaviour",
           "give_wrong_first", "withhold"]

#: The fields of an intent that carry a behaviour, and what each makes the user do.
BEHAVIOURS = {"on_confirm": "changes its mind on confirmation", "withhold": "withholds a fact",
              "first_says": "gives a wrong value first"}
Until = Literal["asked_twice", "identified"]
#: The behaviours :func:`give_behaviour` draws from, equally often.
KINDS = ("withhold_twice", "withhold_identified", "first_says", "change", "decline")
DECLINES = "Actually, no: please leave that one as it is."


def _without(says: str, value: str) -> str | None:
    """``says`` with ``value`` taken out of it ("my order #W1 please" -> "my order please"), or None where it is not
    there or is there more than once."""
    if says.count(value) != 1:
        return None
    return " ".join(says.replace(value, "").replace(" ,", ",").replace(" ;", ";").replace(" .", ".").split())


def withhold(intent: "Intent", fact: str, until: Until) -> "Intent | None":
    """``intent`` whose user holds ``fact`` back until asked twice (``"asked_twice"``) or until it has told the
    agent who it is (``"identified"``); its words no longer name the fact. None where they do not name it once."""
    value = intent.facts.get(fact)
    says = _without(intent.says, value) if isinstance(value, str) and value else None
    if says is None:
        return None
    return replace(intent, says=says, behaviour={**intent.behaviour, "withhold": {fact: until}})


def give_wrong_first(intent: "Intent", fact: str, wrong: str) -> "Intent | None":
    """``intent`` whose user first gives ``wrong`` for ``fact`` (a value that finds nothing), and the right value when
    asked again or told the agent's look-up disagrees. None where its words do not name the fact once."""
    value = intent.facts.get(fact)
    says = _without(intent.says, value) if isinstance(value, str) and value and wrong != value else None
    if says is None:
        return None
    return replace(intent, says=says, behaviour={**intent.behaviour, "first_says": {fact: wrong}})


def change_mind(original: "Intent", instead: "Intent", says: str) -> "Intent":
    """The user asks for ``original`` and, asked to confirm it, says ``says`` and wants ``instead``: the gold calls,
    the look-ups judged and what the agent must tell are ``instead``'s. ``instead`` should concern the same record
    (a plan for either names it) and need no value that only its own words give before the change."""
    becomes = {"category": instead.category, "says": instead.says, **instead.facts}
    return replace(instead, says=original.says, facts=original.facts,
                   behaviour={**original.behaviour, "on_confirm": {"says": says, "becomes": becomes}})


def decline(original: "Intent", says: str, gold: list[Any]) -> "Intent":
    """The user asks for ``original`` and, asked to confirm it, says ``says`` and wants nothing done: the gold calls
    are ``gold`` (the look-ups that lead to the plan), nothing is written for it. Only for a task with another
    request that writes (doing nothing must not be paid)."""
    becomes = {"category": original.category, "says": original.says, **original.facts, "accept": False}
    return replace(original, gold=gold, communicate=[], checks=[],
                   behaviour={**original.behaviour, "on_confirm": {"says": says, "becomes": becomes}})


def give_behaviour(rng: np.random.Generator, intents: list["Intent"], *, fact: str, wrong: Callable[[], str],
                   instead: Callable[["Intent"], "tuple[Intent, str] | None"],
                   is_write: Callable[["Intent"], bool], is_read: Callable[[Any], bool]) -> "list[Intent] | None":
    """``intents`` with one request given a behaviour drawn from :data:`KINDS`, or None where none can carry it.

    ``fact``: the record id a request names (``order_id``), held back or given wrong (``wrong()`` makes a value that
    finds nothing); ``instead(intent)``: what the user wants instead of a request, and what it says then (None:
    nothing); ``is_write``: whether a request writes (only a write changes or is declined, and a decline needs another
    write in the task); ``is_read``: whether a gold call is a look-up (a declined request keeps its look-ups).
    """
    kind = KINDS[int(rng.integers(len(KINDS)))]
    writes = [i for i, intent in enumerate(intents) if is_write(intent)]
    for index in (int(i) for i in rng.permutation(len(intents))):
        intent = intents[index]
        changed: "Intent | None" = None
        if kind == "withhold_twice":
            changed = withhold(intent, fact, "asked_twice")
        elif kind == "withhold_identified":
            changed = withhold(intent, fact, "identified")
        elif kind == "first_says":
            changed = give_wrong_first(intent, fact, wrong())
        elif kind == "change" and index in writes:
            other = instead(intent)
            changed = change_mind(intent, *other) if other is not None else None
        elif kind == "decline" and index in writes and len(writes) > 1:
            changed = decline(intent, DECLINES, [a for a in intent.gold if is_read(a)])
        if changed is not None:
            return intents[:index] + [changed] + intents[index + 1:]
    return None


def behaviour_instructions(behaviour: dict[str, Any], facts: dict[str, Any]) -> str:
    """The behaviour of one request in words, for a user played by a language model (``facts``: the request's, which
    hold the right value of a fact its words leave out)."""
    parts = []
    change = behaviour.get("on_confirm")
    if change:
        parts.append(f"When the agent first asks you to confirm its plan for this request, do not agree; say: "
                     f"\"{change['says']}\"")
    for fact, until in (behaviour.get("withhold") or {}).items():
        words = fact.replace("_", " ")
        parts.append(f"Your {words} is {facts.get(fact)}. " + (
            "The first time you are asked for it, say you do not have it at hand; give it when asked again."
            if until == "asked_twice" else "Do not give it before you have told the agent who you are."))
    for fact, wrong in (behaviour.get("first_says") or {}).items():
        parts.append(f"Your {fact.replace('_', ' ')} is {facts.get(fact)}, but the first time you are asked for it, "
                     f"give {wrong} by mistake; give the right one when asked again or when the agent says it finds "
                     "nothing.")
    return " ".join(parts)
