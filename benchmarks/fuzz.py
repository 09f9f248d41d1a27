"""The seeded action fuzzer of tests/test_fuzz.py at scale (mua_gym.eval.fuzz), with its counts per domain.

    python benchmarks/fuzz.py --actions 100000 --seed 1
    python benchmarks/fuzz.py --actions 20000 --domain telecom --max-size 1000000

The actions are shared out over every registered domain (``fuzz_setups``: the scripted and scenario users, the
scenario user alone for a dual-control domain such as telecom).
Prints, per domain and user: actions, episodes, exceptions, slow steps (1 s or more) and the slowest step,
all-error steps and how many of them changed the world, trajectories serialised and failed, and the first
failures with what reproduces them. Exits 1 if anything broke the contract.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mua_gym.domain.registry import available_domains  # noqa: E402
from mua_gym.eval.fuzz import FuzzCounts, fuzz, fuzz_setups  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=100_000, help="actions in all, shared out over the configs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--domain", choices=["all", *available_domains()], default="all")
    parser.add_argument("--count", type=int, default=40, help="generated tasks per split (smaller: faster start)")
    parser.add_argument("--max-size", type=int, default=200_000, help="the longest spam text, in characters")
    args = parser.parse_args()
    configs = fuzz_setups(None if args.domain == "all" else [args.domain])
    share = -(-args.actions // len(configs))
    results: list[tuple[FuzzCounts, float]] = []
    for i, (domain, user) in enumerate(configs):
        params = None if domain == "mock" else {"count": args.count}
        started = time.perf_counter()
        counts = fuzz(domain, user, share, seed=args.seed * 100 + i, world_params=params, max_size=args.max_size)
        results.append((counts, time.perf_counter() - started))
    head = (f"{'domain/user':18} {'actions':>8} {'episodes':>8} {'raised':>6} {'slow':>5} {'slowest s':>9} "
            f"{'all-error':>9} {'changed':>7} {'traj ok':>7} {'traj bad':>8} {'calls ok':>8} {'wall s':>7}")
    print(head)
    for c, wall in results:
        print(f"{c.domain + '/' + c.user:18} {c.actions:>8} {c.episodes:>8} {c.exceptions:>6} {c.slow_steps:>5} "
              f"{c.slowest_step_s:>9.3f} {c.all_error_steps:>9} {c.all_error_steps_changed_world:>7} "
              f"{c.trajectories_serialised:>7} {c.trajectories_failed:>8} {c.tool_calls_ok:>8} {wall:>7.1f}")
    total = sum(c.actions for c, _ in results)
    print(f"{'total':18} {total:>8}")
    failures = [f for c, _ in results for f in c.failures]
    for line in failures[:40]:
        print("FAIL", line)
    return 0 if all(c.ok for c, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
