"""Reference agents: an oracle that replays a task's gold actions, a random baseline, and any LLM.

Every agent has ``reset(info)`` (the info that ``env.reset`` returned) and ``act(observation) -> action``
(the observation that ``reset`` or ``step`` returned; the action goes to ``env.step``).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from mua_gym.task import Task

__all__ = ["Agent", "LiteLLMAgent", "OracleAgent", "RandomAgent", "make_agent"]


class Agent:
    def reset(self, info: dict[str, Any]) -> None:
        """Called with ``env.reset``'s info at the start of each episode."""

    def act(self, observation: list[dict[str, Any]]) -> Any:
        raise NotImplementedError

    async def aact(self, observation: list[dict[str, Any]]) -> Any:
        return self.act(observation)


class OracleAgent(Agent):
    """Replays the task's gold actions, one call per turn, and talks like a polite agent.

    Before the first state-changing call it states the plan and asks for confirmation (as the policies
    require); at the end it tells the user what it found, saying every string the task requires the agent
    to communicate. On a correct task it scores 1.0.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        self.reset({})

    def reset(self, info: dict[str, Any]) -> None:
        from mua_gym.registry import get_domain

        tools = get_domain(self.task.domain).tools
        # The user's own gold actions (dual control) become instructions to the user, in order.
        self._pending = [a for a in self.task.gold_actions if a.requestor in ("assistant", "user")]
        self._writes = [a for a in self._pending
                        if a.requestor == "assistant" and a.name in tools and tools[a.name].kind == "write"]
        self._confirmed = not self._writes
        self._step = 0
        self._summarised = False

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        if self._pending and not self._confirmed and self._pending[0] is self._writes[0]:
            self._confirmed = True
            plan = "; ".join(f"{a.name} with {json.dumps(a.arguments)}" for a in self._writes)
            return {"role": "assistant", "content": f"Here is what I will do: {plan}. Shall I proceed?"}
        if self._pending and self._pending[0].requestor == "user":
            action = self._pending.pop(0)
            return {"role": "assistant", "content": f"Please do this on your phone: {action.name}"
                                                    f"({json.dumps(action.arguments)})."}
        if self._pending:
            action = self._pending.pop(0)
            self._step += 1
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"oracle_{self._step}", "type": "function",
                "function": {"name": action.name, "arguments": json.dumps(action.arguments)},
            }]}
        if not self._summarised:
            self._summarised = True
            facts = self.task.evaluation.communicate_info
            told = f" Here is what you asked for: {', '.join(facts)}." if facts else ""
            return {"role": "assistant", "content": f"Thank you for your patience; that is all done.{told}"}
        return {"role": "assistant", "content": "Is there anything else I can help you with today?"}


class RandomAgent(Agent):
    """A baseline: random tool calls with arguments of the right JSON types, or random short texts."""

    WORDS = ["hello", "order", "cancel", "please", "id", "confirm", "yes", "help", "email", "refund"]

    def __init__(self, seed: int | None = None, tool_probability: float = 0.5) -> None:
        self.rng = np.random.default_rng(seed)
        self.tool_probability = tool_probability
        self.tools: list[dict[str, Any]] = []

    def reset(self, info: dict[str, Any]) -> None:
        self.tools = list(info.get("tools", []))

    def _value(self, schema: dict[str, Any]) -> Any:
        kind = schema.get("type")
        if kind == "integer":
            return int(self.rng.integers(0, 10))
        if kind == "number":
            return float(np.round(self.rng.uniform(0, 100), 2))
        if kind == "boolean":
            return bool(self.rng.integers(2))
        if kind == "array":
            return [self._value(schema.get("items", {})) for _ in range(int(self.rng.integers(1, 3)))]
        if kind == "object":
            return {k: self._value(v) for k, v in schema.get("properties", {}).items()}
        return str(self.rng.choice(self.WORDS))

    def act(self, observation: list[dict[str, Any]]) -> Any:
        if self.tools and self.rng.random() < self.tool_probability:
            fn = self.tools[int(self.rng.integers(len(self.tools)))]["function"]
            props = fn.get("parameters", {}).get("properties", {})
            args = {k: self._value(v) for k, v in props.items()}
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": "random", "type": "function", "function": {"name": fn["name"], "arguments": json.dumps(args)}}]}
        words = self.rng.choice(self.WORDS, size=int(self.rng.integers(1, 8)))
        return " ".join(str(w) for w in words)


class LiteLLMAgent(Agent):
    """Any chat model that litellm reaches (``model`` plus litellm keywords such as ``api_base``).

    It keeps the conversation, offers the env's tools, and returns the model's message as the action.
    """

    def __init__(self, model: str, **litellm_kwargs: Any) -> None:
        self.model = model
        self.kwargs = litellm_kwargs
        self.tools: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}

    def reset(self, info: dict[str, Any]) -> None:
        self.tools = list(info.get("tools", []))
        self.messages = []
        self.usage = {}

    def _request(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        self.messages.extend(observation)
        request = {"model": self.model, "messages": self.messages, **self.kwargs}
        if self.tools:
            request["tools"] = self.tools
        return request

    def _record(self, response: Any) -> dict[str, Any]:
        message = response.choices[0].message
        action: dict[str, Any] = {"role": "assistant", "content": message.content}
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            action["tool_calls"] = [{"id": c.id, "type": "function",
                                     "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"}}
                                    for c in calls]
        usage = getattr(response, "usage", None)
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            self.usage[key] = self.usage.get(key, 0) + int(getattr(usage, key, 0) or 0)
        self.messages.append(action)
        return action

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        litellm = _litellm()
        return self._record(litellm.completion(**self._request(observation)))

    async def aact(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        litellm = _litellm()
        return self._record(await litellm.acompletion(**self._request(observation)))


def _litellm() -> Any:
    # litellm fetches a cost map over the network at import unless told not to; it costs seconds to import,
    # so it is imported only when a model is called.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


def make_agent(spec: str, task: Task | None = None, seed: int | None = None, **kwargs: Any) -> Agent:
    """``"oracle"`` (needs the task), ``"random"``, or ``"litellm:<model>"``."""
    if spec == "oracle":
        if task is None:
            raise ValueError("the oracle agent needs the task")
        return OracleAgent(task)
    if spec == "random":
        return RandomAgent(seed)
    if spec.startswith("litellm:"):
        return LiteLLMAgent(spec.split(":", 1)[1], **kwargs)
    raise ValueError(f"unknown agent {spec!r}: use oracle, random or litellm:<model>")
