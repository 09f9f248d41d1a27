"""Speed of the hot paths, side by side with tau2 in the same run where tau2 is installed.

    python benchmarks/bench.py                      # mock, retail, airline and telecom
    python benchmarks/bench.py --domain retail --repeat 300

Medians of: reset, one env step with a tool call, a bare read tool call (warm, and first after a reset, with
what the step adds to it), the terminal reward, a gold episode on a TAU2 task (reset, gold calls, reward), whole
oracle + scripted episodes per second, and memory per live episode. These machines are noisy: read the ratios,
not the absolute times.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
import tracemalloc
from typing import Any, Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import mua_gym  # noqa: E402
from mua_gym import MuaEnv, WorldSpec  # noqa: E402
try:
    from mua_gym.env.reward import evaluate  # noqa: E402
    from mua_gym.eval.agents import OracleAgent  # noqa: E402
except ImportError:  # a revision from before the core was grouped by job (benchmarks/before_after.py --base)
    from mua_gym.agents import OracleAgent  # type: ignore[no-redef]  # noqa: E402
    from mua_gym.reward import evaluate  # type: ignore[no-redef]  # noqa: E402

Row = tuple[str, str, float, float | None]  # (world, operation, ours, tau2)
WITH_TAU2 = True  # --no-tau2 leaves tau2's side out (benchmarks/before_after.py compares two of ours)


def median_us(fn: Callable[[], Any], repeat: int, setup: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def first_call_us(env: MuaEnv, reset: Callable[[], Any], read: dict[str, Any], repeat: int) -> tuple[float, float]:
    """Medians of the first read call after a reset made bare (``world.call_tool``) and made as an env step, taken
    in turns so that both see the same machine load and the same cold start (a reset leaves caches cold)."""
    bare, step = [], []
    for _ in range(max(repeat, 1000)):
        reset()
        world = env.world
        t0 = time.perf_counter()
        world.call_tool(read["name"], read["arguments"])
        bare.append(time.perf_counter() - t0)
        reset()
        t0 = time.perf_counter()
        env.step(read)
        step.append(time.perf_counter() - t0)
    return statistics.median(bare) * 1e6, statistics.median(step) * 1e6


def play(env: MuaEnv, task: Any) -> float:
    obs, info = env.reset(options={"task": task})
    agent = OracleAgent(task)
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            return reward


def sqlite_heap_bytes() -> int | None:
    """SQLite's own heap in use (``sqlite3_memory_used``), outside tracemalloc's view; None where the library
    Python's sqlite3 uses cannot be found."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    used = ctypes.CDLL(name).sqlite3_memory_used
    used.restype = ctypes.c_int64
    return int(used())


def memory_per_episode_kb(make: Callable[[], MuaEnv], task: Any, steps: int = 3) -> float:
    """Memory per live episode, each reset and a few oracle steps in (so its writes count): Python's objects
    (tracemalloc) plus SQLite's heap, over 20 episodes."""
    gc.collect()
    tracemalloc.start()
    before, heap = tracemalloc.get_traced_memory()[0], sqlite_heap_bytes()
    live = []
    for _ in range(20):
        env = make()
        obs, info = env.reset(options={"task": task})
        agent = OracleAgent(task)
        for _ in range(steps):
            obs, _, terminated, truncated, _ = env.step(agent.act(obs))
            if terminated or truncated:
                break
        live.append(env)
    python = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    after = sqlite_heap_bytes()
    sqlite = 0 if heap is None or after is None else after - heap
    for env in live:
        env.close()
    return (python + sqlite) / 20 / 1e3


def bench_env(label: str, env_kwargs: dict[str, Any], tasks: list[Any], read: dict[str, Any],
              write: dict[str, Any], repeat: int, tau2: dict[str, float] | None = None) -> list[Row]:
    tau2 = tau2 or {}
    env = MuaEnv(**env_kwargs)
    for t in tasks[:200]:  # per-task caches (start image, gold hash) are warm in a training run
        play(env, t)
    first = tasks[0]
    reset = lambda: env.reset(options={"task": first})  # noqa: E731
    size = len(env.world.image.data) / 1e6
    label = f"{label} ({size:.1f} MB)"
    rows: list[Row] = [(label, "reset", median_us(reset, repeat), tau2.get("reset"))]
    rows.append((label, "env step: one read tool call", median_us(lambda: env.step(read), repeat, setup=reset),
                 tau2.get("read")))
    rows.append((label, "env step: one write tool call", median_us(lambda: env.step(write), repeat, setup=reset),
                 tau2.get("write")))
    world = env.world
    rows.append((label, "bare read tool call (world.call_tool)",
                 median_us(lambda: world.call_tool(read["name"], read["arguments"]), repeat), tau2.get("read")))
    bare, step = first_call_us(env, reset, read, repeat)
    rows.append((label, "bare read tool call, first after reset", bare, tau2.get("read")))
    rows.append((label, "read step's overhead on that bare call", step - bare, None))

    def after_write() -> None:
        reset()
        env.step(write)

    core = env.core
    rows.append((label, "terminal reward (DB + diff, 1 write)",
                 median_us(lambda: evaluate(core.domain, core.task, world, core.messages()), repeat,
                           setup=after_write), tau2.get("reward")))
    told = next((t for t in tasks if t.evaluation.communicate_info), None)
    if told is not None:  # a whole oracle episode that ends telling an answer: COMMUNICATE reads all of it
        play(env, told)
        rows.append((label, "terminal reward: an answer told (COMMUNICATE)",
                     median_us(lambda: evaluate(core.domain, told, world, core.messages()), repeat), None))
    n = max(100, repeat)
    t0 = time.perf_counter()
    for i in range(n):
        play(env, tasks[i % len(tasks)])
    rows.append((label, "oracle+scripted episodes per second", n / (time.perf_counter() - t0), None))
    rows.append((label, "memory per live episode, 3 steps in (KB)",
                 memory_per_episode_kb(lambda: MuaEnv(**env_kwargs), first), None))
    try:  # (a revision before shared_base, as before_after.py may run, has no such row)
        shared = memory_per_episode_kb(lambda: MuaEnv(**env_kwargs, shared_base=True), first)
        rows.append((label, "the same, worlds on a shared base (KB)", shared, None))
    except TypeError:
        pass
    env.close()
    return rows


def gold_episode_us(env: MuaEnv, tasks: list[Any]) -> float:
    """Reset, every gold call as its own step, and the terminal reward, per task (median)."""
    times = []
    for task in tasks:
        t0 = time.perf_counter()
        env.reset(options={"task": task})
        for a in task.gold_actions:
            env.step({"name": a.name, "arguments": a.arguments})
        evaluate(env.core.domain, task, env.core.world, env.core.messages())
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def tau2_figures(domain: str, read_call: tuple[str, dict], write_call: tuple[str, dict],
                 repeat: int) -> dict[str, float] | None:
    """tau2's own figures for the same operations, or None where tau2 is not installed (or left out)."""
    import contextlib
    import io

    if not WITH_TAU2:
        return None
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # tau2 prints its registry on import
            from loguru import logger
            from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
            from tau2.evaluator.evaluator_env import EnvironmentEvaluator
            from tau2.registry import registry
    except ImportError:
        return None
    logger.remove()
    make = registry.get_env_constructor(domain)
    tasks = registry.get_tasks_loader(domain)(None)
    env = make()
    read = ToolCall(id="r", name=read_call[0], arguments=read_call[1])
    write = ToolCall(id="w", name=write_call[0], arguments=write_call[1])
    out = {"reset": median_us(make, max(10, repeat // 20)),
           "read": median_us(lambda: env.get_response(read), repeat),
           "write": median_us(lambda: env.get_response(write), repeat)}

    def trajectory(e: Any, task: Any) -> list[Any]:
        msgs: list[Any] = [UserMessage(role="user", content="hi")]
        for i, a in enumerate(task.evaluation_criteria.actions or []):
            call = ToolCall(id=f"c{i}", name=a.name, arguments=a.arguments, requestor=a.requestor)
            msgs.append(AssistantMessage(role="assistant", tool_calls=[call]))
            msgs.append(e.get_response(call))
        return msgs

    task0 = tasks[0]
    msgs0 = trajectory(make(), task0)
    out["reward"] = median_us(lambda: EnvironmentEvaluator.calculate_reward(
        environment_constructor=make, task=task0, full_trajectory=msgs0), max(5, repeat // 30))
    times = []
    for task in tasks[:20]:
        t0 = time.perf_counter()
        msgs = trajectory(make(), task)
        EnvironmentEvaluator.calculate_reward(environment_constructor=make, task=task, full_trajectory=msgs)
        times.append(time.perf_counter() - t0)
    out["gold_episode"] = statistics.median(times) * 1e6
    return out


def retail_rows(repeat: int) -> list[Row]:
    retail = mua_gym.get_domain("retail")
    tau2 = tau2_figures("retail", ("get_order_details", {"order_id": "#W2611340"}),
                        ("modify_pending_order_address", _address("#W5918442")), repeat)
    pending = "#W5918442"  # a pending order of the TAU2 world
    rows = bench_env("retail generated", {"domain": "retail", "split": "test"}, retail.tasks("test"),
                     {"name": "get_order_details", "arguments": {"order_id": _first_order(retail)}},
                     {"name": "modify_pending_order_address", "arguments": _address(_first_order(retail, "pending"))},
                     repeat, tau2)
    try:
        tau2_tasks = retail.tasks("train", "tau2") + retail.tasks("test", "tau2")
    except FileNotFoundError:
        return rows
    rows += bench_env("retail tau2 world", {"domain": "retail", "world": "tau2"}, tau2_tasks,
                      {"name": "get_order_details", "arguments": {"order_id": "#W2611340"}},
                      {"name": "modify_pending_order_address", "arguments": _address(pending)}, repeat, tau2)
    env = MuaEnv("retail", world="tau2")
    ours = gold_episode_us(env, tau2_tasks[:20])
    rows.append(("retail tau2 world", "gold episode on TAU2 tasks 0-19", ours, (tau2 or {}).get("gold_episode")))
    return rows


def _first_order(domain: Any, status: str | None = None) -> str:
    world = domain.new_world()
    sql = "SELECT order_id FROM orders" + (" WHERE status = ?" if status else "") + " ORDER BY position LIMIT 1"
    return world.raw.execute(sql, (status,) if status else ()).fetchone()[0]


def _address(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX",
            "country": "USA", "zip": "73301"}


def airline_rows(repeat: int) -> list[Row]:
    airline = mua_gym.get_domain("airline")
    read = ("get_reservation_details", {"reservation_id": "4WQ150"})
    write = ("update_reservation_baggages", {"reservation_id": "4WQ150", "total_baggages": 5, "nonfree_baggages": 0,
                                             "payment_id": "gift_card_3576581"})
    tau2 = tau2_figures("airline", read, write, repeat)
    world = airline.new_world()
    rid, pay = world.raw.execute(
        "SELECT r.reservation_id, p.payment_id FROM reservations r JOIN reservation_payments p USING (reservation_id) "
        "WHERE p.payment_id LIKE 'credit_card%' ORDER BY r.position LIMIT 1").fetchone()
    rows = bench_env("airline generated", {"domain": "airline", "split": "test"}, airline.tasks("test"),
                     {"name": "get_reservation_details", "arguments": {"reservation_id": rid}},
                     {"name": "update_reservation_baggages", "arguments": {
                         "reservation_id": rid, "total_baggages": 1, "nonfree_baggages": 0, "payment_id": pay}},
                     repeat, tau2)
    try:
        tau2_tasks = airline.tasks("train", "tau2") + airline.tasks("test", "tau2")
    except FileNotFoundError:
        return rows
    rows += bench_env("airline tau2 world", {"domain": "airline", "world": "tau2"}, tau2_tasks,
                      {"name": read[0], "arguments": read[1]}, {"name": write[0], "arguments": write[1]}, repeat, tau2)
    env = MuaEnv("airline", world="tau2")
    rows.append(("airline tau2 world", "gold episode on TAU2 tasks 0-19", gold_episode_us(env, tau2_tasks[:20]),
                 (tau2 or {}).get("gold_episode")))
    return rows


def tau2_telecom(repeat: int) -> dict[str, Any] | None:
    """tau2's telecom env: reset = build + apply the task's initial state; one agent and one user call; gold."""
    import contextlib
    import io

    if not WITH_TAU2:
        return None
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from loguru import logger
            from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
            from tau2.data_model.simulation import SimulationRun, TerminationReason
            from tau2.domains.telecom.environment import get_environment, get_tasks
            from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    except ImportError:
        return None
    logger.remove()
    started = time.perf_counter()
    tasks = get_tasks("base")
    out: dict[str, Any] = {"load": (time.perf_counter() - started) * 1e6}
    task = tasks[0]

    def reset() -> Any:
        env = get_environment()
        env.set_state(task.initial_state.initialization_data, task.initial_state.initialization_actions, [])
        return env

    out["reset"] = median_us(reset, max(10, repeat // 10))
    env = reset()
    agent = ToolCall(id="a", name="get_customer_by_phone", arguments={"phone_number": "555-123-2002"})
    user = ToolCall(id="u", name="check_status_bar", arguments={}, requestor="user")
    out["read"] = median_us(lambda: env.get_response(agent), repeat)
    out["user"] = median_us(lambda: env.get_response(user), repeat)

    def gold_episode(t: Any) -> float:
        t0 = time.perf_counter()
        e = get_environment()
        e.set_state(t.initial_state.initialization_data, t.initial_state.initialization_actions, [])
        msgs: list[Any] = [UserMessage(role="user", content="hi")]
        for i, a in enumerate(t.evaluation_criteria.actions or []):
            call = ToolCall(id=f"c{i}", name=a.name, arguments=a.arguments, requestor=a.requestor)
            msgs.append((UserMessage if a.requestor == "user" else AssistantMessage)(role=a.requestor,
                                                                                      tool_calls=[call]))
            msgs.append(e.get_response(call))
        msgs.append(AssistantMessage(role="assistant", content="done"))
        evaluate_simulation(SimulationRun(id="s", task_id=t.id, start_time="", end_time="", duration=0.0,
                                          termination_reason=TerminationReason.AGENT_STOP, messages=msgs),
                            t, EvaluationType.ALL, solo_mode=False, domain="telecom")
        return time.perf_counter() - t0

    out["gold_episodes"] = lambda: [gold_episode(t) for t in tasks[:20]]
    return out


# Rounds of the gold-episode comparison, tau2's 20 tasks then ours in each: interleaved, so that a machine that
# slows down or speeds up during the run weighs on both sides alike.
GOLD_ROUNDS = 3


def telecom_rows(repeat: int) -> list[Row]:
    telecom = mua_gym.get_domain("telecom")
    try:
        started = time.perf_counter()
        full = telecom.tasks("train", "tau2", subset="full")
        load = (time.perf_counter() - started) * 1e6
    except FileNotFoundError:
        return []
    tau2: dict[str, Any] = tau2_telecom(repeat) or {}
    base = telecom.tasks("train", "tau2") + telecom.tasks("test", "tau2")
    env = MuaEnv("telecom", world="tau2", user="scenario")
    label = "telecom tau2 world"
    first = base[0]
    reset = lambda: env.reset(options={"task": first})  # noqa: E731
    for t in base:
        env.reset(options={"task": t})
    read = {"name": "get_customer_by_phone", "arguments": {"phone_number": "555-123-2002"}}
    rows: list[Row] = [(label, "load the full task set (2,285)", load, tau2.get("load")),
                       (label, "reset (TAU2 task start state)", median_us(reset, repeat), tau2.get("reset")),
                       (label, "env step: one agent read tool call", median_us(lambda: env.step(read), repeat,
                                                                               setup=reset), tau2.get("read"))]
    world = env.world
    rows.append((label, "user tool call (world.call_tool)", median_us(
        lambda: world.call_tool("check_status_bar", {}, "user"), repeat), tau2.get("user")))
    core = env.core
    rows.append((label, "terminal reward (env assertions)", median_us(
        lambda: evaluate(core.domain, core.task, world, core.messages()), repeat, setup=reset), None))

    def gold_episodes() -> list[float]:
        times = []
        for task in base[:20]:
            t0 = time.perf_counter()
            env.reset(options={"task": task})
            for a in task.gold_actions:
                env.world.call_tool(a.name, a.arguments, a.requestor)
            evaluate(core.domain, task, env.world, core.messages())
            times.append(time.perf_counter() - t0)
        return times

    ours, theirs = [], []
    for _ in range(GOLD_ROUNDS):
        if "gold_episodes" in tau2:
            theirs += tau2["gold_episodes"]()
        ours += gold_episodes()
    rows.append((label, f"gold episode on TAU2 tasks 0-19 (x{GOLD_ROUNDS})", statistics.median(ours) * 1e6,
                 statistics.median(theirs) * 1e6 if theirs else None))
    n = max(100, repeat)
    t0 = time.perf_counter()
    for i in range(n):
        play(env, base[i % len(base)])
    rows.append((label, "oracle+scenario episodes per second", n / (time.perf_counter() - t0), None))
    del full
    return rows


def mock_rows(repeat: int) -> list[Row]:
    domain = mua_gym.get_domain("mock")
    tasks = [t for s in ("train", "dev", "test") for t in domain.tasks(s)]
    big = [t.model_copy(update={"world": WorldSpec(params={"extra_customers": 330})}) for t in tasks]
    read = {"name": "get_order", "arguments": {"order_id": "O1001"}}
    write = {"name": "update_email", "arguments": {"customer_id": "C003", "email": "new@example.net"}}
    return (bench_env("mock default", {"domain": "mock", "tasks": tasks}, tasks, read, write, repeat)
            + bench_env("mock ~1,000 orders", {"domain": "mock", "tasks": big}, big, read, write, repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", choices=["all", "mock", "retail", "airline", "telecom"], default="all")
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--no-tau2", action="store_true", help="time ours only")
    args = parser.parse_args()
    global WITH_TAU2
    WITH_TAU2 = not args.no_tau2
    rows: list[Row] = []
    if args.domain in ("all", "mock"):
        rows += mock_rows(args.repeat)
    if args.domain in ("all", "retail"):
        rows += retail_rows(args.repeat)
    if args.domain in ("all", "airline"):
        rows += airline_rows(args.repeat)
    if args.domain in ("all", "telecom"):
        rows += telecom_rows(args.repeat)
    print(f"{'world':30s} {'operation':40s} {'ours':>12s} {'tau2':>12s} {'tau2/ours':>10s}")
    for world, op, ours, theirs in rows:
        unit = "" if "per second" in op or "(KB)" in op else " us"
        their = f"{theirs:10.1f}{unit}" if theirs is not None else f"{'-':>12s}"
        ratio = f"{theirs / ours:9.1f}x" if theirs else f"{'-':>10s}"
        print(f"{world:30s} {op:40s} {ours:10.1f}{unit} {their} {ratio}")


if __name__ == "__main__":
    main()
