"""Adapters that plug mua_gym into RL trainers, one module per trainer.

Each module imports its trainer lazily, so ``import mua_gym`` never imports a trainer, and each trainer has a
pip extra of the same name (``pip install "mua_gym[trl]"``). What two adapters need alike lives beside them:
:mod:`mua_gym.integrations.tool_functions` (an env's tools as Python callables) and
:mod:`mua_gym.integrations.chat_tokens` (token ids and the assistant mask of a growing conversation; the SFT
export uses it too); in the core, :meth:`mua_gym.Trajectory.to_chat`.

Void episodes (the user simulator failed, or broke its scenario under ``on_user_fault="void"``: see
:attr:`mua_gym.AsyncMuaEnv.void`) say nothing about the agent. Every adapter reads them one way,
:func:`void_reason`, and leaves them out of training in the way its trainer honours (docs/training.md, "Void
episodes").

==============  ==========================================  ======================
trainer         module                                      extra
==============  ==========================================  ======================
TRL             :mod:`mua_gym.integrations.trl`             ``trl``
                (the model under training: ``trl_policy``;
                supervised rows: ``trl_sft``)
verifiers       :mod:`mua_gym.integrations.verifiers`       ``verifiers``
SkyRL-gym       :mod:`mua_gym.integrations.skyrl`           ``skyrl``
OpenEnv         :mod:`mua_gym.integrations.openenv`         ``openenv``
verl            :mod:`mua_gym.integrations.verl`            ``verl``
OpenPipe ART    :mod:`mua_gym.integrations.art`             ``art``
Ray (a pool)    :mod:`mua_gym.integrations.ray_pool`        ``ray``
MCP clients     :mod:`mua_gym.integrations.mcp`             ``mcp``
==============  ==========================================  ======================
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from mua_gym.extras import MissingExtraError, require_extra

__all__ = ["MissingTrainerError", "VoidEpisode", "plain_config", "require", "void_reason"]


class MissingTrainerError(MissingExtraError):
    """A trainer adapter was used without its trainer installed; the message names the pip extra."""


class VoidEpisode(RuntimeError):
    """Raised by an adapter whose trainer drops a rollout that raises (ART, verifiers): the episode is void (its
    user failed, or broke its scenario under ``on_user_fault="void"``) and says nothing about the agent.
    ``reason`` is the env's (``"user_error: ..."`` or ``"user_fault: ..."``)."""

    def __init__(self, reason: str, task_id: str | None = None) -> None:
        super().__init__(f"task {task_id}: the episode is void ({reason})" if task_id else f"void episode ({reason})")
        self.reason = reason
        self.task_id = task_id


def void_reason(env: Any, info: Any = None) -> str | None:
    """Why the episode of ``env`` (an :class:`mua_gym.AsyncMuaEnv`, or a :class:`mua_gym.MuaEnv` through its
    ``core``) is void, or None: ``info["void"]`` where the last reset or step info carries it, else ``env.void``."""
    said = info.get("void") if isinstance(info, dict) else None
    if said:
        return str(said)
    reason = getattr(getattr(env, "core", env), "void", None)
    return str(reason) if reason else None


def require(module: str, extra: str) -> ModuleType:
    """Imports ``module`` for the adapter of ``extra``, or raises :class:`MissingTrainerError` in one line."""
    return require_extra(module, extra, f"mua_gym.integrations.{extra}", MissingTrainerError)


def plain_config(value: Any) -> dict[str, Any]:
    """A trainer's config mapping as a plain dict: an omegaconf ``DictConfig`` (what hydra-built trainers hand
    over) resolved, a dict copied, None as ``{}``."""
    if value is None:
        return {}
    try:
        from omegaconf import OmegaConf
    except ImportError:  # omegaconf comes with the trainers that hand configs over; a dict needs none
        return dict(value)
    if OmegaConf.is_config(value):
        return dict(OmegaConf.to_container(value, resolve=True))  # type: ignore[arg-type]
    return dict(value)
