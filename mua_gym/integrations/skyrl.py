"""SkyRL-gym adapter: each mua_gym domain as a SkyRL ``BaseTextEnv`` (skyrl-gym 0.4).

Ids: ``mua_<domain>`` (``mua_retail``, ``mua_airline``, ``mua_telecom``, ``mua_mock``, and ``mua_<name>`` for
a plugin domain), registered with ``skyrl_gym.register`` by :func:`register` (idempotent). Call it in the
process that makes the envs (SkyRL's entrypoint, before training starts); importing this module registers
nothing.

SkyRL builds one env per trajectory: ``skyrl_gym.make(id, env_config=..., extras=row)``, then
``init(prompt)`` and ``step(model_text)`` until ``done``.

- ``env_config`` (a dict or omegaconf config, SkyRL's ``environment.skyrl_gym.<id>``): keywords of
  :class:`mua_gym.MuaEnv` (``user``, ``user_kwargs``, ``world``, ``world_params``, ``split``, ``reward``,
  ``parser``, ``max_tool_errors``, ``judge``...), plus ``tools_in_prompt`` (default True: the tool schemas and
  the ``<tool_call>`` format are appended to the system message, since SkyRL renders the chat template
  without ``tools=``).
- ``extras`` (the dataset row less ``prompt`` and ``env_class``): ``task_id`` names the task (also read from
  ``extras["extra_info"]``); without it, ``seed`` draws one from the configured split; with neither the env
  refuses to build (ValueError), since a GRPO group must share its task. ``max_turns`` (set by SkyRL from
  ``generator.max_turns``) caps the agent's turns.
- ``init(prompt)`` ignores the row's prompt and returns the env's own opening (system policy, the user's first
  message) and metadata (``task_id``, ``domain``, ``tools``). :func:`dataset_rows` makes rows whose prompt is
  that opening, so SkyRL's prompt-length filter measures the real thing.
- ``step(text)``: the raw model text (Hermes ``<tool_call>`` blocks, a bare JSON call, or words to the user);
  the observations are the new tool and user messages (none once ``done``), the reward is the task's reward on
  the terminal step and 0.0 before, and ``metadata`` is the env's step info. Nothing the model writes raises:
  an unreadable action comes back as one ``Error: ...`` tool message.
- A void episode (:attr:`mua_gym.AsyncMuaEnv.void`: the user failed, or broke its scenario under
  ``on_user_fault="void"``) ends ``done`` at reward 0.0 with ``metadata["void"]`` (the reason) on its last step
  (and in ``init``'s metadata where it is void from the opening), and ``get_metrics()["void"]`` is 1.0. skyrl-gym's
  step contract has no way to drop or mask a trajectory (``BaseTextEnvStepOutput``: ``observations``, ``reward``
  a float, ``done``, ``metadata``, ``postprocessed_action``; skyrl_gym/envs/base_text_env.py:9-14), so SkyRL trains
  on it as a 0.0 unless the generator filters trajectories whose last metadata has ``void``.
"""

from __future__ import annotations

import json
from typing import Any

from mua_gym.env.gym_env import MuaEnv
from mua_gym.integrations import plain_config, require, void_reason
from mua_gym.messages import refusal_messages

__all__ = ["MuaTextEnv", "PREFIX", "dataset_rows", "env_ids", "register", "tools_prompt"]

_skyrl = require("skyrl_gym.envs.base_text_env", "skyrl")

#: SkyRL ids are ``PREFIX + domain name``.
PREFIX = "mua_"
_ENTRY_POINT = f"{__name__}:MuaTextEnv"
_DEFAULT_MAX_TURNS = 30


def env_ids() -> dict[str, str]:
    """The SkyRL id of every mua_gym domain: ``{"mua_retail": "retail", ...}``."""
    import mua_gym

    return {PREFIX + name: name for name in mua_gym.available_domains()}


def register() -> list[str]:
    """Registers every domain with ``skyrl_gym`` (ids already there are left as they are); returns the ids."""
    import skyrl_gym

    ids = env_ids()
    for env_id, domain in ids.items():
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=_ENTRY_POINT, kwargs={"domain": domain})
    return list(ids)


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The system-message section that shows the model its tools and the Hermes call format."""
    schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return ("\n\n# Tools\n\nThese functions are available; each is described by a JSON schema:\n<tools>\n"
            f"{schemas}\n</tools>\n\nTo call a function, write its name and arguments as one JSON object "
            'between <tool_call> and </tool_call>:\n<tool_call>\n{"name": "<function name>", "arguments": '
            "{<arguments>}}\n</tool_call>\nA reply without a tool call is sent to the customer.")


class MuaTextEnv(_skyrl.BaseTextEnv):  # type: ignore[misc, name-defined]
    """One mua_gym episode as a SkyRL text env; see the module docstring for ``env_config`` and ``extras``."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None, domain: str = "mock") -> None:
        super().__init__()
        config = plain_config(env_config)
        extras = dict(extras or {})
        info = extras.get("extra_info") if isinstance(extras.get("extra_info"), dict) else {}
        self.task_id: str | None = extras.get("task_id", info.get("task_id"))
        self.seed: int | None = extras.get("seed", info.get("seed"))
        if self.task_id is None and self.seed is None:
            raise ValueError(f"{PREFIX}{domain} needs extras['task_id'] (or extras['seed'] to draw a task): "
                             "put a task_id column in the dataset (see mua_gym.integrations.skyrl.dataset_rows)")
        self.tools_in_prompt = bool(config.pop("tools_in_prompt", True))
        configured = config.pop("max_turns", _DEFAULT_MAX_TURNS)
        self.max_turns = int(extras.get("max_turns") or configured)
        self.env = MuaEnv(domain, max_turns=self.max_turns, **config)
        self._last_info: dict[str, Any] = {}
        self._reward = 0.0

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Resets the episode; returns (the opening messages, ``{"task_id", "domain", "tools"}``, and ``void``
        where the episode is void from the opening)."""
        options = {"task_id": self.task_id} if self.task_id is not None else None
        observation, info = self.env.reset(seed=self.seed, options=options)
        self.turns, self._reward, self._last_info = 0, 0.0, {}
        messages = [dict(m) for m in observation]
        if self.tools_in_prompt and messages and messages[0].get("role") == "system":
            messages[0]["content"] = messages[0]["content"] + tools_prompt(info["tools"])
        metadata = {"task_id": info["task_id"], "domain": info["domain"], "tools": info["tools"]}
        void = void_reason(self.env, info)
        if void is not None:
            metadata["void"] = void
        return messages, metadata

    def step(self, action: str) -> Any:
        """One agent turn; returns ``BaseTextEnvStepOutput`` (observations, reward, done, metadata)."""
        self.turns += 1
        observation, reward, terminated, truncated, info = self.env.step(action)
        done = bool(terminated or truncated)
        if not observation and not done and "error" in info:  # the model must see why nothing happened
            observation = refusal_messages(info["error"])
        self._reward, self._last_info = float(reward), info
        return _skyrl.BaseTextEnvStepOutput(observations=[] if done else observation, reward=float(reward),
                                            done=done, metadata=info)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's figures: reward, turns, tool calls and errors, how it ended, and ``void`` (1.0 for a void
        episode, else 0.0)."""
        info = self._last_info
        return {"reward": self._reward, "turns": info.get("turn", 0), "tool_calls": info.get("tool_calls", 0),
                "tool_errors": info.get("tool_errors", 0), "termination_reason": info.get("termination_reason"),
                "void": float(self.env is not None and void_reason(self.env, info) is not None)}

    def close(self) -> None:
        """Closes the underlying mua_gym env; a second call does nothing."""
        if self.env is not None:
            self.env.close()
            self.env = None  # type: ignore[assignment]


def dataset_rows(domain: str, split: str = "train", env_config: dict[str, Any] | None = None,
                 limit: int | None = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows for a domain's tasks: ``{"prompt": opening messages, "env_class": id, "task_id": ...}``.

    ``env_config`` must be the one the trainer uses (its user writes the opening); ``limit`` keeps the first tasks.
    """
    config = dict(env_config or {}, split=split)
    env = MuaEnv(domain, **{k: v for k, v in config.items() if k not in ("tools_in_prompt", "max_turns")})
    try:
        tasks = env.core.tasks(split)[:limit]
    finally:
        env.close()
    rows = []
    for task in tasks:
        text_env = MuaTextEnv(config, {"task_id": task.id}, domain=domain)
        try:
            prompt, _ = text_env.init()
        finally:
            text_env.close()
        rows.append({"prompt": prompt, "env_class": PREFIX + domain, "task_id": task.id})
    return rows
