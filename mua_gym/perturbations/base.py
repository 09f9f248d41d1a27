"""The perturbation contract, the stack an env holds, and the spec strings that name perturbations.

A :class:`Perturbation` changes what one part of an episode looks like or does, never what the task is: the
gold world, the task's evaluation and the user's goal stay as they are, so the reward stays true. Each episode
it draws its parameters (:meth:`Perturbation.begin`) from a generator seeded by the episode; the env then asks
it, at fixed points of the episode, to change one thing:

==========================  ====================================================================================
hook                         called with, and returns
==========================  ====================================================================================
``user_task(task)``          the task the user simulator plays; returns it with another persona (the user family)
``tools(schemas)``           the agent's tool schemas of the episode; returns those the agent is offered
``intercept(call)``          an agent tool call before it runs; returns a :class:`ToolResult` that answers it
                             instead (the call then never reaches the world), or None to let it run
``tool_result(call, text)``  a successful agent tool call's result text; returns the text the agent sees
``user_text(text)``          a user message the agent is about to see; returns the text it sees (the user
                             family's run first: what the user says, before how the agent sees it)
``check_tools(offered)``     once, when the env is made, the agent's tool names; raises ValueError where an
                             option names a tool not offered
==========================  ====================================================================================

Every hook defaults to "no change". What a perturbation drew is its ``begin``'s return value; what it did
during the episode (a fault injected into a call) it reports through :meth:`Perturbation.event`. The env puts
both in ``info`` and in the trajectory.

A perturbation made ``static`` (``static=N`` in a spec: ``"action:static=0"``) draws from seed ``N`` in every
episode instead of the episode's seed, so every episode sees the same variant: RL with static perturbations, and
what a loop needs that fixes its tools once (TRL's ``environment_factory``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Optional, Sequence, Union

import numpy as np

from mua_gym.tools import ToolResult

if TYPE_CHECKING:
    from mua_gym.task import Task

__all__ = ["Call", "EpisodeFacts", "Family", "FAMILIES", "PerturbSpec", "Perturbation", "Perturbations",
           "check_perturb_specs", "made_static", "make_perturbations", "perturbation_names", "register_perturbation"]

Family = Literal["observation", "action", "transition", "user"]
FAMILIES: tuple[Family, ...] = ("observation", "action", "transition", "user")

#: Stop and transfer tokens (``###STOP###``): a perturbation of text never touches them.
_TOKEN = re.compile(r"###[A-Z-]+###")


@dataclass(frozen=True)
class Call:
    """One agent tool call as a perturbation sees it: its name, its parsed arguments (a dict, or the raw string
    when they are not a JSON object), the tool's kind (``read``, ``write``, ``generic``; None: no such tool
    offered) and the agent turn it was made in."""

    name: str
    arguments: dict[str, Any] | str
    kind: str | None
    turn: int


@dataclass(frozen=True)
class EpisodeFacts:
    """What a perturbation may read about the episode when it draws: the task (for what must stay solvable), how
    many calls its gold agent makes, the tools the agent is offered and the policy it is given."""

    task: "Task"
    gold_agent_calls: int
    #: The agent's tool schemas before any perturbation (shared: copy before changing one).
    tool_schemas: list[dict[str, Any]] = field(default_factory=list)
    policy: str = ""


class Perturbation:
    """One seedable perturbation: a ``family``, a ``name``, options set at construction, hooks per episode.

    Subclasses set ``name`` and ``family``, override :meth:`begin` and the hooks they need, and keep what they
    drew on ``self`` (an env holds its own copy, one episode at a time).
    """

    name: ClassVar[str] = ""
    family: ClassVar[Family] = "observation"

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._events: list[dict[str, Any]] = []
        #: The episode's generator (set by :meth:`begin`): every later draw of the episode comes from it.
        self.rng = np.random.default_rng(0)
        #: The seed every episode draws from instead of its own (None: the episode's seed); see the module.
        self.static: int | None = None

    def options(self) -> dict[str, Any]:
        """The options it was made with (recorded with each episode)."""
        return dict(self._options)

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        """Keeps ``rng`` as the episode's generator and draws this episode's parameters from it; returns them as
        JSON-able values (the record). An override calls this first."""
        self.rng = rng
        return {}

    def event(self, what: dict[str, Any]) -> None:
        """Records something done to the episode (shown in the step's ``info`` and the trajectory)."""
        self._events.append(what)

    def take_events(self) -> list[dict[str, Any]]:
        events, self._events = self._events, []
        return events

    def check_tools(self, offered: frozenset[str]) -> None:
        """Raises ValueError where an option names a tool not among ``offered`` (the agent's tools), once, when
        the env is made."""

    # hooks: each returns its input unchanged unless a subclass says otherwise
    def user_task(self, task: "Task") -> "Task":
        return task

    def tools(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return schemas

    def intercept(self, call: Call) -> ToolResult | None:
        return None

    def tool_result(self, call: Call, text: str) -> str:
        return text

    def user_text(self, text: str) -> str:
        return text

    def __repr__(self) -> str:
        pairs = [f"{k}={_spec_text(v)}" for k, v in self.options().items()]
        if self.static is not None:
            pairs.append(f"static={self.static}")
        return ":".join([self.name, *pairs])


def _spec_text(value: Any) -> str:
    """An option's value as a spec writes it (a list as ``a|b``, one item as ``a|``): what :func:`_value` reads."""
    if isinstance(value, (list, tuple)):
        return "|".join(str(v) for v in value) + ("|" if len(value) == 1 else "")
    return str(value)


def chance(name: str, value: float) -> float:
    """``value`` as a float; ValueError naming ``name`` where it is not a number between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} is a chance between 0 and 1, not {value!r}")
    return float(value)


#: Filled as the package's __init__ imports each family's module, before any of base's functions can run.
_REGISTRY: dict[str, type[Perturbation]] = {}


def register_perturbation(kind: type[Perturbation]) -> type[Perturbation]:
    """Makes ``kind`` nameable in specs by its ``name`` (a class decorator)."""
    if not kind.name or kind.family not in FAMILIES:
        raise ValueError(f"{kind.__name__} needs a name and one of the families {FAMILIES}")
    _REGISTRY[kind.name] = kind
    return kind


def perturbation_names() -> dict[str, Family]:
    """Every registered perturbation's name, with its family."""
    return {name: kind.family for name, kind in sorted(_REGISTRY.items())}


def _value(text: str) -> Any:
    """An option's value from its text: a number where it reads as one, a list where it has ``|``, else text."""
    if "|" in text:
        return [_value(part) for part in text.split("|") if part]
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def made_static(items: list[Perturbation], seed: Any) -> list[Perturbation]:
    """``items``, each drawing from ``seed`` in every episode (see the module); ValueError for a seed that is
    not a whole number of 0 or more."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"static is a seed, a whole number of 0 or more, not {seed!r}")
    for item in items:
        item.static = seed
    return items


def _parse_one(spec: str) -> list[Perturbation]:
    """``name``, ``name:key=value:key=value`` or a family's name (each of its perturbations with defaults); any of
    them may end with ``:static=N``."""
    name, *pairs = spec.strip().split(":")
    name = name.strip()
    static = [p for p in pairs if p.partition("=")[0].strip() == "static"]
    if static:
        pairs = [p for p in pairs if p not in static]
        seed = _value(static[-1].partition("=")[2].strip())
        return made_static(_parse_one(":".join([name, *pairs])), seed)
    if name in FAMILIES:
        if pairs:
            members = [kind.name for kind in _REGISTRY.values() if kind.family == name]
            raise ValueError(f"{spec!r}: a family takes no options but static=N; give them to its perturbations "
                             f"by name ({', '.join(members)})")
        return [kind() for kind in _REGISTRY.values() if kind.family == name]
    kind = _REGISTRY.get(name)
    if kind is None:
        raise ValueError(f"unknown perturbation {name!r}; known: {', '.join(sorted(_REGISTRY))}, or a family: "
                         f"{', '.join(FAMILIES)}")
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"perturbation option {pair!r} of {spec!r} is not key=value")
        options[key.strip()] = _value(text.strip())
    try:
        return [kind(**options)]
    except (TypeError, ValueError, OverflowError) as exc:  # an unknown option, a bad value
        raise ValueError(f"perturbation {spec!r}: {exc}") from None


def make_perturbations(spec: "PerturbSpec") -> "Perturbations | None":
    """A stack from a spec: None (no perturbation), a :class:`Perturbation`, a string of ``+``-joined specs
    (``"typos+tool_faults:rate=0.3"``; a family's name means all of its perturbations), or a list of either.
    Raises ValueError naming the known perturbations for an unknown name or a bad option."""
    if spec is None:
        return None
    if isinstance(spec, Perturbations):  # a copy: an env's perturbations keep that env's episode
        return Perturbations(spec.items)
    items = [spec] if isinstance(spec, (str, Perturbation)) else list(spec)
    stack: list[Perturbation] = []
    for item in items:
        if isinstance(item, Perturbation):
            stack.append(item)
        elif isinstance(item, str):
            stack += [p for part in item.split("+") if part.strip() for p in _parse_one(part)]
        else:
            raise ValueError(f"a perturbation is a name or a Perturbation, not {type(item).__name__}")
    return Perturbations(stack) if stack else None


def check_perturb_specs(specs: Sequence[str]) -> None:
    """Raises ValueError unless each of ``specs`` (a gap run's, each compared with the clean run) names at least
    one perturbation, and no two are the same."""
    for spec in specs:
        if make_perturbations(spec) is None:
            raise ValueError(f"perturbation spec {spec!r} names no perturbation")
    repeated = sorted({spec for spec in specs if list(specs).count(spec) > 1})
    if repeated:
        raise ValueError(f"perturbation specs given more than once: {repeated}")


class Perturbations:
    """The perturbations of one env, applied in order; each draws from its own stream of the episode's seed (keyed
    by its place in the stack), so adding one at the end of a stack leaves what the others draw unchanged."""

    def __init__(self, items: Sequence[Perturbation]) -> None:
        self.items = [copy.deepcopy(item) for item in items]  # an env's own: they keep an episode's draws
        self.drawn: list[dict[str, Any]] = []
        # what the user says (its persona) is settled before any noise in how the agent sees it
        self._text_order = sorted(self.items, key=lambda item: item.family != "user")

    def begin(self, seed: int, facts: EpisodeFacts) -> list[dict[str, Any]]:
        """Draws every perturbation's parameters for an episode of ``seed``; returns the records."""
        self.drawn = []
        for index, item in enumerate(self.items):
            item.take_events()
            rng = np.random.default_rng([seed if item.static is None else item.static, index, 0x9E7])
            record = {"name": item.name, "family": item.family, **item.options()}
            if item.static is not None:
                record["static"] = item.static
            self.drawn.append({**record, **item.begin(rng, facts)})
        return self.drawn

    def take_events(self) -> list[dict[str, Any]]:
        return [{"name": item.name, **event} for item in self.items for event in item.take_events()]

    def check_tools(self, offered: frozenset[str]) -> None:
        for item in self.items:
            item.check_tools(offered)

    def user_task(self, task: "Task") -> "Task":
        for item in self.items:
            task = item.user_task(task)
        return task

    def tools(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for item in self.items:
            schemas = item.tools(schemas)
        return schemas

    def intercept(self, call: Call) -> tuple[ToolResult, Family] | None:
        """The first answer a perturbation gives ``call`` instead of the world, with that perturbation's family."""
        for item in self.items:
            answered = item.intercept(call)
            if answered is not None:
                return answered, item.family
        return None

    def tool_result(self, call: Call, text: str) -> str:
        for item in self.items:
            text = item.tool_result(call, text)
        return text

    def user_text(self, text: str) -> str:
        """``text`` as the agent sees it: the user family's perturbations first (what the user says), then the
        others in stack order (how the agent sees it); stop tokens untouched."""
        if not any(type(item).user_text is not Perturbation.user_text for item in self.items):
            return text
        parts = _TOKEN.split(text)  # the stop tokens between the parts stay as they are
        tokens = _TOKEN.findall(text)
        out = []
        for i, part in enumerate(parts):
            if part.strip():
                for item in self._text_order:
                    part = item.user_text(part)
            out.append(part)
            if i < len(tokens):
                out.append(tokens[i])
        return "".join(out)

    def families(self) -> list[str]:
        return sorted({item.family for item in self.items})

    def __repr__(self) -> str:
        return "+".join(repr(item) for item in self.items)


#: What ``perturb=`` takes: see :func:`make_perturbations`.
PerturbSpec = Optional[Union[str, Perturbation, Sequence[Union[str, Perturbation]], Perturbations]]
