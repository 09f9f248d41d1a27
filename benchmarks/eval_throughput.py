"""Episodes per second of `mua-gym eval`: every generated test task of a domain, 2 trials, one event loop.

    python benchmarks/eval_throughput.py [--env mua/Retail-v0] [--user scenario] [--repeat 3]
    python benchmarks/eval_throughput.py --model-latency 0.05 --num-tasks 20   # model-bound: concurrency pays

``--model-latency S`` replaces agent and user by litellm's offline double answering after S seconds (a model
call's wait, no CPU): the agent writes one message and the user stops, a two-call episode.

Each concurrency is timed ``--repeat`` times (a fresh folder each: run.json, episodes.jsonl written as in a real
run) and the median reported, with the ratio to concurrency 1, measured in the same process run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mua_gym.eval.evaluate import EvalConfig, evaluate  # noqa: E402


def episodes_per_second(config: EvalConfig, repeat: int) -> tuple[float, int, float]:
    """(median episodes/s, episodes per run, pass^1 of the last run)."""
    rates, summary = [], None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            summary = evaluate(config, out=out)
            rates.append(summary.episodes / (time.perf_counter() - started))
    assert summary is not None
    return statistics.median(rates), summary.episodes, summary.pass_hat_k[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", default="mua/Retail-v0")
    parser.add_argument("--agent", default="oracle")
    parser.add_argument("--user", default="scenario")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--num-tasks", type=int, default=None)
    parser.add_argument("--model-latency", type=float, default=None)
    args = parser.parse_args()
    agent_kwargs: dict = {}
    user_kwargs: dict = {}
    if args.model_latency is not None:
        args.agent = args.user = "litellm:gpt-4o-mini"
        agent_kwargs = {"mock_response": "Could you tell me your order id?", "mock_delay": args.model_latency}
        user_kwargs = {"mock_response": "###STOP###", "mock_delay": args.model_latency}
    print(f"| {args.env} | agent | user | concurrency | episodes | episodes/s (median of {args.repeat}) "
          f"| vs c=1 | pass^1 |\n|---|---|---|---|---|---|---|---|")
    base = None
    for concurrency in args.concurrency:
        config = EvalConfig(env_ids=[args.env], agent=args.agent, user=args.user, trials=args.trials,
                            concurrency=concurrency, num_tasks=args.num_tasks, agent_kwargs=agent_kwargs,
                            user_kwargs=user_kwargs)
        rate, episodes, pass1 = episodes_per_second(config, args.repeat)
        base = base or rate
        print(f"| | {args.agent} | {args.user} | {concurrency} | {episodes} | {rate:.0f} | {rate / base:.2f} "
              f"| {pass1:.3f} |")


if __name__ == "__main__":
    main()
