"""What a process derives from a domain and keeps: built on first use, never declared by the domain's author.

A :class:`~mua_gym.Domain` is its author's declaration and nothing else; :func:`state_of` gives the
:class:`DomainState` this process keeps beside it (world images, task lists, toolkits and schemas per source,
scratch worlds, prepared tasks, and the locks that guard them), held only as long as the domain is.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # (not the Domain: its module imports this one)
    from mua_gym.task import Task
    from mua_gym.tools import Toolkit
    from mua_gym.world import World
    from mua_gym.world.image import WorldImage

__all__ = ["DomainState", "state_of"]


@dataclass(eq=False)
class DomainState:
    """One domain's derived state in this process."""

    #: World spec key -> its starting image.
    images: dict[tuple[Any, ...], "WorldImage"] = field(default_factory=dict)
    #: (split, source, params) -> the task list.
    tasks: dict[tuple[Any, ...], Sequence["Task"]] = field(default_factory=dict)
    #: Source -> the agent's toolkit, and its OpenAI schemas.
    toolkits: dict[str, "Toolkit"] = field(default_factory=dict)
    schemas: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: (image id, source) -> a world kept for one-off work (gold replays, checks); used under ``scratch_lock``.
    scratch: dict[tuple[int, str], "World"] = field(default_factory=dict)
    #: Per task object (by id, with a weak reference to it): what mua_gym.env.episode.prepare_task made of it.
    prepared: dict[int, tuple[weakref.ref["Task"], Any]] = field(default_factory=dict)
    #: Guards building an image; ``scratch_lock`` guards the scratch worlds.
    lock: threading.Lock = field(default_factory=threading.Lock)
    scratch_lock: threading.RLock = field(default_factory=threading.RLock)


_states: "weakref.WeakKeyDictionary[Any, DomainState]" = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def state_of(domain: Any) -> DomainState:
    """The state this process keeps for ``domain``, a :class:`~mua_gym.Domain` (made on first use)."""
    found = _states.get(domain)
    if found is None:
        with _states_lock:
            found = _states.setdefault(domain, DomainState())
    return found
