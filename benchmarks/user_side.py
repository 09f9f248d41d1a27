"""User-side envs, measured: each reference user's fidelity per domain, and what a user-side step costs against an
agent-side step of the same episodes.

    python benchmarks/user_side.py scores            # every reference user on every test task of each domain
    python benchmarks/user_side.py cost --tasks 20   # medians, same run

``scores``: :data:`mua_gym.eval.user_players.REFERENCE_USERS`, each playing every generated test task of retail,
airline, telecom and mock in its user-side env against the fair agent; the mean fidelity reward and, per component,
the share of episodes that kept it. ``cost``: the scenario user and the fair agent play the same tasks twice, in
an agent-side env (the fair agent steps, the user answers inside) and in a user-side env (the user steps, the agent
answers inside); each step's wall time (the fault checker's reading is in every step of both). The last step of a
user-side episode holds the fidelity reward and, the first time a task ends, the reference user's play of it.
Medians in microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

DOMAINS = ("retail", "airline", "telecom", "mock")


async def scores() -> list[dict[str, Any]]:
    import mua_gym
    from mua_gym.env.fidelity import COMPONENTS
    from mua_gym.eval.user_side import AsyncUserEnv
    from mua_gym.eval.user_players import REFERENCE_USERS, make_player, play_episode

    rows = []
    for domain in DOMAINS:
        tasks = mua_gym.get_domain(domain).tasks("test")
        for spec in REFERENCE_USERS:
            env = AsyncUserEnv(domain, split="test")
            kept: dict[str, list[float]] = {c: [] for c in COMPONENTS}
            rewards = []
            for task in tasks:
                reward, info = await play_episode(env, make_player(spec), seed=0, options={"task_id": task.id})
                rewards.append(reward)
                for name, value in info["reward_info"]["components"].items():
                    kept[name].append(value)
            await env.aclose()
            rows.append({"domain": domain, "user": spec, "episodes": len(tasks),
                         "reward": round(statistics.mean(rewards), 3),
                         **{c: round(statistics.mean(v), 3) for c, v in kept.items()}})
    return rows


async def cost(count: int) -> dict[str, Any]:
    import mua_gym
    from mua_gym.eval.user_side import AsyncUserEnv
    from mua_gym.eval.agents import FairAgent
    from mua_gym.eval.user_players import make_player

    out: dict[str, Any] = {}
    for domain in DOMAINS[:3]:
        tasks = mua_gym.get_domain(domain).tasks("test")[:count]
        agent_side = mua_gym.make_async(mua_gym.env_id(domain), split="test", user="scenario")
        user_side = AsyncUserEnv(domain, split="test")
        steps: dict[str, list[float]] = {"agent-side step": [], "user-side step": [], "user-side last step": []}
        for task in tasks:
            observation, info = await agent_side.reset(seed=0, options={"task_id": task.id})
            agent = FairAgent(task)
            agent.reset(info)
            while not agent_side.done:
                action = agent.act(observation)
                t0 = time.perf_counter()
                observation, *_ = await agent_side.step(action)
                steps["agent-side step"].append(time.perf_counter() - t0)
            observation, info = await user_side.reset(seed=0, options={"task_id": task.id})
            player = make_player("scenario")
            action = await player.start(user_side.task, info, 0)
            while True:
                t0 = time.perf_counter()
                observation, reward, terminated, truncated, _ = await user_side.step(action)
                spent = time.perf_counter() - t0
                if terminated or truncated:  # (the fidelity reward, and the first time a task ends its reference play)
                    steps["user-side last step"].append(spent)
                    break
                steps["user-side step"].append(spent)
                action = await player.act(observation)
        await agent_side.aclose()
        await user_side.aclose()
        out[domain] = {k: round(statistics.median(v) * 1e6, 1) for k, v in steps.items()} | \
            {"steps": {k: len(v) for k, v in steps.items()}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["scores", "cost"])
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args()
    if args.what == "scores":
        for row in asyncio.run(scores()):
            print(json.dumps(row))
    else:
        print(json.dumps(asyncio.run(cost(args.tasks)), indent=1))


if __name__ == "__main__":
    main()
