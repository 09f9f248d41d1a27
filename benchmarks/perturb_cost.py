"""What each perturbation family costs per env step, against the clean env, in one run.

    python benchmarks/perturb_cost.py                      # retail and telecom, 4 rounds
    python benchmarks/perturb_cost.py --domain airline --episodes 40 --rounds 6

Each round plays the same episodes (the fair agent with retries and the scenario user, seeds 0..N-1) on a clean
env and on one env per family, in turn, timing only the env's own calls (``reset`` and ``step``, not the
agent). Prints per family the median over rounds of microseconds per env call and its ratio to the clean env's
median: the ratio is what to read (rounds alternate, so a noisy machine slows every side alike).
"""

from __future__ import annotations

import argparse
import statistics
import time

import mua_gym
from mua_gym.eval.agents import make_agent

FAMILIES = ["observation", "action", "transition", "user"]


def env_seconds_per_call(env: "mua_gym.MuaEnv", episodes: int) -> float:
    """Seconds per env call (reset or step) over ``episodes`` fair-retry episodes, the agent's time left out."""
    core = env.unwrapped.core
    spent, calls = 0.0, 0
    for seed in range(episodes):
        started = time.perf_counter()
        observation, info = env.reset(seed=seed)
        spent += time.perf_counter() - started
        calls += 1
        agent = make_agent("fair-retry", core.task)
        agent.reset(info)
        done = False
        while not done:
            action = agent.act(observation)
            started = time.perf_counter()
            observation, _, terminated, truncated, _ = env.step(action)
            spent += time.perf_counter() - started
            calls += 1
            done = terminated or truncated
    return spent / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", action="append", default=None, help="retail, airline, telecom (repeatable)")
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    for domain in args.domain or ["retail", "telecom"]:
        env_id = mua_gym.env_id(domain)
        sides = {"clean": mua_gym.make(env_id, user="scenario")}
        sides.update({family: mua_gym.make(env_id, user="scenario", perturb=family) for family in FAMILIES})
        for env in sides.values():  # tasks made and prepared before any timing
            env_seconds_per_call(env, args.episodes)
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, env in sides.items():
                times[name].append(env_seconds_per_call(env, args.episodes))
        clean = statistics.median(times["clean"])
        print(f"\n{domain}: {args.episodes} episodes x {args.rounds} rounds, median us per env call")
        print("| env | us per call | ratio to clean |\n|---|---|---|")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"| {name} | {median * 1e6:.1f} | {median / clean:.2f}x |")
        for env in sides.values():
            env.close()


if __name__ == "__main__":
    main()
