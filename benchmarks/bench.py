"""Speed of the hot paths: reset, one tool step, the terminal reward, and whole scripted episodes.

    python benchmarks/bench.py                     # mock domain, default and ~1,000-order worlds
    python benchmarks/bench.py --repeat 500

Prints medians (these machines are noisy: compare ratios, not absolute times). Domain benchmarks that
compare with tau2 side by side extend this script as their domains land.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from typing import Any, Callable

import mua_gym
from mua_gym import AsyncMuaEnv, MuaEnv, WorldSpec
from mua_gym.agents import OracleAgent


def median_us(fn: Callable[[], Any], repeat: int, setup: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def play(env: MuaEnv, task: Any) -> float:
    obs, info = env.reset(options={"task": task})
    agent = OracleAgent(task)
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            return reward


def bench_world(label: str, tasks: list[Any], repeat: int) -> list[tuple[str, str, float]]:
    rows = []
    env = MuaEnv("mock")
    cancel = next(t for t in tasks if t.id == "mock-cancel-card")
    for t in tasks:  # warm the per-task caches (start image, gold hash), as a training run would
        play(env, t)
    orders = env.world.raw.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
    size = len(env.world.image.data) / 1e6
    label = f"{label} ({orders} orders, {size:.2f} MB)"
    rows.append((label, "reset (scripted user opens)", median_us(lambda: env.reset(options={"task": cancel}), repeat)))
    read = {"name": "get_order", "arguments": {"order_id": "O1001"}}
    rows.append((label, "step: one read tool call", median_us(
        lambda: env.step(read), repeat, setup=lambda: env.reset(options={"task": cancel}))))
    write = {"name": "cancel_order", "arguments": {"order_id": "O1001", "reason": "no longer needed"}}
    rows.append((label, "step: one write tool call", median_us(
        lambda: env.step(write), repeat, setup=lambda: env.reset(options={"task": cancel}))))
    world = env.world
    rows.append((label, "world.call_tool read (no env)", median_us(
        lambda: world.call_tool("get_order", {"order_id": "O1001"}), repeat)))

    core: AsyncMuaEnv = env.core

    def terminal_reward() -> None:
        mua_gym.reward.evaluate(core.domain, cancel, world, core.messages())

    def finish() -> None:
        env.reset(options={"task": cancel})
        env.step(write)

    rows.append((label, "terminal reward (after 1 write)", median_us(terminal_reward, repeat, setup=finish)))
    rows.append((label, "state_hash (after 1 write)", median_us(world.state_hash, repeat, setup=finish)))

    n = max(50, repeat // 4)
    t0 = time.perf_counter()
    for i in range(n):
        play(env, tasks[i % len(tasks)])
    rate = n / (time.perf_counter() - t0)
    rows.append((label, "oracle+scripted episodes per second", rate))

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    live = []
    for _ in range(20):
        e = MuaEnv("mock")
        e.reset(options={"task": cancel})
        live.append(e)
    per_env = (tracemalloc.get_traced_memory()[0] - before) / 20
    tracemalloc.stop()
    # The SQLite image is allocated by SQLite, outside tracemalloc's view: add its size.
    rows.append((label, "memory per live episode (MB)", per_env / 1e6 + size))
    for e in live:
        e.close()
    env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    domain = mua_gym.get_domain("mock")
    tasks = [t for s in ("train", "dev", "test") for t in domain.tasks(s)]
    big_spec = WorldSpec(params={"extra_customers": 330})
    big = [t.model_copy(update={"world": big_spec}) for t in tasks]
    rows = bench_world("mock default", tasks, args.repeat) + bench_world("mock large", big, args.repeat)
    print(f"{'world':38s} {'operation':38s} {'median':>12s}")
    for world, op, value in rows:
        unit = "" if "per second" in op or "MB" in op else " us"
        print(f"{world:38s} {op:38s} {value:10.1f}{unit}")


if __name__ == "__main__":
    main()
