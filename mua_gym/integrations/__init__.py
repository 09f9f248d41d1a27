"""Adapters that plug mua_gym into RL trainers, one module per trainer.

Each module imports its trainer lazily, so ``import mua_gym`` never imports a trainer, and each trainer has a
pip extra of the same name (``pip install "mua_gym[trl]"``). What two adapters need alike lives in the core:
:mod:`mua_gym.tool_functions` (an env's tools as Python callables), :mod:`mua_gym.chat_tokens` (token ids
and the assistant mask of a growing conversation) and :meth:`mua_gym.Trajectory.to_chat`.

==============  ==========================================  ======================
trainer         module                                      extra
==============  ==========================================  ======================
TRL             :mod:`mua_gym.integrations.trl`             ``trl``
verifiers       :mod:`mua_gym.integrations.verifiers`       ``verifiers``
SkyRL-gym       :mod:`mua_gym.integrations.skyrl`           ``skyrl``
OpenEnv         :mod:`mua_gym.integrations.openenv`         ``openenv``
verl            :mod:`mua_gym.integrations.verl`            ``verl``
OpenPipe ART    :mod:`mua_gym.integrations.art`             ``art``
Ray (a pool)    :mod:`mua_gym.integrations.ray_pool`        ``ray``
==============  ==========================================  ======================
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from mua_gym.extras import MissingExtraError, require_extra

__all__ = ["MissingTrainerError", "plain_config", "require"]


class MissingTrainerError(MissingExtraError):
    """A trainer adapter was used without its trainer installed; the message names the pip extra."""


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
