"""verl adapter (verl 0.9): a mua_gym episode as a verl agent loop, registered as ``"mua_gym"``.

:class:`MuaAgentLoop` is an ``AgentLoopBase`` that verl's ``AgentLoopWorker`` builds (through hydra) for each
dataset row whose ``agent_name`` is ``"mua_gym"``. Its ``run`` plays one episode on token ids:

- The row names the episode in ``extra_info``: ``env_id`` (``"mua/Retail-v0"``), ``task_id``, and optionally
  ``seed`` and ``env_kwargs`` (merged over the loop's own). :func:`dataset_rows` makes such rows.
- The env is reset on the task; its opening (system policy, the user's first message) and tools are rendered
  with the tokenizer's chat template (:class:`mua_gym.integrations.chat_tokens.ChatTokens`). Each turn the server
  manager generates from the ids so far; the generated ids are kept verbatim (mask 1); their text goes to
  ``env.step`` (Hermes ``<tool_call>`` blocks run as calls, other text goes to the simulated user); the env's
  tool and user messages are appended (mask 0), followed by the generation prompt.
- It ends when the episode does, or when the response reaches ``rollout.response_length`` tokens (each
  generation is capped at what is left; tool and user tokens past the budget are cut). ``reward_score`` is set,
  so verl's reward loop is skipped: the env's reward for an episode that ended (0.0 if it was truncated: turn
  or error limits, a failing user), and for one the budget stopped, the world as it stands scored as a terminal
  step scores it (:meth:`mua_gym.AsyncMuaEnv.finish`): the calls made count, nothing more.
- Output: ``prompt_ids``, ``response_ids``, ``response_mask`` (1 exactly on generated tokens),
  ``response_logprobs`` (when the server returns them; 0.0 on tokens the model did not write), ``num_turns``
  (the conversation's messages after the system message), ``metrics`` (``generate_sequences`` and
  ``tool_calls``: seconds spent generating and in the env), and ``extra_fields["reward_extra_info"]`` with
  ``mua_reward``, ``mua_cut`` (1.0: the budget stopped it), ``mua_truncated``, ``mua_turns``,
  ``mua_tool_errors`` and ``mua_void`` (numbers verl logs per data source).
- A void sample, when there is no episode to learn from: the episode is void (:attr:`mua_gym.AsyncMuaEnv.void`:
  its user failed, or broke its scenario under ``on_user_fault="void"``), at the reset or at any later step, or
  the opening is longer than ``rollout.prompt_length`` (an LLM user's opening can run longer than
  ``dataset_rows`` measured). The output is the prompt and one padding token with ``response_mask`` 0 (whatever
  the model generated before the episode went void is dropped), ``reward_score`` 0.0 and ``mua_void`` 1.0, and a
  warning names the reason (``user_error``, ``user_fault`` or ``prompt_too_long``) and why. The masked token
  gives no gradient; verl's own GRPO would still count its 0.0 in its group's mean, so train with
  ``algorithm.adv_estimator=mua_grpo`` (:mod:`mua_gym.integrations.verl_advantage`), which leaves it out.

verl builds loops in its Ray workers, where this module is not imported: name the loop to them with
``actor_rollout_ref.rollout.agent.agent_loop_config_path`` pointing at the file :func:`write_agent_loop_config`
writes (it can carry ``env_kwargs``: ``user``, ``world_params``, ``max_turns``, ``on_user_fault``...). Nothing
the model writes (nor a failing or faulty user, nor an over-long prompt) raises here; only a row without
``env_id``/``task_id`` does.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from uuid import uuid4

import mua_gym
from mua_gym.integrations.chat_tokens import ChatTokens
from mua_gym.env import AsyncMuaEnv
from mua_gym.env.options import check_env_options
from mua_gym.integrations import plain_config, require, void_reason
from mua_gym.messages import refusal_messages

__all__ = ["AGENT_NAME", "MuaAgentLoop", "dataset_rows", "write_agent_loop_config"]

_agent_loop = require("verl.experimental.agent_loop.agent_loop", "verl")
logger = logging.getLogger(__name__)

#: The ``agent_name`` of the loop, in verl's registry and in dataset rows.
AGENT_NAME = "mua_gym"


@_agent_loop.register(AGENT_NAME)
class MuaAgentLoop(_agent_loop.AgentLoopBase):  # type: ignore[misc, name-defined]
    """One mua_gym episode per ``run``; see the module docstring. ``env_kwargs``: keywords of
    :class:`mua_gym.AsyncMuaEnv` for every episode (a row's ``extra_info["env_kwargs"]`` overrides them)."""

    def __init__(self, *args: Any, env_kwargs: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env_kwargs = check_env_options(plain_config(env_kwargs))
        self.response_length = int(self.rollout_config.response_length)
        self.prompt_length = int(self.rollout_config.prompt_length)

    async def run(self, sampling_params: dict[str, Any], **row: Any) -> Any:
        """Plays the row's task; returns verl's ``AgentLoopOutput`` (see the module docstring)."""
        extra = plain_config(row.get("extra_info"))
        if not extra.get("env_id") or not extra.get("task_id"):
            raise ValueError("a mua_gym row needs extra_info['env_id'] and extra_info['task_id'] "
                             "(see mua_gym.integrations.verl.dataset_rows)")
        env = mua_gym.make_async(str(extra["env_id"]), **{**self.env_kwargs, **plain_config(extra.get("env_kwargs"))})
        try:
            return await self._play(env, extra, dict(sampling_params))
        finally:
            await env.aclose()

    async def _play(self, env: AsyncMuaEnv, extra: dict[str, Any], sampling_params: dict[str, Any]) -> Any:
        observation, info = await env.reset(seed=extra.get("seed"), options={"task_id": str(extra["task_id"])})
        tokens = ChatTokens(self.tokenizer, observation, tools=info["tools"], **self.apply_chat_template_kwargs)
        void = void_reason(env, info)
        if void is not None:  # the user never opened, or opened off its scenario: nothing to learn from
            return self._void(tokens.prompt_ids, sampling_params, void)
        if len(tokens.prompt_ids) > self.prompt_length:  # cutting it would train on a prompt the env never gave
            return self._void(tokens.prompt_ids, sampling_params,
                              f"prompt_too_long: the {extra['env_id']} prompt is {len(tokens.prompt_ids)} tokens, "
                              f"over rollout.prompt_length={self.prompt_length}: raise data.max_prompt_length")
        request_id = uuid4().hex
        logprobs: list[float] | None = []
        timing = {"generate_sequences": 0.0, "tool_calls": 0.0}
        truncated, step_info = False, {}
        while not env.done:
            budget = self.response_length - (len(tokens) - tokens.prompt_length)
            if budget <= 0:
                break
            params = dict(sampling_params)  # the server pops keys from what it is given
            params["max_tokens"] = min(budget, int(params.get("max_tokens") or budget))
            started = time.perf_counter()
            output = await self.server_manager.generate(request_id, prompt_ids=list(tokens.ids),
                                                        sampling_params=params)
            timing["generate_sequences"] += time.perf_counter() - started
            before = len(tokens.ids)
            tokens.add_model_tokens(output.token_ids)
            logprobs = _extend(logprobs, output.log_probs, len(output.token_ids), len(tokens.ids) - before)
            text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            started = time.perf_counter()
            observation, _, _, truncated, step_info = await env.step(text)
            timing["tool_calls"] += time.perf_counter() - started
            if env.done:
                break
            if not observation and "error" in step_info:  # the model must see why nothing happened
                observation = refusal_messages(step_info["error"])
            before = len(tokens.ids)
            tokens.add_messages(observation)
            logprobs = _extend(logprobs, [], 0, len(tokens.ids) - before)
        void = void_reason(env, step_info)
        if void is not None:  # the user failed or faulted mid-episode: the model's turns are judged on nothing
            return self._void(tokens.prompt_ids, sampling_params, void)
        cut_short = not env.done
        score = await env.finish("response_length")  # the env's reward, or the world as the budget left it
        cut = self.response_length
        return _agent_loop.AgentLoopOutput(
            prompt_ids=tokens.prompt_ids,
            response_ids=tokens.response_ids[:cut],
            response_mask=tokens.response_mask[:cut],
            response_logprobs=logprobs[:cut] if logprobs else None,
            reward_score=score,
            num_turns=len(env.agent_messages()) - 1,
            metrics=timing,
            extra_fields={"reward_extra_info": {
                "mua_reward": score, "mua_cut": float(cut_short), "mua_truncated": float(truncated),
                "mua_turns": float(step_info.get("turn", 0)), "mua_tool_errors": float(step_info.get("tool_errors", 0)),
                "mua_void": 0.0,
            }},
        )

    def _void(self, prompt_ids: list[int], sampling_params: dict[str, Any], why: str) -> Any:
        """An ``AgentLoopOutput`` nothing can be learnt from: one padding token, masked out, reward 0.0,
        ``mua_void`` 1.0; the prompt is cut to ``rollout.prompt_length`` (it is never trained on). ``why``: the
        reason, its kind before the first colon (``user_error``, ``user_fault``, ``prompt_too_long``)."""
        logger.warning("mua_gym: a void sample (%s): %s", why.split(":", 1)[0], why)
        filler = self.tokenizer.pad_token_id
        if filler is None:
            filler = self.tokenizer.eos_token_id or 0
        # every sample of a batch must carry logprobs, or none: verl stacks them
        logprobs = [0.0] if sampling_params.get("logprobs") else None
        return _agent_loop.AgentLoopOutput(
            prompt_ids=list(prompt_ids)[:self.prompt_length], response_ids=[int(filler)], response_mask=[0],
            response_logprobs=logprobs, reward_score=0.0, num_turns=0,
            metrics={"generate_sequences": 0.0, "tool_calls": 0.0},
            extra_fields={"reward_extra_info": {
                "mua_reward": 0.0, "mua_cut": 0.0, "mua_truncated": 1.0, "mua_turns": 0.0, "mua_tool_errors": 0.0,
                "mua_void": 1.0,
            }},
        )


def _extend(logprobs: list[float] | None, model: list[float] | None, n_model: int, n_added: int
            ) -> list[float] | None:
    """``logprobs`` grown by ``n_added`` tokens, the first ``n_model`` of them the model's (``model``), the rest
    0.0; None from the first model turn the server gave no logprobs for (they cannot be aligned then)."""
    if logprobs is None or (n_model and not model):
        return None
    return logprobs + list(model or [])[:n_model] + [0.0] * (n_added - n_model)


def dataset_rows(env_id: str, split: str = "train", limit: int | None = None,
                 env_kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """verl dataset rows for the tasks of ``split``: ``prompt`` (the env's opening: what data.max_prompt_length
    filters on), ``agent_name`` (``"mua_gym"``), ``data_source`` (``env_id``) and ``extra_info`` (``env_id``,
    ``task_id``, ``index``). ``env_kwargs`` should be the loop's (its user writes the opening)."""

    env = mua_gym.make(env_id, **{**(env_kwargs or {}), "split": split}).unwrapped
    try:
        rows = []
        for index, task in enumerate(env.core.tasks(split)[:limit]):
            opening, _ = env.reset(options={"task": task})
            rows.append({"prompt": opening, "agent_name": AGENT_NAME, "data_source": env_id,
                         "extra_info": {"env_id": env_id, "task_id": task.id, "index": index}})
        return rows
    finally:
        env.close()


def write_agent_loop_config(path: str, **env_kwargs: Any) -> str:
    """Writes the file for ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` that names this loop to
    verl's workers, with ``env_kwargs`` for every episode; returns ``path``."""
    from omegaconf import OmegaConf

    entry: dict[str, Any] = {"name": AGENT_NAME, "_target_": f"{__name__}.{MuaAgentLoop.__qualname__}"}
    if env_kwargs:
        check_env_options(env_kwargs)  # a typo fails here, where the config is written, not in verl's workers
        entry["env_kwargs"] = env_kwargs
    OmegaConf.save(OmegaConf.create([entry]), path)
    return path
