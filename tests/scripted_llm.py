"""An offline, deterministic chat model for tests: litellm provider ``scripted/<script name>``.

A script is a list of steps; each is a reply text, a dict ``{"tool_calls": [(name, args), ...]}``, an
exception instance to raise, or a callable ``messages -> step``. ``DELAY[name]`` makes every call of that
script sleep first (asyncio.sleep, so concurrent episodes overlap). Every reply reports 10 prompt and 5 completion
tokens; :func:`price` gives a script a per-token price, so litellm costs its calls too.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402
from litellm.types.utils import ChatCompletionMessageToolCall, Function, ModelResponse  # noqa: E402

SCRIPTS: dict[str, list[Any]] = {}
POSITION: dict[str, int] = {}
DELAY: dict[str, float] = {}
SEEN: dict[str, list[list[dict[str, Any]]]] = {}


def script(name: str, steps: list[Any], delay: float = 0.0) -> str:
    SCRIPTS[name], POSITION[name], DELAY[name], SEEN[name] = list(steps), 0, delay, []
    return f"scripted/{name}"


def price(name: str, prompt: float = 1e-6, completion: float = 2e-6) -> float:
    """Prices the script's model per token in litellm's cost map; returns what one call (10 + 5 tokens) costs."""
    litellm.register_model({f"scripted/{name}": {"input_cost_per_token": prompt, "output_cost_per_token": completion,
                                                 "litellm_provider": "scripted", "mode": "chat"}})
    return 10 * prompt + 5 * completion


def _step(name: str, messages: list[dict[str, Any]]) -> ModelResponse:
    SEEN[name].append(messages)
    steps = SCRIPTS[name]
    step = steps[min(POSITION[name], len(steps) - 1)]
    POSITION[name] += 1
    if callable(step):
        step = step(messages)
    if isinstance(step, Exception):
        raise step
    response = ModelResponse()
    message = response.choices[0].message
    if isinstance(step, dict):
        message.content = step.get("content")
        message.tool_calls = [ChatCompletionMessageToolCall(id=f"tc{i}", type="function",
                                                            function=Function(name=n, arguments=json.dumps(a)))
                              for i, (n, a) in enumerate(step["tool_calls"])]
        response.choices[0].finish_reason = "tool_calls"
    else:
        message.content = step
    response.usage = litellm.Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    return response


class ScriptedLLM(CustomLLM):
    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        name = model.split("/", 1)[-1]
        if DELAY.get(name):
            time.sleep(DELAY[name])
        return _step(name, messages)

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        name = model.split("/", 1)[-1]
        if DELAY.get(name):
            await asyncio.sleep(DELAY[name])
        return _step(name, messages)


HANDLER = ScriptedLLM()
if not any(p.get("provider") == "scripted" for p in litellm.custom_provider_map):
    litellm.custom_provider_map = [*litellm.custom_provider_map, {"provider": "scripted", "custom_handler": HANDLER}]
