"""``ReplayUser``: replays the user side of a recorded trajectory, turn by turn, whatever the agent says."""

from __future__ import annotations

from typing import Any

from mua_gym.messages import UserMessage
from mua_gym.task import Task
from mua_gym.env.trajectory import Trajectory
from mua_gym.user_sims.base import STOP, UserReply, UserSimulator, UserSimulatorError, UserView

__all__ = ["ReplayUser"]


class ReplayUser(UserSimulator):
    """Plays back the user's messages (and, in dual-control domains, its own tool calls) from ``trajectory``.

    When the recording runs out it says ``###STOP###``.
    """

    name = "replay"
    immediate = True

    def __init__(self, trajectory: Trajectory | str) -> None:
        self.trajectory = trajectory if isinstance(trajectory, Trajectory) else Trajectory.from_json_line(trajectory)
        self.replies = [
            UserReply(content=e.message.content if e.visible_to_agent else (e.message.content or ""),
                      tool_calls=[] if e.visible_to_agent else list(e.message.tool_calls or []))
            for e in self.trajectory.entries if isinstance(e.message, UserMessage)
        ]
        self._next = 0

    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        if task.id != self.trajectory.task_id:
            raise UserSimulatorError(f"the recording is of task {self.trajectory.task_id}, not {task.id}")
        if not self.replies:
            raise UserSimulatorError("the recording has no user turns")
        self._next = 1
        return self.replies[0]

    async def respond(self, view: UserView) -> UserReply:
        if self._next >= len(self.replies):
            return UserReply(content=STOP)
        reply = self.replies[self._next]
        self._next += 1
        return reply
