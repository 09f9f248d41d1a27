"""Personas: how a simulated user behaves, kept apart from what it wants (the task's goal)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from mua_gym.task import Persona, Task

__all__ = ["PersonaMode", "describe_persona", "resolve_persona", "sample_persona"]

#: "task": the task's persona (or the default one); "sample": drawn per episode from the seed (a task's own
#: persona still wins); or a fixed Persona for every episode.
PersonaMode = Literal["task", "sample"] | Persona

TONES = ["polite", "friendly", "impatient", "anxious", "matter-of-fact", "irritated"]
CONSTRAINTS = [
    "You will not share more personal details than the agent strictly needs.",
    "You are in a hurry and want short answers.",
    "You distrust automated systems and double-check what the agent says.",
    "You prefer to keep your current payment method whenever that is possible.",
]


def sample_persona(rng: np.random.Generator) -> Persona:
    """A persona drawn from ``rng``: disclosure, patience, verbosity, tone and maybe a hidden constraint."""
    disclosure = ["minimal", "normal", "forthcoming"][int(rng.integers(3))]
    verbosity = ["terse", "normal", "chatty"][int(rng.integers(3))]
    tone = TONES[int(rng.integers(len(TONES)))]
    hidden = [CONSTRAINTS[int(rng.integers(len(CONSTRAINTS)))]] if rng.random() < 0.3 else []
    return Persona(disclosure=disclosure, patience=int(rng.integers(8, 25)), verbosity=verbosity,  # type: ignore[arg-type]
                   tone=tone, hidden_constraints=hidden)


def resolve_persona(task: Task, mode: PersonaMode, seed: int | None) -> Persona:
    if isinstance(mode, Persona):
        return mode
    if task.user_scenario.persona is not None:
        return task.user_scenario.persona
    if mode == "sample":
        return sample_persona(np.random.default_rng(seed))
    return Persona()


def describe_persona(persona: Persona) -> str:
    """The persona as instructions for a language model playing the user."""
    disclose = {
        "minimal": "Reveal a detail only when the agent asks for it.",
        "normal": "Say what you want clearly; give identifying details when asked.",
        "forthcoming": "Offer the details you know up front.",
    }[persona.disclosure]
    verbose = {"terse": "Keep every message to one short sentence.", "normal": "Write one to three sentences.",
               "chatty": "You are talkative and add small remarks, but stay on topic."}[persona.verbosity]
    lines = [f"Tone: {persona.tone}.", disclose, verbose,
             f"Patience: if after about {persona.patience} agent messages your goal is still not met, give up."]
    if persona.description:
        lines.insert(0, persona.description)
    lines += persona.hidden_constraints
    return "\n".join(f"- {line}" for line in lines)
