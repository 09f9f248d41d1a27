"""The hot paths of two versions of mua_gym in one run: a base revision against the working tree.

    python benchmarks/before_after.py --base HEAD~3                  # every domain, 3 rounds each side
    python benchmarks/before_after.py --base main --domain retail --rounds 5

The base revision is checked out into a temporary git worktree and imported through a folder that maps its
packages as setup.cfg's ``package_dir`` does; the working tree is the installed package. Both sides run this
tree's ``bench.py`` (ours only, ``--no-tau2``) in alternating rounds, so a noisy machine slows both alike.
Prints each operation's median per side and the ratio working tree / base: for times, below 1 is faster; for
episodes per second, above 1 is faster.
"""

from __future__ import annotations

import argparse
import configparser
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench.py"


def importable(tree: Path, into: Path) -> Path:
    """A folder that, put first on PYTHONPATH, imports ``tree``'s mua_gym with its mapped subpackages."""
    config = configparser.ConfigParser()
    config.read(tree / "setup.cfg")
    mapping = dict(line.split("=", 1) for line in config["options"]["package_dir"].split("\n") if "=" in line)
    package = into / "mua_gym"
    package.mkdir(parents=True)
    for item in (tree / "mua_gym").iterdir():
        (package / item.name).symlink_to(item)
    for name, folder in mapping.items():
        name, folder = name.strip(), folder.strip()
        if name.startswith("mua_gym."):
            (package / name.split(".", 1)[1]).symlink_to(tree / folder)
    return into


def run_bench(domain: str, repeat: int, path: Path | None) -> dict[tuple[str, str], float]:
    """One run of bench.py: (world, operation) -> our figure."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = str(path)
    out = subprocess.run([sys.executable, "-W", "ignore", str(BENCH), "--domain", domain, "--repeat", str(repeat),
                          "--no-tau2"], capture_output=True, text=True, env=env, check=True, cwd=tempfile.gettempdir())
    rows = {}
    for line in out.stdout.splitlines()[1:]:
        parts = re.split(r"\s{2,}", line.strip())
        if len(parts) >= 3:
            rows[(parts[0], parts[1])] = float(parts[2].split()[0])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the git revision to compare the working tree with")
    parser.add_argument("--domain", choices=["all", "mock", "retail", "airline", "telecom"], default="all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), args.base], check=True)
        try:
            shim = importable(tree, Path(scratch) / "shim")
            base: list[dict] = []
            current: list[dict] = []
            for _ in range(args.rounds):
                base.append(run_bench(args.domain, args.repeat, shim))
                current.append(run_bench(args.domain, args.repeat, None))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
    print(f"base {args.base} vs the working tree: medians of {args.rounds} alternating rounds, {args.repeat} repeats")
    print(f"{'world':30s} {'operation':44s} {'base':>10s} {'now':>10s} {'now/base':>9s}")
    for key in base[0]:
        if not all(key in run for run in base + current):
            continue
        b, c = (statistics.median(run[key] for run in runs) for runs in (base, current))
        print(f"{key[0]:30s} {key[1]:44s} {b:10.1f} {c:10.1f} {c / b:9.2f}")


if __name__ == "__main__":
    main()
