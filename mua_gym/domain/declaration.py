"""A domain: everything one tool world needs, in one object the core discovers.

A domain package (``domains/<name>/`` or a third party's, found by the ``mua_gym.domains`` entry point)
builds one :class:`Domain` from its schema, tools, policy, world builders and task sources.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from sqlalchemy import Connection, MetaData

from mua_gym.domain import disk_cache
from mua_gym.domain.state import state_of
from mua_gym.domain.vocabulary import UserVocabulary
from mua_gym.world.image import WorldImage
from mua_gym.task import EnvAssertion, RewardComponent, Task, WorldSpec, check_split, did_you_mean
from mua_gym.tools import Toolkit
from mua_gym.world import World

__all__ = ["Domain", "WorldBuilder", "TaskSource"]

class WorldBuilder(Protocol):
    """Fills an empty database (its schema already created) for ``seed``; returns nothing.

    The source's parameters (an env's ``world_params``) arrive as further keywords, so a builder declares each
    one it takes with a default: ``def build(conn, *, seed, n_users=50) -> None``.
    """

    def __call__(self, conn: Connection, /, *, seed: int) -> None: ...


class TaskSource(Protocol):
    """Returns the tasks of one split (``"train"``, ``"dev"`` or ``"test"``) of one source, in a fixed order.

    The source's parameters arrive as further keywords, each declared with a default; the keywords a task source
    declares are the ``world_params`` keys an env accepts for its source (``**params`` accepts any).
    """

    def __call__(self, domain: "Domain", split: str, /) -> list[Task]: ...


#: A predicate on the final world for ENV_ASSERTION: ``assertion(world, **arguments) -> bool``.
Assertion = Callable[..., bool]


def env_name(name: str) -> str:
    """The id part of the env of the domain called ``name``: ``"pizza_shop"`` gives ``"PizzaShop"``."""
    return "".join(part.capitalize() for part in name.split("_"))


@dataclass(eq=False, frozen=True)
class Domain:
    """One tool domain. ``name`` is lower case (``"retail"``); its env id is made from it (``mua/Retail-v0``,
    :attr:`env_name`).

    The required part is ``name``, ``metadata`` (the SQLAlchemy schema), ``tools``, ``policy`` and ``worlds``,
    usually with ``task_sources``; the rest are optional hooks (docs/domains.md). ``tools`` (and ``user_tools``,
    ``setup_tools``) may be a list of ``@tool`` functions; ``worlds`` and ``task_sources`` may be one function,
    which then serves the source ``default_source``.
    """

    name: str
    metadata: MetaData
    tools: Toolkit | Sequence[Callable[..., Any]]
    policy: str | Callable[..., str]
    worlds: Mapping[str, WorldBuilder] | WorldBuilder
    task_sources: Mapping[str, TaskSource] | TaskSource = field(default_factory=dict)
    user_tools: Toolkit | Sequence[Callable[..., Any]] | None = None
    terminal_tools: frozenset[str] = frozenset()
    assertions: Mapping[str, Assertion] = field(default_factory=dict)
    reward_basis: tuple[RewardComponent, ...] = ("DB",)
    description: str = ""
    #: A different agent tool set for some sources (e.g. exactly the installed tau2's set for its tasks).
    source_tools: Mapping[str, Callable[[], Toolkit]] = field(default_factory=dict)
    #: Runs after every successful tool call, inside its savepoint: re-derives state coupled across tables
    #: (telecom: the phone's view of the account).
    after_tool_call: Callable[[World], None] | None = None
    #: Functions that only a task's initial actions may call (``requestor="setup"``), e.g. fault injection.
    setup_tools: Toolkit | Sequence[Callable[..., Any]] | None = None
    #: The world and task source an env uses when none is named.
    default_source: str = "generated"
    #: Its tasks need the user to act with their own tools: an env refuses a user that cannot, and plays the
    #: scenario user when none is named.
    dual_control: bool = False
    #: Sources whose world images and task lists are kept on disk between processes (mua_gym.domain.disk_cache):
    #: those whose output depends only on their arguments and on the code of the domain's package.
    cached_sources: tuple[str, ...] = ("generated",)
    #: Its worlds carry a memo (``world.memo``, :mod:`mua_gym.world.memo`): for tools that derive the same state on
    #: every call and keep it until its tables are written.
    memo: bool = False
    #: Words of one kind that an answer names (flight statuses, cabins): strict COMMUNICATE pays a message that
    #: names one of them as an answer only if it names no other of the same vocabulary (mua_gym.env.communicate).
    answer_vocabularies: tuple[tuple[str, ...], ...] = ()
    #: What its user understands in words (dual control): each thing on their side an agent may ask them to check
    #: or change, and the user tools that does it (:mod:`mua_gym.domain.vocabulary`). The scenario user follows such
    #: a request, and the blind baselines and the fuzzer say them; without one, the user runs only a tool the agent
    #: names outright.
    user_vocabulary: UserVocabulary | None = None

    @property
    def env_name(self) -> str:
        """The id part of the domain's env, made from ``name`` (``"pizza_shop"`` gives ``"PizzaShop"``): a plugin's
        env is registered by its entry point's name before the domain is loaded, so it cannot be chosen apart."""
        return env_name(self.name)

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ValueError(f"domain name must be alphanumeric (underscores allowed), got {self.name!r}")
        normalised = {"tools": _toolkit(self.tools),  # the declaration in one form: frozen once made
                      "user_tools": None if self.user_tools is None else _toolkit(self.user_tools),
                      "setup_tools": None if self.setup_tools is None else _toolkit(self.setup_tools)}
        if callable(self.worlds):
            normalised["worlds"] = {self.default_source: self.worlds}
        if callable(self.task_sources):
            normalised["task_sources"] = {self.default_source: self.task_sources}
        for name, value in normalised.items():
            object.__setattr__(self, name, value)

    # -- worlds ------------------------------------------------------------------------------------
    def image(self, spec: WorldSpec | None = None) -> WorldImage:
        """The cached starting image for a world spec (built on first use)."""
        spec = spec or WorldSpec()
        key = spec.cache_key()
        state = state_of(self)
        found = state.images.get(key)
        if found is not None:
            return found
        with state.lock:
            if key not in state.images:
                builder = self.worlds.get(spec.source)
                if builder is None:
                    raise ValueError(
                        f"domain {self.name!r} has no world source {spec.source!r}; it has {sorted(self.worlds)}"
                    )

                def populate(conn: Connection) -> None:
                    builder(conn, seed=spec.seed, **spec.params)

                name = f"{self.name}:{spec.source}"
                entry = (disk_cache.entry("image", self.name, spec.source, builder, key)
                         if spec.source in self.cached_sources else None)
                found = disk_cache.cached_image(entry)
                if found is not None:
                    state.images[key] = WorldImage.from_bytes(self.metadata, *found, name=name)
                else:
                    image = state.images[key] = WorldImage.build(self.metadata, populate, name=name)
                    disk_cache.store_image(entry, image.data, image.hash)
            return state.images[key]

    def new_world(self, source: str = "generated", seed: int = 0, **params: Any) -> World:
        """A fresh live world from the named source."""
        return self.world_from_image(self.image(WorldSpec(source=source, seed=seed, params=params)), source)

    def toolkit(self, source: str = "generated") -> Toolkit:
        """The agent's tools for worlds and tasks of ``source``."""
        toolkits = state_of(self).toolkits
        found = toolkits.get(source)
        if found is None:
            make = self.source_tools.get(source)
            found = toolkits[source] = make() if make is not None else self.tools
        return found

    def tool_schemas(self, source: str = "generated") -> list[dict[str, Any]]:
        """The OpenAI schemas of the agent's tools for ``source``: one list per source, shared by every env of the
        domain (read it, do not change it; ``toolkit(source).schemas()`` makes a copy of one's own)."""
        schemas = state_of(self).schemas
        found = schemas.get(source)
        if found is None:
            found = schemas[source] = self.toolkit(source).schemas()
        return found

    def world_from_image(self, image: WorldImage, source: str = "generated", shared_base: bool = False) -> World:
        """A new world at ``image``'s state with the tools of ``source`` (``shared_base``: see :class:`World`)."""
        return World(image, self.toolkit(source), self.user_tools, after_call=self.after_tool_call,
                     setup_tools=self.setup_tools, memo=self.memo, shared_base=shared_base)

    def scratch_world(self, image: WorldImage, source: str = "generated") -> World:
        """A world kept per image for one-off work (gold replays, checks); the caller loads what it needs.

        Not for concurrent use: callers hold ``state_of(domain).scratch_lock``.
        """
        key = (image.id, source)
        scratch = state_of(self).scratch
        found = scratch.get(key)
        if found is None:
            found = scratch[key] = self.world_from_image(image, source)
        return found

    # -- tasks -------------------------------------------------------------------------------------
    def tasks(self, split: str = "train", source: str = "generated", **params: Any) -> Sequence[Task]:
        """The tasks of one split from one task source, in the source's order: built once per process, and for
        the ``cached_sources`` read from the disk cache where a process built them before (then a
        :class:`~mua_gym.domain.disk_cache.CachedTasks`, which reads each task on first use)."""
        check_split(split)
        key = (split, source, tuple(sorted((k, repr(v)) for k, v in params.items())))
        cached = state_of(self).tasks
        found = cached.get(key)
        if found is not None:
            return found
        make = self.task_sources.get(source)
        if make is None:
            raise ValueError(
                f"domain {self.name!r} has no task source {source!r}; it has {sorted(self.task_sources)}"
            )
        entry = None
        if source in self.cached_sources:
            # Tasks are read off the source's world: its builder is part of what made them.
            builder = self.worlds.get(source)
            world = None if builder is None else disk_cache.entry("image", self.name, source, builder, ())
            if builder is None or world is not None:
                entry = disk_cache.entry("tasks", self.name, source, make, (key, world and world.name))
        tasks = disk_cache.cached_tasks(entry, lambda: make(self, split, **params))
        cached[key] = tasks
        return tasks

    def check_source(self, source: str, params: Mapping[str, Any]) -> None:
        """Checks that ``source`` is a source of this domain and that it takes every key of ``params``.

        Returns nothing; raises ``ValueError`` with a one-line message naming the valid choices. The keys a source
        takes are the keyword parameters of its task source (they reach it, and the policy function, as given); a
        task source that takes ``**params`` accepts any key.
        """
        sources = sorted(set(self.worlds) | set(self.task_sources))
        if source not in sources:
            raise ValueError(f"domain {self.name!r} has no world source {source!r}; choose from {sources}")
        if "source" in params:  # it would reach the policy function twice
            raise ValueError("world_params may not hold 'source': name the world source with world=...")
        make = self.task_sources.get(source)
        accepted, open_ended = _keyword_names(make, skip=2) if make is not None else (set(), False)
        accepted.discard("source")
        if open_ended:
            return
        for key in params:
            if key not in accepted:
                raise ValueError(f"unknown world_params key {key!r} for {self.name} source {source!r}"
                                 f"{did_you_mean(key, sorted(accepted))}; "
                                 f"valid keys: {', '.join(sorted(accepted)) or 'none'}")

    def default_user(self, source: str | None = None) -> str:
        """The user simulator an env of world ``source`` plays when none is named: the scenario user, which answers
        what any agent asks; on TAU2's retail and airline tasks, whose scenarios are prose it cannot follow, the
        scripted one (which replays the gold conversation: judging an agent there needs an LLM user)."""
        if source == "tau2" and not self.dual_control:
            return "scripted"
        return "scenario"

    def policy_text(self, source: str = "generated", **params: Any) -> str:
        """The policy for worlds of ``source`` (a callable policy gets ``source`` and the source parameters)."""
        return self.policy(source, **params) if callable(self.policy) else self.policy

    def check_assertion(self, world: World, assertion: EnvAssertion) -> bool:
        fn = self.assertions.get(assertion.name)
        if fn is None:
            raise ValueError(f"domain {self.name!r} has no assertion {assertion.name!r}")
        return bool(fn(world, **assertion.arguments)) == assertion.expected

    def __repr__(self) -> str:
        return f"Domain({self.name!r}, tools={len(self.tools)}, user_tools={len(self.user_tools or ())})"


def _toolkit(tools: Toolkit | Sequence[Callable[..., Any]]) -> Toolkit:
    return tools if isinstance(tools, Toolkit) else Toolkit.of(*tools)


def _keyword_names(function: Callable[..., Any], skip: int) -> tuple[set[str], bool]:
    """(the names ``function`` takes as keywords after its first ``skip`` parameters, whether it takes ``**``)."""
    names: set[str] = set()
    open_ended = False
    for index, p in enumerate(inspect.signature(function).parameters.values()):
        if p.kind is p.VAR_KEYWORD:
            open_ended = True
        elif index >= skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return names, open_ended
