"""The ``info`` dicts of ``reset`` and ``step``, typed: what each key holds, and when it is there.

They are plain dicts at run time (what Gymnasium and every trainer expect); these TypedDicts are the contract
a type checker and a reader can hold them to. ``tests/test_infos.py`` checks that every key an env returns is
declared here and that every required key is always there.
"""

from typing import Any

# (no ``from __future__ import annotations`` here: TypedDict reads NotRequired from evaluated annotations)
from typing_extensions import NotRequired, TypedDict

__all__ = ["EfficiencyInfo", "FidelityInfo", "ResetInfo", "RewardInfoDict", "StepInfo", "UserFault", "UserResetInfo",
           "UserStepInfo", "ValidityInfo"]


class UserFault(TypedDict):
    """One fault of the simulated user's (see :mod:`mua_gym.user_sims.faults`)."""

    #: ``invented_fact``, ``early_stop``, ``scenario_leak``, ``role_break``, ``obeyed_injection``,
    #: ``off_scenario``, ``volunteered`` or ``unasked_action``.
    kind: str
    #: The agent turn the faulty reply answered (0: the user's opening).
    turn: int
    #: What the user said or did that is the fault, in a line.
    evidence: str
    #: What the env did about it: ``flagged`` (kept), ``retried`` (the reply was asked for again and dropped) or
    #: ``voided`` (the episode ended void).
    handled: NotRequired[str]


class ResetInfo(TypedDict):
    """``info`` from ``reset``."""

    #: The task played (``Task.id``).
    task_id: str
    #: The domain's name (``"retail"``).
    domain: str
    #: The task's split: ``train``, ``dev`` or ``test``.
    split: str
    #: The agent's tools as OpenAI function schemas, ready for a chat completion's ``tools=``.
    tools: list[dict[str, Any]]
    #: The policy text, also the observation's system message.
    policy: str
    #: The user simulator's name (``"scripted"``, ``"scenario"``, ``"llm"``, ...).
    user: str
    #: Agent turns before the episode is truncated.
    max_turns: int
    #: Only where the user simulator failed to open: why. The first step then ends the episode truncated.
    user_error: NotRequired[str]
    #: Only with ``perturb=``: what each perturbation drew for this episode (``name``, ``family``, its options
    #: and draws).
    perturbations: NotRequired[list[dict[str, Any]]]
    #: Only where the user's opening broke its scenario: each fault (see :class:`UserFault`).
    user_faults: NotRequired[list[UserFault]]
    #: Only where the episode is void from the start (its user failed, or faulted with ``on_user_fault="void"``):
    #: why. The first step ends it truncated; trainers leave it out.
    void: NotRequired[str]


class ValidityInfo(TypedDict):
    """``reward_info["validity"]`` where the reward mode has the ``validity`` term."""

    calls: int
    invalid_calls: int
    allowed: int
    penalty: float


class EfficiencyInfo(TypedDict):
    """``reward_info["efficiency"]`` where the reward mode has the ``efficiency`` term."""

    calls: int
    gold_calls: int
    budget: int
    factor: float


class RewardInfoDict(TypedDict):
    """``info["reward_info"]`` on the terminal step of a terminated episode: the reward and its evidence.

    The fields of :class:`mua_gym.env.reward.RewardInfo` and :class:`mua_gym.env.reward.ShapedReward`, as JSON;
    their docstrings say what each means.
    """

    #: The binary task reward before shaping, strict: the product of ``components``.
    reward: float
    #: Each judged component (``DB``, ``COMMUNICATE``, ``ACTION``, ...): 1.0 or 0.0; None where not judged.
    components: dict[str, float | None]
    #: The same episode scored by tau2's own rules (substring COMMUNICATE, refused calls count for ACTION).
    parity_reward: float | None
    partial_credit: float
    #: What would turn the final world into the gold one: ``{"tables": {name: {"inserted": [...], ...}}}``.
    db_diff: dict[str, Any]
    gold_rows_changed: int
    rows_reproduced: int
    extra_rows_changed: int
    wrong_rows: int
    stray_writes: int
    communicate_missing: list[str]
    actions_missing: list[str]
    env_assertions_failed: list[str]
    #: The judge's verdict per natural-language assertion; None where none was judged.
    nl_assertions: list[bool] | None
    #: Why strict scoring's CONDUCT failed (a hand-off the task does not need, fixes already in place); empty if held.
    conduct_failed: list[str]
    #: The reward mode's canonical name (``"task"``, ``"partial+validity"``).
    reward_mode: str
    #: The binary task reward: judge success on it, whatever the mode.
    task_reward: float
    #: What the step paid.
    shaped_reward: float
    base_reward: float
    validity: ValidityInfo | None
    efficiency: EfficiencyInfo | None
    #: Only where the natural-language judge failed: why (its component then scores 0.0).
    judge_error: NotRequired[str]
    #: Only where a judge reported its call's tokens and cost (:class:`mua_gym.llm.judge.Verdicts`): them.
    judge_usage: NotRequired[dict[str, float]]


class StepInfo(TypedDict):
    """``info`` from ``step``."""

    #: Agent turns so far.
    turn: int
    #: The agent's tool calls so far, malformed ones included.
    tool_calls: int
    #: Those that failed, plus actions that could not be read at all (calls a transition perturbation failed aside).
    tool_errors: int
    #: Why the episode ended; None while it runs. Terminated: ``user_stop``, ``user_transfer``,
    #: ``user_out_of_scope``, ``user_walked_away``, ``agent_stop`` (a terminal tool), or the reason given to
    #: ``finish`` (``stopped_by_trainer``). Truncated: ``max_turns``, ``too_many_tool_errors``, ``user_error``,
    #: ``user_fault``.
    termination_reason: str | None
    #: Only on the terminal step of a terminated episode (a truncated one earns 0.0 and has none).
    reward_info: NotRequired[RewardInfoDict]
    #: Only where the user simulator failed: why. The episode is truncated.
    user_error: NotRequired[str]
    #: Only on a step whose user turn broke the user's scenario: each fault (see :class:`UserFault`).
    user_faults: NotRequired[list[UserFault]]
    #: Only once the episode is void (its user failed, or faulted with ``on_user_fault="void"``): why. It ended
    #: truncated at 0.0, and it is no evidence about the agent: trainers leave it out, evals can count it apart.
    void: NotRequired[str]
    #: Only where the action could not be read at all, or the episode was already over: why. Nothing changed.
    error: NotRequired[str]
    #: Only with ``perturb=``, on a step where a perturbation acted: what it did (``name``, ``turn``, ``tool``,
    #: and ``fault`` or ``did``).
    perturbation_events: NotRequired[list[dict[str, Any]]]


class FidelityInfo(TypedDict):
    """``info["reward_info"]`` of a user-side env's last step: the fidelity reward and its evidence (see
    :mod:`mua_gym.env.fidelity`)."""

    #: 1.0 when every component holds, else 0.0 (0.0 for a void episode).
    reward: float
    #: Each component (``facts``, ``in_role``, ``no_leak``, ``on_scenario``, ``paced``, ``phone``, ``stop``,
    #: ``outcome``): 1.0 kept, 0.0 broken.
    components: dict[str, float]
    #: How many faults of each kind the user made.
    faults: dict[str, int]
    #: Why the episode ended (``user_stop``, ``agent_stop``, ``max_turns``, ...).
    termination_reason: str | None
    #: The agent-side task reward with that agent (None for a void episode).
    task_reward: float | None
    #: Messages the user sent.
    user_messages: int
    #: Messages the reference (scenario) user sends on the task with that agent, where the agent's play is fixed.
    reference_messages: int | None


class UserResetInfo(TypedDict):
    """``info`` from a user-side env's ``reset``."""

    task_id: str
    domain: str
    split: str
    #: The customer's own tools (telecom's phone) as OpenAI function schemas; empty where it has none.
    tools: list[dict[str, Any]]
    #: The agent that serves the customer (``"fair"``, ``"oracle"``, ``"litellm:<model>"``).
    agent: str
    #: Customer messages before the episode is truncated.
    max_turns: int


class UserStepInfo(TypedDict):
    """``info`` from a user-side env's ``step``."""

    #: Customer messages so far.
    turns: int
    #: Only where this step's message broke the scenario: each fault.
    user_faults: NotRequired[list[UserFault]]
    #: Only where the action could not be read, or the episode is over: why (the step changed nothing).
    error: NotRequired[str]
    #: On the last step: why the episode ended.
    termination_reason: NotRequired[str | None]
    #: On the last step: the fidelity reward's evidence.
    reward_info: NotRequired[FidelityInfo]
    #: On the last step: the agent-side task reward.
    task_reward: NotRequired[float | None]
    #: Only for a void episode (the agent failed): why.
    void: NotRequired[str]
