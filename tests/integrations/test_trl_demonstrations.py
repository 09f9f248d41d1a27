"""mua_trl.demonstrations: the cold-start rows are the GRPO loop's own conversations, token for token.

A steered tiny Llama replays a row's assistant turns through PolicyAgent (the TRL loop's protocol, conformance-
tested against a real GRPOTrainer in test_trl_eval.py); the tokens it builds must be the tokens TRL's SFTTrainer
trains on for that row, and the loss must fall on exactly the agent's turns.
"""

from __future__ import annotations

import json

import pytest

import mua_gym

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

from mua_gym.integrations import trl as mua_trl  # noqa: E402
from integrations.trl_scripts import END, hermes, play  # noqa: E402

RETAIL = "mua/Retail-v0"
NARROW = {"world_params": {"difficulty": 1}, "user": "scenario", "max_turns": 12,
          "tools": ["find_user_id_by_email", "find_user_id_by_name_zip", "get_order_details"],
          "policy": "You answer customers' questions about their own orders. Identify them first."}


def agent_turns(row) -> list[str]:
    """The row's assistant turns as the model would write them."""
    turns = []
    for m in row["messages"]:
        if m["role"] == "assistant":
            calls = m.get("tool_calls") or []
            turns.append(hermes(*[(c["function"]["name"], c["function"]["arguments"]) for c in calls]) if calls
                         else m["content"] + END)
    return turns


def replay(tokenizer, row, **make_kwargs):
    from integrations.steered_llama import tiny_llama

    opening = row["messages"][1]["content"]
    model = tiny_llama(tokenizer).steer(tokenizer, {opening: agent_turns(row)})
    agent = mua_trl.PolicyAgent(model, tokenizer, max_completion_length=4096, temperature=0.0)
    return agent, play(RETAIL, agent, row["task_id"], seed=0, **make_kwargs)


@pytest.fixture(scope="module")
def rows():
    env = mua_gym.make_async(RETAIL, **NARROW)
    ids = [t.id for t in env.tasks("train") if t.category == "information"][:3]
    return mua_trl.demonstrations(RETAIL, ids, split="train", seed=0, **NARROW)


def test_the_rows_are_solved_episodes_that_talk_through_the_tool(rows):
    assert len(rows) == 3
    for row in rows:
        messages = row["messages"]
        assert messages[0]["content"] == NARROW["policy"] + mua_trl.TALKING and messages[1]["role"] == "user"
        assert messages[-1] == {"role": "assistant", "content": ""}  # the loop ends on a reply without a call
        assert messages[-2]["content"].endswith("answer without calling any tool.)")
        names = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
        assert mua_trl.SEND_MESSAGE in names and set(names) - {mua_trl.SEND_MESSAGE} <= set(NARROW["tools"])
        assert sorted(s["function"]["name"] for s in json.loads(row["tools"])) == sorted(
            [*NARROW["tools"], mua_trl.SEND_MESSAGE])


def test_sft_trains_on_the_tokens_the_grpo_loop_builds_with_loss_on_the_agents_turns(rows, tokenizer, tmp_path):
    from integrations.steered_llama import tiny_llama

    path = tmp_path / "demos.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache"))
    config = trl.SFTConfig(output_dir=str(tmp_path / "out"), assistant_only_loss=True, max_length=None, max_steps=1,
                           per_device_train_batch_size=1, use_cpu=True, bf16=False, report_to="none",
                           save_strategy="no", seed=0, dataloader_num_workers=0)
    trainer = trl.SFTTrainer(model=tiny_llama(tokenizer), args=config, train_dataset=data, processing_class=tokenizer)
    for i, row in enumerate(rows):
        agent, trajectory = replay(tokenizer, row, **NARROW)
        assert trajectory.task_reward == 1.0 and trajectory.termination_reason == "user_stop"
        batch = trainer.data_collator([trainer.train_dataset[i]])
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        assert ids[:len(agent.token_ids)] == agent.token_ids
        # The episode ended on the user's stop; TRL's loop still feeds the last result and takes one more reply,
        # the empty answer that ends the rollout.
        rest = tokenizer.decode(ids[len(agent.token_ids):])
        assert rest == ("\n<|im_start|>user\n<tool_response>\n" + row["messages"][-2]["content"]
                        + "\n</tool_response><|im_end|>\n<|im_start|>assistant\n<|im_end|>\n")
        trained = tokenizer.decode([t for t, label in zip(ids, labels) if label != -100])
        # TRL's training template marks each assistant turn from the newline after its role to the newline after
        # its end token: both are template text the model is never asked to generate, the rest is the turns.
        assert trained == "".join("\n" + turn + "\n" for turn in agent_turns(row))
