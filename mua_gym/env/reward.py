"""The terminal reward: the product of the components named in a task's ``reward_basis``.

- DB: the final world equals the gold world (the task's start world with the gold actions replayed).
- COMMUNICATE: each required value was told to the user (:func:`mua_gym.env.communicate.missing_strict`).
- ACTION: each expected action matches some call of the same requestor on name and compared arguments, a call
  the tool refused or never ran not counted.
- ENV_ASSERTION: the domain's predicates hold on the final world.
- NL_ASSERTION: a pluggable judge (see :class:`Judge`); skipped, and reported as ``None``, without one.

That is strict scoring, what every env pays. A task that an idle agent's world would meet (some of TAU2's: no
write needed, scored on the world alone) is strict-scored on ACTION over its gold agent calls too, so a user's
stop, a transfer or a trainer's cut never pays an agent that did not make them; and since an agent that makes
those look-ups and then stops or refuses meets that too, it is paid only on a judge's verdict: its NL assertions
(in its basis or not) count as failed until a judge passes them, and one without any (EVIDENCE) is never paid.
So is any task whose start world already meets the gold world and its assertions and asks for no stated answer
(TAU2's telecom traps: look up, transfer), which an agent that looks up and hands off meets
(:attr:`mua_gym.env.episode.PreparedTask.judge_only`).
And CONDUCT (strict only, listed where it fails): no hand-off the gold does not make (a transfer on a task the
agent could solve), and no fix asked of the user that the user found already in place (a request made without a
diagnosis; counted by the env from its user simulator, see :attr:`mua_gym.user_sims.UserReply.needless`).
``parity_reward`` scores the same episode by tau2's own rules (COMMUNICATE: a substring of any assistant text;
ACTION: any call, refused ones included; no idle guard, no CONDUCT), for figures compared with published ones.

The gold world is computed once per task (:func:`mua_gym.env.episode.prepare_task`), so every rollout of a task
after the first pays only for comparing the rows it changed.

Reward modes (:func:`reward_mode`, :func:`shape`): what the env pays, named by one base and any shaping terms
joined with ``+`` (``"task"``, ``"partial+validity+efficiency"``; without a base, ``"task"``):

- ``task`` (the default): the binary task reward above.
- ``partial``: a success earns 1.0; a failure earns ``PARTIAL_FAILURE_SCALE`` x its partial DB credit
  (gold rows reproduced / rows gold changes), so no failure is paid like a success. The credit is 0 if the
  agent changed any row gold leaves alone, gave a gold row a wrong value, or called any write tool the gold
  never calls (even one that was refused or changed nothing): else a blind script that fires every write with
  guessed arguments is paid for the rows it happens to hit. A dual-control user's own rows are not the
  agent's credit (a blind agent that asks the user to do every fix would be paid for them), and a task whose
  gold changes no other row has no credit to give: 0.
- ``validity``: ``INVALID_CALL_PENALTY`` off for each agent call that was malformed or ran with an error (and
  each unreadable action), beyond as many as the gold itself makes (some TAU2 gold calls fail). Only a
  penalty: a bonus for valid calls would pay a policy for spamming read-only lookups.
- ``efficiency``: the base times ``min(1, budget / calls)``, floored at ``EFFICIENCY_FLOOR``; ``budget`` is
  ``BUDGET_PER_GOLD_CALL`` x the task's gold agent calls (at least one): a budget scaled to the gold length,
  PROVE-style. A factor of at most 1 on the base: it scales a success down and never pays a failure.

Shaped reward = ``base x efficiency factor - validity penalty``, then held in its band:

- a success (``task_reward`` 1.0) earns in ``[SUCCESS_FLOOR, 1]`` (0.6 to 1): the terms only move it within;
- a failure earns in ``[0, PARTIAL_FAILURE_SCALE]`` (0 to 0.5): ``task`` pays 0, ``partial`` its scaled credit,
  the terms only lower it, and never below 0 (a truncated episode earns 0, and a negative reward for finishing
  would teach a policy to run out the clock instead).

``SUCCESS_FLOOR`` > ``PARTIAL_FAILURE_SCALE``, so in every mode the worst success out-earns the best failure.
Success is judged on ``task_reward`` (the binary task reward), never on the shaped one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Literal, Protocol, Sequence

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from mua_gym.env.communicate import missing_parity, missing_strict
from mua_gym.world.diff import ChangeSet, WorldComparison, WorldDiff, compare_changes
from mua_gym.env.episode import PreparedTask, prepare_task
from mua_gym.jsonsafe import JSONError, loads
from mua_gym.messages import AssistantMessage, ToolMessage
from mua_gym.task import Action, Task, leaf_values
from mua_gym.world import World

if TYPE_CHECKING:
    from mua_gym.domain import Domain

__all__ = ["BUDGET_PER_GOLD_CALL", "EFFICIENCY_FLOOR", "EfficiencyTerm", "INVALID_CALL_PENALTY", "Judge",
           "PARTIAL_FAILURE_SCALE", "REWARD_BASES", "REWARD_TERMS", "RewardInfo", "RewardMode",
           "ShapedReward", "SUCCESS_FLOOR", "ValidityTerm", "evaluate", "judge_nl_assertions", "needs_judge",
           "reward_mode", "shape"]


class Judge(Protocol):
    """Decides natural-language assertions about a conversation: one verdict per assertion."""

    def __call__(self, messages: list[dict[str, Any]], assertions: list[str]) -> Awaitable[list[bool]]: ...


class RewardInfo(BaseModel):
    """Every component of the reward, with the evidence behind it."""

    #: The binary task reward, strict: the product of the components.
    reward: float
    components: dict[str, float | None]
    #: The same episode scored by tau2's own rules (see the module docstring); equal to ``reward`` on most.
    parity_reward: float | None = None
    #: ``rows_reproduced / gold_rows_changed`` (with no gold row, 1.0), but 0.0 if any extra row changed, any
    #: gold row was given a wrong value (:attr:`wrong_rows`) or any stray write was called. A dual-control
    #: user's own rows count in neither (see :attr:`mua_gym.env.episode.PreparedTask.user_rows`).
    partial_credit: float
    #: What would turn the final world into the gold one: ``inserted`` rows are missing, ``deleted``
    #: rows are extra, ``updated`` rows hold wrong values (``before``: the final world, ``after``: gold).
    db_diff: WorldDiff
    gold_rows_changed: int
    rows_reproduced: int
    extra_rows_changed: int
    #: Rows gold changes that the agent changed to another value: each a miss, and each voids the credit.
    wrong_rows: int = 0
    #: The agent's calls of write tools the gold never calls (a refused or no-op write included).
    stray_writes: int = 0
    communicate_missing: list[str] = []
    actions_missing: list[str] = []
    env_assertions_failed: list[str] = []
    nl_assertions: list[bool] | None = None
    #: Why CONDUCT failed (an unasked hand-off, needless requests); empty where it holds.
    conduct_failed: list[str] = []
    #: The judge's tokens and cost for this episode (a judge that reports them: :class:`mua_gym.llm.judge.Verdicts`);
    #: None, and left out of the dump, where no judge reported any.
    judge_usage: dict[str, float] | None = None

    @model_serializer(mode="wrap")
    def _without_unreported_usage(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The fields as a dict, ``judge_usage`` left out where None (an unjudged episode's record is unchanged)."""
        data = handler(self)
        if data.get("judge_usage", 0) is None:
            del data["judge_usage"]
        return data


def _db_comparison(prepared: PreparedTask, final: ChangeSet) -> WorldComparison:
    if final == prepared.gold_changes:  # the gold world exactly (what a solved episode ends in)
        n = prepared.gold_rows_changed
        return WorldComparison(WorldDiff(), n, n, 0, 0)
    return compare_changes(prepared.image, prepared.start_changes, prepared.gold_changes, final, prepared.user_rows)


def _arguments_match(expected: Action, arguments: dict[str, Any]) -> bool:
    names = expected.compare_args if expected.compare_args is not None else list(expected.arguments)
    return all(name in arguments and arguments[name] == expected.arguments.get(name) for name in names)


Call = tuple[str, str, dict[str, Any], bool]


def _calls(messages: Sequence[Any]) -> list[Call]:
    """Every readable call: (requestor, name, arguments, ran), ``ran`` False where the tool refused it or its
    result never came (a call after a terminal tool)."""
    failed = {m.tool_call_id: m.error for m in messages if isinstance(m, ToolMessage)}
    out = []
    for m in messages:
        for tc in getattr(m, "tool_calls", None) or []:
            try:
                args = loads(tc.function.arguments or "{}")
            except JSONError:  # what the world refused to read matches no expected action
                continue
            if isinstance(args, dict):
                requestor = "assistant" if isinstance(m, AssistantMessage) else "user"
                out.append((requestor, tc.function.name, args, failed.get(tc.id) is False))
    return out


def _actions_missing(expected: Sequence[Action], calls: Sequence[Call], strict: bool,
                     failing: Sequence[Action] = ()) -> list[str]:
    """The names of the expected actions no call matches (strict: no call that ran, except for the ``failing``
    ones, gold calls that fail in the gold episode itself: some of TAU2's)."""
    return [e.name for e in expected
            if not any(r == e.requestor and n == e.name and (ran or not strict or e in failing)
                       and _arguments_match(e, a) for r, n, a, ran in calls)]


def evaluate(domain: "Domain", task: Task, world: World, messages: Sequence[Any], *,
             needless_requests: int = 0) -> RewardInfo:
    """Scores a finished episode, strictly, and by tau2's rules (``parity_reward``). ``messages`` is the full
    record (agent, user and tool messages); ``needless_requests`` the fixes the user found already in place.

    NL_ASSERTION needs a judge and is left as ``None`` (not counted) here; :func:`judge_nl_assertions`
    fills it in where a judge is configured.
    """
    prepared = prepare_task(domain, task)
    spec = task.evaluation
    basis = spec.reward_basis
    components: dict[str, float | None] = {}
    parity: dict[str, float | None] = {}

    final = world.changes()
    db_diff, gold_changed, reproduced, extra, wrong = _db_comparison(prepared, final)
    if "DB" in basis:
        components["DB"] = parity["DB"] = 1.0 if world.state_hash() == prepared.gold_hash else 0.0

    communicate_missing: list[str] = []
    if "COMMUNICATE" in basis:
        restated = (leaf for a in task.gold_actions for leaf in leaf_values(a.arguments))
        communicate_missing = missing_strict(spec.communicate_info, messages, domain.answer_vocabularies, restated)
        components["COMMUNICATE"] = 0.0 if communicate_missing else 1.0
        parity["COMMUNICATE"] = 0.0 if missing_parity(spec.communicate_info, messages) else 1.0

    calls = _calls(messages)
    failing = [a for a, r in zip(task.gold_actions, prepared.gold_results) if r.error]
    actions_missing: list[str] = []
    if "ACTION" in basis:
        expected = spec.actions or task.gold_actions
        actions_missing = _actions_missing(expected, calls, True, failing)
        components["ACTION"] = 0.0 if actions_missing else 1.0
        parity["ACTION"] = 0.0 if _actions_missing(expected, calls, strict=False) else 1.0
    elif prepared.blind_paid:  # an idle agent would be paid: the agent must have made the gold calls
        actions_missing = _actions_missing([a for a in task.gold_actions if a.requestor == "assistant"], calls, True,
                                           failing)
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
        components["ENV_ASSERTION"] = parity["ENV_ASSERTION"] = 0.0 if failed else 1.0

    if "NL_ASSERTION" in basis:
        components["NL_ASSERTION"] = parity["NL_ASSERTION"] = None if spec.nl_assertions else 1.0
    if prepared.judge_only:  # only a judge tells a solution from looking up and stopping: failed until judged
        components["NL_ASSERTION" if spec.nl_assertions else "EVIDENCE"] = 0.0

    conduct_failed = _conduct(domain, task, calls, needless_requests)
    if conduct_failed:
        components["CONDUCT"] = 0.0

    gold_writes = {a.name for a in task.gold_actions if a.requestor == "assistant"}
    stray = sum(1 for r, n, _, _ in calls if r == "assistant" and n not in gold_writes
                and n in world.tools and world.tools[n].kind == "write")
    if extra or wrong or stray:  # any write gold does not make voids the credit, else a blind shotgun is paid
        partial = 0.0
    elif gold_changed:
        partial = reproduced / gold_changed
    else:
        partial = 1.0
    return RewardInfo(
        reward=_product(components), components=components, parity_reward=_product(parity), partial_credit=partial,
        db_diff=db_diff, gold_rows_changed=gold_changed, rows_reproduced=reproduced, extra_rows_changed=extra,
        wrong_rows=wrong, stray_writes=stray,
        communicate_missing=communicate_missing, actions_missing=actions_missing,
        env_assertions_failed=failed, conduct_failed=conduct_failed,
    )


#: The hand-off every domain's agent may make; a domain's terminal tools are hand-offs too.
HANDOFF = "transfer_to_human_agents"


def _conduct(domain: "Domain", task: Task, calls: Sequence[Call], needless_requests: int) -> list[str]:
    """Why the agent's conduct fails strict scoring (see the module docstring); empty where it holds."""
    handoffs = domain.terminal_tools | {HANDOFF}
    failed = []
    if not any(a.name in handoffs for a in task.gold_actions):
        made = sorted({n for r, n, _, ran in calls if r == "assistant" and ran and n in handoffs})
        failed += [f"{name}: a hand-off the task does not need" for name in made]
    if needless_requests:
        failed.append(f"{needless_requests} fix(es) asked of the user that were already in place")
    return failed


def _product(components: dict[str, float | None]) -> float:
    reward = 1.0
    for value in components.values():
        if value is not None:
            reward *= value
    return reward


def needs_judge(task: Task, judge_only: bool = False) -> bool:
    """Whether a judge must decide ``task``'s NL assertions: they are in its basis, or the task is
    ``judge_only`` (:attr:`mua_gym.env.episode.PreparedTask.judge_only`: only a judge can pay it, strictly)."""
    spec = task.evaluation
    return bool(spec.nl_assertions) and ("NL_ASSERTION" in spec.reward_basis or judge_only)


async def judge_nl_assertions(info: RewardInfo, task: Task, judge: Judge,
                              conversation: list[dict[str, Any]]) -> RewardInfo:
    """Asks ``judge`` about the task's NL assertions; returns ``info`` with its verdicts folded into the reward
    and, where the judge reports them (:class:`mua_gym.llm.judge.Verdicts`), the call's tokens and cost in
    ``judge_usage``."""
    answer = await judge(conversation, list(task.evaluation.nl_assertions))
    verdicts = [bool(v) for v in answer]
    usage = getattr(answer, "usage", None)  # a judge's own callable may report none
    components = dict(info.components)
    verdict = 1.0 if len(verdicts) == len(task.evaluation.nl_assertions) and all(verdicts) else 0.0
    components["NL_ASSERTION"] = verdict
    judged_by_tau2 = "NL_ASSERTION" in task.evaluation.reward_basis
    parity = info.parity_reward if info.parity_reward is None or not judged_by_tau2 else info.parity_reward * verdict
    return info.model_copy(update={"components": components, "nl_assertions": verdicts,
                                   "reward": _product(components), "parity_reward": parity,
                                   "judge_usage": dict(usage) if isinstance(usage, dict) else None})


# -- reward modes ---------------------------------------------------------------------------------------

REWARD_BASES = ("task", "partial")
REWARD_TERMS = ("validity", "efficiency")
#: What a failed episode's partial DB credit is worth in ``partial`` mode (a success earns 1.0).
PARTIAL_FAILURE_SCALE = 0.5
#: What ``validity`` takes off per malformed or erroring agent call (and per unreadable action).
INVALID_CALL_PENALTY = 0.1
#: ``efficiency``'s call budget per gold agent call: room for one lookup or retry beside each.
BUDGET_PER_GOLD_CALL = 2
#: The least a success earns in any mode: strictly above the most any failure earns (``PARTIAL_FAILURE_SCALE``).
SUCCESS_FLOOR = 0.6
#: The lowest ``efficiency`` factor: an over-budget success lands on ``SUCCESS_FLOOR``, no lower.
EFFICIENCY_FLOOR = SUCCESS_FLOOR


@dataclass(frozen=True)
class RewardMode:
    """A parsed reward mode: its base and which shaping terms are on."""

    base: Literal["task", "partial"] = "task"
    validity: bool = False
    efficiency: bool = False

    @property
    def name(self) -> str:
        """The canonical name: the base, then the terms on, in ``REWARD_TERMS`` order, joined by ``+``."""
        return "+".join([self.base] + [t for t in REWARD_TERMS if getattr(self, t)])


def reward_mode(spec: "str | RewardMode") -> RewardMode:
    """Parses ``"base+term+..."`` (any order, each name once, at most one base; no base means ``task``).

    Returns the :class:`RewardMode`; raises ValueError naming the valid modes for anything else.
    """
    if isinstance(spec, RewardMode):
        return spec
    names = [n.strip() for n in spec.split("+")] if isinstance(spec, str) else [repr(spec)]
    valid = set(REWARD_BASES) | set(REWARD_TERMS)
    bases = [n for n in names if n in REWARD_BASES]
    if not names or any(n not in valid for n in names) or len(set(names)) < len(names) or len(bases) > 1:
        raise ValueError(f"unknown reward mode {spec!r}: one base of {', '.join(REWARD_BASES)} (default task) and any "
                         f"of {', '.join(REWARD_TERMS)}, joined by '+', e.g. 'partial+validity+efficiency'")
    return RewardMode(bases[0] if bases else "task", "validity" in names, "efficiency" in names)  # type: ignore[arg-type]


class ValidityTerm(BaseModel):
    """``validity``'s inputs and value."""

    #: The agent's tool calls (malformed ones included).
    calls: int
    #: Calls that were malformed or ran with an error, plus actions that could not be read at all.
    invalid_calls: int
    #: The gold's own agent calls that fail: that many invalid calls cost nothing.
    allowed: int = 0
    #: What is taken off the reward: ``INVALID_CALL_PENALTY`` x ``max(0, invalid_calls - allowed)``.
    penalty: float


class EfficiencyTerm(BaseModel):
    """``efficiency``'s inputs and value."""

    #: The agent's calls, with each fix it asked of the user that was already in place (the env counts them).
    calls: int
    #: The task's gold actions the agent itself makes (a dual-control user's own are left out).
    gold_calls: int
    #: ``BUDGET_PER_GOLD_CALL`` x ``max(gold_calls, 1)``.
    budget: int
    #: What the base is multiplied by: ``max(EFFICIENCY_FLOOR, min(1, budget / calls))``.
    factor: float


class ShapedReward(BaseModel):
    """What :func:`shape` adds to an episode's ``reward_info``."""

    #: The canonical mode name (:attr:`RewardMode.name`).
    reward_mode: str
    #: The binary task reward (:attr:`RewardInfo.reward`): what success is judged on, whatever the mode.
    task_reward: float
    #: The reward the env pays: ``base x efficiency factor - validity penalty``, held in its band (a success in
    #: ``[SUCCESS_FLOOR, 1]``, a failure in ``[0, PARTIAL_FAILURE_SCALE]``).
    shaped_reward: float
    #: The base's value: ``task_reward``, or in ``partial`` mode 1.0 or the scaled partial credit of a failure.
    base_reward: float
    #: The terms the mode turns on, with their inputs; ``None`` where off.
    validity: ValidityTerm | None = None
    efficiency: EfficiencyTerm | None = None


def shape(mode: RewardMode, info: RewardInfo, *, calls: int, invalid_calls: int, gold_calls: int,
          gold_invalid_calls: int = 0) -> ShapedReward:
    """The reward ``mode`` pays for a scored episode (see the module docstring), with every term's inputs.

    ``calls``: the agent's tool calls; ``invalid_calls``: those that failed, plus unreadable actions;
    ``gold_calls``: the agent's gold actions; ``gold_invalid_calls``: those of them that fail.
    """
    task_reward = float(info.reward)
    base = task_reward
    if mode.base == "partial" and task_reward < 1.0:
        base = PARTIAL_FAILURE_SCALE * info.partial_credit if info.gold_rows_changed else 0.0
    shaped = base
    efficiency: EfficiencyTerm | None = None
    validity: ValidityTerm | None = None
    if mode.efficiency:
        budget = BUDGET_PER_GOLD_CALL * max(gold_calls, 1)
        factor = max(EFFICIENCY_FLOOR, min(1.0, budget / calls)) if calls else 1.0
        efficiency = EfficiencyTerm(calls=calls, gold_calls=gold_calls, budget=budget, factor=factor)
        shaped *= factor
    if mode.validity:
        penalty = INVALID_CALL_PENALTY * max(0, invalid_calls - gold_invalid_calls)
        validity = ValidityTerm(calls=calls, invalid_calls=invalid_calls, allowed=gold_invalid_calls, penalty=penalty)
        shaped -= penalty
    # The bands: a success never drops to what a failure can earn (else a policy learns to fail cleanly).
    shaped = max(SUCCESS_FLOOR, shaped) if task_reward >= 1.0 else min(PARTIAL_FAILURE_SCALE, max(0.0, shaped))
    return ShapedReward(reward_mode=mode.name, task_reward=task_reward, shaped_reward=shaped, base_reward=base,
                        validity=validity, efficiency=efficiency)
