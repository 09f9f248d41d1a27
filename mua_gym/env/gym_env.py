"""``MuaEnv``: the synchronous Gymnasium facade over :class:`AsyncMuaEnv`.

It runs the async core on an event loop of its own. Where an event loop is already running in the
calling thread (Jupyter), it runs the core on a helper thread instead, so ``env.step`` still works
as a plain call in a notebook cell.
"""

from __future__ import annotations

import asyncio
import html
import threading
from typing import Any, Coroutine, Sequence, TypeVar

import gymnasium

from mua_gym.env import AsyncMuaEnv, PendingStep
from mua_gym.env.infos import ResetInfo, StepInfo
from mua_gym.env.options import check_env_options
from mua_gym.env.spaces import ActionSpace, MessagesSpace
from mua_gym.task import Task
from mua_gym.env.trajectory import Trajectory
from mua_gym.user_sims.base import run_immediate
from mua_gym.world import World

__all__ = ["MuaEnv"]

T = TypeVar("T")


class _Runner:
    """Runs coroutines to completion from synchronous code, inside or outside a running loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._thread is None:
                if self._loop is None or self._loop.is_closed():
                    self._loop = asyncio.new_event_loop()
                return self._loop.run_until_complete(coro)
        # A loop runs in this thread: switch, for good, to a loop on a helper thread (one loop per env,
        # so clients bound to a loop keep working).
        if self._thread is None:
            if self._loop is not None:
                self._loop.close()
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="mua-gym-env", daemon=True)
            self._thread.start()
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __del__(self) -> None:
        try:
            self.close(drain=False)
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    def close(self, drain: bool = True) -> None:
        """Stops and closes the loop; with ``drain``, first lets its leftover tasks finish. A finalizer passes
        ``drain=False``: running a loop from inside garbage collection can break whatever it interrupted."""
        if self._loop is None:
            return
        loop = self._loop
        if self._thread is not None:
            if drain:
                asyncio.run_coroutine_threadsafe(_drain(), loop).result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=5)
            self._thread = None
        elif drain and not loop.is_closed() and asyncio._get_running_loop() is None:
            loop.run_until_complete(_drain())
        if not loop.is_running() and not loop.is_closed():
            loop.close()
        self._loop = None


async def _drain() -> None:
    """Finishes what libraries left on the loop (litellm's logging worker), so nothing dies on a closed loop."""
    current = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not current]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


class MuaEnv(gymnasium.Env):
    """A Gymnasium env for one tool domain. Keyword arguments are those of :class:`AsyncMuaEnv`.

    The Gymnasium contract (``reset``, ``step``, ``render``, ``close``) plus what users read of an episode:
    ``task``, ``world``, ``domain``, ``policy``, ``done``, ``void``, ``tasks()``, ``messages()``,
    ``agent_messages()``, ``trajectory()`` and ``finish()``. The trainer hooks (a step split around its
    awaits, the tool lists some trainers want) are on ``.core``, the :class:`AsyncMuaEnv` this wraps.

    ``render_mode="ansi"``: ``render()`` returns the transcript so far as text.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, domain: Any = "mock", render_mode: str | None = None, **kwargs: Any) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.render_mode = render_mode
        self.core = AsyncMuaEnv(domain, **check_env_options(kwargs))
        self.observation_space = MessagesSpace()
        self.action_space = ActionSpace([t["function"]["name"] for t in self.core.tool_schemas])
        self._runner = _Runner()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[list[dict[str, Any]], ResetInfo]:
        super().reset(seed=seed)
        reset = self.core.reset(seed=seed, options=options)
        immediate = self.core.user.immediate and self.core.fault_reviewer is None
        return run_immediate(reset) if immediate else self._runner.run(reset)

    def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, bool, StepInfo]:
        if self.core.task is None:  # the env enforces the order itself: a wrapper would hide _repr_html_
            raise gymnasium.error.ResetNeeded("Cannot call env.step() before calling env.reset()")
        started = self.core.begin_step(action)
        if isinstance(started, PendingStep):
            rest = self.core.complete_step(started)
            if self.core.user.immediate and self.core.judge is None and self.core.fault_reviewer is None:
                return run_immediate(rest)
            return self._runner.run(rest)
        return started

    def finish(self, reason: str = "stopped_by_trainer", score: bool = True) -> float:
        """Ends a running episode where it stands and returns its reward (see :meth:`AsyncMuaEnv.finish`;
        ``score=False`` ends it truncated at 0.0)."""
        finishing = self.core.finish(reason, score=score)
        return run_immediate(finishing) if self.core.judge is None else self._runner.run(finishing)

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self.core.task is None:
            return ""
        return self.core.trajectory().render_text()

    def close(self) -> None:
        self._runner.run(self.core.aclose())
        self._runner.close()
        super().close()

    # -- what users and trainers reach through env.unwrapped ---------------------------------------
    @property
    def world(self) -> World | None:
        """The live world of the current episode."""
        return self.core.world

    @property
    def domain(self) -> Any:
        """The :class:`~mua_gym.Domain` this env plays."""
        return self.core.domain

    @property
    def task(self) -> Task | None:
        """The task of the current episode (None before the first reset)."""
        return self.core.task

    @property
    def policy(self) -> str:
        """The system message every episode opens with: the domain's policy for this env's world."""
        return self.core.policy

    @property
    def done(self) -> bool:
        """Whether the current episode is over (also before the first reset)."""
        return self.core.done

    @property
    def void(self) -> str | None:
        """Why the current episode is void (its user failed or broke its scenario), or None."""
        return self.core.void

    def messages(self) -> list[Any]:
        """Every message of the episode so far (pydantic models), the user's hidden tool traffic included."""
        return self.core.messages()

    def tasks(self, split: str | None = None) -> Sequence[Task]:
        """The tasks this env plays in ``split`` (its own split if None), in order: each a :class:`~mua_gym.Task`
        (``id``, ``category``, ``difficulty``, ``summary()``); ``reset(options={"task_id": ...})`` plays one."""
        return self.core.tasks(split)

    def trajectory(self) -> Trajectory:
        return self.core.trajectory()

    def agent_messages(self) -> list[dict[str, Any]]:
        return self.core.agent_messages()

    def _repr_html_(self) -> str:
        """What a notebook shows for the env: its domain and user, then the episode so far (see
        :func:`mua_gym.env.html_view.trajectory_html`)."""
        head = html.escape(f"MuaEnv({self.core.domain.name}, user={self.core.user.name})")
        if self.core.task is None:
            return f"<b>{head}</b>: no episode yet"
        return f"<b>{head}</b>{self.core.trajectory()._repr_html_()}"
