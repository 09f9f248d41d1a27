"""User simulators: the protocol, and the simulators that ship with mua_gym.

Choose one by string wherever a user is asked for (``make`` keywords, the CLI):
``"scripted"`` (the task's scripted turns), ``"scenario"`` (rule-driven, from the task's structured scenario),
``"litellm:<model>"`` (any model litellm reaches; extra keywords such as ``api_base`` go to litellm),
``"openai:<model>@<base_url>"`` (a model an OpenAI-compatible server such as vLLM serves, through a fast client
of its own), or pass a :class:`UserSimulator` instance.
"""

from typing import Any

from mua_gym.llm.client import UserModelError
from mua_gym.user_sims.base import (
    STOP_TOKENS,
    UserReply,
    UserSimulator,
    UserSimulatorError,
    UserView,
    for_the_user,
)
from mua_gym.user_sims.persona import describe_persona, resolve_persona, sample_persona
from mua_gym.user_sims.scenario import ScenarioUser
from mua_gym.user_sims.scripted import ScriptedUser

__all__ = [
    "STOP_TOKENS", "LLMUser", "ReplayUser", "ScenarioUser", "ScriptedUser", "UserModelError", "UserReply",
    "UserSimulator", "UserSimulatorError", "UserView", "describe_persona", "for_the_user", "make_user",
    "resolve_persona", "sample_persona",
]


def make_user(spec: "str | UserSimulator", **kwargs: Any) -> UserSimulator:
    """A simulator from a string (``scripted``, ``scenario``, ``litellm:<model>``) or an instance."""
    if isinstance(spec, UserSimulator):
        if kwargs:
            raise ValueError("user keywords apply only when the user is named by a string")
        return spec
    if spec == "scripted":
        return ScriptedUser(**kwargs)
    if spec == "scenario":
        return ScenarioUser(**kwargs)
    from mua_gym.llm.openai_http import model_spec

    named = model_spec(spec)
    if named is not None:
        from mua_gym.user_sims.llm import LLMUser

        return LLMUser(named[0], server=named[1], **kwargs)
    raise ValueError(f"unknown user simulator {spec!r}; use 'scripted', 'scenario', 'litellm:<model>', "
                     "'openai:<model>@<base_url>' or a UserSimulator instance")


def __getattr__(name: str) -> Any:
    # LLMUser and ReplayUser are imported on first use: the LLM user pulls in litellm only when it is called.
    if name == "LLMUser":
        from mua_gym.user_sims.llm import LLMUser

        return LLMUser
    if name == "ReplayUser":
        from mua_gym.user_sims.replay import ReplayUser

        return ReplayUser
    raise AttributeError(name)
