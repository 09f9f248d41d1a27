"""mua_gym: multi-turn, user-in-the-loop tool-use environments for training LLM agents with RL.

    import mua_gym
    env = mua_gym.make("mua/Mock-v0")          # same as gymnasium.make after `import mua_gym`
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("Hello! How can I help?")
"""

from __future__ import annotations

from typing import Any

import gymnasium

from mua_gym import moved
from mua_gym.world.diff import WorldDiff
from mua_gym.domain import Domain
from mua_gym.env import AsyncMuaEnv
from mua_gym.env.gym_env import MuaEnv
from mua_gym.env.options import check_env_options
from mua_gym.world.image import WorldImage, WorldSnapshot
from mua_gym.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from mua_gym.domain.registry import (
    available_domains, env_id, get_domain, register_domain, register_envs, user_env_id,
)
from mua_gym.env.reward import RewardInfo
from mua_gym.task import Action, EnvAssertion, EvaluationSpec, Persona, Task, UserScenario, WorldSpec
from mua_gym.tools import Tool, ToolError, Toolkit, ToolResult, tool
from mua_gym.env.trajectory import Trajectory
from mua_gym.world import World

__version__ = "0.1.0"

__all__ = [
    "Action", "AssistantMessage", "AsyncMuaEnv", "Domain", "EnvAssertion", "EvaluationSpec", "MuaEnv", "Persona",
    "RewardInfo",
    "SystemMessage", "Task", "Tool", "ToolCall", "ToolError", "ToolMessage", "ToolResult", "Toolkit", "Trajectory",
    "UserMessage", "UserScenario", "World", "WorldDiff", "WorldImage", "WorldSnapshot", "WorldSpec",
    "available_domains", "env_id", "get_domain", "make", "make_async", "make_kwargs", "register_domain", "tool",
    "user_env_id",
]


def make(id: str, **kwargs: Any) -> gymnasium.Env:
    """``gymnasium.make(id, **kwargs)``; ``mua/<Domain>-v0`` ids are registered on import."""
    return gymnasium.make(id, **kwargs)


def make_kwargs(**options: Any) -> dict[str, Any]:
    """``options`` without those left unset (None or empty): the keywords a config passes to :func:`make`, so
    an unset option keeps the env's default."""
    return {name: value for name, value in options.items() if value is not None and value != {} and value != ""}


def make_async(id: str, **kwargs: Any) -> AsyncMuaEnv:
    """The :class:`AsyncMuaEnv` of a registered id (``mua/Retail-v0``), with the id's keywords and ``kwargs``;
    ValueError naming the registered ids for an unknown one."""
    try:
        spec = gymnasium.spec(id)
    except gymnasium.error.Error:
        known = ", ".join(sorted(i for i, s in gymnasium.registry.items()
                                 if i.startswith("mua/") and s.entry_point == "mua_gym.env.gym_env:MuaEnv"))
        raise ValueError(f"unknown mua_gym env id {id!r}; registered: {known}") from None
    if spec.entry_point == "mua_gym.eval.user_side:UserEnv":
        raise ValueError(f"{id!r} is a user-side env: mua_gym.make({id!r}) makes it, and its .unwrapped.core is its "
                         "async env (mua_gym.eval.user_side.AsyncUserEnv)")
    if spec.entry_point != "mua_gym.env.gym_env:MuaEnv" or "domain" not in spec.kwargs:
        raise ValueError(f"{id!r} is not a mua_gym env id (its entry point is {spec.entry_point!r})")
    options = {**spec.kwargs, **kwargs}
    domain = options.pop("domain")
    return AsyncMuaEnv(domain, **check_env_options(options))


register_envs()
moved.install()
