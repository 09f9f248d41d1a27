"""User perturbations: off-script personas, within what the task allows.

The user still wants what the task says and still answers a plain question with the fact asked for; only how
it behaves changes. Its patience is never cut below what a fair agent needs for the task (two turns a gold
call and some to spare).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mua_gym.perturbations.base import EpisodeFacts, Perturbation, chance, register_perturbation
from mua_gym.task import Persona, Task

__all__ = ["OffScriptPersona", "PERSONAS"]

PERSONAS = ("impatient", "vague", "changes_mind")
_DECOYS = ("I want to close my account.", "I'd like to cancel everything I ordered last month.",
           "I need to change the password on my account.", "Can you delete all my saved payment details?")
_CORRECTIONS = ("Actually, no, sorry, forget that.", "Wait, no, that's not it.", "Hmm, never mind that.")
_HURRY = (" Please be quick.", " I don't have much time.", " Can we speed this up?")
_HEDGES = ("Hmm. ", "Let me think. ", "Well... ", "Not sure, but ")


def _least_patience(facts: EpisodeFacts) -> int:
    """The agent turns a fair agent may need: two a gold call (a question, then the call) and some to spare."""
    return max(10, 2 * facts.gold_agent_calls + 8)


@register_perturbation
class OffScriptPersona(Perturbation):
    """Plays each episode's user as one of ``kinds`` (drawn per episode): ``impatient`` (terse, hurries the
    agent, less patience), ``vague`` (says as little as it can up front and hedges), ``changes_mind`` (opens
    with another request and takes it back in the same message). The persona reaches any user simulator
    through the task it plays (LLM users read it as instructions), in place of any persona the simulator would
    have drawn (a user made with a fixed persona is refused by ``make``); the wording reaches the agent's view,
    before any observation perturbation changes how the agent sees it. ``rate``: the chance that an impatient or vague
    user's message shows it in words (a mind-changing user always opens with the other request)."""

    name = "persona"
    family = "user"

    def __init__(self, kinds: list[str] | str | None = None, rate: float = 0.5) -> None:
        kinds = list(PERSONAS) if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
        unknown = sorted(set(kinds) - set(PERSONAS))
        if unknown or not kinds:
            raise ValueError(f"kinds must name some of {', '.join(PERSONAS)}; unknown: {unknown or '(none named)'}")
        self.kinds, self.rate = kinds, chance("rate", rate)
        super().__init__(kinds=list(kinds), rate=self.rate)
        self._kind = PERSONAS[0]
        self._patience = 20
        self._opened = False
        self._opening = ""

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        super().begin(rng, facts)
        self._kind = self.kinds[int(rng.integers(len(self.kinds)))]
        own = facts.task.user_scenario.persona or Persona()
        self._patience = own.patience
        if self._kind == "impatient":
            least = _least_patience(facts)
            self._patience = max(least, min(own.patience, least + int(rng.integers(0, 5))))
        self._opened = False
        self._opening = (f"{_DECOYS[int(rng.integers(len(_DECOYS)))]} "
                         f"{_CORRECTIONS[int(rng.integers(len(_CORRECTIONS)))]} ")
        return {"persona": self._kind, "patience": self._patience}

    def user_task(self, task: Task) -> Task:
        own = task.user_scenario.persona or Persona()
        changes: dict[str, Any] = {
            "impatient": {"tone": "impatient", "verbosity": "terse", "patience": self._patience,
                          "description": "You are in a hurry and let the agent know it."},
            "vague": {"disclosure": "minimal", "tone": "vague",
                      "description": "You say as little as you can until the agent asks for something precisely."},
            "changes_mind": {"description": "You first ask for something else, then take it back in the same "
                                            "message and ask for what you really want."},
        }[self._kind]
        scenario = task.user_scenario.model_copy(update={"persona": own.model_copy(update=changes)})
        return task.model_copy(update={"user_scenario": scenario})

    def user_text(self, text: str) -> str:
        opening, self._opened = not self._opened, True
        if self._kind == "changes_mind":
            return self._opening + text.lstrip() if opening else text
        if self.rng.random() >= self.rate:
            return text
        if self._kind == "impatient":
            return text.rstrip() + _HURRY[int(self.rng.integers(len(_HURRY)))]
        lead = text.lstrip()
        if not lead or lead.lower().startswith(("yes", "no")):  # a hedged answer to "shall I?" would be no answer
            return text
        return _HEDGES[int(self.rng.integers(len(_HEDGES)))] + lead
