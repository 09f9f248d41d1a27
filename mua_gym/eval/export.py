"""An evaluation run as supervised fine-tuning data: one chat-format JSON line per episode kept.

    from mua_gym.eval.export import export_sft
    export_sft("runs/oracle", "sft.jsonl", min_reward=1.0)

    dataset = datasets.load_dataset("json", data_files="sft.jsonl", split="train")
    trl.SFTTrainer(model, args=trl.SFTConfig(assistant_only_loss=True, ...), train_dataset=dataset, ...)

Each line holds:

- ``messages``: what the agent saw and wrote, as OpenAI chat dicts (``Trajectory.to_chat``; the system
  policy first), in the form chat templates render: a tool call's ``arguments`` a dict (templates such as
  Qwen 2.5's and Llama 3's ``tojson`` them: a JSON string would be rendered quoted), text ``content`` never
  None. ``datasets`` (4.7 and later) stores such lists of differently keyed dicts as ``Json`` values, so they
  load back as written, with no keys added.
- ``tools``: the agent's tool schemas as one JSON string, which TRL's SFTTrainer decodes before rendering. A
  string keeps the column one Arrow type however the schemas differ between envs and rows.
- ``trainable``: one flag per message of ``messages``, True exactly for the agent's own turns (those
  ``assistant_only_loss`` puts loss on).
- ``env_id``, ``task_id``, ``trial``, ``seed``, ``reward``: where the episode came from.

An episode is left out where it ended on an agent or user error, where its reward is under ``min_reward``
(if given), or where the agent wrote nothing (a trainer refuses an example with no assistant tokens).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from mua_gym.integrations.chat_tokens import template_message
from mua_gym.eval.evaluate import EpisodeResult, EvalRun, read_run

__all__ = ["export_sft", "sft_record"]


def sft_record(run: EvalRun, result: EpisodeResult, arguments: Literal["dict", "json"] = "dict") -> dict[str, Any]:
    """The episode's line of :func:`export_sft`, as a dict. ``arguments="json"`` keeps each tool call's
    arguments as the JSON text the agent sent (for templates that render strings as they are)."""
    chat = run.trajectory(result).to_chat(arguments=arguments)
    messages = [template_message(m) if arguments == "dict" else _text_content(m) for m in chat.messages]
    return {"messages": messages, "tools": json.dumps(chat.tools, ensure_ascii=False), "trainable": chat.trainable,
            "env_id": result.env_id, "task_id": result.task_id, "trial": result.trial, "seed": result.seed,
            "reward": float(result.reward)}


def _text_content(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "content": message["content"] or ""} if "content" in message else message


def export_sft(folder: str | os.PathLike[str], out: str | os.PathLike[str], *, min_reward: float | None = None,
               arguments: Literal["dict", "json"] = "dict") -> int:
    """Writes the run's episodes as SFT JSON lines to ``out`` (replacing it; folders made as needed) and
    returns how many lines it wrote. Raises FileNotFoundError where ``folder`` holds no run."""
    run = read_run(folder)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    written = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for result in run.results:
            if result.error_kind is not None or (min_reward is not None and result.reward < min_reward):
                continue
            record = sft_record(run, result, arguments)
            if not any(record["trainable"]):
                continue
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
    tmp.replace(path)  # a reader never sees half a file
    return written
