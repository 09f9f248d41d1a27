"""The training supply beside TAU2's tasks: what it asks, per family how it is verified and audited, what it costs.

    python benchmarks/task_supply.py                       # retail and airline (and telecom's coverage)
    python benchmarks/task_supply.py --base HEAD~5         # + the cost of a 2,000-task split at a base revision
    python benchmarks/task_supply.py --domain retail --no-audit

Prints, per domain:

1. coverage: the train split by shape beside TAU2's train and test tasks (``mua_gym.eval.coverage``);
2. per family (each request's family; a task counts once in each family it holds): proposals that a 2,000-task
   generation made and what verifying them found (kept, a gold call failed or scored below 1.0 or doing nothing
   scored above 0.0, unfair), then on the test split the fair agent's and the best-paid exploit's share of
   successful episodes with the scenario user;
3. the cost of generating and verifying a 2,000-task train split: the median of ``--rounds`` runs, on the
   working tree and (``--base``) on a base revision checked out into a temporary worktree, in alternating rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from before_after import ROOT, importable  # noqa: E402

COST = """
import importlib, json, sys, time
from mua_gym.domain.registry import get_domain
domain = get_domain(sys.argv[1])
make = importlib.import_module(f"mua_gym.domains.{sys.argv[1]}.taskgen").generated_tasks
make(domain, "dev", count=5)  # the world's image built and read first: not part of a split's cost
start = time.perf_counter()
tasks = make(domain, "train", count=2000)
print(json.dumps({"seconds": time.perf_counter() - start, "proposed": tasks.stats.proposed}))
"""


def family_of(intent: dict[str, Any]) -> str:
    """A request's family: what it finally is (the request it becomes after a change of mind), else its own."""
    return ((intent.get("on_confirm") or {}).get("becomes") or {}).get("category") or intent.get("category", "?")


def families(task: Any) -> set[str]:
    return {family_of(i) for i in task.user_scenario.intents} or {task.category or "?"}


def cost(domain: str, path: Path | None) -> dict[str, Any]:
    env = {**os.environ, "MUA_GYM_CACHE": "off"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", COST, domain], capture_output=True, text=True,
                         env=env, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout)


def verification(domain_name: str) -> dict[str, Counter[str]]:
    """Per family: what verifying the proposals of a 2,000-task train split found."""
    import importlib

    from mua_gym.domain.registry import get_domain
    from mua_gym.kit.generation import check_task

    domain = get_domain(domain_name)
    make = importlib.import_module(f"mua_gym.domains.{domain_name}.taskgen").generated_tasks
    found: dict[str, Counter[str]] = defaultdict(Counter)
    for task in make(domain, "train", count=2000, verify=False):
        problem = check_task(domain, task)
        for family in families(task):
            found[family]["proposed"] += 1
            found[family]["kept" if problem is None else problem[0]] += 1
    return found


def audit_by_family(env_id: str) -> dict[str, dict[str, float]]:
    """Per family, on the test split: the fair agent's share of successes and the best-paid exploit's."""
    from mua_gym.eval.audit import strategies
    from mua_gym.eval.evaluate import EvalConfig, aevaluate

    import mua_gym

    tasks = {t.id: t for t in mua_gym.make_async(env_id, split="test").tasks()}
    paid: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for name, (kind, make) in strategies().items():
        results: list[Any] = []
        config = EvalConfig(env_ids=[env_id], agent=name, user="scenario", split="test")
        asyncio.run(aevaluate(config, on_episode=lambda r, done, total: results.append(r),
                              agent_factory=lambda task, seed, make=make: make(task)))
        for r in results:
            for family in families(tasks[r.task_id]):
                paid[family][name].append(bool(r.success))
    table = {}
    for family, rows in paid.items():
        exploits = {n: sum(v) / len(v) for n, v in rows.items() if strategies()[n][0] == "exploit"}
        worst = max(exploits, key=exploits.get)  # type: ignore[arg-type]
        table[family] = {"episodes": len(rows["fair"]), "fair": sum(rows["fair"]) / len(rows["fair"]),
                         "oracle": sum(rows["oracle"]) / len(rows["oracle"]), "worst_exploit": exploits[worst],
                         "worst_name": worst, "exploits": len(exploits)}
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", choices=["all", "retail", "airline", "telecom"], default="all")
    parser.add_argument("--base", default=None, help="a git revision whose generation cost to measure beside ours")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-audit", action="store_true", help="skip the per-family audit (the slowest part)")
    args = parser.parse_args()
    names = ["retail", "airline", "telecom"] if args.domain == "all" else [args.domain]

    import mua_gym
    from mua_gym.eval.coverage import coverage, format_coverage

    for name in names:
        domain = mua_gym.get_domain(name)
        theirs = [t for s in ("train", "test") for t in domain.tasks(s, "tau2")]
        print(f"## {name}\n")
        print(format_coverage(coverage(domain.tasks("train"), theirs, domain.tools.names_of("read")), "train split",
                              "TAU2", top=8))
        if name == "telecom":
            print()
            continue
        started = time.perf_counter()
        checked = verification(name)
        audited = {} if args.no_audit else audit_by_family(mua_gym.env_id(name))
        print("\n| family | proposed | kept | failed | unfair | test episodes | fair | oracle | best-paid exploit |")
        print("|---|---|---|---|---|---|---|---|---|")
        for family in sorted(checked, key=lambda f: -checked[f]["proposed"]):
            c, a = checked[family], audited.get(family)
            tail = "- | - | - | -"
            if a:
                worst = (f"{a['worst_exploit']:.0%} ({a['worst_name']})" if a["worst_exploit"] else
                         f"0% (all {a['exploits']})")
                tail = f"{a['episodes']} | {a['fair']:.0%} | {a['oracle']:.0%} | {worst}"
            print(f"| {family} | {c['proposed']} | {c['kept']} | {c['failed']} | {c['unfair']} | {tail} |")
        print(f"\n(verified and audited in {time.perf_counter() - started:.0f} s)\n")

    if args.base is None:
        return
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), args.base], check=True)
        try:
            shim = importable(tree, Path(scratch) / "shim")
            runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
            for _ in range(args.rounds):
                for name in (n for n in names if n != "telecom"):
                    runs[name, "base"].append(cost(name, shim))
                    runs[name, "now"].append(cost(name, None))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
    print(f"generating and verifying a 2,000-task train split: medians of {args.rounds} alternating rounds")
    print("| domain | base s | base proposals | now s | now proposals | now/base |\n|---|---|---|---|---|---|")
    for name in (n for n in names if n != "telecom"):
        b = statistics.median(r["seconds"] for r in runs[name, "base"])
        c = statistics.median(r["seconds"] for r in runs[name, "now"])
        proposed = [runs[name, side][0]["proposed"] for side in ("base", "now")]
        print(f"| {name} | {b:.2f} | {proposed[0]} | {c:.2f} | {proposed[1]} | {c / b:.2f} |")


if __name__ == "__main__":
    main()
