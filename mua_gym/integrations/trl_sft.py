"""Supervised rows for TRL in its GRPO loop's own protocol (see :mod:`mua_gym.integrations.trl`):
:func:`demonstrations`, a cold start for a model that never calls a tool on its own."""

from __future__ import annotations

from typing import Any

from mua_gym.integrations import void_reason
from mua_gym.integrations.trl import SEND_MESSAGE, TALKING, environment_factory, tools_of

__all__ = ["demonstrations"]


def demonstrations(env_id: str, task_ids: list[str], *, agent: str = "fair", seed: int = 0,
                   **make_kwargs: Any) -> list[dict[str, Any]]:
    """Supervised rows of a scripted agent's solved episodes, in exactly the conversation GRPO's loop builds here:
    the cold start that lets a model too weak to call a tool at all begin to earn rewards.

    Each task of ``task_ids`` is played once by ``agent`` (``fair``: it asks the user for every value before using
    it; ``oracle``: it uses the gold values unasked) on ``mua_gym.make(env_id, **make_kwargs)``, with the episode
    seed ``seed``; its actions are then replayed, with the same seed, through the :func:`environment_factory`
    class, so every tool result and user reply is the text that class returns. A row: ``messages`` (the
    dataset's system message, the user's opening, each action as a tool call, with ``send_message_to_user`` for
    words to the user, each result as a tool message, and an empty closing answer, as the loop ends), ``tools``
    (the class's tools' JSON schemas, as one JSON string, the form TRL's SFTTrainer decodes) and ``task_id``.
    Only episodes whose replay earns a task reward of 1.0 are kept. The loop's budgets are not applied: a row may
    be longer than ``max_completion_length`` (which counts tool results too) or hold more rounds of calls than
    ``max_tool_calling_iterations`` allows, where the loop would cut it; checking them is the caller's.
    """
    import json

    import mua_gym
    from mua_gym.eval.agents import make_agent
    from transformers.utils import get_json_schema

    factory = environment_factory(env_id, **make_kwargs)
    env = mua_gym.make(env_id, **make_kwargs).unwrapped
    player = factory()
    rows = []
    try:
        system = {"role": "system", "content": env.core.policy + TALKING}
        schemas = json.dumps([get_json_schema(tool) for tool in tools_of(player)])
        for task_id in task_ids:
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            scripted = make_agent(agent, task=env.core.task, seed=seed)
            scripted.reset(info)
            actions = []
            while not env.core.done and void_reason(env, info) is None:
                action = scripted.act(observation)
                actions.append(action)
                observation, _, _, _, info = env.step(action)
            messages = [system, {"role": "user", "content": player.reset(task_id=task_id, seed=seed)}]
            for action in actions:
                calls = action.get("tool_calls") or []
                if calls:
                    name = calls[0]["function"]["name"]
                    arguments = json.loads(calls[0]["function"]["arguments"])
                    result = getattr(player, name)(**arguments)
                else:
                    name, arguments = SEND_MESSAGE, {"message": str(action.get("content") or "")}
                    result = player.send_message_to_user(**arguments)
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": name, "arguments": arguments}}]})
                messages.append({"role": "tool", "name": name, "content": result})
            messages.append({"role": "assistant", "content": ""})
            player.get_reward()  # scores the replay (the episode has ended, or ends here as TRL would end it)
            if player.env.trajectory().task_reward == 1.0:
                rows.append({"messages": messages, "tools": schemas, "task_id": task_id})
    finally:
        env.close()
        player.env.close()
    return rows
