"""Token ids and the assistant mask of a conversation that grows turn by turn, for any chat template.

RL on token ids needs two things a chat template alone does not give: ids that only ever grow (re-rendering
the whole conversation each turn can re-tokenize, or rewrite, earlier turns) and a mask that is 1 exactly on
what the model wrote. :class:`ChatTokens` renders each new piece as the difference between two renders of a
fixed short conversation, with and without the piece, so a turn's ids never depend on what came before it:

- the prompt is rendered whole, ending with the generation prompt (mask 0);
- a model turn is appended as the ids the model generated (:meth:`ChatTokens.add_model_tokens`) or as an
  assistant message the template renders (:meth:`ChatTokens.add_assistant`): mask 1, except the template's
  whitespace after the end-of-turn token, which the model never writes (mask 0);
- tool and user messages are rendered together, followed by the generation prompt (mask 0).

A template whose render of the short conversation is not a prefix of its render with the piece added cannot
be split this way; :class:`ChatTokens` then raises ``ValueError`` rather than guess.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from mua_gym.messages import arguments_object
from mua_gym.env.trajectory import ChatExample

__all__ = ["ChatTokens", "template_message", "tokenize_chat"]

# Stand-ins the pieces are rendered after; their text is cut off again.
_USER = {"role": "user", "content": "."}
_ASSISTANT = {"role": "assistant", "content": "."}
# What tool and user messages are rendered after: a model turn, or (for templates such as Qwen 3's, which render
# the last model turn differently from earlier ones) a user turn.
_CONTEXTS = ([_USER, _ASSISTANT], [_USER])
# What a model turn is rendered after.
_ASSISTANT_CONTEXT = [_USER]


def template_message(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat dict as chat templates expect it: text content never None, call arguments as dicts."""
    out = dict(message)
    if out.get("content") is None:
        out["content"] = ""
    if out.get("tool_calls"):
        calls = []
        for call in out["tool_calls"]:
            function = dict(call.get("function") or {})
            if isinstance(function.get("arguments"), str):
                function["arguments"] = arguments_object(function["arguments"])
            calls.append({**call, "function": function})
        out["tool_calls"] = calls
    return out


class ChatTokens:
    """The ids of one conversation and its mask, extended turn by turn.

    ``ids`` and ``mask`` have the same length; ``mask[i]`` is 1 exactly where ``ids[i]`` is a model token.
    ``prompt_ids`` are the ids of the opening messages and the generation prompt; ``response_ids`` and
    ``response_mask`` are everything after them (what verl-style trainers call the response).
    """

    def __init__(self, tokenizer: Any, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 **template_kwargs: Any) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template (set tokenizer.chat_template)")
        self.tokenizer = tokenizer
        self.tools = tools or None
        self.template_kwargs = template_kwargs
        self.ids: list[int] = []
        self.mask: list[int] = []
        self._append(self._render([template_message(m) for m in messages], True), 0)
        self.prompt_length = len(self.ids)
        self._renders: dict[tuple[int, bool], str] = {}  # the stand-in histories' renders, made once
        self._piece_tools = self.tools
        if self.tools and self._tools_change_pieces() is False:
            self._piece_tools = None  # later turns render without the schemas: most of a render's cost
        self._end_of_turn: int | None = None
        self._model_tail = self._model_frame()

    # -- what the conversation holds ---------------------------------------------------------------
    @property
    def prompt_ids(self) -> list[int]:
        return self.ids[:self.prompt_length]

    @property
    def response_ids(self) -> list[int]:
        return self.ids[self.prompt_length:]

    @property
    def response_mask(self) -> list[int]:
        return self.mask[self.prompt_length:]

    def __len__(self) -> int:
        return len(self.ids)

    # -- growing it --------------------------------------------------------------------------------
    def add_model_tokens(self, token_ids: Iterable[int]) -> None:
        """Appends what the model generated, verbatim (mask 1), then closes the turn as the template does (mask 0):
        the whitespace after the end-of-turn token, and before it the end-of-turn token itself where the model
        did not write it (cut by a length limit, or a server that strips stop tokens), so that the next messages
        sit where the template puts them.
        """
        ids = [int(i) for i in token_ids]
        self.ids += ids
        self.mask += [1] * len(ids)
        if self._end_of_turn is not None and (not ids or ids[-1] != self._end_of_turn):
            self.ids.append(self._end_of_turn)
            self.mask.append(0)
        self._append(self._model_tail, 0)

    def add_assistant(self, message: dict[str, Any]) -> None:
        """Appends an assistant message as the template renders it after the generation prompt (mask 1 on the
        model's part: its text, calls and end-of-turn token; 0 on the whitespace the template adds after)."""
        before = self._stand_in(_ASSISTANT_CONTEXT, True)
        after = self._render([*_ASSISTANT_CONTEXT, template_message({**message, "role": "assistant"})], False,
                             self._piece_tools)
        piece = _suffix(before, after, "an assistant turn")
        body = piece.rstrip()
        self._append(body, 1)
        self._append(piece[len(body):], 0)

    def add_messages(self, messages: Sequence[dict[str, Any]]) -> None:
        """Appends tool and user messages (mask 0), then the generation prompt for the model's next turn."""
        if not messages:
            return
        pieces = [template_message(m) for m in messages]
        for base in _CONTEXTS:  # the first stand-in history the template renders stably (see _CONTEXTS)
            before = self._stand_in(base, False)
            after = self._render([*base, *pieces], True, self._piece_tools)
            if after.startswith(before):
                self._append(after[len(before):], 0)
                return
        _suffix("", "", "tool or user messages", stable=False)

    # -- internals ---------------------------------------------------------------------------------
    _KEEP: Any = object()

    def _render(self, messages: list[dict[str, Any]], generation_prompt: bool, tools: Any = _KEEP) -> str:
        text = self.tokenizer.apply_chat_template(messages, tools=self.tools if tools is self._KEEP else tools,
                                                  tokenize=False, add_generation_prompt=generation_prompt,
                                                  **self.template_kwargs)
        if not isinstance(text, str):
            raise ValueError("apply_chat_template(tokenize=False) did not return text")
        return text

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def _append(self, text: str, flag: int) -> None:
        ids = self._encode(text)
        self.ids += ids
        self.mask += [flag] * len(ids)

    def _stand_in(self, base: list[dict[str, Any]], generation_prompt: bool) -> str:
        key = (id(base), generation_prompt)
        if key not in self._renders:
            self._renders[key] = self._render(base, generation_prompt, self._piece_tools)
        return self._renders[key]

    def _tools_change_pieces(self) -> bool | None:
        """Whether a turn renders differently after a history with the tool schemas than after one without them
        (None: the probe itself does not split; the turns will say so)."""
        probe = [{"role": "tool", "tool_call_id": "probe", "content": "."}, {"role": "user", "content": "."}]
        pieces = []
        for tools in (self.tools, None):
            base = _CONTEXTS[0]
            before, after = self._render(base, False, tools), self._render([*base, *probe], True, tools)
            if not after.startswith(before):
                return None
            pieces.append(after[len(before):])
        return pieces[0] != pieces[1]

    def _model_frame(self) -> str:
        """The whitespace the template puts after a model turn's end-of-turn token (which it notes)."""
        before = self._stand_in(_ASSISTANT_CONTEXT, True)
        after = self._render([*_ASSISTANT_CONTEXT, _ASSISTANT], False, self._piece_tools)
        piece = _suffix(before, after, "an assistant turn")
        body = piece.rstrip()
        ids = self._encode(body)
        self._end_of_turn = ids[-1] if ids else None
        return piece[len(body):]


def _suffix(before: str, after: str, what: str, stable: bool = True) -> str:
    if not stable or not after.startswith(before):
        raise ValueError(f"the chat template renders earlier turns differently once {what} follows; "
                         "its ids cannot be built turn by turn")
    return after[len(before):]


def tokenize_chat(tokenizer: Any, chat: ChatExample, **template_kwargs: Any) -> ChatTokens:
    """The ids and mask of a whole recorded episode (``Trajectory.to_chat()``): the messages before its first
    trainable one are the prompt; trainable messages are model turns, the rest are rendered as context."""
    first = next((i for i, t in enumerate(chat.trainable) if t), len(chat.messages))
    tokens = ChatTokens(tokenizer, chat.messages[:first], chat.tools, **template_kwargs)
    pending: list[dict[str, Any]] = []
    for message, trainable in zip(chat.messages[first:], chat.trainable[first:]):
        if trainable:
            tokens.add_messages(pending)
            pending = []
            tokens.add_assistant(message)
        else:
            pending.append(message)
    tokens.add_messages(pending)
    return tokens
