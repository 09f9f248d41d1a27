"""Tasks: what the simulated user wants, the world it starts from, and how the episode is judged; and the lists
a generator makes of them, with its counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field

RewardComponent = Literal["DB", "COMMUNICATE", "ACTION", "ENV_ASSERTION", "NL_ASSERTION"]
Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = ("train", "dev", "test")


def check_split(split: str) -> str:
    """``split`` if it names a split; else ValueError naming the splits (and the nearest, for a typo)."""
    if split not in SPLITS:
        raise ValueError(f"split must be train, dev or test, not {split!r}{did_you_mean(split, SPLITS)}")
    return split


def did_you_mean(name: str, choices: Any) -> str:
    """``" (did you mean 'x'?)"`` for the choice nearest to ``name``, or ``""`` where none is near."""
    import difflib

    near = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def leaf_values(value: Any) -> Iterator[Any]:
    """Every leaf of an argument value: strings, numbers, bools and None inside lists and dicts."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaf_values(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaf_values(item)
    else:
        yield value


class Action(BaseModel):
    """One tool call, by the assistant or (dual control) the user; ``setup`` only in a task's initial actions."""

    name: str
    arguments: dict[str, Any] = {}
    requestor: Literal["assistant", "user", "setup"] = "assistant"
    # Which arguments must match for the ACTION reward; None: all of them.
    compare_args: list[str] | None = None


class EnvAssertion(BaseModel):
    """A domain predicate on the final world, e.g. ``{"name": "service_works", "arguments": {...}}``."""

    name: str
    arguments: dict[str, Any] = {}
    expected: bool = True


class EvaluationSpec(BaseModel):
    reward_basis: list[RewardComponent] = ["DB"]
    actions: list[Action] = []  # for ACTION; usually the gold actions
    communicate_info: list[str] = []
    env_assertions: list[EnvAssertion] = []
    nl_assertions: list[str] = []


class Persona(BaseModel):
    """How a simulated user behaves, apart from what it wants."""

    disclosure: Literal["minimal", "normal", "forthcoming"] = "normal"
    patience: int = Field(default=20, ge=1, description="agent turns the user waits before walking away")
    verbosity: Literal["terse", "normal", "chatty"] = "normal"
    tone: str = "polite"
    hidden_constraints: list[str] = Field(default_factory=list)  # (a factory: a literal default is deep-copied)
    description: str | None = None


class UserScenario(BaseModel):
    """What the simulated user knows and wants."""

    instructions: str = ""
    reason_for_call: str | None = None
    known_info: str | None = None
    unknown_info: str | None = None
    persona: Persona | None = None
    # Structured facts (identity, ids, choices) for rule-driven users.
    facts: dict[str, Any] = {}
    intents: list[dict[str, Any]] = []


class WorldSpec(BaseModel):
    """Which world a task starts from: a source of the domain, its seed and parameters."""

    model_config = ConfigDict(frozen=True)

    source: str = "generated"
    seed: int = 0
    params: dict[str, Any] = {}

    def cache_key(self) -> tuple[Any, ...]:
        return (self.source, self.seed, tuple(sorted((k, repr(v)) for k, v in self.params.items())))


class Task(BaseModel):
    """One episode's goal. ``script`` holds the user turns that :class:`ScriptedUser` plays in order."""

    id: str
    domain: str
    split: Split = "train"
    description: str = ""
    world: WorldSpec = WorldSpec()
    user_scenario: UserScenario = UserScenario()
    script: list[str] = []
    initial_actions: list[Action] = []  # applied before the episode (e.g. injected faults)
    gold_actions: list[Action] = []
    evaluation: EvaluationSpec = EvaluationSpec()
    category: str | None = None
    difficulty: int | None = None

    def summary(self, width: int = 100) -> str:
        """One line saying what the user wants (their reason for calling, else the task's description), cut to
        ``width`` characters."""
        scenario = self.user_scenario
        text = (scenario.reason_for_call or " ".join(str(i.get("says", "")) for i in scenario.intents).strip()
                or self.description or (self.script[0] if self.script else "") or scenario.instructions)
        text = " ".join(text.split())
        return text if len(text) <= width else text[:width - 3].rstrip() + "..."


@dataclass
class GenerationStats:
    """How a generation run went: tasks proposed, and why the ones not kept were rejected."""

    proposed: int = 0  # tasks a domain's maker returned (attempts that made none are not counted)
    failed: int = 0  # a gold call failed, the gold replay scored below 1.0 or doing nothing scored above 0.0
    unfair: int = 0  # dropped: some gold value is nothing the agent is told (see mua_gym.kit.fairness)
    #: (the id it would have had, its first unfair values, e.g. ``"get_user_details.user_id='mia_2'"``) per drop.
    unfair_examples: list[tuple[str, list[str]]] = field(default_factory=list)


class TaskList(list):  # type: ignore[type-arg]
    """The tasks a generator made (a plain list of :class:`Task`) with its :class:`GenerationStats` as ``stats``."""

    stats: GenerationStats
