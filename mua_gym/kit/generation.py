"""What every domain's task generator shares: intents, composing a task, verifying it, the generation loop.

A domain's generator reads its world and proposes :class:`Intent` objects (what the customer says, the gold
calls, what the agent must tell); :func:`compose_task` turns a user's intents into a :class:`Task`;
:func:`generate_tasks` draws, composes and verifies until it has enough. A task is kept only if every gold
call succeeds, replaying its gold actions scores 1.0, doing nothing scores 0.0, and it is fair: an agent that
knows only the conversation can make every gold call (:mod:`mua_gym.kit.fairness`); an unfair task is dropped and
counted (:class:`GenerationStats`, on the :class:`TaskList` that :func:`generate_tasks` returns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from mua_gym.kit.behaviours import behaviour_instructions
from mua_gym.kit.intent import Intent, action
from mua_gym.kit.fairness import unfair_values
from mua_gym.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from mua_gym.env.episode import prepare_task
from mua_gym.domain.state import state_of
from mua_gym.env.reward import evaluate
from mua_gym.task import Action, EvaluationSpec, GenerationStats, Persona, Task, TaskList, UserScenario, WorldSpec
from mua_gym.tools import ToolResult

if TYPE_CHECKING:
    from mua_gym.domain import Domain

__all__ = ["GenerationStats", "Intent", "TaskList", "action", "check_task", "compose_task", "generate_tasks",
           "split_users", "verify_task"]

SPLIT_CODES = {"train": 0, "dev": 1, "test": 2}
#: Categories that change nothing in the world (judged by what the agent says, or by the look-ups it makes).
NO_WRITE = ("information", "refusal", "transfer", "claim_status")
#: Agent messages a user with one request waits before walking away; each further request adds ten.
PATIENCE = 20
#: The levels a split draws from, with their weights (a level that appears twice is drawn twice as often).
LEVELS = (1, 1, 1, 2, 2, 3)
#: How many attempts a drawn level gets before another is drawn (so that the levels keep their weights although a
#: user has too few records for a long task more often than for a short one).
LEVEL_TRIES = 20


def split_users(n_users: int, seed: int, split: str) -> np.ndarray:
    """A seeded 80/10/10 partition of user indices into train / dev / test (disjoint by construction)."""
    if split not in SPLIT_CODES:
        raise ValueError(f"split must be train, dev or test, not {split!r}")
    order = np.random.default_rng([seed, 7]).permutation(n_users)
    cut1, cut2 = int(n_users * 0.8), int(n_users * 0.9)
    return {"train": order[:cut1], "dev": order[cut1:cut2], "test": order[cut2:]}[split]


def compose_task(*, task_id: str, domain: str, split: str, world: WorldSpec, intents: list[Intent],
                 difficulty: int, user_id: str, name: str, role: str, auth: Action, auth_text: str,
                 auth_facts: dict[str, Any], unknown_info: str | None = None) -> Task:
    """A task from one user's intents: the scenario, scripted turns, gold actions and evaluation spec."""
    gold = [auth] + [a for i in intents for a in i.gold]
    communicate = [c for i in intents for c in i.communicate]
    checks = [c for i in intents for c in i.checks]
    writes = any(i.category not in NO_WRITE for i in intents)
    basis = ["DB"]
    if communicate:
        basis.append("COMMUNICATE")
    if checks or not (writes or communicate):
        basis.append("ACTION")
        checks = [auth] + checks
    category = intents[0].category if len(intents) == 1 else "multi"
    requests = " ".join(i.says for i in intents)
    conduct = " ".join(behaviour_instructions(i.behaviour, i.facts) for i in intents if i.behaviour)
    # a user that gives a fact only once it has said who it is does not open with who it is
    guarded = any("identified" in (i.behaviour.get("withhold") or {}).values() for i in intents)
    return Task(
        id=task_id, domain=domain, split=split, category=category, difficulty=difficulty, world=world,  # type: ignore[arg-type]
        description=f"{category}: " + " | ".join(f"{i.category} {i.facts}" for i in intents),
        user_scenario=UserScenario(
            instructions=f"You are {name}, {role}. {requests} Give your details only when asked; confirm the "
                         "agent's plan only if it matches your request; if the agent says a request is not allowed, "
                         "accept that." + (f" {conduct}" if conduct else ""),
            reason_for_call=requests,
            known_info=auth_text,
            unknown_info=unknown_info,
            persona=Persona(disclosure="minimal" if guarded else "normal", patience=PATIENCE + 10 * (len(intents) - 1))
            if guarded or len(intents) > 1 else None,
            # The user knows the facts they authenticate with; a user id they do not give is marked unknown.
            facts={"user_id": user_id, **auth_facts, "intents": [i.facts for i in intents],
                   **({} if "user_id" in auth_facts else {"unknown": ["user_id"]})},
            intents=[{"category": i.category, "says": i.says, **i.facts, **i.behaviour} for i in intents],
        ),
        script=[f"Hi! {auth_text} " + " Also, ".join(filter(None, map(straight, intents))), "Yes, please go ahead."],
        gold_actions=gold,
        evaluation=EvaluationSpec(reward_basis=basis, communicate_info=communicate, actions=checks),  # type: ignore[arg-type]
    )


def straight(intent: Intent) -> str:
    """What a user who says everything at once (the scripted user) says of ``intent``: what it finally wants, with
    every fact it would hold back or first give wrong; empty for a request it declines."""
    change = intent.behaviour.get("on_confirm")
    if change:
        becomes = change["becomes"]
        return "" if not becomes.get("accept", True) else str(becomes["says"])
    held = {**(intent.behaviour.get("withhold") or {}), **(intent.behaviour.get("first_says") or {})}
    told = " ".join(f"The {fact.removesuffix('_id').replace('_', ' ')} number is {intent.facts[fact]}."
                    for fact in held)
    return f"{intent.says} {told}" if told else intent.says


def check_task(domain: "Domain", task: Task) -> tuple[str, list[str]] | None:
    """Why ``task`` must not be kept, or None when it is good.

    Returns ``("failed", [reason])`` when a gold call fails, the gold episode scores below 1.0 or doing nothing
    scores above 0.0, and ``("unfair", values)`` when the gold calls hold values the agent is never told.
    """
    with state_of(domain).scratch_lock:
        prepared = prepare_task(domain, task, fresh=True)  # leaves the scratch world in the gold state
        failed = next((r.content for r in prepared.gold_results if r.error), None)
        if failed is not None:
            return "failed", [f"a gold call failed: {failed}"]
        unknown = unfair_values(domain, task, prepared.gold_results)
        if unknown:
            return "unfair", unknown
        world = domain.scratch_world(prepared.image, task.world.source)
        reward = evaluate(domain, task, world, gold_conversation(task, prepared.gold_results)).reward
        if reward != 1.0:
            return "failed", [f"the gold episode scores {reward}"]
        world.reset(prepared.start, prepared.start_memory)
        reward = evaluate(domain, task, world, []).reward
        return None if reward == 0.0 else ("failed", [f"doing nothing scores {reward}"])


def gold_conversation(task: Task, results: Sequence[ToolResult]) -> list[Any]:
    """The gold episode's record as scoring reads it: each gold call with its result, then one message to the user
    that states every value the task requires the agent to tell."""
    calls = [ToolCall.make(f"g{i}", a.name, a.arguments) for i, a in enumerate(task.gold_actions)]
    record: list[Any] = []
    for gold, call, result in zip(task.gold_actions, calls, results):
        maker = AssistantMessage if gold.requestor == "assistant" else UserMessage
        record.append(maker(content=None if gold.requestor == "assistant" else "", tool_calls=[call]))
        record.append(ToolMessage(tool_call_id=call.id, content=result.content, name=gold.name, error=result.error,
                                  requestor=gold.requestor))
    record.append(AssistantMessage(content=" ".join(task.evaluation.communicate_info) or "Done."))
    return record


def verify_task(domain: "Domain", task: Task) -> bool:
    """Whether ``task`` is good: gold calls succeed, gold scores 1.0, doing nothing 0.0, and it is fair."""
    return check_task(domain, task) is None


Maker = Callable[[np.random.Generator, int, int, str], "Task | None"]


def generate_tasks(domain: "Domain", split: str, *, n_users: int, count: int, seed: int, difficulty: int | None,
                   make: Maker, verify: bool = True, levels: Sequence[int] = LEVELS) -> TaskList:
    """``count`` tasks of ``split``; ``make(rng, user_index, level, task_id)`` proposes one (or None). Without a
    ``difficulty``, each task's level is drawn from ``levels`` (weighted by repetition).

    Each proposal is checked (:func:`check_task`) unless ``verify`` is false; the returned list's ``stats`` count
    the proposals and the rejected ones.
    """
    allowed = sorted(set(levels))
    if difficulty is not None and difficulty not in allowed:
        raise ValueError(f"difficulty must be one of {', '.join(map(str, allowed))}")
    pool = split_users(n_users, seed, split)
    if len(pool) == 0:
        raise ValueError(f"the world has too few users for a {split} split")
    tasks = TaskList()
    tasks.stats = stats = GenerationStats()
    attempt = 0
    kept_level, misses = None, 0  # a level drawn is tried again (up to LEVEL_TRIES times) until a task of it is made
    while len(tasks) < count:
        if attempt > 20 * count + 100:
            raise RuntimeError(f"could only make {len(tasks)} of {count} verified tasks from this world")
        rng = np.random.default_rng([seed, SPLIT_CODES[split], attempt])
        attempt += 1
        drawn = int(rng.choice(list(levels)))
        level = difficulty or kept_level or drawn
        misses = misses + 1 if level == kept_level else 0
        kept_level = level if misses < LEVEL_TRIES else None
        user = int(pool[int(rng.integers(len(pool)))])
        task = make(rng, user, level, f"{domain.name}-{split}-{seed}-{len(tasks):05d}")
        if task is None:
            continue
        stats.proposed += 1
        problem = check_task(domain, task) if verify else None
        if problem is not None:
            kind, details = problem
            if kind == "unfair":
                stats.unfair += 1
                stats.unfair_examples.append((task.id, details[:3]))
            else:
                stats.failed += 1
            continue
        tasks.append(task)
        kept_level = None
    return tasks
