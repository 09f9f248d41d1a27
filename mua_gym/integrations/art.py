"""OpenPipe ART adapter (openpipe-art 0.5, Python >= 3.12): one mua_gym episode as an ``art.Trajectory``.

``await rollout(model, "mua/Retail-v0", task_id)`` plays one episode with ``model`` (an ``art.Model`` or
``art.TrainableModel``) as the agent and returns the trajectory ART trains on:

- The agent is ``model.openai_client()`` called with ``model.get_inference_name()``, the conversation so far
  and the env's tools (OpenAI schemas); ART records each such call (request and response) as the trajectory
  is entered, since it captures every OpenAI-compatible HTTP call made inside ``with trajectory:``.
- The env's own work (``reset``, each ``step``: the tools, and the simulated user, whose LLM calls go over
  HTTP too) runs inside ``art.no_capture()``, so an LLM user's or judge's calls are never trained on.
- The reply goes to ``env.step``: its structured ``tool_calls`` when it has any, else its text (so Hermes
  ``<tool_call>`` blocks a server left unparsed still run). Nothing the model writes raises here: bad calls come
  back as the env's ``Error: ...`` tool messages, one per call for an action the env cannot read at all. The
  conversation keeps each call under the id the env answered it with (the env renames missing and repeated ids;
  calls read from text are kept as the env read them), so strict servers accept the next request.
- A void episode (:attr:`mua_gym.AsyncMuaEnv.void`: the simulated user failed, or broke its scenario under
  ``on_user_fault="void"``) raises :class:`VoidEpisode`: at the reset, before any model call, or at the step
  where it went void, its trajectory unreturned. ``await art.trajectory_group(rollouts, return_exceptions=True)``
  sets it aside in the group's ``exceptions`` and keeps the other trajectories; without ``return_exceptions`` the
  group raises, and ``art.gather_trajectory_groups(..., max_exceptions=n)`` drops that group (ART's default, 0,
  fails the gather).
- ``reward``: the env's reward, 0.0 unless the episode terminated (a truncated one scores 0.0). ``metrics``:
  ``turns``, ``tool_calls``, ``tool_errors``, ``terminated``, ``truncated``; ``metadata``: ``task_id``,
  ``domain``, ``termination_reason``.

Group rollouts for GRPO with ``art.gather_trajectory_groups`` and train with ``model.train`` as ART documents.
A failing inference call (the server, not the model's text) propagates, as ART's gather functions expect.
"""

from __future__ import annotations

from typing import Any

import mua_gym
from mua_gym.env import AsyncMuaEnv
from mua_gym.integrations import VoidEpisode as _VoidEpisode
from mua_gym.integrations import require, void_reason

__all__ = ["VoidEpisode", "agent_action", "rollout"]

art = require("art", "art")


def agent_action(message: Any) -> tuple[dict[str, Any], Any]:
    """(the assistant message to keep in the conversation, the action for ``env.step``) for one OpenAI reply
    message (the SDK's ``ChatCompletionMessage`` or a dict)."""
    data = message if isinstance(message, dict) else message.model_dump(exclude_none=True)
    kept: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    calls = data.get("tool_calls") or []
    if calls:
        kept["tool_calls"] = calls
        return kept, kept
    return kept, data.get("content") or ""  # text: the env's parser runs any <tool_call> blocks in it


class VoidEpisode(_VoidEpisode):
    """Raised by :func:`rollout` for a void episode (``reason``: the env's ``"user_error: ..."`` or
    ``"user_fault: ..."``), at its reset or at the step where it went void; ART drops a rollout that raises."""


async def rollout(
    model: Any,
    env: str | AsyncMuaEnv,
    task_id: str,
    *,
    seed: int | None = None,
    completion_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> Any:
    """Plays task ``task_id`` with ``model`` as the agent; returns the ``art.Trajectory`` (see the module docstring).

    ``env``: a Gymnasium id (an env is built with ``env_kwargs``, e.g. ``user=...``, and closed after) or an
    :class:`mua_gym.AsyncMuaEnv` (kept open; one episode at a time). ``completion_kwargs`` go to every
    ``chat.completions.create`` call (``temperature``, ``max_completion_tokens``, ``extra_body``...).
    """
    owned = isinstance(env, str)
    if env_kwargs and not owned:
        raise TypeError("env keywords apply only when env is an id; configure an AsyncMuaEnv when making it")
    core = mua_gym.make_async(env, **env_kwargs) if isinstance(env, str) else env
    client = model.openai_client()
    name = model.get_inference_name()
    try:
        with art.no_capture():  # the user's opening line may be an LLM call: not the agent's
            messages, info = await core.reset(seed=seed, options={"task_id": task_id})
        void = void_reason(core, info)
        if void is not None:  # nothing to learn from: ART drops a rollout that raises (see the docstring)
            raise VoidEpisode(void, info["task_id"])
        trajectory = art.Trajectory(reward=0.0, metadata={"task_id": info["task_id"], "domain": info["domain"]})
        reward, terminated, truncated, step_info = 0.0, False, False, {}
        with trajectory:
            while not core.done:
                completion = await client.chat.completions.create(
                    model=name, messages=messages, tools=info["tools"], **(completion_kwargs or {}))
                kept, action = agent_action(completion.choices[0].message)
                messages.append(kept)
                with art.no_capture():  # tools, the simulated user and any judge
                    messages[-1], result = await core.chat_step(kept, action)  # every call answered
                observation, reward, terminated, truncated, step_info = result
                messages.extend(observation)
        void = void_reason(core, step_info)
        if void is not None:  # the user failed or faulted mid-episode: the agent's turns are judged on nothing
            raise VoidEpisode(void, info["task_id"])
        trajectory.reward = float(reward) if terminated else 0.0
        trajectory.metrics.update({
            "turns": step_info.get("turn", 0), "tool_calls": step_info.get("tool_calls", 0),
            "tool_errors": step_info.get("tool_errors", 0), "terminated": bool(terminated),
            "truncated": bool(truncated)})
        trajectory.metadata["termination_reason"] = step_info.get("termination_reason") or ""
        return trajectory
    finally:
        if owned:
            with art.no_capture():
                await core.aclose()
