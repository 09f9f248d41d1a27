"""Episode loops the domain tests share."""

from __future__ import annotations

from typing import Any


def run(env: Any, task: Any, agent: Any) -> tuple[float, bool, bool, dict]:
    """One episode of ``task`` with ``agent``; the final (reward, terminated, truncated, info)."""
    obs, info = env.reset(options={"task": task})
    agent.reset(info)
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            return reward, terminated, truncated, info


def run_oracle(env: Any, task: Any) -> tuple[float, bool, bool, dict]:
    """One episode of ``task`` with the oracle agent (see :func:`run`)."""
    from mua_gym.eval.agents import OracleAgent

    return run(env, task, OracleAgent(task))


def play(env: Any, task: Any, agent: Any) -> tuple[float, dict]:
    """One episode of ``task`` with ``agent``; the final (reward, info)."""
    reward, _, _, info = run(env, task, agent)
    return reward, info


def idle(env: Any, task: Any, text: str = "Sorry, I cannot help with that.") -> tuple[float, dict]:
    """One episode of ``task`` in which the agent only ever says ``text`` (the do-nothing baseline)."""
    env.reset(options={"task": task})
    while True:
        *_, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            return reward, info
