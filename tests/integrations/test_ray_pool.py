"""Episodes on a pool of Ray actors, on a local Ray: rewards, back-pressure, a killed actor, one and two actors."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

ray = pytest.importorskip("ray")

import mua_gym  # noqa: E402
from mua_gym.eval.agents import OracleAgent  # noqa: E402
from mua_gym.integrations.ray_pool import EpisodeLost, EpisodePool  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


TASKS = {t.id: t for t in mua_gym.get_domain("mock").tasks("train")}


async def play(pool: EpisodePool, task_id: str, episode: str | None = None) -> tuple[str, float]:
    """One oracle episode of ``task_id`` on the pool; (episode id, final reward). Leaves the episode open."""
    agent = OracleAgent(TASKS[task_id])
    episode, obs, info = await pool.reset(episode, options={"task_id": task_id})
    agent.reset(info)
    while True:
        obs, reward, terminated, truncated, info = await pool.step(episode, agent.act(obs))
        if terminated or truncated:
            return episode, reward


def test_oracle_episodes_earn_full_reward_on_both_actors():
    async def main():
        pool = EpisodePool("mock", actors=2, episodes_per_actor=8)
        try:
            results = await asyncio.gather(*(play(pool, task_id) for task_id in TASKS))
            assert [reward for _, reward in results] == [1.0] * len(TASKS)
            assert sorted(set(pool.placement.values())) == [0, 1]  # both actors hosted episodes
            assert sum(await pool.live()) == len(TASKS)
            trajectory = await pool.trajectory(results[0][0])
            assert trajectory["task_id"] in TASKS and trajectory["terminated"]
            for episode, _ in results:
                await pool.close(episode)
            assert await pool.live() == [0, 0] and pool.placement == {}
        finally:
            pool.shutdown()

    asyncio.run(main())


def test_a_reset_past_capacity_waits_for_a_close():
    async def main():
        pool = EpisodePool("mock", actors=2, episodes_per_actor=1)
        try:
            first, _, _ = await pool.reset(seed=0)
            await pool.reset(seed=1)
            third = asyncio.ensure_future(pool.reset(seed=2))
            await asyncio.sleep(1.0)
            assert not third.done()  # both actors are full
            await pool.close(first)
            episode, obs, info = await asyncio.wait_for(third, 60)
            assert pool.placement[episode] == 0 and obs[-1]["role"] == "user"
        finally:
            pool.shutdown()

    asyncio.run(main())


async def restarted(actor, timeout: float = 60.0) -> None:
    """Waits until ``actor`` answers as a new, empty life (the killed one hosted episodes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if await actor.live.remote() == 0:
                return
        except ray.exceptions.RayActorError:
            pass  # still restarting
        await asyncio.sleep(0.1)
    raise AssertionError("the killed actor did not come back")


def test_a_killed_actor_loses_its_episodes_loudly_and_the_pool_goes_on():
    async def main():
        pool = EpisodePool("mock", actors=2, episodes_per_actor=4)
        try:
            ids = list(TASKS)[:4]
            episodes = [(await pool.reset(options={"task_id": t}))[0] for t in ids]
            on_first = {e for e in episodes if pool.placement[e] == 0}
            assert on_first and len(on_first) < len(episodes)
            ray.kill(pool.actors[0], no_restart=False)  # Ray restarts it, empty
            await restarted(pool.actors[0])  # (a kill is asynchronous: a step sent before it lands still plays)
            for episode in episodes:
                if episode in on_first:
                    with pytest.raises(EpisodeLost):
                        await pool.step(episode, "Hello?")
            assert pool.lost == on_first
            survivors = [e for e in episodes if e not in on_first]
            for episode in survivors:  # the other actor's episodes play on
                task_id = (await pool.trajectory(episode))["task_id"]
                await pool.close(episode)
                assert (await play(pool, task_id, episode))[1] == 1.0
            for episode in on_first:
                await pool.close(episode)
            assert pool.lost == set()
            # The restarted actor takes new episodes.
            results = await asyncio.gather(*(play(pool, t) for t in ids))
            assert [r for _, r in results] == [1.0] * len(ids) and 0 in {pool.placement[e] for e, _ in results}
        finally:
            pool.shutdown()

    asyncio.run(main())


def test_one_and_two_actors_play_the_same_episodes_alike():
    async def run(actors: int) -> tuple[list[float], float]:
        pool = EpisodePool("mock", actors=actors, episodes_per_actor=64)
        try:
            await play(pool, next(iter(TASKS)))  # the actors' start-up is not the pool's throughput
            start = time.perf_counter()
            results = await asyncio.gather(*(play(pool, t) for t in list(TASKS) * 2))
            return [r for _, r in results], len(results) / (time.perf_counter() - start)
        finally:
            pool.shutdown()

    one, one_rate = asyncio.run(run(1))
    two, two_rate = asyncio.run(run(2))
    assert one == two == [1.0] * (2 * len(TASKS))
    print(f"episodes/s: 1 actor {one_rate:.1f}, 2 actors {two_rate:.1f}")


@pytest.mark.parametrize("how", ["fault", "error"])
def test_what_an_actor_returns_for_an_episode_carries_its_void(how):
    # EpisodeHost is what each actor runs; the pool hands back its returns as they are
    from integrations.void_users import Breaks
    from mua_gym.integrations.ray_pool import EpisodeHost

    async def episode():
        host = EpisodeHost("mock", {"user": Breaks(how, 1), "on_user_fault": "void"})
        try:
            _, info = await host.reset("e1", None, {"task_id": "mock-cancel-card"})
            *_, truncated, last = await host.step("e1", "Which order would you like to cancel?")
            return info, truncated, last, await host.trajectory("e1")
        finally:
            await host.close("e1")

    info, truncated, last, trajectory = asyncio.run(episode())
    assert "void" not in info and truncated and last["void"] == trajectory["void"]
    assert last["void"].startswith("user_fault" if how == "fault" else "user_error")
