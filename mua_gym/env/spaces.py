"""Gymnasium spaces for chat: observations are lists of message dicts; actions are text or messages.

``gymnasium.spaces.Text`` cannot hold free text (its default charset has no spaces or punctuation), so
these are custom spaces with ``contains``, ``sample`` and ``__eq__``, as Gymnasium asks of them.
"""

from __future__ import annotations

import json
import string
from typing import Any, Sequence

import numpy as np
from gymnasium.spaces import Space

__all__ = ["ActionSpace", "MessagesSpace"]

_ROLES = {"system", "user", "assistant", "tool"}
_CHARS = string.ascii_letters + string.digits + string.punctuation + " \n"


def _random_text(rng: np.random.Generator, max_length: int) -> str:
    n = int(rng.integers(0, max_length + 1))
    return "".join(_CHARS[i] for i in rng.integers(0, len(_CHARS), size=n))


class MessagesSpace(Space[list]):
    """A list of OpenAI chat message dicts (``role`` plus ``content``; tool messages name their call)."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        if not isinstance(x, list):
            return False
        for m in x:
            if not isinstance(m, dict) or m.get("role") not in _ROLES:
                return False
            content = m.get("content")
            if content is not None and not isinstance(content, str):
                return False
            if m["role"] == "tool" and not isinstance(m.get("tool_call_id"), str):
                return False
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> list:
        return [{"role": "user", "content": _random_text(self.np_random, 64)}]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessagesSpace)

    def __repr__(self) -> str:
        return "MessagesSpace()"

    def to_jsonable(self, sample_n: Sequence[list]) -> list:
        return [list(s) for s in sample_n]

    def from_jsonable(self, sample_n: list) -> list:
        return [list(s) for s in sample_n]


class ActionSpace(Space[Any]):
    """What an agent may send: a raw string, an assistant message dict, or tool-call dicts.

    ``sample()`` draws junk on purpose (random text, tool calls with random names and arguments,
    sometimes broken JSON), which is what a robustness check should throw at an environment.
    """

    def __init__(self, tool_names: Sequence[str] = (), seed: int | np.random.Generator | None = None,
                 max_length: int = 200) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)
        self.tool_names = list(tool_names)
        self.max_length = max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return True
        if isinstance(x, dict):
            if x.get("role") == "assistant":
                return x.get("content") is None or isinstance(x.get("content"), (str, list))
            return "function" in x or "name" in x
        if isinstance(x, list):
            return bool(x) and all(isinstance(c, dict) and ("function" in c or "name" in c) for c in x)
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        rng = self.np_random
        kind = int(rng.integers(4))
        if kind == 0:
            return _random_text(rng, self.max_length)
        names = self.tool_names + ["no_such_tool"]
        name = names[int(rng.integers(len(names)))]
        args = {_random_text(rng, 8) or "x": _random_text(rng, 12) for _ in range(int(rng.integers(3)))}
        if kind == 1:
            return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"
        if kind == 2:
            raw = json.dumps(args) if rng.integers(2) else _random_text(rng, 20)
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"id": "c0", "type": "function", "function": {"name": name, "arguments": raw}}]}
        return {"role": "assistant", "content": _random_text(rng, self.max_length)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSpace) and other.tool_names == self.tool_names

    def __repr__(self) -> str:
        return f"ActionSpace(tools={len(self.tool_names)})"
