"""The episode contract: the async env at its core (:mod:`.core`, :class:`AsyncMuaEnv`) and its Gymnasium face
(:mod:`.gym_env`, :class:`~mua_gym.env.gym_env.MuaEnv`, with :mod:`.spaces`); reading an agent's action
(:mod:`.parsing`); a task's preparation and an episode's counters (:mod:`.episode`); the terminal reward
(:mod:`.reward`, with :mod:`.communicate` for what the agent must tell); what reset and step return in ``info``
(:mod:`.infos`); the episode's record (:mod:`.trajectory`) and its notebook view (:mod:`.html_view`)."""

from mua_gym.env.core import TERMINATION_REASONS, AsyncMuaEnv, PendingStep, StepResult

__all__ = ["AsyncMuaEnv", "PendingStep", "StepResult", "TERMINATION_REASONS"]
