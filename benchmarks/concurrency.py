"""Many episodes at once against a loopback user server: litellm against the fast client, and memory per episode.

    python benchmarks/concurrency.py                          # 200 episodes, 50 ms user latency, both clients
    python benchmarks/concurrency.py --episodes 500 --latency 20 --turns 5
    python benchmarks/concurrency.py --rss 1000               # memory per live retail episode, 1,000 of them
    python benchmarks/concurrency.py --rss 1000 --copy        # the same, each world a private in-memory copy

The user server (a separate process: aiohttp on 127.0.0.1) answers every chat completion after ``--latency``
milliseconds, asking for help until the agent has spoken ``--turns`` times, then stopping. The agent only talks,
so every step is one user call. All episodes run on one event loop (``AsyncMuaEnv``), first with
``litellm:openai/<model>`` and ``api_base``, then with ``openai:<model>@<base_url>``, alternating for
``--rounds``. Printed per client: episodes/s, user turns/s and the client process's CPU milliseconds per user
turn (medians), and the ratio fast / litellm.

``--rss N`` instead plays N retail episodes (scripted user, oracle agent) ``--steps`` steps in, on TAU2's tasks when
tau2 is installed, and keeps them live: RSS and SQLite's heap before and after, per episode, with the worlds on
their image's shared file (``shared_base=True``), or with ``--copy`` each a private copy of the database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import time

MODEL = "loopback-user"


def serve(port: int, latency: float, turns: int, ready: multiprocessing.Event) -> None:  # type: ignore[valid-type]
    from aiohttp import web

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        heard = sum(1 for m in body.get("messages") or [] if m.get("role") == "user")  # greeting + agent turns
        await asyncio.sleep(latency)
        text = "###STOP###" if heard > turns else "I need help with my order, please."
        return web.json_response({
            "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58}})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


async def play(user: str, user_kwargs: dict, episodes: int) -> tuple[float, float, int]:
    """(wall seconds, client CPU seconds, user turns) of ``episodes`` concurrent mock episodes."""
    import mua_gym

    envs = [mua_gym.AsyncMuaEnv("mock", user=user, user_kwargs=dict(user_kwargs), max_turns=50)
            for _ in range(episodes)]
    turns = 0

    async def one(env: mua_gym.AsyncMuaEnv, seed: int) -> int:
        await env.reset(seed=seed)
        n = 1
        while True:
            _, _, terminated, truncated, info = await env.step("Could you tell me more?")
            n += 1
            if terminated or truncated:
                if info.get("termination_reason") == "user_error":
                    raise RuntimeError(info.get("user_error"))
                return n

    wall, cpu = time.perf_counter(), time.process_time()
    for n in await asyncio.gather(*(one(env, i) for i, env in enumerate(envs))):
        turns += n
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for env in envs:
        await env.aclose()
    return wall, cpu, turns


def throughput(args: argparse.Namespace) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ready = multiprocessing.get_context("spawn").Event()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(port, args.latency / 1000, args.turns,
                                                                              ready), daemon=True)
    server.start()
    ready.wait(30)
    base = f"http://127.0.0.1:{port}/v1"
    clients = {"litellm": (f"litellm:openai/{MODEL}", {"api_base": base, "api_key": "x"}),
               "fast": (f"openai:{MODEL}@{base}", {})}
    import mua_gym.llm.client as llm_client

    llm_client.import_litellm()  # (its import, seconds, is not a call's cost)
    asyncio.run(play(*clients["fast"], 4))  # warm both paths up
    asyncio.run(play(*clients["litellm"], 4))
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in clients}
    for _ in range(args.rounds):
        for name, (user, kwargs) in clients.items():
            results[name].append(asyncio.run(play(user, kwargs, args.episodes)))
    server.terminate()
    print(f"{args.episodes} concurrent episodes, user latency {args.latency:g} ms, {args.turns} agent turns each, "
          f"medians of {args.rounds} rounds")
    print(f"{'client':8s} {'episodes/s':>10s} {'user turns/s':>12s} {'CPU ms/turn':>11s}")
    rows = {}
    for name, runs in results.items():
        eps = statistics.median(args.episodes / w for w, _, _ in runs)
        tps = statistics.median(t / w for w, _, t in runs)
        cpu = statistics.median(1000 * c / t for _, c, t in runs)
        rows[name] = (eps, tps, cpu)
        print(f"{name:8s} {eps:10.1f} {tps:12.1f} {cpu:11.2f}")
    print(f"fast / litellm: user turns/s x{rows['fast'][1] / rows['litellm'][1]:.1f}, "
          f"CPU per turn x{rows['fast'][2] / rows['litellm'][2]:.2f}")
    print(json.dumps({"episodes": args.episodes, "latency_ms": args.latency, "turns": args.turns,
                      "results": {k: dict(zip(("episodes_s", "turns_s", "cpu_ms_per_turn"), v))
                                  for k, v in rows.items()}}))


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def memory(n: int, steps: int, copy: bool) -> None:
    import gc

    import mua_gym
    from bench import sqlite_heap_bytes
    from mua_gym.eval.agents import OracleAgent

    from mua_gym.domain import tau2

    try:
        tau2.data_dir("retail")
        source = "tau2"
    except tau2.Tau2NotFound:
        source = "generated"

    async def main() -> None:
        def make() -> mua_gym.AsyncMuaEnv:
            return mua_gym.AsyncMuaEnv("retail", world=source, split="train", shared_base=not copy)

        warm = make()
        await warm.reset(seed=0)  # the domain's tasks and image, shared by every episode, built before measuring
        gc.collect()
        before, heap = rss_mb(), sqlite_heap_bytes()
        envs = [make() for _ in range(n)]
        for i, env in enumerate(envs):
            obs, info = await env.reset(seed=i)
            agent = OracleAgent(env.task)
            for _ in range(steps):
                obs, _, terminated, truncated, _ = await env.step(agent.act(obs))
                if terminated or truncated:
                    break
        gc.collect()
        after, heap_after = rss_mb(), sqlite_heap_bytes()
        sqlite = None if heap is None or heap_after is None else (heap_after - heap) / 1e6 / n
        print(f"{n} live retail episodes ({source}, {steps} steps in, {'copy' if copy else 'shared base'}): "
              f"RSS {before:.0f} MB -> {after:.0f} MB, {(after - before) / n:.3f} MB per episode"
              + ("" if sqlite is None else f", of which SQLite's heap {sqlite:.3f} MB"))
        print(json.dumps({"episodes": n, "source": source, "steps": steps, "copy": copy, "rss_before_mb": before,
                          "rss_after_mb": after, "mb_per_episode": (after - before) / n,
                          "sqlite_mb_per_episode": sqlite}))

    asyncio.run(main())

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--latency", type=float, default=50.0, help="the user server's delay per reply (ms)")
    parser.add_argument("--turns", type=int, default=5, help="agent turns before the user stops")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rss", type=int, default=0, metavar="N", help="measure memory per live episode instead")
    parser.add_argument("--steps", type=int, default=3, help="with --rss: oracle steps each episode plays")
    parser.add_argument("--copy", action="store_true", help="with --rss: each world a private in-memory copy")
    args = parser.parse_args()
    if args.rss:
        memory(args.rss, args.steps, args.copy)
    else:
        throughput(args)


if __name__ == "__main__":
    main()
