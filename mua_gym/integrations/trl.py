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

Evaluating the model being trained in the same protocol: :class:`PolicyAgent` is a :class:`mua_gym.eval.agents.Agent`
that plays a mua_gym env the way this loop plays it (the same prompt, tools, token sequence, tool-call parser and
stopping rules); :func:`agent_factory` makes one per episode for the eval engine. :func:`demonstrations` turns a
scripted agent's solved episodes into supervised rows in this same protocol: a cold start for a model that never
calls a tool on its own.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any, Callable

from mua_gym.eval.agents import Agent
from mua_gym.integrations import require, void_reason
from mua_gym.tool_functions import tool_method

__all__ = ["SEND_MESSAGE", "TALKING", "PolicyAgent", "agent_factory", "dataset", "demonstrations",
           "environment_factory"]

#: The tool that carries the agent's words to the simulated user.
SEND_MESSAGE = "send_message_to_user"
#: What the system prompt adds to the domain's policy: how this loop's agent reaches the user.
TALKING = (
    "\n\n# Talking with the user\n"
    f"Everything you say to the user goes through the `{SEND_MESSAGE}` tool: its result is the user's reply. "
    "The other tools act on the systems. When the conversation is over, answer without calling any tool."
)

_OVER = "The conversation is over: answer without calling any tool."


def _result_text(observation: list[dict[str, Any]], error: str = "") -> str:
    """What a tool returns to the model for one env step: the new messages' texts, or the env's error."""
    return "\n".join(str(m.get("content") or "") for m in observation) or error


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

    def _play(self, action: dict[str, Any]) -> str:
        """One env step; its new messages as text (or the env's error), with a note once the episode is over."""
        if self._env.core.done:
            return _OVER
        observation, _, terminated, truncated, info = self._env.step(action)
        text = _result_text(observation, str(info.get("error", "")))
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

    TRL reads the tools once per class, so the action family of a ``perturb=`` (distractor tools, reworded
    descriptions, cost notes) cannot change per episode here: its perturbations are made static (seed 0 unless
    the spec says ``:static=N``), the class's methods are that variant's tools, and a distractor's method is
    refused by the env as in any episode. The other families still draw per episode.
    """
    require("trl", "trl")
    import mua_gym

    make_kwargs = _with_static_tools(make_kwargs)
    probe = mua_gym.make(env_id, **make_kwargs).unwrapped
    try:
        schemas = list(probe.core.static_tools())
    finally:
        probe.close()
    methods = _tool_methods(schemas, env_id)
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


def _tool_methods(schemas: list[dict[str, Any]], label: str) -> dict[str, Any]:
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


class _ToolRecorder(_MuaToolEnv):
    """The TRL class's tools without an env: a call records the action it would step (``_recorded``) instead."""

    def __init__(self) -> None:
        self._recorded: dict[str, Any] | None = None

    def _play(self, action: dict[str, Any]) -> str:
        self._recorded = action
        return ""


def _tools_of(instance: _MuaToolEnv) -> list[Any]:
    """The instance's tools as TRL lists them: its class's public functions by name, reset and get_reward left out."""
    return [getattr(instance, name) for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


#: Why a :class:`PolicyAgent` ended its episode, as TRL would have ended the rollout.
STOP_REASONS = ("no_tool_call", "max_new_tokens", "max_tool_calling_iterations", "max_completion_length",
                "max_model_length")


class PolicyAgent(Agent):
    """A local Hugging Face causal LM playing a mua_gym env exactly as :class:`trl.GRPOTrainer` plays it here.

    The conversation is TRL's: the system message is the env's policy + :data:`TALKING`, the user message is the
    user's opening (what the TRL class's ``reset`` returns), the tools are the TRL class's methods (the domain's
    plus ``send_message_to_user``) and every later user reply arrives as that tool's result. The token sequence is
    TRL's too: the first prompt is ``apply_chat_template(..., tools=..., add_generation_prompt=True)`` (TRL's
    training template where the tokenizer's is not prefix-preserving); each later one is the sequence so far, the
    model's tokens as generated, and the tool messages' tokens as TRL cuts them from the template. Replies are
    parsed with TRL's ``parse_response`` (its response schema is added to a tokenizer that has none, as TRL does).

    Actions: a ``send_message_to_user`` call becomes a plain assistant message; any other call the TRL class
    would run becomes ``{"name": ..., "arguments": ...}``, the action its method would step; several calls in a
    reply are stepped one by one, in order. A call TRL answers without the env (an unknown tool, arguments that do
    not fit) is answered here the same way, with TRL's ``{"error": ...}`` text, and the model goes on.

    Each reply is at most ``max_new_tokens`` tokens where that is set: the cap GRPOTrainer puts on every
    generation when its ``generation_kwargs`` hold ``max_new_tokens`` (without it, each reply may run to what is
    left of ``max_completion_length``).

    Ending: a reply without a tool call (malformed output included: TRL's parser reads it as text; a reply cut
    at ``max_new_tokens`` that holds no call ends with that reason instead), more than
    ``max_tool_calling_iterations`` rounds of calls, a completion past ``max_completion_length`` tokens (model
    tokens and tool results, as TRL counts them) or a sequence at the model's ``max_position_embeddings`` ends
    the episode as TRL ends the rollout: ``stopped`` becomes True, ``stop_reason`` says which (one of
    :data:`STOP_REASONS`), and the driver is to score the world as it stands (``env.finish()``, as the TRL class's
    ``get_reward`` does; the eval engine does so for any agent whose ``stopped`` is set). ``act`` then returns
    the last reply's text as an assistant message, now and on every later call, for a driver that does not know
    ``stopped``.

    Generation runs under ``torch.no_grad`` on the model's own device, in eval mode (restored after). Sampling
    (``temperature`` > 0; 0 is greedy) is seeded per generation from ``seed`` and the generation's number in the
    episode, inside ``torch.random.fork_rng``: the same seed plays the same episode, whatever else runs between
    generations, and the global RNG is left as it was. Nothing the model writes makes ``act`` raise.

    After each episode: ``messages`` is the conversation in TRL's shape (the prompt, the replies as parsed, the
    tool messages), ``prompt_ids`` the first prompt's tokens and ``token_ids`` the whole sequence so far.
    """

    def __init__(self, model: Any, tokenizer: Any, *, max_completion_length: int = 512,
                 max_tool_calling_iterations: int | None = None, max_new_tokens: int | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0,
                 chat_template_kwargs: dict[str, Any] | None = None) -> None:
        require("trl", "trl")
        from trl.chat_template_utils import (
            add_response_schema, get_training_chat_template, is_chat_template_prefix_preserving,
        )

        if max_completion_length < 1:
            raise ValueError("max_completion_length must be at least 1")
        if max_new_tokens is not None and max_new_tokens < 1:
            raise ValueError("max_new_tokens must be at least 1 (or None: no cap per reply)")
        self.model = model
        self.tokenizer = tokenizer
        self.max_completion_length = max_completion_length
        self.max_tool_calling_iterations = max_tool_calling_iterations
        self.max_new_tokens = max_new_tokens
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.seed = int(seed)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        if all(getattr(tokenizer, name, None) is None for name in ("response_template", "response_schema")):
            add_response_schema(tokenizer)  # what GRPOTrainer does to a tokenizer without one
        # GRPOTrainer renders with its training template where the tokenizer's own is not prefix-preserving.
        self._chat_template = (None if is_chat_template_prefix_preserving(tokenizer)
                               else get_training_chat_template(tokenizer))
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        self._eos = eos if tokenizer.eos_token_id in eos else [tokenizer.eos_token_id, *eos]
        config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        self._max_model_len = getattr(config, "max_position_embeddings", None)
        self.reset({})

    # -- episode state -----------------------------------------------------------------------------
    def reset(self, info: dict[str, Any]) -> None:
        """Forgets the last episode; ``info["tools"]`` (the env's schemas) become the TRL class's tools."""
        methods = _tool_methods(list(info.get("tools") or []), "the env")
        self._recorder = type("PolicyTools", (_ToolRecorder,), methods)()
        self._tools = _tools_of(self._recorder)
        self._callables = {tool.__name__: tool for tool in self._tools}
        self.messages: list[dict[str, Any]] = []
        self.prompt_ids: list[int] = []
        self.token_ids: list[int] = []
        self.stopped = False
        self.stop_reason: str | None = None
        self.generations = 0
        self._calls: list[Any] = []  # the current reply's calls not yet answered
        self._answers: list[dict[str, Any]] = []  # the current reply's tool messages so far
        self._waiting: str | None = None  # the call whose answer the next observation brings
        self._rounds = 0
        self._last_text = ""

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        """The next env action (see the class docstring): an assistant message or one tool call."""
        if self.stopped:
            return self._final()
        if not self.prompt_ids:
            self._open(observation)
            if self._reply(self.prompt_ids):
                return self._final()
        elif self._waiting is not None:
            self._answer(self._waiting, _result_text(observation))
            self._waiting = None
        return self._advance()

    # -- TRL's loop, one env action at a time ------------------------------------------------------
    def _open(self, observation: list[dict[str, Any]]) -> None:
        """TRL's prompt: the dataset row's system and empty user message, the user's opening appended."""
        policy = next((str(m.get("content") or "") for m in observation if m.get("role") == "system"), "")
        opening = next((str(m.get("content") or "") for m in reversed(observation) if m.get("role") == "user"), "")
        self.messages = [{"role": "system", "content": policy + TALKING}, {"role": "user", "content": opening}]
        rendered = self.tokenizer.apply_chat_template(
            conversation=[self.messages], tools=self._tools or None, chat_template=self._chat_template,
            add_generation_prompt=True, tokenize=True, return_dict=True, **self.chat_template_kwargs)
        self.prompt_ids = list(rendered["input_ids"][0])
        self.token_ids = list(self.prompt_ids)

    def _advance(self) -> dict[str, Any]:
        """Answers the current reply's calls in order (returning the first that needs the env), then generates."""
        while True:
            while self._calls:
                action = self._run(self._calls.pop(0))
                if action is not None:
                    return action
            if self._continue():
                return self._final()

    def _run(self, call: Any) -> dict[str, Any] | None:
        """One tool call as TRL's loop runs it: the env action its method would step, or None once answered."""
        if not isinstance(call, dict) or call.get("type") != "function":
            kind = call.get("type") if isinstance(call, dict) else type(call).__name__
            name = str(call.get("name", "unknown")) if isinstance(call, dict) else "unknown"
            self._answer(name, str({"error": f"Unsupported tool call type: {kind}"}))
            return None
        function = call.get("function") or {}
        name = function.get("name")
        self._recorder._recorded = None
        try:
            if name not in self._callables:
                raise ValueError(f"Tool {name} not found.")
            self._callables[name](**function.get("arguments"))
        except Exception as exc:  # TRL answers a call that cannot be made with the error, and goes on
            self._answer(str(name), str({"error": str(exc)}))
            return None
        action, self._recorder._recorded = self._recorder._recorded, None
        if action is None:  # no env step (cannot happen with the TRL class's tools; kept total)
            self._answer(str(name), "")
            return None
        self._waiting = str(name)
        return action

    def _answer(self, name: str, content: str) -> None:
        message = {"role": "tool", "name": name, "content": content}
        self._answers.append(message)
        self.messages.append(message)

    def _continue(self) -> bool:
        """After a reply's calls are answered: appends their tokens and generates the next reply, as TRL does.
        True where the episode ends instead."""
        answers, self._answers = self._answers, []
        sequence = self.token_ids + self._tool_suffix(answers)
        overlong = len(sequence) - len(self.prompt_ids) > self.max_completion_length
        if overlong or (self._max_model_len is not None and len(sequence) >= self._max_model_len):
            del self.messages[len(self.messages) - len(answers):]  # TRL drops the answers that did not fit
            return self._stop("max_completion_length" if overlong else "max_model_length")
        self._rounds += 1
        self.token_ids = sequence
        return self._reply(sequence)

    def _reply(self, sequence: list[int]) -> bool:
        """Generates a reply to ``sequence`` within the completion budget and parses it; True where it ends the
        episode (no tool call)."""
        budget = self.max_completion_length - (len(sequence) - len(self.prompt_ids))
        cap = budget if self.max_new_tokens is None else min(budget, self.max_new_tokens)
        new = self._generate(sequence, cap) if budget > 0 else []
        self.token_ids = sequence + new
        parsed = self._parse(new, sequence) if new else {}
        if parsed:
            self.messages.append(parsed)
        self._last_text = str(parsed.get("content") or "")
        calls = parsed.get("tool_calls")
        if not calls:
            if not new:
                return self._stop("max_completion_length")
            cut = len(new) == cap < budget and new[-1] not in self._eos
            return self._stop("max_new_tokens" if cut else "no_tool_call")
        limit = self.max_tool_calling_iterations
        if limit is not None and self._rounds >= limit:  # TRL leaves the calls of the reply past its limit unrun
            return self._stop("max_tool_calling_iterations")
        self._calls = list(calls) if isinstance(calls, list) else [calls]
        return False

    def _parse(self, new: list[int], prefix: list[int]) -> dict[str, Any]:
        from trl.chat_template_utils import parse_response

        try:
            parsed = parse_response(self.tokenizer, new, prefix=prefix, tools=self._tools)
        except Exception:  # TRL's own fallback covers ValueError and TypeError; any other failure reads as text too
            parsed = {"role": "assistant", "content": self.tokenizer.decode(new, skip_special_tokens=True)}
        return parsed if isinstance(parsed, dict) else {"role": "assistant", "content": str(parsed)}

    def _generate(self, sequence: list[int], budget: int) -> list[int]:
        """The model's next tokens after ``sequence`` (at most ``budget``), up to and with the first end token."""
        import torch

        device = _device(self.model)
        inputs = torch.tensor([sequence], device=device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self._eos[0]
        sample = self.temperature > 0
        options: dict[str, Any] = {"max_new_tokens": budget, "do_sample": sample, "pad_token_id": pad,
                                   "bos_token_id": self.tokenizer.bos_token_id, "eos_token_id": self._eos}
        if sample:
            options.update(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k)
        self.generations += 1
        digest = hashlib.sha256(f"{self.seed}\0{self.generations}".encode()).digest()
        training = self.model.training
        self.model.eval()
        try:
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else [],
                                       device_type=device.type), torch.no_grad():
                torch.manual_seed(int.from_bytes(digest[:8], "big") >> 1)
                out = self.model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs),
                                          generation_config=_generation_config(options))
        finally:
            self.model.train(training)
        new = out[0, inputs.shape[1]:].tolist()
        ends = [i for i, token in enumerate(new) if token in self._eos]
        return new[:ends[0] + 1] if ends else new

    def _tool_suffix(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        """The tokens the template puts after a tool-calling turn for ``tool_messages``, up to the next assistant
        turn: the same cut TRL makes (a one-call conversation rendered with and without them, the shorter one ended
        at its last end-of-turn token)."""
        before = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}]}]
        render = self.tokenizer.apply_chat_template
        prefix = list(render(before, add_generation_prompt=False, tokenize=True, chat_template=self._chat_template,
                             return_dict=False, **self.chat_template_kwargs))
        full = list(render(before + tool_messages, add_generation_prompt=True, tokenize=True,
                           chat_template=self._chat_template, return_dict=False, **self.chat_template_kwargs))
        ends = [i for i, token in enumerate(prefix) if token == self.tokenizer.eos_token_id]
        if ends:
            prefix = prefix[:ends[-1] + 1]
        if full[:len(prefix)] != prefix:
            raise ValueError("the chat template does not render a tool turn as a continuation of the conversation")
        return full[len(prefix):]

    def _stop(self, reason: str) -> bool:
        self.stopped, self.stop_reason = True, reason
        return True

    def _final(self) -> dict[str, Any]:
        return {"role": "assistant", "content": self._last_text}


def _device(model: Any) -> Any:
    import torch

    device = getattr(model, "device", None)
    return device if isinstance(device, torch.device) else next(model.parameters()).device


def _generation_config(options: dict[str, Any]) -> Any:
    from transformers import GenerationConfig

    return GenerationConfig(**options, disable_compile=True)


def agent_factory(model: Any, tokenizer: Any, **agent_kwargs: Any) -> Callable[[Any, int], PolicyAgent]:
    """``(task, seed) -> PolicyAgent``: one agent per episode over the one model, seeded by the episode's seed
    (``agent_kwargs`` as :class:`PolicyAgent` takes them). What the eval engine's agent factory hook expects."""

    def make(task: Any, seed: int) -> PolicyAgent:
        return PolicyAgent(model, tokenizer, seed=seed, **agent_kwargs)

    return make


def demonstrations(env_id: str, task_ids: list[str], *, agent: str = "fair", seed: int = 0,
                   **make_kwargs: Any) -> list[dict[str, Any]]:
    """Supervised rows of a scripted agent's solved episodes, in exactly the conversation GRPO's loop builds here:
    the cold start that lets a model too weak to call a tool at all begin to earn rewards.

    Each task of ``task_ids`` is played once by ``agent`` (``fair``: it asks the user for every value before using
    it; ``oracle``: it uses the gold values unasked) on ``mua_gym.make(env_id, **make_kwargs)``, with the episode
    seed ``seed``; its actions are then replayed, with the same seed, through the :func:`environment_factory`
    class, so every tool result and user reply is the text that class returns. A row: ``messages`` (the
    dataset's system message, the user's opening, each action as a tool call, with ``send_message_to_user`` for
    words to the user, each result as a tool message, and an empty closing answer, as the loop ends), ``tools``
    (the class's tools' JSON schemas, as one JSON string, the form TRL's SFTTrainer decodes) and ``task_id``.
    Only episodes whose replay earns a task reward of 1.0 are kept. The loop's budgets are not applied: a row may
    be longer than ``max_completion_length`` (which counts tool results too) or hold more rounds of calls than
    ``max_tool_calling_iterations`` allows, where the loop would cut it; checking them is the caller's.
    """
    import json

    import mua_gym
    from mua_gym.eval.agents import make_agent
    from transformers.utils import get_json_schema

    factory = environment_factory(env_id, **make_kwargs)
    env = mua_gym.make(env_id, **make_kwargs).unwrapped
    player = factory()
    rows = []
    try:
        system = {"role": "system", "content": env.core.policy + TALKING}
        schemas = json.dumps([get_json_schema(tool) for tool in _tools_of(player)])
        for task_id in task_ids:
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            scripted = make_agent(agent, task=env.core.task, seed=seed)
            scripted.reset(info)
            actions = []
            while not env.core.done and void_reason(env, info) is None:
                action = scripted.act(observation)
                actions.append(action)
                observation, _, _, _, info = env.step(action)
            messages = [system, {"role": "user", "content": player.reset(task_id=task_id, seed=seed)}]
            for action in actions:
                calls = action.get("tool_calls") or []
                if calls:
                    name = calls[0]["function"]["name"]
                    arguments = json.loads(calls[0]["function"]["arguments"])
                    result = getattr(player, name)(**arguments)
                else:
                    name, arguments = SEND_MESSAGE, {"message": str(action.get("content") or "")}
                    result = player.send_message_to_user(**arguments)
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": name, "arguments": arguments}}]})
                messages.append({"role": "tool", "name": name, "content": result})
            messages.append({"role": "assistant", "content": ""})
            player.get_reward()  # scores the replay (the episode has ended, or ends here as TRL would end it)
            if player.env.trajectory().task_reward == 1.0:
                rows.append({"messages": messages, "tools": schemas, "task_id": task_id})
    finally:
        env.close()
        player.env.close()
    return rows
