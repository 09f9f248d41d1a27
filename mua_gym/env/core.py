"""``AsyncMuaEnv``: the episode protocol, async at its core.

One episode: ``reset`` picks a task, loads its start world and lets the user open; each ``step`` takes
one agent message. Tool calls in it run in order against the world and their tool messages are the
observation; a message without tool calls goes to the user simulator and its reply is the observation.

``reset(seed=None, options=None) -> (observation, info)``
    ``options``: ``{"task_id": str}``, ``{"task": Task}`` or ``{"split": str}``; otherwise a task of the
    env's split is drawn with the env's generator (seeded by ``seed``). ``observation`` is a list of
    OpenAI chat dicts: the system policy and the user's first message. ``info``: ``task_id``,
    ``domain``, ``split``, ``tools`` (OpenAI schemas), ``policy``, ``user``, ``max_turns``.

``step(action) -> (observation, reward, terminated, truncated, info)``
    ``action``: see :mod:`mua_gym.env.parsing`. ``observation``: the new tool or user messages.
    ``reward``: 0.0 except on the terminal step of a terminated episode, where the env's reward mode pays
    (``reward=``: see :mod:`mua_gym.env.reward`; by default ``"task"``, the binary task reward). ``terminated``:
    the user sent a stop token, or the agent called a terminal tool. ``truncated``: ``max_turns`` agent
    turns, ``max_tool_errors`` errors, or a user-simulator failure. ``info``: ``turn``, ``tool_calls``,
    ``tool_errors``, ``termination_reason`` (and ``reward_info`` on the terminal step; ``error`` when
    the action itself could not be read). ``reward_info``: the reward's evidence (:class:`RewardInfo`) and
    its shaping (:class:`mua_gym.env.reward.ShapedReward`): ``reward_mode``, ``task_reward`` (the binary task
    reward: judge success on it, whatever the mode), ``shaped_reward`` (the step's reward), ``base_reward``
    and each shaping term's inputs. A truncated episode earns 0.0 in every mode and has no ``reward_info``.

``perturb=`` (see :mod:`mua_gym.perturbations`) randomises the episode: what the agent sees, the tools it is
offered, how calls fail, how the user behaves, each drawn from the episode's seed; ``info["perturbations"]`` (at
reset) and ``info["perturbation_events"]`` (on a step where one acted) record it. The task, its gold world and
its reward are never changed; a call that a transition perturbation fails never runs and is not counted in
``tool_errors``.

A curriculum may narrow what the agent sees: ``policy=`` replaces the domain's policy text, and ``tools=``
offers the agent only the named tools (a call to any other is an error that runs nothing); such an env plays
only the tasks whose gold agent calls all use offered tools, so no task needs a tool it hides. A replacement
policy is the caller's to keep sufficient: a task may need a rule only the domain's policy states.

``shared_base=True`` opens the episode's world on the image's shared file instead of a whole copy of the
database in memory (see :class:`mua_gym.World`): the same behaviour at a fifth of the memory per live episode,
for code that never ends the world's transaction by hand.

Every user reply is read against its task's scenario (:mod:`mua_gym.user_sims.faults`: invented facts, an early
stop, instructions read out, speaking as the agent, obeying the agent's injected instructions, agreeing to what the
scenario does not ask for); ``info["user_faults"]`` and the trajectory record what it finds. ``on_user_fault=``
says what is done about it: ``"flag"`` (the default) only records; ``"retry"`` asks the simulator for the reply
again, at most :data:`MAX_USER_RETRIES` times, with what was wrong (a rule-driven user cannot answer otherwise, and
is flagged); ``"void"`` ends the episode truncated (``termination_reason="user_fault"``) and void. A void episode
(also one whose user failed) has ``info["void"]`` and ``env.void`` set: it says nothing about the agent, and every
trainer adapter leaves it out. ``fault_reviewer=`` adds a model's reading of each reply to the rules'.

Nothing an agent sends makes ``step`` raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from pydantic import ValidationError

from mua_gym.domain import Domain
from mua_gym.env.episode import EpisodeState, prepare_task
from mua_gym.env.infos import ResetInfo, StepInfo
from mua_gym.messages import (
    AssistantMessage, SystemMessage, ToolMessage, UserMessage, as_recorded, refused_reply, to_openai, tool_reply,
)
from mua_gym.jsonsafe import JSONError, clean_text, loads
from mua_gym.env.parsing import (
    MALFORMED, ActionError, ParsedAction, ParsedCall, Parser, clean_call, get_parser, malformed_reason, read_action,
)
from mua_gym.env.transcript import ToolAnswer, Transcript
from mua_gym.env.options import MAX_TURNS
from mua_gym.perturbations.base import Call, EpisodeFacts, Perturbations, PerturbSpec, make_perturbations
from mua_gym.env.reward import (
    Judge, RewardInfo, RewardMode, evaluate, judge_nl_assertions, needs_judge, reward_mode, shape,
)
from mua_gym.task import Persona, Task, check_split
from mua_gym.tools import ToolResult
from mua_gym.env.trajectory import Trajectory, TrajectoryEntry
from mua_gym.user_sims import STOP_TOKENS, UserReply, UserSimulator, for_the_user, make_user
from mua_gym.user_sims.faults import FaultChecker, FaultReviewer, check_fault_mode, fault_text
from mua_gym.world import World

__all__ = ["AsyncMuaEnv", "PendingStep", "StepResult", "TERMINATION_REASONS"]

StepResult = tuple[list[dict[str, Any]], float, bool, bool, StepInfo]


@dataclass
class PendingStep:
    """A step that must still await: the user's turn (``user_message``) or the judge (``observation``)."""

    user_message: AssistantMessage | None = None
    observation: list[dict[str, Any]] | None = None

TERMINATION_REASONS = {
    "###STOP###": "user_stop",
    "###TRANSFER###": "user_transfer",
    "###OUT-OF-SCOPE###": "user_out_of_scope",
}
#: How many rounds of its own tool calls a dual-control user may make inside one turn.
MAX_USER_TOOL_ROUNDS = 20
#: How many times one faulty user reply is asked for again under ``on_user_fault="retry"``.
MAX_USER_RETRIES = 2


def _check_user_can_act(domain: Domain, user: UserSimulator, tasks: list[Task] | None) -> None:
    """Raises ValueError where the tasks need the user to run its own tools and ``user`` cannot."""
    if user.acts or not domain.dual_control:
        return
    if tasks is not None and not any(a.requestor == "user" for t in tasks for a in t.gold_actions):
        return
    raise ValueError(f"the {user.name!r} user cannot act, and {domain.name} is dual-control: its tasks need the user "
                     f"to run their own tools; use user='scenario' or an LLM user ('litellm:<model>')")


def _check_user_takes_a_persona(user: UserSimulator, perturbations: Perturbations) -> None:
    """Raises ValueError where a user-family perturbation would give ``user`` a persona it ignores (one built with
    a fixed persona plays that one whatever the task says)."""
    if isinstance(getattr(user, "persona_mode", None), Persona) and "user" in perturbations.families():
        raise ValueError(f"the {user.name!r} user plays a fixed persona, which a user perturbation cannot replace; "
                         "leave the user's persona to the task (persona='task' or 'sample') or drop the perturbation")


class AsyncMuaEnv:
    """A multi-turn tool-use episode with a simulated user. See the module docstring for the contract.

    Its API comes in three tiers:

    1. The episode contract: ``await reset(seed=, options=)``, ``await step(action)`` and ``await finish()``;
       :class:`~mua_gym.MuaEnv` is its synchronous Gymnasium face, which most users need alone.
    2. Trainer hooks: ``begin_step`` / ``complete_step`` (a step split around what must be awaited, so tool
       calls finish without an event loop), ``chat_step`` (verifiers, ART: the reply as a chat message),
       ``static_tools()`` (TRL: the tools every episode offers), ``episode_tools`` (this episode's, perturbed or
       not), ``done`` and ``void``.
    3. The world and the record: ``world``, ``task``, ``domain``, ``policy``, ``tasks(split)``, ``messages()``,
       ``agent_messages()`` and ``trajectory()``.

    The constructor's options, by what they choose:

    - the world and its tasks: ``domain``, ``world`` (the source), ``world_params``, ``split``, ``tasks``,
      ``shared_base``;
    - who plays the customer, and what a faulty one does: ``user``, ``user_kwargs``, ``on_user_fault``,
      ``fault_reviewer``, ``fault_reviewer_kwargs``;
    - what the agent sees and may send: ``policy``, ``tools``, ``parser``, ``perturb``, ``max_turns``,
      ``max_tool_errors``;
    - how an episode is paid: ``reward``, ``judge``, ``judge_kwargs``;
    - ``check_models``: one probe call per model at construction.

    :class:`mua_gym.env.options.EnvOptions` names the same options with their types, for configs that come as
    data (``check_env_options``).
    """

    def __init__(
        self,
        domain: str | Domain = "mock",
        *,
        user: str | UserSimulator | None = None,
        user_kwargs: dict[str, Any] | None = None,
        world: str | None = None,
        world_params: dict[str, Any] | None = None,
        split: str = "train",
        tasks: list[Task] | None = None,
        max_turns: int = MAX_TURNS,
        max_tool_errors: int = 10,
        reward: str | RewardMode = "task",
        parser: str | Parser = "auto",
        judge: Judge | str | None = None,
        judge_kwargs: dict[str, Any] | None = None,
        check_models: bool = False,
        policy: str | None = None,
        tools: list[str] | None = None,
        perturb: PerturbSpec = None,
        shared_base: bool = False,
        on_user_fault: str = "flag",
        fault_reviewer: FaultReviewer | str | None = None,
        fault_reviewer_kwargs: dict[str, Any] | None = None,
    ) -> None:
        from mua_gym.domain.registry import get_domain

        check_split(split)  # here, not at the first reset: a typo fails where it is written
        self.domain: Domain = domain if isinstance(domain, Domain) else get_domain(domain)
        world = world or self.domain.default_source
        self.domain.check_source(world, world_params or {})
        self.user: UserSimulator = make_user(user or self.domain.default_user(world), **(user_kwargs or {}))
        if not isinstance(user, UserSimulator) and getattr(self.user, "vocabulary", False) is None:
            self.user.vocabulary = self.domain.user_vocabulary  # type: ignore[attr-defined]  # (ours alone: the env made it)
        _check_user_can_act(self.domain, self.user, tasks)
        self.source = world
        self.world_params = dict(world_params or {})
        self.split = split
        self._tasks = tasks
        if max_turns < 1 or max_tool_errors < 1:
            raise ValueError("max_turns and max_tool_errors must be at least 1")
        self.max_turns = max_turns
        self.max_tool_errors = max_tool_errors
        self.reward_mode: RewardMode = reward_mode(reward)
        self.parser = get_parser(parser)
        if isinstance(judge, str):
            from mua_gym.llm.judge import make_judge

            judge = make_judge(judge, **(judge_kwargs or {}))
        self.judge = judge
        self.fault_reviewer: FaultReviewer | None = None
        if fault_reviewer is not None or fault_reviewer_kwargs:
            from mua_gym.user_sims.fault_reviewer import make_reviewer

            self.fault_reviewer = make_reviewer(fault_reviewer, **(fault_reviewer_kwargs or {}))
        if check_models:  # one probe call per model: a misconfigured one fails here, in one line, not mid-run
            from mua_gym.llm.client import check_models as probe_models

            probe_models(self.user, self.judge)
            if self.fault_reviewer is not None:
                self.fault_reviewer.check()
        self._rng = np.random.default_rng()
        self.shared_base = shared_base
        self.world: World | None = None
        self.task: Task | None = None
        self._seed: int | None = None
        self._transcript = Transcript()
        self._user_view: list[Any] = []
        self._policy = self.domain.policy_text(world, **self.world_params) if policy is None else str(policy)
        # Every episode opens with the same system message: made once (its OpenAI dict is copied per episode).
        self._system = SystemMessage(content=self._policy)
        self._system_openai = to_openai(self._system)
        self.tool_schemas = self.domain.tool_schemas(world)  # (shared, as the policy is: not a copy per episode)
        self.offered_tools: frozenset[str] | None = None
        self._offered_tasks: dict[str | None, tuple[list[Task], list[Task]]] = {}
        if tools is not None:
            known = [t["function"]["name"] for t in self.tool_schemas]
            unknown = sorted(set(tools) - set(known))
            if unknown or not tools:
                raise ValueError(f"tools must name some of {self.domain.name}'s agent tools ({', '.join(known)}); "
                                 f"unknown: {', '.join(unknown) or '(none named)'}")
            self.offered_tools = frozenset(tools)
            self.tool_schemas = [t for t in self.tool_schemas if t["function"]["name"] in self.offered_tools]
        self._user_tool_schemas = self.domain.user_tools.schemas() if self.domain.user_tools else None
        self._episode = EpisodeState(done=True)
        self.perturbations: Perturbations | None = make_perturbations(perturb)
        if self.perturbations is not None:
            self.perturbations.check_tools(frozenset(t["function"]["name"] for t in self.tool_schemas))
            _check_user_takes_a_persona(self.user, self.perturbations)
        self._episode_tools = self.tool_schemas  # the tools of the running episode (perturbed, they differ)
        self._perturbation_record: dict[str, Any] | None = None
        self.on_user_fault = check_fault_mode(on_user_fault)
        self.fault_checker = FaultChecker()
        self._user_task: Task | None = None  # the task as the user plays it (a user perturbation may change it)
        self._user_tool_names = tuple(t["function"]["name"] for t in self._user_tool_schemas or [])
        self._agent_tool_names = tuple(t["function"]["name"] for t in self.tool_schemas)

    # -- tasks -------------------------------------------------------------------------------------
    def tasks(self, split: str | None = None) -> Sequence[Task]:
        """The tasks of ``split`` (the env's own if None) that this env plays: with ``tools=``, those whose gold
        agent calls all use offered tools."""
        if self._tasks is not None:
            pool = self._tasks if split is None else [t for t in self._tasks if t.split == split]
        else:
            pool = self.domain.tasks(split or self.split, self.source, **self.world_params)
        if self.offered_tools is None:
            return pool
        cached = self._offered_tasks.get(split)
        if cached is None or cached[0] is not pool:  # the domain caches a split's list: filter it once
            cached = self._offered_tasks[split] = (pool, [t for t in pool if not self._missing_tools(t)])
        return cached[1]

    def _missing_tools(self, task: Task) -> list[str]:
        """The tools ``task``'s gold agent calls need that this env does not offer."""
        if self.offered_tools is None:
            return []
        return sorted({a.name for a in task.gold_actions if a.requestor == "assistant"} - self.offered_tools)

    def _pick_task(self, options: dict[str, Any]) -> Task:
        if "task" in options:
            task = options["task"]
            task = task if isinstance(task, Task) else Task.model_validate(task)
            if missing := self._missing_tools(task):
                raise ValueError(f"task {task.id!r} needs tools this env does not offer: {', '.join(missing)}")
            return task
        if "task_id" in options:
            wanted = str(options["task_id"])
            # the env's own split first: the others may be thousands of generated tasks, made on first use
            others = [s for s in ("train", "dev", "test") if s != self.split]
            for split in [None] if self._tasks is not None else [self.split, *others]:
                for task in self.tasks(split):
                    if task.id == wanted:
                        return task
            offered = "" if self.offered_tools is None else " that the offered tools can solve"
            raise KeyError(f"no task {wanted!r}{offered} in domain {self.domain.name!r} ({self.source})")
        pool = self.tasks(options.get("split"))
        if not pool:
            raise ValueError(f"no tasks in split {options.get('split') or self.split!r}")
        return pool[int(self._rng.integers(len(pool)))]

    # -- episode -----------------------------------------------------------------------------------
    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                    ) -> tuple[list[dict[str, Any]], ResetInfo]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._seed = seed
        task = self._pick_task(options or {})
        prepared = prepare_task(self.domain, task)
        if self.world is None or self.world.image is not prepared.image:
            if self.world is not None:
                self.world.close()
            self.world = self.domain.world_from_image(prepared.image, task.world.source, shared_base=self.shared_base)
        self.world.reset(prepared.start, prepared.start_memory)
        self.task = task
        self._episode = EpisodeState()
        self._transcript = Transcript()
        self._transcript.add(self._system)
        self._user_view = []
        observation = [dict(self._system_openai)]
        user_seed = int(self._rng.bit_generator.random_raw()) >> 33  # 31 random bits (Generator.integers is slow)
        user_task, self._episode_tools, self._perturbation_record = task, self.tool_schemas, None
        if self.perturbations is not None:  # drawn from the user's seed: the env's own stream stays as it was
            drawn = self.perturbations.begin(user_seed, self._facts(task, prepared.gold_agent_calls))
            self._perturbation_record = {"drawn": drawn, "events": []}
            self._episode_tools = self.perturbations.tools(self.tool_schemas)
            user_task = self.perturbations.user_task(task)
        self.fault_checker.start(user_task, self._user_tool_names, self._agent_tool_names)
        self._user_task = user_task
        try:
            reply = await self.user.start(user_task, seed=user_seed, tools=self._user_tool_schemas)
            self._add_usage(reply.usage)
            reply = await self._checked(reply, "", [])
            opening = UserMessage(content=clean_text(reply.content))
            self._user_view.append(opening)
            opening = self._as_agent_sees(opening)
            self._transcript.add(opening)
            observation.append(to_openai(opening))
        except Exception as exc:  # the episode is unusable; the first step reports it as truncated
            self._episode.pending_error = f"{type(exc).__name__}: {exc}"
            self._episode.void = f"user_error: {self._episode.pending_error}"
        info: ResetInfo = {
            "task_id": task.id, "domain": self.domain.name, "split": task.split, "tools": self._episode_tools,
            "policy": self._policy, "user": self.user.name, "max_turns": self.max_turns,
        }
        if self._perturbation_record is not None:
            info["perturbations"] = self._perturbation_record["drawn"]
        if self._episode.pending_error:
            info["user_error"] = self._episode.pending_error
        self._add_fault_info(info)
        return observation, info

    def begin_step(self, action: Any) -> "StepResult | PendingStep":
        """Everything of a step that needs no waiting: the finished result, or what is left to await.

        Tool calls (the hot path of RL rollouts) finish here without touching an event loop.
        """
        if self._episode.done or self.world is None:
            info = self._info()
            info["error"] = "the episode is over: call reset() first"
            return [], 0.0, self._episode.terminated, self._episode.truncated, info
        if self._episode.pending_error is not None:
            return [], 0.0, False, self._finish_truncated("user_error"), self._info()
        if self._episode.void is not None:  # the opening broke the scenario, under on_user_fault="void"
            return [], 0.0, False, self._finish_truncated("user_fault"), self._info()
        self._episode.turns += 1
        try:
            action = read_action(action, self.parser, self._episode.turns)
        except (ActionError, ValidationError, TypeError) as exc:
            self._episode.tool_errors += 1
            self._check_limits()
            info = self._info()
            info["error"] = f"unreadable action: {exc}"
            return [], 0.0, False, self._episode.truncated, info
        if not action.calls:
            message = action.message()  # (a text turn: the user reads it now)
            self._transcript.add(message, trainable=True)
            return PendingStep(user_message=message)
        self._transcript.add(action, trainable=True)
        observation = self._run_agent_tools(action)
        self._check_limits()
        if self._episode.terminated and self.judge is not None and self.task is not None and self._needs_judge():
            return PendingStep(observation=observation)
        reward = self._score() if self._episode.terminated else 0.0
        return observation, reward, self._episode.terminated, self._episode.truncated, self._info()

    async def complete_step(self, pending: "PendingStep") -> "StepResult":
        """The awaited rest of a step that :meth:`begin_step` could not finish."""
        observation = pending.observation
        if pending.user_message is not None:
            observation = await self._user_turn(pending.user_message)
            self._check_limits()
        reward = 0.0
        if self._episode.terminated:
            reward = self._score()
            if self.judge is not None and self.task is not None and self._needs_judge():
                reward = await self._judge()
        return observation or [], reward, self._episode.terminated, self._episode.truncated, self._info()

    async def step(self, action: Any) -> "StepResult":
        started = self.begin_step(action)
        if isinstance(started, PendingStep):
            return await self.complete_step(started)
        return started

    async def chat_step(self, reply: dict[str, Any], action: Any = None) -> "tuple[dict[str, Any], StepResult]":
        """:meth:`step` for loops that keep their own history for an OpenAI-compatible API (verifiers, ART).

        Steps ``action`` (by default ``reply``, the model's assistant message; pass its raw text to have
        ``<tool_call>`` blocks in it read).

        Returns ``(reply, (observation, reward, terminated, truncated, info))``: the model's reply as the env
        recorded it (the call ids the env gave, calls it read out of the text made structured), so that every
        tool message of the observation answers a call of it; for a reply the env could not read at all, the
        observation answers each call with the error (or, where the calls' ids cannot be answered, the reply
        comes back without its calls and the error as a user message).
        """
        before = len(self._transcript)
        observation, reward, terminated, truncated, info = await self.step(reply if action is None else action)
        recorded = self._transcript.message(before) if len(self._transcript) > before else None
        if isinstance(recorded, AssistantMessage):
            reply = as_recorded(reply, recorded)
        elif not observation and "error" in info and not self._episode.done:
            reply, observation = refused_reply(reply, str(info["error"]))
        return reply, (observation, reward, terminated, truncated, info)

    async def finish(self, reason: str = "stopped_by_trainer", score: bool = True) -> float:
        """Ends a running episode where it stands; returns its reward, scored as a terminal step scores it.

        For trainers that stop a rollout on their own (a reply without a tool call, a turn or token budget):
        the world as it stands is scored as when the user stops (strictly: a task that an agent meets by looking
        up and stopping is paid only on a judge's verdict, and only if the gold calls were made; see
        :mod:`mua_gym.env.reward`), the judge included, and the episode ends terminated with
        ``termination_reason`` ``reason``. On an episode already over it changes nothing and returns that
        episode's reward (0.0 for a truncated one). Before any ``reset``: 0.0. ``score=False`` ends a running
        episode truncated at 0.0 whatever the world (an agent that failed earns nothing).
        """
        if self.world is None or self.task is None:
            return 0.0
        if self._episode.done:
            return float(self._episode.reward or 0.0)
        if self._episode.pending_error is not None:  # the user never opened: nothing the agent did can be scored
            self._finish_truncated("user_error")
            return 0.0
        if self._episode.void is not None:
            self._finish_truncated("user_fault")
            return 0.0
        if not score:
            self._finish_truncated(reason)
            return 0.0
        self._episode.end(True, reason)
        reward = self._score()
        if self.judge is not None and self._needs_judge():
            reward = await self._judge()
        return reward

    def _needs_judge(self) -> bool:
        assert self.task is not None
        return needs_judge(self.task, prepare_task(self.domain, self.task).judge_only)

    def _run_agent_tools(self, action: ParsedAction) -> list[dict[str, Any]]:
        assert self.world is not None
        observation = []
        episode, record = self._episode, self._transcript
        for call in action.calls:
            episode.tool_calls += 1
            name = call.name
            charged = True  # the agent's own error, if it is one (not a service fault a perturbation made)
            view = None if self.perturbations is None or name == MALFORMED else self._call_view(call)
            if name == MALFORMED:
                result = ToolResult.failure(
                    f"malformed tool call ({malformed_reason(call.arguments)}); expected a JSON object "
                    "with 'name' and 'arguments', got: " + call.arguments[:300])
            elif view is not None and (answered := self._perturbed_call(view)) is not None:
                result, charged = answered
            elif self.offered_tools is not None and name not in self.offered_tools:
                result = ToolResult.failure(f"tool '{name[:200]}' is not offered in this env")
            else:
                arguments = call.arguments if call.decoded is None else call.decoded
                result = self.world.call_tool(name, arguments, "assistant")
                if view is not None and not result.error:
                    result = ToolResult(content=self.perturbations.tool_result(view, result.content))
            if not charged:
                episode.service_faults += 1
            elif result.error:
                episode.tool_errors += 1
            record.add(ToolAnswer((call.id, result.content, name, result.error, "assistant")))
            observation.append(tool_reply(call.id, result.content))
            if not result.error and name in self.domain.terminal_tools:
                episode.end(True, "agent_stop")
                break
        return observation

    def _call_view(self, call: ParsedCall) -> Call:
        """``call`` as a perturbation reads it: parsed arguments, the tool's kind (None for no such tool)."""
        arguments: Any = call.decoded
        if arguments is None:
            try:
                arguments = loads(call.arguments)
            except JSONError:
                arguments = None
            if not isinstance(arguments, dict):
                arguments = call.arguments
        found = self.domain.toolkit(self.source).tools.get(call.name)
        if self.offered_tools is not None and call.name not in self.offered_tools:
            found = None
        return Call(call.name, arguments, None if found is None else found.kind, self._episode.turns)

    def _perturbed_call(self, call: Call) -> tuple[ToolResult, bool] | None:
        """The answer a perturbation gives ``call`` instead of the world, and whether it is the agent's error."""
        assert self.perturbations is not None
        answered = self.perturbations.intercept(call)
        if answered is None:
            return None
        result, family = answered
        return result, family != "transition"

    def _as_agent_sees(self, said: UserMessage) -> UserMessage:
        """The user's message as the agent sees it: perturbed where perturbations change user text (the user
        simulator keeps its own words)."""
        if self.perturbations is None:
            return said
        return UserMessage(content=clean_text(self.perturbations.user_text(said.content)))

    async def _user_turn(self, message: AssistantMessage) -> list[dict[str, Any]]:
        assert self.world is not None
        self._user_view.append(AssistantMessage(content=for_the_user(message.content or "")))
        try:
            for _ in range(MAX_USER_TOOL_ROUNDS):
                view = list(self._user_view)
                reply = await self.user.respond(view)
                self._add_usage(reply.usage)
                reply = await self._checked(reply, message.content or "", view)
                if self._episode.void is not None:
                    self._finish_truncated("user_fault")
                    return []
                self._episode.needless_requests += reply.needless
                if not reply.tool_calls:
                    break
                self._run_user_tools(reply)
            else:
                raise RuntimeError(f"the user made tool calls for {MAX_USER_TOOL_ROUNDS} rounds without replying")
            said = UserMessage(content=clean_text(reply.content))  # a reply that is no text fails the simulator
        except Exception as exc:  # a failing simulator ends the episode, never the batch
            self._finish_truncated("user_error")
            self._episode.pending_error = f"{type(exc).__name__}: {exc}"
            self._episode.void = f"user_error: {self._episode.pending_error}"
            return []
        self._user_view.append(said)
        heard = self._as_agent_sees(said)
        self._transcript.add(heard)
        token = next((t for t in STOP_TOKENS if t in said.content), None)
        if reply.walked_away:
            self._episode.end(True, "user_walked_away")
        elif token is not None:
            self._episode.end(True, TERMINATION_REASONS[token])
        return [to_openai(heard)]

    async def _checked(self, reply: UserReply, prompt: str, view: list[Any]) -> UserReply:
        """``reply`` once the fault checker (and reviewer) read it: the same, or under ``on_user_fault="retry"`` the
        first retry without faults (else the last one). Faults are recorded, handled as the mode says; under
        ``"void"`` a faulty reply makes the episode void (the caller ends it)."""
        faults = await self._user_faults(reply, prompt, view)
        for _ in range(MAX_USER_RETRIES if self.on_user_fault == "retry" else 0):
            if not faults:
                break
            again = await self.user.retry(view, fault_text(faults))
            if again is None:  # a simulator that answers the same each time
                break
            self._add_usage(again.usage)
            self._record_faults(faults, "retried")
            reply, faults = again, await self._user_faults(again, prompt, view)
        if faults:
            voided = self.on_user_fault == "void"
            self._record_faults(faults, "voided" if voided else "flagged")
            if voided:
                self._episode.void = f"user_fault: {fault_text(faults[:1])}"
        return reply

    async def _user_faults(self, reply: UserReply, prompt: str, view: list[Any]) -> list[dict[str, Any]]:
        """The faults of ``reply`` (the user's answer to the agent's ``prompt``, having seen ``view``)."""
        assert self.world is not None and self.task is not None
        world, task = self.world, self.task
        faults: list[dict[str, Any]] = list(self.fault_checker.check(
            reply, prompt, view, self._episode.turns,
            at_gold=lambda: world.state_hash() == prepare_task(self.domain, task).gold_hash))
        if self.fault_reviewer is not None:
            reviewed = await self.fault_reviewer.review(self._user_task, view, reply, prompt, self._episode.turns)
            self._add_usage(self.fault_reviewer.take_usage(), prefix="reviewer_")
            known = {f["kind"] for f in faults}
            faults += [f for f in reviewed if f["kind"] not in known]
        return faults

    def _record_faults(self, faults: list[dict[str, Any]], handled: str) -> None:
        marked = [{**f, "handled": handled} for f in faults]
        self._episode.user_faults += marked
        self._episode.step_faults += marked

    def _run_user_tools(self, reply: UserReply) -> None:
        assert self.world is not None
        acting = UserMessage(content=clean_text(reply.content), tool_calls=[clean_call(c) for c in reply.tool_calls])
        self._user_view.append(acting)
        self._transcript.add(acting, visible=False)
        for call in acting.tool_calls or []:
            self._episode.user_tool_calls += 1
            result = self.world.call_tool(call.function.name, call.function.arguments, "user")
            done = ToolMessage(tool_call_id=call.id, content=result.content, name=call.function.name,
                               error=result.error, requestor="user")
            self._user_view.append(done)
            self._transcript.add(done, visible=False)

    def _check_limits(self) -> None:
        if self._episode.done:
            return
        if self._episode.tool_errors >= self.max_tool_errors:
            self._finish_truncated("too_many_tool_errors")
        elif self._episode.turns >= self.max_turns:
            self._finish_truncated("max_turns")

    def _finish_truncated(self, reason: str) -> bool:
        self._episode.end(False, reason)
        return True

    def _score(self) -> float:
        assert self.world is not None and self.task is not None
        if self._episode.reward_info is None:
            self._shape(evaluate(self.domain, self.task, self.world, self.messages(),
                                 needless_requests=self._episode.needless_requests))
        return float(self._episode.reward or 0.0)

    def _shape(self, info: RewardInfo) -> float:
        """Records ``info`` and the reward mode's shaping of it as ``reward_info``; returns the shaped reward."""
        assert self.task is not None
        prepared, episode = prepare_task(self.domain, self.task), self._episode
        # a call the service failed is not the agent's; a fix the user found already made is a call wasted
        calls = episode.tool_calls - episode.service_faults + episode.needless_requests
        shaped = shape(self.reward_mode, info, calls=calls, invalid_calls=episode.tool_errors,
                       gold_calls=prepared.gold_agent_calls, gold_invalid_calls=prepared.gold_agent_errors)
        episode.reward_info = info.model_dump(mode="json")
        episode.reward_info.update(shaped.model_dump(mode="json"))
        episode.reward = shaped.shaped_reward
        return shaped.shaped_reward

    async def _judge(self) -> float:
        assert self.task is not None and self.judge is not None and self._episode.reward_info is not None
        info = RewardInfo.model_validate(self._episode.reward_info)
        try:
            info = await judge_nl_assertions(info, self.task, self.judge, self.agent_messages())
        except Exception as exc:  # a failing judge fails the component, never the episode
            components = dict(info.components)
            components["NL_ASSERTION"] = 0.0
            info = info.model_copy(update={"components": components, "reward": 0.0, "parity_reward": 0.0})
            reward = self._shape(info)
            assert self._episode.reward_info is not None
            self._episode.reward_info["judge_error"] = f"{type(exc).__name__}: {exc}"
            return reward
        return self._shape(info)  # shaping applies on top of the judged task reward

    def _add_usage(self, usage: dict[str, Any], prefix: str = "") -> None:
        for key, value in usage.items():
            if isinstance(value, (int, float)):
                self._episode.usage[prefix + key] = self._episode.usage.get(prefix + key, 0) + value

    def _info(self) -> StepInfo:
        episode = self._episode
        info: StepInfo = {
            "turn": episode.turns, "tool_calls": episode.tool_calls, "tool_errors": episode.tool_errors,
            "termination_reason": episode.reason,
        }
        if episode.reward_info is not None:
            info["reward_info"] = episode.reward_info  # type: ignore[typeddict-item]  # (RewardInfoDict, as JSON)
        if episode.pending_error is not None:
            info["user_error"] = episode.pending_error
        self._add_fault_info(info)
        if self.perturbations is not None and self._perturbation_record is not None:
            events = self.perturbations.take_events()
            if events:
                self._perturbation_record["events"] += events
                info["perturbation_events"] = events
        return info

    def _add_fault_info(self, info: Any) -> None:
        """Puts the running step's user faults (then forgets them) and, once it is void from the start or over, the
        episode's void reason into a reset's or step's ``info``."""
        episode = self._episode
        if episode.step_faults:
            info["user_faults"], episode.step_faults = episode.step_faults, []
        if episode.void is not None and (episode.done or episode.turns == 0):
            info["void"] = episode.void

    # -- records -----------------------------------------------------------------------------------
    def messages(self) -> list[Any]:
        """Every message of the episode so far (pydantic models), hidden user tool traffic included."""
        return self._transcript.messages()

    def agent_messages(self) -> list[dict[str, Any]]:
        """The conversation as the agent has seen it, as OpenAI chat dicts."""
        return [to_openai(message) for message, _, visible in self._transcript.entries() if visible]

    def trajectory(self) -> Trajectory:
        if self.task is None:
            raise RuntimeError("no episode yet: call reset() first")
        episode = self._episode
        return Trajectory(
            task_id=self.task.id, domain=self.domain.name, seed=self._seed, user=self.user.name,
            tools=self._episode_tools,
            entries=[TrajectoryEntry(message=m, trainable=t, visible_to_agent=v)
                     for m, t, v in self._transcript.entries()],
            reward=episode.reward, reward_info=episode.reward_info, terminated=episode.terminated,
            truncated=episode.truncated, termination_reason=episode.reason, turns=episode.turns,
            tool_calls=episode.tool_calls, tool_errors=episode.tool_errors, user_tool_calls=episode.user_tool_calls,
            usage=dict(episode.usage), perturbations=self._perturbation_record,
            user_faults=list(episode.user_faults), void=episode.void,
        )

    @property
    def policy(self) -> str:
        """The policy text every episode's system message holds: the domain's, or the ``policy=`` given."""
        return self._policy

    def static_tools(self) -> list[dict[str, Any]]:
        """The agent's tool schemas that every episode offers: ``tool_schemas`` as the env's action
        perturbations draw them (each must be static, see :mod:`mua_gym.perturbations`), drawn here without
        starting an episode or its user; ``tool_schemas`` where there are none. Raises ValueError where an
        action perturbation draws per episode."""
        if self.perturbations is None:
            return self.tool_schemas
        varying = [item.name for item in self.perturbations.items if item.family == "action" and item.static is None]
        if varying:
            raise ValueError(f"action perturbations {varying} draw per episode: no tools are the same in every "
                             "one (give them ':static=N')")
        tasks = self.tasks()
        if not tasks:
            raise ValueError(f"no tasks in split {self.split!r}: static tools are drawn against one")
        task = tasks[0]  # (static draws read the schemas and the policy, not the task)
        stack = make_perturbations(self.perturbations)
        stack.begin(0, self._facts(task, prepare_task(self.domain, task).gold_agent_calls))
        return stack.tools(self.tool_schemas)

    def _facts(self, task: Task, gold_agent_calls: int) -> EpisodeFacts:
        """What perturbations read of an episode of ``task`` when they draw."""
        return EpisodeFacts(task, gold_agent_calls, self.tool_schemas, self._policy)

    @property
    def episode_tools(self) -> list[dict[str, Any]]:
        """The agent's tool schemas in the running episode: ``tool_schemas``, or as an action perturbation made
        them (``info["tools"]`` of its reset)."""
        return self._episode_tools

    @property
    def done(self) -> bool:
        """Whether the running episode is over (also before the first reset)."""
        return self._episode.done

    @property
    def void(self) -> str | None:
        """Why the running or last episode is void, or None: its user failed (``"user_error: ..."``) or, under
        ``on_user_fault="void"``, broke its scenario (``"user_fault: ..."``). A void episode ends truncated at 0.0 and
        says nothing about the agent: every trainer adapter leaves it out of training."""
        return self._episode.void

    async def aclose(self) -> None:
        await self.user.aclose()
        if self.fault_reviewer is not None:
            await self.fault_reviewer.aclose()
        close_judge = getattr(self.judge, "aclose", None)  # a judge may be any async callable
        if close_judge is not None:
            await close_judge()
        if self.world is not None:
            self.world.close()
            self.world = None
