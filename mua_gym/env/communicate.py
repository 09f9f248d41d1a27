"""COMMUNICATE: did the agent tell the user each required value? Judged two ways.

- :func:`missing_parity`, as tau2 judges it: a required string is told if it occurs, case-insensitive and with
  commas dropped, anywhere in any assistant text, a message that also carries tool calls included. Kept for
  evaluations compared with published tau2 figures.
- :func:`missing_strict`, what training pays (see :mod:`mua_gym.env.reward`): a value is told only by a message the
  user received, that states it as a value and does not bury it among others:

  - delivered: an assistant message without tool calls (the text beside tool calls never reaches the user);
  - stated as a value: the value's tokens occur as whole tokens ("4" is not told by "14" or "0.4", "delayed" not
    by "undelayed"); a number matches its value ("54.30" tells "54.3");
  - one candidate: the message names no rival of the value's kind. A number's rivals are the other numbers
    (counts up to :data:`MAX_COUNT` are no rival of a larger number); a word of one of the domain's answer
    vocabularies (:attr:`mua_gym.domain.Domain.answer_vocabularies`, e.g. flight statuses) has the vocabulary's
    other words as rivals. The task's other required values are never rivals;
  - not a recital: all that was delivered, together, names at most :data:`PASTE_VALUES` distinct values of the tool
    results the agent was shown, besides the required ones and those the task's gold calls take (which an agent
    restates when it confirms a plan). A pasted result names dozens; so does one recited a field a message.

Text is read as tokens in one pass (linear time); each value is then looked up by its first token.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, Sequence

from mua_gym.messages import AssistantMessage, ToolMessage

__all__ = ["MAX_COUNT", "PASTE_VALUES", "delivered_texts", "missing_parity", "missing_strict", "recited",
           "result_values", "tokens"]

#: Integers up to this are counts ("2 items"): no rival of a larger number.
MAX_COUNT = 10
#: The most distinct tool-result values, besides the required ones, a message may name and still answer.
PASTE_VALUES = 6

_TOKEN = re.compile(r"[a-z0-9]+(?:[._\-/:@][a-z0-9]+)*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def tokens(text: str) -> list[str]:
    """``text`` as lower-case tokens: words, numbers and ids (``credit_card_7``, ``2024-05-16``, ``54.30``)."""
    return _TOKEN.findall(text.lower().replace(",", ""))


def _number(token: str) -> float | None:
    return round(float(token), 2) if _NUMBER.fullmatch(token) else None


def _spellings(value: str) -> list[list[str]]:
    """The token sequences that state ``value``: as written, and with underscores read as spaces."""
    found = [tokens(value)]
    if "_" in value:
        found.append(tokens(value.replace("_", " ")))
    return [s for s in found if s]


class _Message:
    """One delivered message, tokenised once: its tokens, positions by token, and its numbers."""

    def __init__(self, text: str) -> None:
        self.tokens = tokens(text)
        self.at: dict[str, list[int]] = {}
        for i, token in enumerate(self.tokens):
            self.at.setdefault(token, []).append(i)
        self.numbers = {n for n in map(_number, self.at) if n is not None}

    def spans(self, spelling: list[str]) -> list[tuple[int, int]]:
        """Where the token sequence ``spelling`` occurs: ``(start, end)`` token positions."""
        n = len(spelling)
        return [(i, i + n) for i in self.at.get(spelling[0], ()) if self.tokens[i:i + n] == spelling]

    def states(self, value: str) -> bool:
        number = _number(value.strip().lower().replace(",", ""))
        if number is not None:
            return number in self.numbers
        return any(self.spans(s) for s in _spellings(value))


def _vocabulary_terms(message: _Message, vocabulary: Sequence[str]) -> set[str]:
    """The terms of ``vocabulary`` ``message`` names, longest first ("economy" is not named by "basic economy")."""
    taken: set[int] = set()
    named: set[str] = set()
    for term in sorted(vocabulary, key=lambda t: -max(len(s) for s in _spellings(t))):
        for spelling in _spellings(term):
            for start, end in message.spans(spelling):
                if not taken.intersection(range(start, end)):
                    taken.update(range(start, end))
                    named.add(term)
    return named


def _rivalled(message: _Message, value: str, required: set[str], vocabularies: Sequence[Sequence[str]]) -> bool:
    """Whether ``message`` names another candidate of ``value``'s kind (see the module docstring)."""
    number = _number(value.strip().lower().replace(",", ""))
    if number is not None:
        allowed = {n for r in required for n in map(_number, tokens(r)) if n is not None}  # "20" of "20 hours"
        small = number.is_integer() and number <= MAX_COUNT
        return any(n not in allowed and (small or not (n.is_integer() and n <= MAX_COUNT)) for n in message.numbers)
    key = value.strip().lower()
    for vocabulary in vocabularies:
        if key in (v.lower() for v in vocabulary):
            lowered = [v.lower() for v in vocabulary]
            return bool(_vocabulary_terms(message, lowered) - {r.strip().lower() for r in required})
    return False


def result_values(messages: Sequence[Any]) -> set[str]:
    """Every one-token leaf value of the tool results the agent was shown (a result that is not JSON: itself)."""
    found: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage) and m.requestor == "assistant" and not m.error:
            found |= _values_of(m.content)
    return found


#: A JSON string (group 1; a key where a colon follows, group 2) or a number outside strings (group 3).
_JSON_ITEM = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"([ \t\r\n]*:)?|(-?\d+(?:\.\d+)?)')


@functools.lru_cache(maxsize=4096)
def _values_of(content: str) -> frozenset[str]:
    """The one-token leaf values of one tool result, read in one pass (cached: rollouts of a task repeat results)."""
    if not content.lstrip().startswith(("{", "[")):
        leaves = [content]
    else:
        leaves = [text if number is None or text else number
                  for text, key, number in (m.groups() for m in _JSON_ITEM.finditer(content)) if not key]
    found = set()
    for leaf in leaves:
        if leaf:
            parts = tokens(leaf)
            if len(parts) == 1:
                found.add(parts[0])
    return frozenset(found)


def delivered_texts(messages: Sequence[Any]) -> list[str]:
    """The text of every assistant message the user received: those with text and no tool calls."""
    return [m.content for m in messages if isinstance(m, AssistantMessage) and m.content and not m.tool_calls]


def missing_strict(required: Sequence[str], messages: Sequence[Any], vocabularies: Sequence[Sequence[str]] = (),
                   restated: Iterable[Any] = ()) -> list[str]:
    """The required values no delivered message states on its own, or all of them where the conversation recites
    the results (see the module docstring). ``restated``: values an agent may repeat freely (the gold calls'
    argument values)."""
    if not required:
        return []
    said = [_Message(t) for t in delivered_texts(messages)]
    if len(recited(required, messages, restated, said)) > PASTE_VALUES:
        return list(required)
    wanted = set(required)
    return [value for value in required
            if not any(m.states(value) and not _rivalled(m, value, wanted, vocabularies) for m in said)]


def recited(required: Sequence[str], messages: Sequence[Any], restated: Iterable[Any] = (),
            said: "Sequence[_Message] | None" = None) -> set[str]:
    """The tool-result values the user was told, besides the ``required`` ones and the ``restated`` ones (more
    than :data:`PASTE_VALUES` is a recital). ``said``: the delivered messages, where already read."""
    said = [_Message(t) for t in delivered_texts(messages)] if said is None else said
    own = {t for r in required for s in _spellings(r) for t in s} | {t for v in restated for t in tokens(str(v))}
    named = set().union(*(m.at for m in said)) if said else set()
    return (named & result_values(messages)) - own


def _normalise(text: str) -> str:
    return text.lower().replace(",", "")


def missing_parity(required: Sequence[str], messages: Sequence[Any]) -> list[str]:
    """The required strings that occur in no assistant text (tau2's rule: a substring, case and commas ignored)."""
    said = [_normalise(m.content) for m in messages if isinstance(m, AssistantMessage) and m.content]
    return [s for s in required if not any(_normalise(s) in t for t in said)]
