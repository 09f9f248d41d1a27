"""A simulated user that breaks on cue, to make void episodes offline (see ``AsyncMuaEnv.void``)."""

from __future__ import annotations

from typing import Any

from mua_gym.user_sims import UserReply, UserSimulator, make_user

#: What a faulty user says: an order id and an email its scenario never held (an ``invented_fact``).
INVENTED = "My order is O7777 and my email is zed@nowhere.org."


class Breaks(UserSimulator):
    """The rule-driven ``scenario`` user, except that in an episode of ``task_id`` (None: any task) its ``at``-th
    reply (0: the opening) and every later one break: ``how="fault"`` invents facts (void under
    ``on_user_fault="void"``: ``user_fault``), ``how="error"`` raises (a failing simulator: ``user_error``).
    One instance per env: it counts the replies of the episode its env plays."""

    name = "breaks"

    def __init__(self, how: str, at: int = 1, task_id: str | None = None) -> None:
        if how not in ("fault", "error"):
            raise ValueError("how is 'fault' or 'error'")
        self.inner, self.how, self.at, self.task_id = make_user("scenario"), how, at, task_id
        self.replies, self.breaking, self.broke = 0, False, 0

    async def start(self, task: Any, *, seed: int | None = None, tools: Any = None) -> UserReply:
        self.replies, self.breaking = 0, self.task_id is None or task.id == self.task_id
        if self.breaking and self.at == 0:
            return self._broken()
        return await self.inner.start(task, seed=seed, tools=tools)

    async def respond(self, view: Any) -> UserReply:
        self.replies += 1
        if self.breaking and self.replies >= self.at:
            return self._broken()
        return await self.inner.respond(view)

    def _broken(self) -> UserReply:
        self.broke += 1
        if self.how == "error":
            raise RuntimeError("the user model is down")
        return UserReply(content=INVENTED)
