"""The model being trained by TRL's GRPO loop, evaluated in that loop's own protocol (see
:mod:`mua_gym.integrations.trl`): :class:`PolicyAgent` and :func:`agent_factory`."""

from __future__ import annotations

import hashlib
from typing import Any, Callable

from mua_gym.eval.agents import Agent
from mua_gym.integrations import require
from mua_gym.integrations.trl import TALKING, ToolRecorder, result_text, tool_methods, tools_of

__all__ = ["STOP_REASONS", "PolicyAgent", "agent_factory"]


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
        methods = tool_methods(list(info.get("tools") or []), "the env")
        self._recorder = type("PolicyTools", (ToolRecorder,), methods)()
        self._tools = tools_of(self._recorder)
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
            self._answer(self._waiting, result_text(observation))
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
