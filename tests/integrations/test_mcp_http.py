"""MCP over Streamable HTTP, with the SDK's own clients against a ``mua-gym serve --protocol mcp`` process: episodes
are started, read and deleted on the control plane, played at their URL by handshake and 2026-07-28 clients alike,
held apart from one another, bounded in number, expired when idle, and closed to anyone without the token."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio
import pytest

import mua_gym

mcp = pytest.importorskip("mcp")
import httpx2  # noqa: E402  (an mcp dependency)
from mcp import Client, ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from integrations.mcp_play import ENDED, oracle, oracle_actions, plain  # noqa: E402

KINDS = ("handshake", "2026-07-28")
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-0123456789abcdef"


class Served:
    """A server process and the control plane's base URL; ``headers`` bear its token when it has one."""

    def __init__(self, process: subprocess.Popen, base: str, headers: dict[str, str]) -> None:
        self.process, self.base, self.headers = process, base, headers
        self.client = self.http()

    def http(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.base, headers=self.headers, timeout=60)

    def start(self, **body: Any) -> dict[str, Any]:
        answer = self.client.post("/episodes", json=body)
        assert answer.status_code == 201, answer.text
        return answer.json()

    def state(self, episode_id: str) -> dict[str, Any]:
        answer = self.client.get(f"/episodes/{episode_id}")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def held(self) -> int:
        return self.client.get("/episodes").json()["held"]

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def _serve(env_id: str, *extra: str, token: str | None = None, host: str = "127.0.0.1") -> Iterator[Served]:
    """A ``mua-gym serve --protocol mcp`` process on a free port, ready; stopped on exit."""
    port = _free_port()
    env = {**os.environ, "MUA_GYM_SERVE_TOKEN": token} if token else \
        {k: v for k, v in os.environ.items() if k != "MUA_GYM_SERVE_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "mua_gym.cli", "serve", "--protocol", "mcp", "--env", env_id, "--split", "test",
         "--user", "scenario", "--host", host, "--port", str(port), *extra], cwd=str(ROOT), env=env,
        stderr=subprocess.PIPE, text=True)
    served = Served(process, f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"} if token else {})
    try:
        while True:  # up once the control plane answers (the server generates its tasks first)
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {process.stderr.read()}")
            with contextlib.suppress(httpx2.TransportError), served.http() as http:
                if http.get("/episodes").status_code in (200, 401):
                    break
            time.sleep(0.2)
        yield served
    finally:
        served.client.close()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def retail() -> Iterator[Served]:
    with _serve("mua/Retail-v0", "--max-episodes", "64") as served:
        yield served


@contextlib.asynccontextmanager
async def _connect(kind: str, url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """A client of ``kind`` (:data:`KINDS`) on the MCP endpoint ``url``."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as http:
        if kind == "handshake":
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        else:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                assert client.protocol_version == "2026-07-28"
                yield client


async def _play(kind: str, url: str, task: mua_gym.Task, skip: frozenset[str] = frozenset(),
                headers: dict[str, str] | None = None) -> list[Any]:
    async with _connect(kind, url, headers) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        env_id = mua_gym.env_id(task.domain)
        assert listed == {t["function"]["name"] for t in mua_gym.make_async(env_id).tool_schemas} | \
            {"send_message_to_user"}
        return await oracle(session, task, skip)


def _writes(task: mua_gym.Task) -> frozenset[str]:
    return mua_gym.get_domain(task.domain).tools.names_of("write")


@pytest.mark.parametrize("domain", ["retail", "airline", "telecom", "mock"])
def test_the_oracle_pays_one_and_a_play_without_writes_nothing_for_both_client_kinds(domain):
    task = plain(domain)
    with _serve(mua_gym.env_id(domain)) as served:
        for kind in KINDS:
            started = served.start(task_id=task.id)
            assert started["task_id"] == task.id and started["opening"]
            answers = anyio.run(_play, kind, started["mcp_url"], task)
            assert not any(a.is_error for a in answers) and ENDED in answers[-1].content[0].text
            state = served.state(started["episode_id"])
            assert state["done"] and state["reward"] == 1.0 and state["termination_reason"] == "user_stop"
            assert state["trajectory"]["task_id"] == task.id and state["reward_info"]["reward"] == 1.0

            wrong = served.start(task_id=task.id)
            anyio.run(_play, kind, wrong["mcp_url"], task, _writes(task))
            assert served.state(wrong["episode_id"])["reward"] == 0.0


def _hash_after(task: mua_gym.Task, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """The world's digest after ``calls`` in an env of this process: what an episode playing them should hold."""
    env = mua_gym.make(mua_gym.env_id(task.domain), split="test", user="scenario")
    env.reset(options={"task_id": task.id})
    for name, arguments in calls:
        action = arguments["message"] if name == "send_message_to_user" else {"name": name, "arguments": arguments}
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    digest = env.unwrapped.world.state_hash()
    env.close()
    return digest


def test_sixteen_concurrent_episodes_keep_to_their_own_worlds(retail):
    """Sixteen episodes on eight tasks, played at once by both client kinds, half without their writes: each world
    ends where the same play in a lone env of this process ends, and each reward is its own."""
    tasks = [plain("retail", skip=i) for i in range(8)]
    plays = [(tasks[i % 8], KINDS[i % 2], frozenset() if i < 8 else _writes(tasks[i % 8])) for i in range(16)]
    started = [retail.start(task_id=task.id) for task, _, _ in plays]

    async def all_at_once() -> None:
        async with anyio.create_task_group() as group:
            for (task, kind, skip), episode in zip(plays, started):
                group.start_soon(_play, kind, episode["mcp_url"], task, skip)

    anyio.run(all_at_once)
    for (task, _, skip), episode in zip(plays, started):
        state = retail.state(episode["episode_id"])
        assert state["world_hash"] == _hash_after(task, oracle_actions(task, skip)), task.id
        assert state["reward"] == (1.0 if not skip else 0.0), task.id


def test_an_mcp_1x_client_plays_an_episode_too(retail):
    """The MCP SDK 1.x client (handshake only; from OpenEnv's venv, which pins mcp < 2) plays the oracle to 1.0:
    the server mints no session id, since the handle in the URL is the episode."""
    import json

    from sidevenv import side_venv

    venv = side_venv("openenv", "openenv,test")
    task = plain("retail")
    started = retail.start(task_id=task.id)
    run = subprocess.run([str(venv), str(Path(__file__).parent / "mcp_v1_client.py"), started["mcp_url"],
                          json.dumps(oracle_actions(task))], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["version"] in ("2025-06-18", "2025-11-25") and out["session_id"] is None
    assert "send_message_to_user" in out["tools"] and not any(out["errors"])
    assert retail.state(started["episode_id"])["reward"] == 1.0


def test_bad_calls_and_an_unknown_episode_are_errors_that_change_no_world(retail):
    task = plain("retail")
    started = retail.start(task_id=task.id)
    other = retail.start(task_id=plain("retail", skip=1).id)
    before, other_before = retail.state(started["episode_id"]), retail.state(other["episode_id"])
    write = next(a for a in task.gold_actions if a.name in _writes(task))
    bad = [("no_such_tool", {}), (write.name, {**write.arguments, "order_id": 12}), (write.name, {}),
           ("send_message_to_user", {"message": ["not", "text"]}), ("get_order_details", {"order_id": "#W0000000"})]

    async def call_badly() -> list[Any]:
        async with _connect("2026-07-28", started["mcp_url"]) as session:
            return [await session.call_tool(name, arguments) for name, arguments in bad]

    answers = anyio.run(call_badly)
    assert [a.is_error for a in answers] == [True] * len(bad)
    assert "unknown tool" in answers[0].content[0].text and "order_id" in answers[1].content[0].text
    after = retail.state(started["episode_id"])
    assert after["world_hash"] == before["world_hash"] and not after["done"]

    unknown = started["mcp_url"].replace(started["episode_id"], "A" * 32)
    with retail.http() as http:
        assert http.post(unknown, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 404
        assert http.get("/episodes/" + "A" * 32).status_code == 404
        assert http.delete("/episodes/" + "A" * 32).status_code == 404
        assert http.post("/episodes", json={"task_id": "no-such-task"}).status_code == 400
        assert http.post("/episodes", json={"seed": -1}).status_code == 400
        assert http.post("/episodes", json={"task": task.id}).status_code == 400
        assert http.post("/episodes", content=b"{not json").status_code == 400
        assert http.post("/episodes", content=b"x" * (2 << 20)).status_code == 413
    assert retail.state(other["episode_id"])["world_hash"] == other_before["world_hash"]


def test_delete_scores_a_running_episode_and_forgets_it(retail):
    task = plain("retail")
    started = retail.start(task_id=task.id)
    assert len(started["episode_id"]) >= 32  # 192 random bits, URL-safe
    with retail.http() as http:
        gone = http.delete(f"/episodes/{started['episode_id']}")
        assert gone.status_code == 200
        assert gone.json()["done"] and gone.json()["reward"] == 0.0
        assert gone.json()["termination_reason"] == "stopped_by_client"
        assert http.get(f"/episodes/{started['episode_id']}").status_code == 404

    async def call_gone() -> None:
        with pytest.raises(Exception):
            async with _connect("handshake", started["mcp_url"]) as session:
                await session.list_tools()

    anyio.run(call_gone)


def test_episodes_past_the_limit_are_refused_until_one_is_deleted():
    with _serve("mua/Mock-v0", "--max-episodes", "3") as served:
        held = [served.start(seed=i) for i in range(3)]
        with served.http() as http:
            refused = http.post("/episodes", json={"seed": 4})
            assert refused.status_code == 429 and "limit" in refused.json()["error"]
            assert http.delete(f"/episodes/{held[0]['episode_id']}").status_code == 200
            assert http.post("/episodes", json={"seed": 4}).status_code == 201


def test_abandoned_episodes_expire_and_leave_memory_flat():
    """Two rounds of 200 episodes started and abandoned: each round expires to none held, and the second round
    needs no more memory than the first (held episodes take over a MiB each)."""
    # private worlds (not the server's shared-file default): a leaked episode then keeps over a MiB, plain to see
    with _serve("mua/Retail-v0", "--max-episodes", "256", "--idle-timeout", "5", "--env-arg", "shared_base=false") \
            as served:
        assert served.client.delete(f"/episodes/{served.start(seed=0)['episode_id']}").status_code == 200
        base = served.rss_mib()
        peaks = []
        for _ in range(2):
            for seed in range(200):
                served.start(seed=seed)
            peaks.append(served.rss_mib())
            while served.held():
                time.sleep(0.2)
        held_cost = peaks[0] - base
        assert held_cost > 50, f"200 held episodes should take memory; took {held_cost:.0f} MiB"
        assert peaks[1] - peaks[0] < held_cost / 4, f"rss {base:.0f} -> {peaks[0]:.0f} -> {peaks[1]:.0f} MiB"


def test_a_remote_bind_needs_the_token_on_every_request():
    task = plain("mock")
    with _serve("mua/Mock-v0", "--allow-remote", token=TOKEN, host="0.0.0.0") as served:
        with httpx2.Client(base_url=served.base, timeout=30) as bare:
            assert bare.post("/episodes", json={}).status_code == 401
            assert bare.get("/episodes").status_code == 401
            wrong = {"Authorization": "Bearer " + "x" * len(TOKEN)}
            assert bare.get("/episodes", headers=wrong).status_code == 401
        started = served.start(task_id=task.id)
        with httpx2.Client(timeout=30) as bare:
            assert bare.post(started["mcp_url"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                             ).status_code == 401
        anyio.run(_play, "handshake", started["mcp_url"], task, frozenset(), served.headers)
        assert served.state(started["episode_id"])["reward"] == 1.0
    assert TOKEN not in served.process.stderr.read()


def test_a_static_action_perturbation_is_the_tool_list_of_every_episode():
    env = mua_gym.make_async("mua/Mock-v0", perturb="distractor_tools:static=0")
    expected = {t["function"]["name"] for t in env.static_tools()} | {"send_message_to_user"}
    assert expected - {t["function"]["name"] for t in env.tool_schemas}  # the variant adds distractors

    async def listing(url: str) -> set[str]:
        async with _connect("2026-07-28", url) as session:
            return {t.name for t in (await session.list_tools()).tools}

    with _serve("mua/Mock-v0", "--env-arg", "perturb=distractor_tools:static=0") as served:
        for seed in (1, 2):
            assert anyio.run(listing, served.start(seed=seed)["mcp_url"]) == expected


def test_a_loopback_server_refuses_a_foreign_host_or_origin(retail):
    with retail.http() as http:
        assert http.get("/episodes", headers={"Host": "attacker.example:80"}).status_code == 421
        assert http.post("/episodes", content=b"{}", headers={"Origin": "https://attacker.example",
                                                              "Content-Type": "text/plain"}).status_code == 403
        assert http.get("/episodes", headers={"Origin": "http://localhost:3000"}).status_code == 200
        assert http.get("/episodes").status_code == 200
        started = retail.start(seed=3)
        rebound = {"Host": "attacker.example:80"}
        assert http.post(started["mcp_url"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers=rebound).status_code == 421  # the MCP route too


def test_the_command_refuses_a_remote_bind_without_flag_or_token(capsys, tmp_path, monkeypatch):
    from mua_gym.cli import main

    monkeypatch.delenv("MUA_GYM_SERVE_TOKEN", raising=False)
    assert main(["serve", "--protocol", "mcp", "--env", "mua/Mock-v0", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert main(["serve", "--protocol", "mcp", "--env", "mua/Mock-v0", "--host", "0.0.0.0", "--allow-remote"]) == 2
    assert "needs a bearer token" in capsys.readouterr().err
    short = tmp_path / "token"
    short.write_text("abc\n")
    assert main(["serve", "--protocol", "mcp", "--env", "mua/Mock-v0", "--token-file", str(short)]) == 2
    assert "at least 16 characters" in capsys.readouterr().err
    assert main(["serve", "--protocol", "mcp", "--env", "mua/Retail-v0",
                 "--env-arg", "perturb=distractor_tools"]) == 2
    assert "static" in capsys.readouterr().err


def test_the_readme_client_plays_its_task_on_the_readme_server(tmp_path):
    """The README's serve command (on a free port) and its Python client, as written: the client prints 1.0."""
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Any MCP client plays an episode"):readme.index("## Train")]
    command = re.search(r"```bash\n(mua-gym serve --protocol mcp [^\n]*)\n```", section).group(1).split()
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert command[command.index("--port") + 1] == "8000" and '"http://127.0.0.1:8000"' in code
    port = _free_port()
    command[command.index("--port") + 1] = str(port)
    import shutil

    script = shutil.which("mua-gym", path=str(Path(sys.executable).parent)) or shutil.which("mua-gym")
    assert script, f"mua-gym is not installed beside {sys.executable}"
    process = subprocess.Popen([script, *command[1:]], stderr=subprocess.PIPE, text=True)
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            while True:
                assert process.poll() is None, process.stderr.read()
                with contextlib.suppress(httpx2.TransportError):
                    if http.get("/episodes").status_code == 200:
                        break
                time.sleep(0.2)
        client = tmp_path / "client.py"
        client.write_text(code.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
        run = subprocess.run([sys.executable, str(client)], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stdout.strip().splitlines()[-1] == "reward: 1.0"
    finally:
        process.terminate()
        process.wait(timeout=30)
