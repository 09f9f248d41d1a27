"""The terminal reward: the product of the components named in a task's ``reward_basis``.

- DB: the final world equals the gold world (the task's start world with the gold actions replayed).
- COMMUNICATE: each required string appears in some agent text (case-insensitive, commas ignored).
- ACTION: each expected action matches some call of the same requestor on name and compared arguments.
- ENV_ASSERTION: the domain's predicates hold on the final world.
- NL_ASSERTION: a pluggable judge (see :class:`Judge`); skipped, and reported as ``None``, without one.

The gold world is computed once per task (:func:`prepare_task`), so every rollout of a task after the
first pays only for comparing the rows it changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Protocol, Sequence

from pydantic import BaseModel

from mua_gym.jsonsafe import JSONError, loads
from mua_gym.messages import AssistantMessage
from mua_gym.task import Action, Task
from mua_gym.tools import ToolResult
from mua_gym.world import ChangeSet, Delta, Key, Memory, Row, TableDiff, World, WorldDiff, WorldImage, diff_rows

if TYPE_CHECKING:
    from mua_gym.domain import Domain

__all__ = ["Judge", "PreparedTask", "RewardInfo", "evaluate", "judge_nl_assertions", "needs_judge", "prepare_task"]


class Judge(Protocol):
    """Decides natural-language assertions about a conversation: one verdict per assertion."""

    def __call__(self, messages: list[dict[str, Any]], assertions: list[str]) -> Awaitable[list[bool]]: ...


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
    #: Rows the gold actions change (from the start state): the partial credit's denominator.
    gold_rows_changed: int = 0
    #: Whether an agent that did and said nothing would be paid (a task needing no write, scored on the world
    #: alone: some of TAU2's). Generated tasks never are; a rollout a trainer cuts short is then not scored.
    blind_paid: bool = False


def prepare_task(domain: "Domain", task: Task) -> PreparedTask:
    """Builds (or returns the cached) :class:`PreparedTask` for ``task``."""
    # (Read from pydantic's private store directly: the attribute lookup goes through a slow fallback.)
    prepared = (task.__pydantic_private__ or {}).get("_prepared")
    if isinstance(prepared, PreparedTask):
        return prepared
    image = domain.image(task.world)
    with domain.scratch_lock:
        world = domain.scratch_world(image, task.world.source)
        world.load(image.data)
        for action in task.initial_actions:
            result = world.call_tool(action.name, action.arguments, action.requestor)
            if result.error:
                raise ValueError(f"task {task.id}: initial action {action.name} failed: {result.content}")
        start, start_memory = world.delta(), world.memory()
        start_changes = world.changes()
        start_hash, assertions_hold = world.state_hash(), _assertions_hold(domain, task, world)
        results = tuple(world.call_tool(a.name, a.arguments, a.requestor) for a in task.gold_actions)
        gold_changes = world.changes()
        gold_hash = world.state_hash()
        prepared = PreparedTask(image, start, start_memory, start_changes, gold_hash, gold_changes,
                                results, _compare(image, start_changes, gold_changes, gold_changes)[1],
                                _blind_paid(task, start_hash == gold_hash, assertions_hold))
    task._prepared = prepared
    return prepared


def _assertions_hold(domain: "Domain", task: Task, world: World) -> bool:
    """Whether every env assertion of the task holds in ``world`` (a failing check counts as not holding)."""
    if "ENV_ASSERTION" not in task.evaluation.reward_basis:
        return True
    try:
        return all(domain.check_assertion(world, a) for a in task.evaluation.env_assertions)
    except Exception:
        return False


def _blind_paid(task: Task, start_is_gold: bool, assertions_hold: bool) -> bool:
    """Whether :func:`evaluate` would pay an episode with no messages on the start world."""
    spec = task.evaluation
    passes = {
        "DB": start_is_gold,
        "COMMUNICATE": not spec.communicate_info,
        "ACTION": not (spec.actions or task.gold_actions),
        "ENV_ASSERTION": assertions_hold,
        "NL_ASSERTION": not spec.nl_assertions,  # a judge is taken to fail an empty conversation
    }
    return all(passes.get(component, True) for component in spec.reward_basis)


class RewardInfo(BaseModel):
    """Every component of the reward, with the evidence behind it."""

    reward: float
    components: dict[str, float | None]
    partial_credit: float
    #: What would turn the final world into the gold one: ``inserted`` rows are missing, ``deleted``
    #: rows are extra, ``updated`` rows hold wrong values (``before``: the final world, ``after``: gold).
    db_diff: WorldDiff
    gold_rows_changed: int
    rows_reproduced: int
    extra_rows_changed: int
    communicate_missing: list[str] = []
    actions_missing: list[str] = []
    env_assertions_failed: list[str] = []
    nl_assertions: list[bool] | None = None


def _effective(cs: ChangeSet, base: ChangeSet, image: WorldImage, table: str, key: Key) -> Row | None:
    for layer in (cs, base):
        rows = layer.get(table)
        if rows is not None and key in rows:
            return rows[key]
    return image.base_row_by_key(table, key)


def _db_comparison(prepared: PreparedTask, final: ChangeSet) -> tuple[WorldDiff, int, int, int]:
    """(what turns the final world into gold, rows gold changed, of those the rows reproduced, extra rows)."""
    if final == prepared.gold_changes:  # the gold world exactly (what a solved episode ends in)
        return WorldDiff(), prepared.gold_rows_changed, prepared.gold_rows_changed, 0
    return _compare(prepared.image, prepared.start_changes, prepared.gold_changes, final)


def _compare(image: WorldImage, start: ChangeSet, gold: ChangeSet, final: ChangeSet
             ) -> tuple[WorldDiff, int, int, int]:
    tables: dict[str, TableDiff] = {}
    gold_changed = reproduced = extra = 0
    for table in sorted(set(final) | set(gold) | set(start)):
        keys = set(final.get(table, ())) | set(gold.get(table, ())) | set(start.get(table, ()))
        td: TableDiff | None = None  # made only where the final world differs from gold (rare in a good episode)
        for key in sorted(keys, key=repr):
            initial = _effective({}, start, image, table, key)
            mine = _effective(final, {}, image, table, key)
            wanted = _effective(gold, {}, image, table, key)
            if mine != wanted:
                if td is None:
                    td = tables[table] = TableDiff()
                diff_rows(image.tables[table], key, mine, wanted, td)
            if wanted != initial:
                gold_changed += 1
                reproduced += mine == wanted
            elif mine != initial:
                extra += 1
    return WorldDiff(tables=tables), gold_changed, reproduced, extra


def _normalise(text: str) -> str:
    return text.lower().replace(",", "")


def _arguments_match(expected: Action, arguments: dict[str, Any]) -> bool:
    names = expected.compare_args if expected.compare_args is not None else list(expected.arguments)
    return all(name in arguments and arguments[name] == expected.arguments.get(name) for name in names)


def _calls(messages: Sequence[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for m in messages:
        for tc in getattr(m, "tool_calls", None) or []:
            try:
                args = loads(tc.function.arguments or "{}")
            except JSONError:  # what the world refused to read matches no expected action
                continue
            if isinstance(args, dict):
                out.append(("assistant" if isinstance(m, AssistantMessage) else "user", tc.function.name, args))
    return out


def evaluate(domain: "Domain", task: Task, world: World, messages: Sequence[Any]) -> RewardInfo:
    """Scores a finished episode. ``messages`` is the full record (agent, user and tool messages).

    NL_ASSERTION needs a judge and is left as ``None`` (not counted) here; :func:`judge_nl_assertions`
    fills it in where a judge is configured.
    """
    prepared = prepare_task(domain, task)
    spec = task.evaluation
    basis = spec.reward_basis
    components: dict[str, float | None] = {}

    final = world.changes()
    db_diff, gold_changed, reproduced, extra = _db_comparison(prepared, final)
    if "DB" in basis:
        components["DB"] = 1.0 if world.state_hash() == prepared.gold_hash else 0.0

    communicate_missing: list[str] = []
    if "COMMUNICATE" in basis:
        said = [_normalise(m.content) for m in messages if isinstance(m, AssistantMessage) and m.content]
        communicate_missing = [s for s in spec.communicate_info if not any(_normalise(s) in t for t in said)]
        components["COMMUNICATE"] = 0.0 if communicate_missing else 1.0

    actions_missing: list[str] = []
    if "ACTION" in basis:
        calls = _calls(messages)
        for expected in spec.actions or task.gold_actions:
            if not any(r == expected.requestor and n == expected.name and _arguments_match(expected, a)
                       for r, n, a in calls):
                actions_missing.append(expected.name)
        components["ACTION"] = 0.0 if actions_missing else 1.0

    failed: list[str] = []
    if "ENV_ASSERTION" in basis:
        for assertion in spec.env_assertions:
            try:
                ok = domain.check_assertion(world, assertion)
            except Exception as exc:  # a broken assertion fails the component, never the episode
                ok = False
                failed.append(f"{assertion.name}: {exc}")
                continue
            if not ok:
                failed.append(assertion.name)
        components["ENV_ASSERTION"] = 0.0 if failed else 1.0

    if "NL_ASSERTION" in basis:
        components["NL_ASSERTION"] = None if spec.nl_assertions else 1.0

    if gold_changed:
        partial = max(0.0, (reproduced - extra) / gold_changed)
    else:
        partial = 0.0 if extra else 1.0
    return RewardInfo(
        reward=_product(components), components=components, partial_credit=partial, db_diff=db_diff,
        gold_rows_changed=gold_changed, rows_reproduced=reproduced, extra_rows_changed=extra,
        communicate_missing=communicate_missing, actions_missing=actions_missing,
        env_assertions_failed=failed,
    )


def _product(components: dict[str, float | None]) -> float:
    reward = 1.0
    for value in components.values():
        if value is not None:
            reward *= value
    return reward


def needs_judge(task: Task) -> bool:
    return "NL_ASSERTION" in task.evaluation.reward_basis and bool(task.evaluation.nl_assertions)


async def judge_nl_assertions(info: RewardInfo, task: Task, judge: Judge,
                              conversation: list[dict[str, Any]]) -> RewardInfo:
    """Asks ``judge`` about the task's NL assertions and folds its verdicts into the reward."""
    verdicts = [bool(v) for v in await judge(conversation, list(task.evaluation.nl_assertions))]
    components = dict(info.components)
    components["NL_ASSERTION"] = 1.0 if len(verdicts) == len(task.evaluation.nl_assertions) and all(verdicts) else 0.0
    return info.model_copy(update={"components": components, "nl_assertions": verdicts,
                                   "reward": _product(components)})
