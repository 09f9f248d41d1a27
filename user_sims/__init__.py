"""User simulators: the protocol, and the simulators that ship with mua_gym."""

from mua_gym.user_sims.base import (
    STOP_TOKENS,
    UserReply,
    UserSimulator,
    UserSimulatorError,
    UserView,
)
from mua_gym.user_sims.scripted import ScriptedUser

__all__ = [
    "STOP_TOKENS", "ScriptedUser", "UserReply", "UserSimulator", "UserSimulatorError", "UserView", "make_user",
]


def make_user(spec: "str | UserSimulator") -> UserSimulator:
    """A simulator from a string: ``"scripted"``, or an instance passed through."""
    if isinstance(spec, UserSimulator):
        return spec
    if spec == "scripted":
        return ScriptedUser()
    raise ValueError(f"unknown user simulator {spec!r}; known: 'scripted', or pass a UserSimulator instance")
