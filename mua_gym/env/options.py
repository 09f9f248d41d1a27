"""The env's options as one typed model, for configs that come as data (YAML, a CLI, a trainer's dict).

:class:`AsyncMuaEnv` takes its options as keywords; :class:`EnvOptions` names the same keywords with their types
and defaults, grouped by what they choose, so that a config is checked where it is written, not in a worker
when its first episode starts. :func:`check_env_options` is that check.
"""

from __future__ import annotations

from typing import Annotated, Any, Mapping, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SkipValidation, ValidationError

from mua_gym.task import Task, check_split, did_you_mean
from mua_gym.user_sims.faults import check_fault_mode

__all__ = ["EnvOptions", "FaultMode", "Split", "check_env_options"]

#: A split's name, checked (a typo is refused with the nearest split's name); for configs that name one.
Split = Annotated[str, AfterValidator(check_split)]
#: What an env does with a faulty user reply, checked.
FaultMode = Annotated[str, AfterValidator(check_fault_mode)]


#: Agent turns before an episode is truncated by default: TAU2 allows 200 messages (the agent's, the user's and
#: tool results), about 100 turns of the agent; its longest tasks and ours need 30 to 40 without a slip.
MAX_TURNS = 100

class EnvOptions(BaseModel):
    """Every keyword of :class:`mua_gym.AsyncMuaEnv` besides ``domain`` (the same names and defaults; a test holds
    them equal). Objects (a user, a judge, tasks, perturbations, a parser) pass through unchecked."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    # -- the world and its tasks
    world: Optional[str] = None
    """Where the world and tasks come from (``generated``, ``tau2``, a domain's own); None: the domain's default."""
    world_params: Optional[dict[str, Any]] = None
    split: Split = "train"
    tasks: SkipValidation[Optional[list[Task]]] = None
    shared_base: bool = False
    # -- who plays the customer, and what a faulty one does
    user: SkipValidation[Any] = None
    user_kwargs: Optional[dict[str, Any]] = None
    on_user_fault: FaultMode = "flag"
    fault_reviewer: SkipValidation[Any] = None
    fault_reviewer_kwargs: Optional[dict[str, Any]] = None
    # -- what the agent sees and may send
    policy: Optional[str] = None
    tools: Optional[list[str]] = None
    parser: SkipValidation[Any] = "auto"
    perturb: SkipValidation[Any] = None
    max_turns: int = Field(MAX_TURNS, ge=1)
    max_tool_errors: int = Field(10, ge=1)
    # -- how an episode is paid
    reward: SkipValidation[Union[str, Any]] = "task"
    judge: SkipValidation[Any] = None
    judge_kwargs: Optional[dict[str, Any]] = None
    check_models: bool = False


def check_env_options(options: Mapping[str, Any], also: tuple[str, ...] = ()) -> dict[str, Any]:
    """``options`` as env keywords, checked: the same keys, values as the env takes them (``"5"`` for
    ``max_turns`` becomes 5). ``also``: other keys the caller takes (``render_mode``), passed through as they are.

    Raises ValueError with one line per problem: an unknown keyword (with the nearest option's name), a value of
    the wrong type, an unknown split or fault mode.
    """
    ours = {k: v for k, v in options.items() if k not in also}
    try:
        checked = EnvOptions(**ours)
    except ValidationError as exc:
        raise ValueError("invalid env options:\n" + "\n".join(_problems(exc))) from None
    return {k: (getattr(checked, k) if k in ours else v) for k, v in options.items()}


def _problems(exc: ValidationError) -> list[str]:
    known = list(EnvOptions.model_fields)
    lines = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else "options"
        if error["type"] == "extra_forbidden":
            lines.append(f"- {name}: no env takes this keyword{did_you_mean(name, known)}")
        else:
            lines.append(f"- {name}: {error['msg'].removeprefix('Value error, ')}")
    return lines
