"""An episode's messages in order, as the env records them.

Each entry is a message, whether it is the agent's own (trainable) and whether the agent saw it. A step that
only calls tools records plain parts (the parsed action, each tool's answer), and their pydantic messages are
built the first time anyone reads the record: most steps of a rollout are never read before the episode ends.
"""

from __future__ import annotations

from typing import Any, Iterator, Union

from pydantic import BaseModel

from mua_gym.env.parsing import ParsedAction
from mua_gym.messages import ToolMessage

__all__ = ["ToolAnswer", "Transcript"]


class ToolAnswer(tuple):
    """A tool's answer to one call, until read: ``(tool_call_id, content, name, error, requestor)``."""

    __slots__ = ()

    def message(self) -> ToolMessage:
        call_id, content, name, error, requestor = self
        return ToolMessage(tool_call_id=call_id, content=content, name=name, error=error, requestor=requestor)


Recorded = Union[BaseModel, ParsedAction, ToolAnswer]


class Transcript:
    """The record of one episode: append as it happens, read as pydantic messages."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        #: [what was recorded, trainable, visible to the agent]; the first is replaced by its message once built.
        self._entries: list[list[Any]] = []

    def add(self, item: Recorded, trainable: bool = False, visible: bool = True) -> None:
        self._entries.append([item, trainable, visible])

    def __len__(self) -> int:
        return len(self._entries)

    def message(self, index: int) -> BaseModel:
        """The message at ``index``, built (once) where it was recorded as parts."""
        entry = self._entries[index]
        item = entry[0]
        if isinstance(item, (ParsedAction, ToolAnswer)):
            item = entry[0] = item.message()
        return item

    def messages(self) -> list[Any]:
        """Every message, hidden ones included."""
        return [self.message(i) for i in range(len(self._entries))]

    def entries(self) -> Iterator[tuple[Any, bool, bool]]:
        """``(message, trainable, visible_to_agent)`` for every message."""
        for i, (_, trainable, visible) in enumerate(self._entries):
            yield self.message(i), trainable, visible
