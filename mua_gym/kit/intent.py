"""One request of a generated task's user, as a generator proposes it: what the user says, the gold calls it needs,
what the agent must tell, and how the user behaves about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mua_gym.task import Action

__all__ = ["Intent", "action"]


@dataclass
class Intent:
    """One request of the customer: what they say, the gold calls it needs, what the agent must tell."""

    category: str
    says: str
    gold: list[Action]
    communicate: list[str] = field(default_factory=list)
    checks: list[Action] = field(default_factory=list)  # look-ups a refusal or answer needs (ACTION basis)
    facts: dict[str, Any] = field(default_factory=dict)
    #: How the user behaves about this request (:mod:`mua_gym.kit.behaviours`): ``on_confirm``, ``withhold``,
    #: ``first_says``; the scenario user reads them from the task's intents.
    behaviour: dict[str, Any] = field(default_factory=dict)


def action(name: str, **arguments: Any) -> Action:
    """A gold call of ``name`` with ``arguments``."""
    return Action(name=name, arguments=arguments)
