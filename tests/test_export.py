"""mua-gym export --format sft: chat JSON lines that datasets loads as written and TRL's SFTTrainer trains on."""

from __future__ import annotations

import json
import shutil
import sys
import time

import pytest

from mua_gym.integrations.chat_tokens import template_message
from mua_gym.eval.evaluate import EvalConfig, evaluate, read_run
from mua_gym.eval.export import export_sft

RETAIL, MOCK = "mua/Retail-v0", "mua/Mock-v0"
END = "<|im_end|>"


def add_failed_copies(folder) -> None:
    """Appends copies of the run's first paid episode that ended on an agent and on a user error: paid or not,
    such an episode is no demonstration."""
    run = read_run(folder)
    paid = next(r for r in run.results if r.success)
    with open(folder / "episodes.jsonl", "a") as f:
        for kind, trial in (("agent", 90), ("user", 91)):
            f.write(paid.model_copy(update={"trial": trial, "error_kind": kind, "error": "boom"}).model_dump_json()
                    + "\n")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A fair agent's run of retail and mock tasks: some paid, some not, plus two episodes that ended on errors."""
    folder = tmp_path_factory.mktemp("fair")
    evaluate(EvalConfig(env_ids=[RETAIL, MOCK], agent="fair", user="scripted", trials=2, num_tasks=8), out=folder)
    add_failed_copies(folder)
    return folder


def read_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_clean_episode_is_one_line_and_min_reward_filters(run, tmp_path):
    results = read_run(run).results
    clean = [r for r in results if r.error_kind is None]
    assert len(clean) == len(results) - 2 and {r.reward for r in clean} == {0.0, 1.0}
    everything = tmp_path / "all.jsonl"
    assert export_sft(run, everything) == len(clean) == len(read_lines(everything))
    paid = tmp_path / "deep" / "paid.jsonl"  # missing folders are made
    assert export_sft(run, paid, min_reward=1.0) == sum(r.success for r in clean) < len(clean)
    lines = read_lines(paid)
    assert all(line["reward"] == 1.0 for line in lines)
    assert sorted((line["env_id"], line["task_id"], line["trial"]) for line in lines) == sorted(
        r.key for r in clean if r.success)
    assert 90 not in {line["trial"] for line in read_lines(everything)}  # the paid copy that ended on an error
    assert export_sft(run, paid, min_reward=2.0) == 0 and paid.read_text() == ""  # replaced, not appended to
    assert not list(tmp_path.glob("**/*.tmp"))


def test_a_line_is_the_episode_as_the_agent_saw_it_with_flags_on_its_own_turns(run, tmp_path):
    out = tmp_path / "sft.jsonl"
    export_sft(run, out)
    loaded = read_run(run)
    results = {r.key: r for r in loaded.results if r.error_kind is None}
    for line in read_lines(out):
        result = results[(line["env_id"], line["task_id"], line["trial"])]
        chat = loaded.trajectory(result).to_chat(arguments="dict")
        assert line["messages"] == [template_message(m) for m in chat.messages]
        assert line["messages"][0] == {"role": "system", "content": loaded.envs[result.env_id].policy}
        assert json.loads(line["tools"]) == loaded.envs[result.env_id].tools == chat.tools
        assert line["trainable"] == chat.trainable == [m["role"] == "assistant" for m in line["messages"]]
        assert line["reward"] == result.reward and line["seed"] == result.seed
        for message in line["messages"]:
            assert isinstance(message["content"], str)  # templates concatenate it: never None
            for call in message.get("tool_calls") or ():
                assert isinstance(call["function"]["arguments"], dict)
    as_text = tmp_path / "json.jsonl"
    export_sft(run, as_text, arguments="json")
    calls = [c for line in read_lines(as_text) for m in line["messages"] for c in m.get("tool_calls") or ()]
    assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)
    assert all(json.loads(c["function"]["arguments"]) is not None for c in calls)
    with pytest.raises(FileNotFoundError):
        export_sft(tmp_path / "nothing", tmp_path / "x.jsonl")


def test_datasets_loads_every_row_back_as_written(run, tmp_path):
    """Arrow gives one type per column: the rows must not come back with keys of other rows' dicts added."""
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "sft.jsonl"
    n = export_sft(run, out)
    dataset = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert len(dataset) == n and dataset.features["tools"] == datasets.Value("string")
    argument_keys = set()
    for row, line in zip(dataset, read_lines(out)):
        assert row == line
        argument_keys |= {frozenset(c["function"]["arguments"]) for m in line["messages"]
                          for c in m.get("tool_calls") or ()}
    assert len(argument_keys) > 5  # calls with different arguments, which a struct column would have merged


def hermes_turn(message: dict) -> str:
    """An assistant message as Hermes-style templates (Qwen 2.5's) write it, from its generation marker on."""
    text = "\n" + message["content"] if message["content"] or not message.get("tool_calls") else ""
    for call in message.get("tool_calls") or ():
        function = call["function"]
        text += "\n<tool_call>\n" + json.dumps({"name": function["name"], "arguments": function["arguments"]},
                                               ensure_ascii=False) + "\n</tool_call>"
    return text + END + "\n"


@pytest.mark.slow
def test_sft_trainer_puts_loss_on_exactly_the_agents_turns_and_trains(tokenizer, tmp_path):
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from transformers import LlamaForCausalLM

    from integrations.steered_llama import tiny_llama

    folder = tmp_path / "run"
    evaluate(EvalConfig(env_ids=[MOCK], agent="fair", trials=1), out=folder)  # mock: short policy, short rows
    out = tmp_path / "sft.jsonl"
    n = export_sft(folder, out)
    dataset = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    config = trl.SFTConfig(output_dir=str(tmp_path / "out"), assistant_only_loss=True, max_length=None, max_steps=1,
                           per_device_train_batch_size=1, use_cpu=True, bf16=False, report_to="none",
                           save_strategy="no", logging_steps=1, seed=0, dataloader_num_workers=0)
    model = tiny_llama(tokenizer, kind=LlamaForCausalLM)
    trainer = trl.SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    # Qwen 2.5's template has no {% generation %} markers: TRL swaps in its training variant, which has them
    assert "{% generation %}" not in tokenizer.chat_template and "generation" in trainer.chat_template

    assert len(trainer.train_dataset) == n >= 4
    for row, line in zip(trainer.train_dataset, read_lines(out)):
        batch = trainer.data_collator([row])
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        trained, spans, inside = [], 0, False
        for token, label in zip(ids, labels):
            if label != -100:
                assert label == token
                trained.append(token)
            spans += label != -100 and not inside
            inside = label != -100
        assistant = [m for m, flag in zip(line["messages"], line["trainable"]) if flag]
        assert tokenizer.decode(trained) == "".join(hermes_turn(m) for m in assistant)
        # every agent turn is a span of its own: a user or tool turn lies between any two of them
        assert spans == len(assistant) >= 2

    started = time.perf_counter()
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    print(f"1 SFT step: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    assert trainer.state.global_step == 1
    loss = trainer.state.log_history[0]["loss"]
    assert 0 < loss < 100
    assert any((b != a.detach()).any() for b, a in zip(before, model.parameters()))
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
