"""``python tests/llama_cpp_server.py ARGS``: ``python -m llama_cpp.server ARGS`` with ggml's extra buffer types off.

llama.cpp repacks weights into extra buffer types for the CPU it finds; on a CPU with AMX (Xeon Sapphire Rapids
and later) that path dies on the first completion (SIGILL where the kernel does not grant AMX, a crash in
``ggml_backend_amx_mul_mat`` elsewhere). With extra buffer types off the same build serves on every CPU, so the
tests start their server this way whatever the machine has. llama-cpp-python's server has no option for it: its
model parameters come from ``llama_model_default_params``, which this wraps before the server starts.
"""

from __future__ import annotations

import runpy
from typing import Any


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
