"""``mua-gym eval --side user``: how faithfully a user simulator plays its scenarios, component by component.

Each task of the split is played ``trials`` times in its user-side env (:mod:`mua_gym.eval.user_side`) by the
player (:func:`mua_gym.eval.user_players.make_player`: a user simulator spec such as ``litellm:<model>``, or a
reference user), against ``agent``. Each episode's line goes to ``out/episodes.jsonl`` as it ends (a rerun with the
same folder plays only what is missing); ``out/summary.json`` holds the means: the fidelity reward, each component
(:data:`mua_gym.env.fidelity.COMPONENTS`), the task reward, faults per episode by kind, and the void episodes (the
agent failed: left out of the means).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mua_gym.env.fidelity import COMPONENTS

__all__ = ["evaluate_user", "summarize"]


async def evaluate_user(domain: str, player: str, *, player_kwargs: dict[str, Any] | None = None,
                        agent: str = "fair", agent_kwargs: dict[str, Any] | None = None, split: str = "test",
                        world: str | None = None, task_ids: list[str] | None = None, num_tasks: int | None = None,
                        trials: int = 1, concurrency: int = 4, seed: int = 0, max_turns: int | None = None,
                        out: Path | None = None) -> dict[str, Any]:
    """Plays the episodes (those ``out`` does not hold yet) and returns :func:`summarize` of them all."""
    from mua_gym.eval.user_side import MAX_USER_TURNS, AsyncUserEnv
    from mua_gym.eval.user_players import make_player, play_episode

    if trials < 1 or concurrency < 1:
        raise ValueError("trials and concurrency must be at least 1")
    make = dict(agent=agent, agent_kwargs=agent_kwargs, split=split, max_turns=max_turns or MAX_USER_TURNS)
    if world is not None:
        make["world"] = world
    lister = AsyncUserEnv(domain, **make)
    tasks = lister.core.tasks(split)
    await lister.aclose()
    if task_ids is not None:
        known = {t.id for t in tasks}
        missing = [t for t in task_ids if t not in known]
        if missing:
            raise ValueError(f"no task {missing[0]!r} in {domain} {split}")
        tasks = [t for t in tasks if t.id in set(task_ids)]
    tasks = tasks[:num_tasks] if num_tasks is not None else tasks
    lines = out / "episodes.jsonl" if out is not None else None
    done: list[dict[str, Any]] = []
    if lines is not None:
        out.mkdir(parents=True, exist_ok=True)
        if lines.exists():
            done = [json.loads(line) for line in lines.read_text().splitlines() if line.strip()]
    have = {(d["task_id"], d["trial"]) for d in done}
    todo: asyncio.Queue[tuple[Any, int]] = asyncio.Queue()
    for task in tasks:
        for trial in range(trials):
            if (task.id, trial) not in have:
                todo.put_nowait((task, trial))

    async def worker() -> None:
        env = AsyncUserEnv(domain, **make)
        try:
            while not todo.empty():
                task, trial = todo.get_nowait()
                reward, info = await play_episode(env, make_player(player, **(player_kwargs or {})),
                                                  seed=seed + trial, options={"task_id": task.id})
                evidence = info.get("reward_info") or {}
                line = {"task_id": task.id, "trial": trial, "reward": reward, "void": info.get("void"),
                        "components": evidence.get("components"), "faults": evidence.get("faults", {}),
                        "termination_reason": evidence.get("termination_reason"),
                        "task_reward": evidence.get("task_reward"), "user_messages": evidence.get("user_messages")}
                done.append(line)
                if lines is not None:
                    with lines.open("a") as handle:
                        handle.write(json.dumps(line) + "\n")
        finally:
            await env.aclose()

    await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, todo.qsize())))))
    summary = {"domain": domain, "player": player, "agent": agent, "split": split, **summarize(done)}
    if out is not None:
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def summarize(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The means over the non-void ``episodes`` (lines of ``episodes.jsonl``): ``episodes``, ``void``, ``reward``
    (the fidelity reward), ``components`` (each one's mean), ``task_reward``, ``faults_per_episode`` by kind."""
    kept = [e for e in episodes if not e.get("void") and e.get("components")]
    n = len(kept)

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    kinds = sorted({k for e in kept for k in e.get("faults", {})})
    return {"episodes": len(episodes), "void": len(episodes) - n, "reward": mean([e["reward"] for e in kept]),
            "components": {c: mean([e["components"][c] for e in kept]) for c in COMPONENTS},
            "task_reward": mean([float(e.get("task_reward") or 0.0) for e in kept]),
            "faults_per_episode": {k: round(sum(e["faults"].get(k, 0) for e in kept) / n, 4) for k in kinds} if n
            else {}}
