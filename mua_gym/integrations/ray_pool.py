"""Episodes spread over a pool of Ray actors, each hosting many of them on its own event loop (``mua_gym[ray]``).

    import ray
    from mua_gym.integrations.ray_pool import EpisodePool

    ray.init()                                   # or ray.init(address="ray://head:10001") for a cluster
    pool = EpisodePool("retail", actors=8, episodes_per_actor=256, user="openai:m@http://vllm:8000/v1")
    episode, obs, info = await pool.reset(seed=0)
    obs, reward, terminated, truncated, info = await pool.step(episode, "Hello! How can I help?")
    trajectory = await pool.trajectory(episode)  # the Trajectory as a JSON-ready dict
    await pool.close(episode)

- An episode lives on one actor from its reset to its close (sticky routing: every call by its id goes there).
  A reset goes to the actor hosting the fewest episodes.
- Back-pressure: an actor hosts at most ``episodes_per_actor`` live episodes; a reset past the pool's capacity
  waits until a close frees a place.
- An actor that dies is restarted by Ray (``max_restarts``); the episodes it hosted are gone with it. They are
  reported, never dropped silently: every later call with their ids raises :class:`EpisodeLost` (as does the
  call in flight), :attr:`EpisodePool.lost` lists them, and a close of one frees its place.
- The env's keywords (``user``, ``world``, ``split``, ``reward``, ...) are those of :class:`mua_gym.AsyncMuaEnv`.
- A void episode (:attr:`mua_gym.AsyncMuaEnv.void`) carries its reason as the env gives it: ``info["void"]`` of
  the reset (void from the opening) and of the step that ends it, and ``void`` in :meth:`EpisodePool.trajectory`;
  the caller's trainer leaves it out.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from mua_gym.env.options import check_env_options
from mua_gym.integrations import require

__all__ = ["EpisodeHost", "EpisodeLost", "EpisodePool"]

_ray = require("ray", "ray")
_RESET_TRIES = 12  # about 15 s of backoff for a restarting actor to take a new episode


class EpisodeLost(RuntimeError):
    """The actor hosting this episode died (and was restarted without it); the episode cannot go on."""


class EpisodeHost:
    """What runs inside one Ray actor: live episodes by id, each an :class:`mua_gym.AsyncMuaEnv`."""

    def __init__(self, domain: str, env_kwargs: dict[str, Any]) -> None:
        self.domain = domain
        self.env_kwargs = env_kwargs
        self.episodes: dict[str, Any] = {}

    def _env(self, episode: str) -> Any:
        env = self.episodes.get(episode)
        if env is None:
            raise KeyError(episode)
        return env

    async def reset(self, episode: str, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, Any]:
        import mua_gym

        env = self.episodes.get(episode)
        if env is None:
            env = self.episodes[episode] = mua_gym.AsyncMuaEnv(self.domain, **self.env_kwargs)
        return await env.reset(seed=seed, options=options)

    async def step(self, episode: str, action: Any) -> tuple[Any, ...]:
        return tuple(await self._env(episode).step(action))

    async def trajectory(self, episode: str) -> dict[str, Any]:
        return self._env(episode).trajectory().model_dump(mode="json")

    async def close(self, episode: str) -> None:
        env = self.episodes.pop(episode, None)
        if env is not None:
            await env.aclose()

    async def live(self) -> int:
        return len(self.episodes)


class EpisodePool:
    """Hosts episodes of ``domain`` on ``actors`` Ray actors; see the module docstring.

    ``actor_options`` go to Ray's ``.options()`` (``num_cpus``, ``resources``, ``scheduling_strategy``...);
    ``max_restarts`` is how often Ray restarts a dead actor (-1: always). Call it from one event loop.
    """

    def __init__(self, domain: str, *, actors: int = 2, episodes_per_actor: int = 256, max_restarts: int = -1,
                 actor_options: dict[str, Any] | None = None, **env_kwargs: Any) -> None:
        if actors < 1 or episodes_per_actor < 1:
            raise ValueError("actors and episodes_per_actor must be at least 1")
        env_kwargs = check_env_options(env_kwargs)  # here: a typo fails once, not in every actor
        options = {"num_cpus": 1, "max_restarts": max_restarts, "max_task_retries": 0, **(actor_options or {})}
        host = _ray.remote(EpisodeHost).options(**options)
        self.actors = [host.remote(domain, env_kwargs) for _ in range(actors)]
        self.episodes_per_actor = episodes_per_actor
        #: episode id -> index of the actor hosting it
        self.placement: dict[str, int] = {}
        # which life of its actor an episode began in: a death loses the episodes of that life only
        self._life: dict[str, int] = {}
        self._lives = [0] * actors
        #: episodes whose actor died: every call with their ids raises EpisodeLost
        self.lost: set[str] = set()
        self._load = [0] * actors
        self._room = asyncio.Condition()
        self._ids = (f"ep-{uuid.uuid4().hex[:8]}-{n}" for n in itertools.count())

    async def reset(self, episode: str | None = None, *, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[str, Any, Any]:
        """Starts an episode (a new one, or ``episode`` again on its actor); returns (episode id, obs, info).

        Waits while every actor hosts ``episodes_per_actor`` episodes.
        """
        if episode is not None and episode in self.placement:
            obs, info = await self._call(episode, "reset", seed, options)
            return episode, obs, info
        episode = episode or next(self._ids)
        async with self._room:
            await self._room.wait_for(lambda: min(self._load) < self.episodes_per_actor)
            index = min(range(len(self.actors)), key=self._load.__getitem__)
            self._load[index] += 1
            self.placement[episode] = index
            self._life[episode] = self._lives[index]
        actor = self.actors[index]
        for attempt in range(_RESET_TRIES):
            try:
                obs, info = await actor.reset.remote(episode, seed, options)
                return episode, obs, info
            except _ray.exceptions.RayActorError:
                # Its actor died or is restarting: that life's episodes are lost, this new one starts on the next.
                self._lose(episode, index)
                self.lost.discard(episode)
                self._life[episode] = self._lives[index]
                await asyncio.sleep(min(0.1 * 2**attempt, 2.0))
            except _ray.exceptions.RayTaskError as exc:
                await self.close(episode)
                raise (exc.cause if isinstance(exc.cause, BaseException) else exc) from None
        await self.close(episode)
        raise EpisodeLost(f"episode {episode}: its actor did not come back to start it")

    async def step(self, episode: str, action: Any) -> tuple[Any, float, bool, bool, Any]:
        """The episode's step result: (observation, reward, terminated, truncated, info)."""
        return await self._call(episode, "step", action)  # type: ignore[no-any-return]

    async def trajectory(self, episode: str) -> dict[str, Any]:
        """The episode's :class:`~mua_gym.Trajectory` so far, as ``model_dump(mode="json")`` gives it."""
        return await self._call(episode, "trajectory")  # type: ignore[no-any-return]

    async def close(self, episode: str) -> None:
        """Ends the episode and frees its place (a lost one's too); an unknown id is ignored."""
        index = self.placement.pop(episode, None)
        self._life.pop(episode, None)
        if index is None:
            return
        try:
            if episode not in self.lost:
                await self.actors[index].close.remote(episode)
        except _ray.exceptions.RayActorError:
            pass  # (it died: the episode is gone either way)
        finally:
            self.lost.discard(episode)
            async with self._room:
                self._load[index] -= 1
                self._room.notify_all()

    async def live(self) -> list[int]:
        """How many episodes each actor hosts now, by its own count."""
        return list(await asyncio.gather(*(actor.live.remote() for actor in self.actors)))

    def shutdown(self) -> None:
        """Kills the actors (their episodes end with them)."""
        for actor in self.actors:
            _ray.kill(actor, no_restart=True)
        self.placement.clear()

    async def _call(self, episode: str, method: str, *args: Any) -> Any:
        if episode in self.lost:
            raise EpisodeLost(f"episode {episode} was lost when its actor died")
        index = self.placement.get(episode)
        if index is None:
            raise KeyError(f"no live episode {episode!r} in this pool (reset it first)")
        try:
            return await getattr(self.actors[index], method).remote(episode, *args)
        except _ray.exceptions.RayActorError:
            self._lose(episode, index)
        except _ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            if not (isinstance(cause, KeyError) and method != "reset"):
                raise cause from None
            self._lose(episode, index)  # a restarted actor does not know the episode
        raise EpisodeLost(f"episode {episode} was lost when its actor died")

    def _lose(self, episode: str, index: int) -> None:
        """Marks every episode of the actor's life that ``episode`` began in as lost (once per life)."""
        life = self._life.get(episode, self._lives[index])
        if life == self._lives[index]:
            self._lives[index] += 1
        self.lost |= {e for e, i in self.placement.items() if i == index and self._life.get(e) == life}
