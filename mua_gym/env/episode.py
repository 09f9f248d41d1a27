"""An episode's two halves of state: what its task needs, made once, and what the running episode counts.

- :func:`prepare_task` ``(domain, task) -> PreparedTask``: the task's start state and gold world, built on a
  task's first use and kept on the domain for as long as the task object lives. Every later episode of the
  task starts from it and is scored against it.
- :class:`EpisodeState`: the counters and outcome of one running episode; an env makes a fresh one per reset.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mua_gym.world.diff import ChangeSet, compare_changes
from mua_gym.world.image import Delta, WorldImage
from mua_gym.world.sql import Key
from mua_gym.task import Task
from mua_gym.tools import ToolResult
from mua_gym.world import Memory, World
from mua_gym.domain.state import state_of

if TYPE_CHECKING:
    from mua_gym.domain import Domain

__all__ = ["EpisodeState", "PreparedTask", "prepare_task"]


@dataclass(frozen=True)
class PreparedTask:
    """Per-task work done once: the start state, and the gold world's hash and changed rows."""

    image: WorldImage
    #: The start state over the image (the task's initial actions applied), and what the world had derived
    #: from it: ``World.reset(start, start_memory)`` goes there.
    start: Delta
    start_memory: Memory
    start_changes: ChangeSet
    gold_hash: str
    gold_changes: ChangeSet
    gold_results: tuple[ToolResult, ...]
    #: Rows the gold actions change (from the start state), a dual-control user's own rows left out: the partial
    #: credit's denominator.
    gold_rows_changed: int = 0
    #: Whether an agent that did and said nothing would be paid where no judge runs (a task needing no write,
    #: scored on the world alone, its natural-language assertions unjudged: some of TAU2's). Generated tasks
    #: never are; strict scoring pays such a task only on a judge's verdict (:mod:`mua_gym.env.reward`).
    blind_paid: bool = False
    #: Whether only a judge can tell a solution from an agent that makes the gold's look-ups and hand-offs and
    #: then stops: the start world is the gold one, the env assertions already hold there, and no answer is to be
    #: stated (every ``blind_paid`` task; TAU2's telecom traps: look up, transfer). Strict scoring pays it only on
    #: a judge's verdict.
    judge_only: bool = False
    #: (table, key) of the rows the user's own gold actions change (dual control): no partial credit of the
    #: agent's, since a blind agent that only asks the user to do things would be paid for them.
    user_rows: frozenset[tuple[str, Key]] = frozenset()
    #: The gold agent calls: how many there are and how many of them fail (some of TAU2's do), for shaping.
    gold_agent_calls: int = 0
    gold_agent_errors: int = 0


def prepare_task(domain: "Domain", task: Task, *, fresh: bool = False) -> PreparedTask:
    """The :class:`PreparedTask` of ``task``: built on first use, then the one this process keeps for ``domain``
    (:func:`mua_gym.domain.state.state_of`).

    ``fresh=True`` builds it again (and keeps the new one); a build leaves ``domain``'s scratch world of the
    task's image in the gold state, which :func:`mua_gym.kit.generation.check_task` goes on from.
    Raises ``ValueError`` where an initial action of the task fails.
    """
    cache, key = state_of(domain).prepared, id(task)
    entry = cache.get(key)
    if not fresh and entry is not None and entry[0]() is task:
        return entry[1]
    prepared = _prepare(domain, task)
    # The entry goes when the task does: a task list dropped by its owner frees its preparations too.
    cache[key] = (weakref.ref(task, lambda _, key=key: cache.pop(key, None)), prepared)
    return prepared


def _prepare(domain: "Domain", task: Task) -> PreparedTask:
    image = domain.image(task.world)
    with state_of(domain).scratch_lock:
        world = domain.scratch_world(image, task.world.source)
        world.load(image.data)
        for action in task.initial_actions:
            result = world.call_tool(action.name, action.arguments, action.requestor)
            if result.error:
                raise ValueError(f"task {task.id}: initial action {action.name} failed: {result.content}")
        start, start_memory = world.delta(), world.memory()
        start_changes = world.changes()
        start_hash, assertions_hold = world.state_hash(), _assertions_hold(domain, task, world)
        results, user_rows = _replay_gold(world, task)
        gold_changes = world.changes()
        gold_hash = world.state_hash()
    gold_changed = compare_changes(image, start_changes, gold_changes, gold_changes, user_rows).gold_changed
    agent_results = [r for a, r in zip(task.gold_actions, results) if a.requestor == "assistant"]
    start_is_gold = start_hash == gold_hash
    # the world and its assertions met before anything is done, and no answer to state: calls alone are all it asks
    judge_only = start_is_gold and assertions_hold and not task.evaluation.communicate_info
    return PreparedTask(image, start, start_memory, start_changes, gold_hash, gold_changes, results, gold_changed,
                        _blind_paid(task, start_is_gold, assertions_hold), judge_only, user_rows,
                        len(agent_results), sum(r.error for r in agent_results))


def _replay_gold(world: World, task: Task) -> tuple[tuple[ToolResult, ...], frozenset[tuple[str, Key]]]:
    """Runs the gold actions on ``world``: their results, and the rows the user's own actions changed."""
    results, user_rows = [], set()
    for action in task.gold_actions:
        before = world.changes() if action.requestor == "user" else None
        results.append(world.call_tool(action.name, action.arguments, action.requestor))
        if before is not None:
            after = world.changes()
            for table in set(before) | set(after):
                old, new = before.get(table, {}), after.get(table, {})
                user_rows.update((table, key) for key in set(old) | set(new)
                                 if old.get(key, _ABSENT) != new.get(key, _ABSENT))
    return tuple(results), frozenset(user_rows)


_ABSENT = object()


def _assertions_hold(domain: "Domain", task: Task, world: World) -> bool:
    """Whether every env assertion of the task holds in ``world`` (a failing check counts as not holding)."""
    if "ENV_ASSERTION" not in task.evaluation.reward_basis:
        return True
    try:
        return all(domain.check_assertion(world, a) for a in task.evaluation.env_assertions)
    except Exception:
        return False


def _blind_paid(task: Task, start_is_gold: bool, assertions_hold: bool) -> bool:
    """Whether an episode with no messages on the start world would be paid in full, with no judge."""
    spec = task.evaluation
    passes = {
        "DB": start_is_gold,
        "COMMUNICATE": not spec.communicate_info,
        "ACTION": not (spec.actions or task.gold_actions),
        "ENV_ASSERTION": assertions_hold,
        "NL_ASSERTION": True,  # unjudged, as where no judge is configured
    }
    return all(passes.get(component, True) for component in spec.reward_basis)


@dataclass
class EpisodeState:
    """What one running episode has counted and how it ended; a fresh one per reset.

    ``done`` is ``terminated or truncated``. ``reward`` and ``reward_info`` are set when it is scored (a
    truncated episode: ``reward`` 0.0, no ``reward_info``). ``pending_error``: the user simulator failed (or, void,
    faulted); the next step ends the episode truncated with it.
    """

    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    user_tool_calls: int = 0
    #: Agent calls a transition perturbation failed (never run): neither errors nor calls of the agent's own.
    service_faults: int = 0
    #: Fixes the agent asked the user for that the user found already in place (:attr:`UserReply.needless`).
    needless_requests: int = 0
    usage: dict[str, float] = field(default_factory=dict)
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    reason: str | None = None
    reward: float | None = None
    reward_info: dict[str, Any] | None = None
    pending_error: str | None = None
    #: Every fault of the user's so far (:class:`mua_gym.env.infos.UserFault` dicts), and those of the running step.
    user_faults: list[dict[str, Any]] = field(default_factory=list)
    step_faults: list[dict[str, Any]] = field(default_factory=list)
    #: Why the episode is void (its user failed, or faulted under ``on_user_fault="void"``); None if it is not.
    void: str | None = None

    def end(self, terminated: bool, reason: str) -> None:
        """Ends the episode: terminated (to be scored) or truncated (at 0.0), for ``reason``."""
        self.done, self.reason = True, reason
        if terminated:
            self.terminated = True
        else:
            self.truncated, self.reward = True, 0.0
