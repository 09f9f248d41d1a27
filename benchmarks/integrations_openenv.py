"""What the OpenEnv adapter adds to a step: medians of the same tool call, bare env, adapter and WebSocket.

    <openenv venv>/bin/python benchmarks/integrations_openenv.py [--repeat 2000] [--no-server]

Needs openenv (``pip install "mua_gym[openenv]"``; tests/sidevenv.py builds such a venv). All sides send the
same raw Hermes text (a read call, so the world never changes): ``bare`` is ``MuaEnv.step``, ``adapter`` is
``MuaEnvironment.step`` in process (the action and observation models), and ``websocket`` is a step through
OpenEnv's sync client against ``mua-gym serve`` on loopback (server and client on one machine).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mua_gym import MuaEnv  # noqa: E402
from overhead import interleaved_us, report  # noqa: E402

ACTION = '<tool_call>{"name": "get_order_details", "arguments": {"order_id": "#W8052947"}}</tool_call>'
TASK = "retail-train-0-00003"
WORLD = {"count": 20}


def step_overhead_us(repeat: int = 2000) -> dict[str, float]:
    """In-process medians in microseconds: ``{"bare", "adapter", "overhead"}`` (adapter - bare)."""
    from mua_gym.integrations.openenv import MuaAction, MuaEnvironment

    bare = MuaEnv("retail", max_turns=repeat + 1, world_params=WORLD)
    bare.reset(options={"task_id": TASK})
    adapter = MuaEnvironment("mua/Retail-v0", max_turns=repeat + 1, world_params=WORLD)
    adapter.reset(task_id=TASK)
    try:
        return interleaved_us(lambda: bare.step(ACTION), lambda: adapter.step(MuaAction(text=ACTION)), repeat)
    finally:
        bare.close()
        adapter.close()


def websocket_step_us(repeat: int = 500) -> float:
    """The median of one step through OpenEnv's WebSocket client against a served env, in microseconds."""
    from mua_gym.integrations.openenv import MuaEnvClient

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "mua_gym.cli", "serve", "--env", "mua/Retail-v0", "--port",
                               str(port), "--env-arg", f'world_params={{"count": {WORLD["count"]}}}',
                               "--env-arg", f"max_turns={repeat + 1}"], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        times = []
        with MuaEnvClient(base_url=url).sync() as client:
            client.reset(task_id=TASK)
            for _ in range(repeat):
                t0 = time.perf_counter()
                client.step(ACTION)
                times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e6
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--no-server", dest="server", action="store_false", help="skip the WebSocket figure")
    args = parser.parse_args()
    figures = step_overhead_us(args.repeat)
    line = report("OpenEnv", figures)
    if args.server:
        line += f"; over WebSocket {websocket_step_us(max(100, args.repeat // 4)):.1f} us"
    print(line)


if __name__ == "__main__":
    main()
