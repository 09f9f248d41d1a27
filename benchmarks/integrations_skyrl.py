"""What the SkyRL-gym adapter adds to a step: medians of the same tool call, bare env and adapter, in one run.

    python benchmarks/integrations_skyrl.py [--repeat 2000]

Both sides get the same raw Hermes text (a read call, so the world never changes); the adapter's figure is
``MuaTextEnv.step`` (parse, run, wrap as ``BaseTextEnvStepOutput``) and the bare one ``MuaEnv.step``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mua_gym import MuaEnv  # noqa: E402
from overhead import interleaved_us, report  # noqa: E402

ACTION = '<tool_call>{"name": "get_order_details", "arguments": {"order_id": "#W8052947"}}</tool_call>'
TASK = "retail-train-0-00003"
CONFIG = {"world_params": {"count": 20}}


def step_overhead_us(repeat: int = 2000) -> dict[str, float]:
    """Medians in microseconds: ``{"bare": ..., "adapter": ..., "overhead": adapter - bare}``."""
    import skyrl_gym

    from mua_gym.integrations.skyrl import register

    register()
    turns = repeat + 1  # no turn limit ends the loop early
    bare = MuaEnv("retail", max_turns=turns, **CONFIG)
    bare.reset(options={"task_id": TASK})
    adapter = skyrl_gym.make("mua_retail", env_config=CONFIG, extras={"task_id": TASK, "max_turns": turns})
    adapter.init([])
    try:
        return interleaved_us(lambda: bare.step(ACTION), lambda: adapter.step(ACTION), repeat)
    finally:
        bare.close()
        adapter.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2000)
    print(report("SkyRL", step_overhead_us(parser.parse_args().repeat)))


if __name__ == "__main__":
    main()
