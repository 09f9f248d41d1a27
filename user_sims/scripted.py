"""``ScriptedUser``: plays a task's scripted user turns in order. Deterministic, needs no model."""

from __future__ import annotations

from typing import Any

from mua_gym.task import Task
from mua_gym.user_sims.base import STOP, UserReply, UserSimulator, UserSimulatorError, UserView

__all__ = ["ScriptedUser"]


class ScriptedUser(UserSimulator):
    """Opens with ``task.script[0]`` and answers each agent message with the next line.

    When the script runs out it says ``###STOP###``. The replies do not depend on what the agent says,
    which makes episodes reproducible bit for bit; use it for tests, benchmarks and oracle runs.
    """

    name = "scripted"
    immediate = True
    acts = False

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._next = 0

    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        if not task.script:
            raise UserSimulatorError(f"task {task.id} has no scripted user turns")
        self._lines = list(task.script)
        self._next = 1
        return UserReply(content=self._lines[0])

    async def respond(self, view: UserView) -> UserReply:
        if self._next >= len(self._lines):
            return UserReply(content=STOP)
        line = self._lines[self._next]
        self._next += 1
        return UserReply(content=line)
