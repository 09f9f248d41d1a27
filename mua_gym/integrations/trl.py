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
- A void episode (:attr:`mua_gym.AsyncMuaEnv.void`: the user failed, or broke its scenario under
  ``on_user_fault="void"``, at the reset or at any later step) has ``get_reward()`` return None, which TRL 1.16
  leaves out of training: ``GRPOTrainer._calculate_rewards`` turns None into NaN (trl/trainer/grpo_trainer.py:1630),
  a row whose every reward is NaN is "unscorable" (:2759) and left out of its group's mean and std (:2764-2770), and
  its advantage is set to 0 (:2810), so with the default ``beta=0.0`` its tokens add nothing to the loss (with
  ``beta > 0`` the KL term still pulls them toward the reference model). TRL logs a warning for it. Other
  ``reward_funcs`` must return None for it too (each gets ``environments``: check ``environments[i].void``), or
  the row is scored on them.

A user-side env (``mua/Retail-User-v0``: the model plays the customer, :mod:`mua_gym.eval.user_side`) works the
same way with the roles turned: :func:`dataset` gives each row its customer's scenario as the system message,
``reset`` returns a cue to open, ``send_message_to_agent(message)`` returns the agent's reply, the customer's own
tools (telecom's phone) are the other methods, and ``get_reward()`` is the fidelity reward (a rollout TRL stops
before the customer ended the conversation fails its ``stop`` component, so it earns 0.0).

Two more jobs in the same protocol live beside this module, and are reached through it too
(``mua_trl.PolicyAgent``): :mod:`mua_gym.integrations.trl_policy` evaluates the model being trained
(:class:`~mua_gym.integrations.trl_policy.PolicyAgent` plays an env the way this loop does: the same prompt, tools,
token sequence, tool-call parser and stopping rules; ``agent_factory`` makes one per episode for the eval engine),
and :mod:`mua_gym.integrations.trl_sft` turns a scripted agent's solved episodes into supervised rows in this
protocol (``demonstrations``: a cold start for a model that never calls a tool on its own).
"""

from __future__ import annotations

import inspect
from typing import Any

from mua_gym.integrations import require, void_reason
from mua_gym.integrations.tool_functions import tool_method

__all__ = ["SEND_MESSAGE", "SEND_TO_AGENT", "TALKING", "dataset", "environment_factory"]

#: Names this module gives from its sibling modules, imported when first asked for (they import this one).
_ELSEWHERE = {"PolicyAgent": "trl_policy", "agent_factory": "trl_policy", "STOP_REASONS": "trl_policy",
              "demonstrations": "trl_sft"}

#: The tool that carries the agent's words to the simulated user.
SEND_MESSAGE = "send_message_to_user"
#: What the system prompt adds to the domain's policy: how this loop's agent reaches the user.
TALKING = (
    "\n\n# Talking with the user\n"
    f"Everything you say to the user goes through the `{SEND_MESSAGE}` tool: its result is the user's reply. "
    "The other tools act on the systems. When the conversation is over, answer without calling any tool."
)

_OVER = "The conversation is over: answer without calling any tool."
#: The tool that carries the customer's words to the agent, in a user-side env.
SEND_TO_AGENT = "send_message_to_agent"
#: What the customer's system message adds in a user-side env, and the cue ``reset`` returns.
TALKING_AS_USER = (
    "\n\n# Talking with the agent\n"
    f"Everything you say to the support agent goes through the `{SEND_TO_AGENT}` tool: its result is the agent's "
    "reply. Your other tools act on your own device. When the conversation is over, answer without calling any tool."
)
_OPEN = "(You are connected to a support agent: write your first message to them.)"


def result_text(observation: list[dict[str, Any]], error: str = "") -> str:
    """What a tool returns to the model for one env step: the new messages' texts, or the env's error."""
    return "\n".join(str(m.get("content") or "") for m in observation) or error


class _EnvHolder:
    """What every generated class shares: its env. TRL sees public methods as tools, so helpers stay private."""

    _env_id: str
    _make_kwargs: dict[str, Any]

    def __init__(self) -> None:
        import mua_gym

        self._env = mua_gym.make(self._env_id, **self._make_kwargs).unwrapped
        self._reward: float | None = None

    @property
    def env(self) -> Any:
        """The env this instance plays (its ``trajectory()`` records the episode)."""
        return self._env

    def _start(self, row: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
        """Resets the env onto ``row["task_id"]`` (seeded by ``row["seed"]`` if the row has one)."""
        if "task_id" not in row:
            raise KeyError("each dataset row needs a 'task_id' (mua_gym.integrations.trl.dataset makes them)")
        self._reward = None
        return self._env.reset(seed=row.get("seed"), options={"task_id": str(row["task_id"])})

    def _play(self, action: Any) -> str:
        """One env step; its new messages as text (or the env's error), with a note once the episode is over."""
        if self._env.done:
            return _OVER
        observation, _, terminated, truncated, info = self._env.step(action)
        text = result_text(observation, str(info.get("error", "")))
        return f"{text}\n({_OVER})" if terminated or truncated else text


class _MuaToolEnv(_EnvHolder):
    """An agent env as TRL tools: the domain's, and ``send_message_to_user``."""

    def reset(self, **row: Any) -> str:
        """Starts the episode of ``row["task_id"]`` (seeded by ``row["seed"]`` if the row has one: the same seed,
        the same user); returns the user's opening message."""
        observation, info = self._start(row)
        void = void_reason(self._env, info)
        if void is not None:  # ended here, so the tools only say it is over; get_reward leaves the rollout out
            self._env.finish()
            return f"(the conversation could not start: {void})"
        return str(observation[-1]["content"])

    def get_reward(self) -> float | None:
        """The episode's reward (a rollout TRL stopped early is scored as the world stands), or None for a void
        episode: TRL leaves a rollout whose every reward is None out of training (see the module docstring)."""
        if self.void is not None:
            return None
        if self._reward is None:
            self._reward = self._env.finish()
        return self._reward

    @property
    def void(self) -> str | None:
        """Why this rollout's episode is void (``"user_error: ..."``, ``"user_fault: ..."``), or None."""
        return void_reason(self._env)

    def send_message_to_user(self, message: str) -> str:
        """Send a message to the user and get their reply.

        Args:
            message: What to say to the user.
        """
        return self._play({"role": "assistant", "content": str(message)})

    def _run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return self._play({"name": name, "arguments": arguments})


class _MuaUserToolEnv(_EnvHolder):
    """A user-side env as TRL tools: the model is the customer (see the module docstring)."""

    def reset(self, **row: Any) -> str:
        """Starts the episode of ``row["task_id"]``; returns the cue to open (the scenario is in the prompt)."""
        self._start(row)
        return _OPEN

    def get_reward(self) -> float | None:
        """The fidelity reward (a rollout TRL stopped first is ended as it stands), or None for a void episode."""
        if self._reward is None:
            self._reward = self._env.finish()
        return None if self.void is not None else self._reward

    @property
    def void(self) -> str | None:
        """Why this rollout's episode is void (the agent failed), or None."""
        return self._env.core.void

    def send_message_to_agent(self, message: str) -> str:
        """Send a message to the support agent and get their reply.

        Args:
            message: What to say to the agent.
        """
        return self._play(str(message))

    def _run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        call = {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}
        return self._play({"role": "assistant", "content": "", "tool_calls": [call]})


def _is_user_side(env_id: str) -> bool:
    import gymnasium

    import mua_gym  # noqa: F401  (registers the ids)

    return gymnasium.spec(env_id).entry_point == "mua_gym.eval.user_side:UserEnv"


def environment_factory(env_id: str, **make_kwargs: Any) -> type:
    """The class to pass as ``GRPOTrainer(environment_factory=...)`` for ``env_id``.

    TRL calls it with no arguments, once per concurrent rollout. Its public methods are the tools: one per
    tool of the domain (the signature, types and Google-style docstring come from the tool's schema) and
    ``send_message_to_user``; ``reset(**row)`` and ``get_reward()`` are as the module docstring says.
    ``make_kwargs`` go to ``mua_gym.make`` (``user=``, ``max_turns=``, ``world=``, ...); every episode step
    counts as one env turn, so a long rollout may want a larger ``max_turns``.

    TRL reads the tools once per class, so the action family of a ``perturb=`` (distractor tools, reworded
    descriptions, cost notes) cannot change per episode here: its perturbations are made static (seed 0 unless
    the spec says ``:static=N``), the class's methods are that variant's tools, and a distractor's method is
    refused by the env as in any episode. The other families still draw per episode.
    """
    require("trl", "trl")
    import mua_gym

    if _is_user_side(env_id):
        probe = mua_gym.make(env_id, **make_kwargs).unwrapped
        try:
            schemas = list(probe.core.core._user_tool_schemas or [])
        finally:
            probe.close()
        methods = {s["function"]["name"]: tool_method(s) for s in schemas}
        if SEND_TO_AGENT in methods or set(methods) & set(dir(_MuaUserToolEnv)):
            raise ValueError(f"{env_id}'s user tools clash with the adapter's own methods")
        name = "Mua" + "".join(ch for ch in env_id.split("/")[-1] if ch.isalnum()) + "Env"
        return type(name, (_MuaUserToolEnv,), {**methods, "_env_id": env_id, "_make_kwargs": dict(make_kwargs),
                                               "__doc__": f"TRL environment over {env_id}, the model as the customer."})
    make_kwargs = _with_static_tools(make_kwargs)
    probe = mua_gym.make(env_id, **make_kwargs).unwrapped
    try:
        schemas = list(probe.core.static_tools())
    finally:
        probe.close()
    methods = tool_methods(schemas, env_id)
    name = "Mua" + "".join(ch for ch in env_id.split("/")[-1].split("-")[0] if ch.isalnum()) + "Env"
    return type(name, (_MuaToolEnv,), {**methods, "_env_id": env_id, "_make_kwargs": dict(make_kwargs),
                                       "__doc__": f"TRL environment over {env_id} (see mua_gym.integrations.trl)."})


def _with_static_tools(make_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``make_kwargs`` with the action perturbations of its ``perturb=`` made static (seed 0 where not already)."""
    from mua_gym.perturbations import made_static, make_perturbations

    stack = make_perturbations(make_kwargs.get("perturb"))
    if stack is None:
        return make_kwargs
    made_static([item for item in stack.items if item.family == "action" and item.static is None], 0)
    return {**make_kwargs, "perturb": stack}


def tool_methods(schemas: list[dict[str, Any]], label: str) -> dict[str, Any]:
    """One method per domain tool, as the TRL class carries them; ValueError where a name is the adapter's own."""
    names = {s["function"]["name"] for s in schemas}
    if SEND_MESSAGE in names:
        raise ValueError(f"{label} has a tool named {SEND_MESSAGE!r}, which this adapter reserves for talking")
    clash = names & set(dir(_MuaToolEnv))
    if clash:
        raise ValueError(f"{label}'s tools {sorted(clash)} clash with the adapter's own methods")
    return {s["function"]["name"]: tool_method(s) for s in schemas}


def dataset(env_id: str, split: str = "train", **make_kwargs: Any) -> Any:
    """A ``datasets.Dataset`` for ``env_id``'s ``split``: one row per task, columns ``prompt`` and ``task_id``.

    ``prompt`` is ``[system: the policy + how to talk to the user, user: ""]``; TRL appends the user's opening
    message (what ``reset`` returns) to the empty user message. Repeat or shuffle it as any dataset.
    """
    datasets = require("datasets", "trl")
    import mua_gym

    if _is_user_side(env_id):
        return _user_dataset(env_id, split, make_kwargs)
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


def _user_dataset(env_id: str, split: str, make_kwargs: dict[str, Any]) -> Any:
    """Rows for a user-side env: each task's customer scenario (as its LLM user reads it) as the system message."""
    datasets = require("datasets", "trl")
    import mua_gym
    from mua_gym.user_sims.llm import scenario_text
    from mua_gym.user_sims.persona import resolve_persona

    env = mua_gym.make(env_id, **make_kwargs).unwrapped
    try:
        tasks = list(env.core.core.tasks(split))
    finally:
        env.close()
    if not tasks:
        raise ValueError(f"{env_id} has no tasks in split {split!r}")
    return datasets.Dataset.from_dict({
        "prompt": [[{"role": "system", "content": scenario_text(t, resolve_persona(t, "task", None)) + TALKING_AS_USER},
                    {"role": "user", "content": ""}] for t in tasks],
        "task_id": [t.id for t in tasks],
    })


class ToolRecorder(_MuaToolEnv):
    """The TRL class's tools without an env: a call records the action it would step (``_recorded``) instead."""

    def __init__(self) -> None:
        self._recorded: dict[str, Any] | None = None

    def _play(self, action: dict[str, Any]) -> str:
        self._recorded = action
        return ""


def tools_of(instance: _MuaToolEnv) -> list[Any]:
    """The instance's tools as TRL lists them: its class's public functions by name, reset and get_reward left out."""
    return [getattr(instance, name) for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


def __getattr__(name: str) -> Any:
    """``PolicyAgent``, ``agent_factory``, ``STOP_REASONS`` and ``demonstrations`` from the modules that hold them."""
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(f"mua_gym.integrations.{_ELSEWHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
