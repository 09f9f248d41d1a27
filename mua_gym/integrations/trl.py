"""TRL: ``GRPOTrainer(environment_factory=...)`` on a mua_gym env.

    from trl import GRPOConfig, GRPOTrainer
    from mua_gym.integrations import trl as mua_trl

    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=mua_trl.dataset("mua/Retail-v0"),
                          environment_factory=mua_trl.environment_factory("mua/Retail-v0"))

TRL owns the agent loop: it generates, calls the tools the model asked for, appends their results and
generates again, and ends a rollout at the first reply without tool calls. There are no user turns in that
loop, so talking is a tool here too: ``send_message_to_user(message)`` hands the text to the env's simulated
user and returns the user's reply. Every other tool is one of the domain's own, with the domain's schema.

How the pieces meet:

- :func:`dataset` has a ``prompt`` column (the domain's policy as the system message, plus how to talk to
  the user; then an empty user message) and a ``task_id`` column, one row per task of the split.
- TRL builds one instance of the :func:`environment_factory` class per rollout and reuses it across batches;
  ``reset(**row)`` puts its env on ``row["task_id"]`` (so every rollout of a GRPO group plays one task) and
  returns the user's opening message, which TRL appends to the empty user message. Nothing of the last
  episode is left.
- ``get_reward()`` returns the episode's reward. When TRL stops a rollout before the episode ended (the model
  answered without a tool call, ``max_tool_calling_iterations``, ``max_completion_length``), the world as it
  stands is scored with the same reward as a terminal step (:meth:`mua_gym.MuaEnv.finish`): a task half
  done scores as such, and on a task where an untouched world would already be paid (some of TAU2's need
  no write) a cut rollout earns 0.0.
"""

from __future__ import annotations

from typing import Any

from mua_gym.integrations import require
from mua_gym.tool_functions import tool_method

__all__ = ["SEND_MESSAGE", "TALKING", "dataset", "environment_factory"]

#: The tool that carries the agent's words to the simulated user.
SEND_MESSAGE = "send_message_to_user"
#: What the system prompt adds to the domain's policy: how this loop's agent reaches the user.
TALKING = (
    "\n\n# Talking with the user\n"
    f"Everything you say to the user goes through the `{SEND_MESSAGE}` tool: its result is the user's reply. "
    "The other tools act on the systems. When the conversation is over, answer without calling any tool."
)

_OVER = "The conversation is over: answer without calling any tool."


class _MuaToolEnv:
    """What every generated class shares; TRL sees its public methods as tools, so helpers stay private."""

    _env_id: str
    _make_kwargs: dict[str, Any]

    def __init__(self) -> None:
        import mua_gym

        self._env = mua_gym.make(self._env_id, **self._make_kwargs).unwrapped
        self._reward: float | None = None

    def reset(self, **row: Any) -> str:
        """Starts the episode of ``row["task_id"]`` (seeded by ``row["seed"]`` if the row has one: the same seed,
        the same user); returns the user's opening message."""
        if "task_id" not in row:
            raise KeyError("each dataset row needs a 'task_id' (mua_gym.integrations.trl.dataset makes them)")
        self._reward = None
        observation, info = self._env.reset(seed=row.get("seed"), options={"task_id": str(row["task_id"])})
        if "user_error" in info:  # the episode is void; the rollout scores 0.0
            self._reward = self._env.finish()
            return f"(the user could not start: {info['user_error']})"
        return str(observation[-1]["content"])

    def get_reward(self) -> float:
        """The episode's reward; a rollout TRL stopped early is scored as the world stands."""
        if self._reward is None:
            self._reward = self._env.finish()
        return self._reward

    def send_message_to_user(self, message: str) -> str:
        """Send a message to the user and get their reply.

        Args:
            message: What to say to the user.
        """
        return self._play({"role": "assistant", "content": str(message)})

    def _run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return self._play({"name": name, "arguments": arguments})

    def _play(self, action: dict[str, Any]) -> str:
        """One env step; its new messages as text (or the env's error), with a note once the episode is over."""
        if self._env.core.done:
            return _OVER
        observation, _, terminated, truncated, info = self._env.step(action)
        text = "\n".join(str(m.get("content") or "") for m in observation) or str(info.get("error", ""))
        return f"{text}\n({_OVER})" if terminated or truncated else text

    @property
    def env(self) -> Any:
        """The :class:`mua_gym.MuaEnv` this instance plays (its ``trajectory()`` records the episode)."""
        return self._env


def environment_factory(env_id: str, **make_kwargs: Any) -> type:
    """The class to pass as ``GRPOTrainer(environment_factory=...)`` for ``env_id``.

    TRL calls it with no arguments, once per concurrent rollout. Its public methods are the tools: one per
    tool of the domain (the signature, types and Google-style docstring come from the tool's schema) and
    ``send_message_to_user``; ``reset(**row)`` and ``get_reward()`` are as the module docstring says.
    ``make_kwargs`` go to ``mua_gym.make`` (``user=``, ``max_turns=``, ``world=``, ...); every episode step
    counts as one env turn, so a long rollout may want a larger ``max_turns``.
    """
    require("trl", "trl")
    import mua_gym

    probe = mua_gym.make(env_id, **make_kwargs).unwrapped
    try:
        schemas = list(probe.core.tool_schemas)
    finally:
        probe.close()
    names = {s["function"]["name"] for s in schemas}
    if SEND_MESSAGE in names:
        raise ValueError(f"{env_id} has a tool named {SEND_MESSAGE!r}, which this adapter reserves for talking")
    methods: dict[str, Any] = {s["function"]["name"]: tool_method(s) for s in schemas}
    clash = names & set(dir(_MuaToolEnv))
    if clash:
        raise ValueError(f"{env_id}'s tools {sorted(clash)} clash with the adapter's own methods")
    name = "Mua" + "".join(ch for ch in env_id.split("/")[-1].split("-")[0] if ch.isalnum()) + "Env"
    return type(name, (_MuaToolEnv,), {**methods, "_env_id": env_id, "_make_kwargs": dict(make_kwargs),
                                       "__doc__": f"TRL environment over {env_id} (see mua_gym.integrations.trl)."})


def dataset(env_id: str, split: str = "train", **make_kwargs: Any) -> Any:
    """A ``datasets.Dataset`` for ``env_id``'s ``split``: one row per task, columns ``prompt`` and ``task_id``.

    ``prompt`` is ``[system: the policy + how to talk to the user, user: ""]``; TRL appends the user's opening
    message (what ``reset`` returns) to the empty user message. Repeat or shuffle it as any dataset.
    """
    datasets = require("datasets", "trl")
    import mua_gym

    env = mua_gym.make(env_id, **make_kwargs).unwrapped
    try:
        policy = env.core.policy
        task_ids = [task.id for task in env.core.tasks(split)]
    finally:
        env.close()
    if not task_ids:
        raise ValueError(f"{env_id} has no tasks in split {split!r}")
    system = {"role": "system", "content": policy + TALKING}
    return datasets.Dataset.from_dict({
        "prompt": [[system, {"role": "user", "content": ""}] for _ in task_ids],
        "task_id": task_ids,
    })
