"""The sim-to-real gap of a local model: the GRPO recipe's held-out evaluation, clean and under perturbations.

    python benchmarks/perturb_gap.py --perturb observation --perturb action --perturb transition --perturb user \\
        --model runs/learn7/reference --difficulty 1 --categories information \\
        --policy-file examples/curricula/retail-orders.md \\
        --tools find_user_id_by_email,find_user_id_by_name_zip,get_order_details \\
        --eval-tasks 20 --max-completion-length 1536 --max-tool-calls 8 --max-turns 12 --threads 2 \\
        --out runs/gap-smollm2

Every option but ``--perturb`` is ``examples/train_grpo.py``'s, read the same way (the same curriculum, task ids,
model loading and greedy play through the TRL adapter), so a learning run's saved policy is measured on the
tasks it was evaluated on. Each run goes to a folder of ``--out``; the gap table is printed and written to
``--out``/gap.json and gap.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import train_grpo  # noqa: E402  (the recipe's own argument reading and model loading)


def main(argv: list[str] | None = None) -> list[Any]:
    import torch

    from mua_gym.eval.evaluate import EvalConfig, evaluate
    from mua_gym.integrations import trl as mua_trl
    from mua_gym.perturbations import check_perturb_specs
    from mua_gym.eval.gap import format_gap, gap_rows

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--perturb", action="append", required=True, metavar="SPEC")
    mine, rest = own.parse_known_args(argv)
    try:
        check_perturb_specs(mine.perturb)  # before the model loads
    except ValueError as exc:
        own.error(str(exc))
    args = train_grpo.parse_args(rest)
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = train_grpo.load_model(args)
    model.eval()
    keywords = train_grpo.curriculum(args)
    ids = train_grpo.task_ids(args, args.eval_split, args.eval_tasks)
    settings = {"max_completion_length": args.max_completion_length, "temperature": args.eval_temperature,
                "max_tool_calling_iterations": args.max_tool_calls, "max_new_tokens": args.max_new_tokens or None}
    factory = mua_trl.agent_factory(model, tokenizer, **settings)
    runs: dict[str, list[Any]] = {}
    for spec in [None, *mine.perturb]:
        label = spec or "clean"
        played: list[Any] = []
        config = EvalConfig(env_ids=[args.env], agent=f"model:{args.model}", agent_kwargs=settings,
                            split=args.eval_split, task_ids=ids, trials=args.eval_trials, concurrency=1,
                            seed=args.seed, user=keywords["user"], world_params=keywords["world_params"],
                            max_turns=args.max_turns, policy=keywords.get("policy"), tools=keywords.get("tools"),
                            perturb=spec)
        summary = evaluate(config, out=Path(args.out) / label.replace(":", "_"), agent_factory=factory,
                           on_episode=lambda result, done, total: played.append(result),
                           on_start=lambda held, total: played.extend(held))
        print(f"{label}: pass^1 {summary.pass_hat_k[1]:.3f} over {summary.tasks} tasks, {summary.wall_s:.0f} s",
              flush=True)
        runs[label] = played
    rows = gap_rows(runs.pop("clean"), runs)
    table = format_gap(rows)
    print(table)
    (Path(args.out) / "gap.json").write_text(json.dumps([r.model_dump(mode="json") for r in rows], indent=1))
    (Path(args.out) / "gap.md").write_text(table + "\n")
    return rows


if __name__ == "__main__":
    main()
