"""What the verifiers adapter adds to a step: medians of the same tool call, bare env and through verifiers, in one run.

    python benchmarks/integrations_verifiers.py [--steps 200]

Through verifiers, one step is a model turn of :class:`mua_gym.integrations.verifiers.MuaHarness` against an
instant scripted model (``tests/integrations/openai_stub.py``, in a forked process so that it takes no GIL from the
loop): the interval between two consecutive model requests at the model, i.e. its streamed answer, verifiers'
interception both ways (trace graph, relay), the harness and ``AsyncMuaEnv.step`` of the tool call. The bare
figure is ``AsyncMuaEnv.step`` of the same read call.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from mua_gym import AsyncMuaEnv, get_domain  # noqa: E402
from overhead import with_overhead  # noqa: E402

TASKSET_ID = "mua-gym-verifiers"


def _read_call(task: Any) -> dict[str, Any]:
    """The task's first gold call to a read tool, as an assistant message (it never changes the world)."""
    import json

    tools = get_domain("retail").tools
    action = next(a for a in task.gold_actions if a.requestor == "assistant" and tools[a.name].kind == "read")
    function = {"name": action.name, "arguments": json.dumps(action.arguments)}
    call = {"id": "bench", "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def step_overhead_ms(steps: int = 200) -> dict[str, float]:
    """Medians in milliseconds: ``{"bare": ..., "adapter": ..., "overhead": adapter - bare}``."""
    import verifiers.v1 as vf

    from integrations.openai_stub import ScriptedOpenAI

    if importlib.util.find_spec("mua_gym_verifiers") is None:  # the top-level module vf imports the taskset id as
        folder = tempfile.mkdtemp()
        Path(folder, "mua_gym_verifiers.py").write_text("from mua_gym.integrations.verifiers import *  # noqa\n"
                                                        "from mua_gym.integrations.verifiers import __all__  # noqa\n")
        sys.path.insert(0, folder)
    task = AsyncMuaEnv("retail", split="test").tasks()[0]
    call = _read_call(task)
    fork = multiprocessing.get_context("fork")
    urls, results = fork.Queue(), fork.Queue()

    def serve() -> None:
        arrivals: list[float] = []

        def reply(body: dict[str, Any]) -> dict[str, Any]:
            arrivals.append(time.perf_counter())  # CLOCK_MONOTONIC: comparable across processes
            if sum(m.get("role") == "assistant" for m in body["messages"]) < steps:
                return {"tool_calls": call["tool_calls"]}
            results.put(list(arrivals))
            return {"content": "Goodbye."}

        with ScriptedOpenAI(reply) as server:
            urls.put(server.url)
            time.sleep(3600)  # until the parent terminates it

    model = fork.Process(target=serve, daemon=True)
    model.start()
    url = urls.get(timeout=60)

    config = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "split": "test", "max_turns": steps + 10}})
    env = vf.load_environment(config)
    vf_task = next(iter(env.taskset))

    async def through_verifiers() -> None:
        ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=url))
        async with env.serving():
            episode = await env.run_episode(vf_task, ctx)
        assert episode.ok and episode.traces[0].metrics["tool_calls"] == steps, episode.errors

    async def bare() -> list[float]:
        mua = AsyncMuaEnv("retail", split="test", max_turns=steps + 10)
        await mua.reset(options={"task": task})
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            await mua.step(call)
            times.append(time.perf_counter() - t0)
        return times

    try:
        asyncio.run(through_verifiers())
        arrivals = results.get(timeout=60)
    finally:
        model.terminate()
    bare_times = asyncio.run(bare())
    intervals = [b - a for a, b in zip(arrivals[:steps], arrivals[1:steps + 1])]
    return with_overhead({"bare": statistics.median(bare_times) * 1e3, "adapter": statistics.median(intervals) * 1e3})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    figures = step_overhead_ms(parser.parse_args().steps)
    print(f"verifiers tool step, median: bare {figures['bare']:.3f} ms, through verifiers {figures['adapter']:.2f} ms, "
          f"overhead {figures['overhead']:.2f} ms")


if __name__ == "__main__":
    main()
