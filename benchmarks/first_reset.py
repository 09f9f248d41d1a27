"""A new process's first reset, with the disk cache of tasks and world images cold, warm, and off.

    python benchmarks/first_reset.py                       # retail, airline, telecom; 3 rounds
    python benchmarks/first_reset.py --domain retail --rounds 5

Each measurement is a new Python process (as a vector worker, a Ray actor or a CLI call is): it imports
mua_gym, makes the env on the train split and resets it once. Cold: an empty cache folder (the reset
generates and verifies the split's tasks, builds the world image and writes both); warm: the folder the cold
run filled; off: ``MUA_GYM_CACHE=off``. Prints the median seconds of import, make and the first reset.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import json, sys, time
t0 = time.perf_counter()
import mua_gym
t1 = time.perf_counter()
env = mua_gym.make(sys.argv[1], split="train")
t2 = time.perf_counter()
env.reset(seed=0)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "make": t2 - t1, "reset": t3 - t2}))
"""


def measure(env_id: str, cache: str) -> dict[str, float]:
    env = {**os.environ, "MUA_GYM_CACHE": cache}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD, env_id], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", action="append", help="retail, airline or telecom (default: all three)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'domain':8s} {'cache':5s} {'import s':>9s} {'make s':>7s} {'reset s':>8s}   (medians of {args.rounds})")
    for domain in args.domain or ["retail", "airline", "telecom"]:
        env_id = f"mua/{domain.capitalize()}-v0"
        runs: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "off": []}
        for _ in range(args.rounds):
            folder = tempfile.mkdtemp(prefix="mua-cache-")
            try:  # interleaved, so a noisy machine slows each state alike
                runs["cold"].append(measure(env_id, folder))
                runs["warm"].append(measure(env_id, folder))
                runs["off"].append(measure(env_id, "off"))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        for state, rows in runs.items():
            med = {k: statistics.median(r[k] for r in rows) for k in ("import", "make", "reset")}
            print(f"{domain:8s} {state:5s} {med['import']:9.2f} {med['make']:7.2f} {med['reset']:8.3f}")


if __name__ == "__main__":
    main()
