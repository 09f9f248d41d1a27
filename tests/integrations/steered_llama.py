"""A tiny, randomly initialised Llama whose sampling can be steered onto scripted replies, for trainer tests.

``SteeredLlama`` is a real ``LlamaForCausalLM`` (its weights get gradients, its logits come from its layers);
``steer(tokenizer, scripts)`` adds a large bias to the logit of the next scripted token at the last position,
so that sampling plays the script while the model, its generation and its training step stay TRL's own.

A script is a list of model turns (text, ending with the end-of-turn token) for the conversation whose prompt
contains its key. Turn ``k`` is the ``k``-th reply after the prompt; past the last turn the model is left to
its random weights, or steered onto ``after`` if given. A key may instead hold several scripts (branches) that
differ in their first turn: the rows of a batch take them in turn by row index (so the rollouts of a GRPO
group play different branches), and each rollout then keeps the branch its first turn chose. With a KV cache, a forward sees only the newest token:
the model keeps each row's sequence from the last prefill on.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

#: How far the scripted token's logit is raised: its sampled probability is 1 - 5e4 * e^-60 in effect.
STEER = 60.0


class SteeredLlama(LlamaForCausalLM):
    def steer(self, tokenizer: Any, scripts: dict[str, Any], after: str | None = None) -> "SteeredLlama":
        self._tokenizer = tokenizer
        self._turn_open = tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False)
        self._end = tokenizer.convert_tokens_to_ids("<|im_end|>")

        def ids(turns: list[str]) -> list[list[int]]:
            return [tokenizer.encode(t, add_special_tokens=False) for t in turns]

        self._scripts = {key: [ids(b) for b in (value if value and isinstance(value[0], list) else [value])]
                         for key, value in scripts.items()}
        self._after = tokenizer.encode(after, add_special_tokens=False) if after else None
        self._keys: dict[int, str | None] = {}
        self._history: list[list[int]] = []
        self.steered_tokens = 0
        return self

    def _branches_of(self, ids: list[int], first_turn: int) -> list[list[list[int]]]:
        prompt_hash = hash(tuple(ids[:first_turn]))
        if prompt_hash not in self._keys:
            text = self._tokenizer.decode(ids[:first_turn])
            self._keys[prompt_hash] = next((k for k in self._scripts if k in text), None)
        key = self._keys[prompt_hash]
        return self._scripts[key] if key is not None else []

    def _next_token(self, ids: list[int], row: int) -> int | None:
        width = len(self._turn_open)
        starts = [i + width for i in range(len(ids) - width + 1) if ids[i:i + width] == self._turn_open]
        if not starts:
            return None
        turn, written = len(starts) - 1, ids[starts[-1]:]
        if turn == 0:  # the branches whose first turn goes on from what has been written
            branches = [b for b in self._branches_of(ids, starts[0]) if b[0][:len(written)] == written]
        else:  # the branch whose first turn was written
            first = ids[starts[0]:_end_of_turn(ids, starts[0], self._end)]
            branches = [b for b in self._branches_of(ids, starts[0]) if b[0] == first]
        if not branches:
            return None
        script = branches[row % len(branches)] if turn == 0 else branches[0]
        target = script[turn] if turn < len(script) else self._after
        if target is None or len(written) >= len(target) or target[:len(written)] != written:
            return None
        return target[len(written)]

    # ``logits_to_keep`` is named so that generation sees it and asks for the last position only.
    def forward(self, input_ids: torch.Tensor | None = None, logits_to_keep: int | torch.Tensor = 0,
                **kwargs: Any) -> Any:
        out = super().forward(input_ids=input_ids, logits_to_keep=logits_to_keep, **kwargs)
        if getattr(self, "_scripts", None) is None or input_ids is None or torch.is_grad_enabled():
            return out  # sampling runs without gradients; a training forward is the model's own
        rows = input_ids.tolist()
        if input_ids.shape[1] > 1 or len(self._history) != len(rows):  # a prefill: the whole sequence
            self._history = rows
        else:  # a cached decoding step: only the newest token
            for history, new in zip(self._history, rows):
                history += new
        for row, ids in enumerate(self._history):
            token = self._next_token(ids, row)
            if token is not None:
                out.logits[row, -1, token] += STEER
                self.steered_tokens += 1
        return out


def _end_of_turn(ids: list[int], start: int, end: int) -> int:
    """Where the model turn opened at ``start`` ends: just past its end-of-turn token ``end``."""
    try:
        return ids.index(end, start) + 1
    except ValueError:
        return len(ids)


def tiny_llama(tokenizer: Any, seed: int = 0, kind: type = SteeredLlama) -> Any:
    """A 2-layer, 64-wide Llama over the tokenizer's vocabulary, long enough for a whole retail rollout
    (``kind=LlamaForCausalLM``: the plain model, which saves as one)."""
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    return kind(config)
