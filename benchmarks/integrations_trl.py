"""What the TRL adapter adds to a step: medians of the same tool call, bare env and adapter, in one run.

    python benchmarks/integrations_trl.py [--repeat 2000]

Both sides make the same read call (so the world never changes): the adapter's figure is the generated tool
method TRL calls (``get_order_details(order_id=...)``: an env step, its tool message joined as the string TRL
appends), the bare one ``MuaEnv.step`` with the call as a dict. TRL's own work (parsing the model's reply,
tokenizing the result) is the same whatever env it drives and is not counted.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import mua_gym  # noqa: E402
from overhead import interleaved_us, report  # noqa: E402

ARGUMENTS = {"order_id": "#W8052947"}
TASK = "retail-train-0-00003"
CONFIG = {"world_params": {"count": 20}}


def step_overhead_us(repeat: int = 2000) -> dict[str, float]:
    """Medians in microseconds: ``{"bare": ..., "adapter": ..., "overhead": adapter - bare}``."""
    from mua_gym.integrations import trl as mua_trl

    turns = 2 * repeat + 1  # no turn limit ends the loop early
    bare = mua_gym.make("mua/Retail-v0", max_turns=turns, **CONFIG).unwrapped
    bare.reset(options={"task_id": TASK})
    adapter = mua_trl.environment_factory("mua/Retail-v0", max_turns=turns, **CONFIG)()
    adapter.reset(task_id=TASK)
    return interleaved_us(lambda: bare.step({"name": "get_order_details", "arguments": ARGUMENTS}),
                          lambda: adapter.get_order_details(**ARGUMENTS), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    print(report("TRL tool", step_overhead_us(args.repeat)))


if __name__ == "__main__":
    main()
