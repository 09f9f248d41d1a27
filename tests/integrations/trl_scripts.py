"""Model turns for the TRL tests, as Qwen 2.5's template writes them: Hermes ``<tool_call>`` blocks closed by
the end-of-turn token, and the oracle's play of a task turned into such turns (talking goes through the
``send_message_to_user`` tool, as in the TRL loop)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mua_gym
from mua_gym.eval.agents import OracleAgent
from mua_gym.integrations import trl as mua_trl

END = "<|im_end|>"
GOODBYE = "Goodbye!" + END  # a reply without a tool call: TRL ends the rollout there


def hermes(*calls: tuple[str, dict]) -> str:
    """One model turn making ``calls`` (``(name, arguments)`` pairs), in order."""
    return "\n".join("<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>"
                     for n, a in calls) + END


def say(text: str) -> str:
    """One model turn that says ``text`` to the user."""
    return hermes((mua_trl.SEND_MESSAGE, {"message": text}))


def oracle_turns(env_id: str, task_id: str, seed: int | None, **make_kwargs: Any) -> tuple[str, list[str]]:
    """(the user's opening, the oracle's play as model turns ending with a goodbye), from a bare episode of the
    same task, seed and env keywords (so a steered model's prompt key and replies line up with a rollout)."""
    env = mua_gym.make(env_id, **make_kwargs).unwrapped
    obs, _ = env.reset(seed=seed, options={"task_id": task_id})
    opening, agent, turns = obs[-1]["content"], OracleAgent(env.core.task), []
    try:
        while True:
            action = agent.act(obs)
            if action.get("tool_calls"):
                function = action["tool_calls"][0]["function"]
                turns.append(hermes((function["name"], json.loads(function["arguments"]))))
            else:
                turns.append(say(action["content"]))
            obs, reward, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                assert reward == 1.0
                return opening, turns + [GOODBYE]
    finally:
        env.close()


async def aplay(env_id: str, agent: Any, task_id: str, seed: int, **make_kwargs):
    """One episode as the eval engine plays it, ended where the agent stops as TRL's get_reward ends it."""
    env = mua_gym.make_async(env_id, **make_kwargs)
    try:
        observation, info = await env.reset(seed=seed, options={"task_id": task_id})
        agent.reset(info)
        while not env.done:
            action = await agent.aact(observation)
            if agent.stopped:
                await env.finish()
                break
            observation, *_ = await env.step(action)
        return env.trajectory()
    finally:
        await env.aclose()


def play(env_id: str, agent: Any, task_id: str, seed: int, **make_kwargs):
    return asyncio.run(aplay(env_id, agent, task_id, seed, **make_kwargs))


def customer_turns(env_id: str, task_id: str, seed: int | None) -> tuple[str, list[str]]:
    """(a snippet of the customer's scenario that keys its prompt, the scenario user's play of a user-side env's
    task as model turns: messages through send_message_to_agent, phone actions as calls, then a goodbye)."""
    from mua_gym.eval.user_players import make_player

    async def run() -> tuple[str, list[str]]:
        env = mua_gym.make(env_id).unwrapped.core
        _, info = await env.reset(seed=seed, options={"task_id": task_id})
        player, turns = make_player("scenario"), []
        action = await player.start(env.core.task, info, seed)
        try:
            while True:
                if isinstance(action, str):
                    turns.append(hermes((mua_trl.SEND_TO_AGENT, {"message": action})))
                else:
                    turns.append(hermes(*[(c["function"]["name"], json.loads(c["function"]["arguments"]))
                                          for c in action["tool_calls"]]))
                observation, reward, terminated, truncated, _ = await env.step(action)
                if terminated or truncated:
                    assert reward == 1.0
                    return env.core.task.user_scenario.instructions[:60], turns + [GOODBYE]
                action = await player.act(observation)
        finally:
            await env.aclose()

    return asyncio.run(run())
