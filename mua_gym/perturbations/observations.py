"""Observation perturbations: noisy user text, paraphrased user turns, reordered and renamed result fields.

None of them touches a value the user gives when asked for it: a word of the user's facts (a name, an email, an
id, a zip), a word with a digit or a symbol, or a capitalised word is never misspelt or recased, and result
values are never changed (only the order and spelling of the keys around them). The request's own wording may
be: a typo can fall on a word of an item's description ("the Perfume (scent family flroal, ...)"), as a real
user's would, and the agent matches it against what its tools show, as it would a real user's.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from mua_gym.jsonsafe import JSONError, loads
from mua_gym.perturbations.base import Call, EpisodeFacts, Perturbation, chance, register_perturbation

__all__ = ["Paraphrase", "ResultFields", "Typos", "protected_words"]

_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
#: A whitespace-delimited token that is one plain word in punctuation ("order,", "(please)"); a token with
#: anything else in it (an email, an id, a date) is never a word to misspell.
_TOKEN_WORD = re.compile(r"(?<!\S)([(\"']?)([a-z]+)([.,!?;:)\"']*)(?!\S)")
_KEYBOARD_NEIGHBOURS = {
    "a": "qsz", "b": "vgn", "c": "xdv", "d": "sfe", "e": "wrd", "f": "dgr", "g": "fht", "h": "gjy", "i": "uok",
    "j": "hku", "k": "jli", "l": "kop", "m": "nj", "n": "bmh", "o": "ipl", "p": "ol", "q": "wa", "r": "etf",
    "s": "adw", "t": "ryg", "u": "yij", "v": "cbf", "w": "qes", "x": "zcs", "y": "tuh", "z": "xa",
}


def protected_words(facts: EpisodeFacts) -> frozenset[str]:
    """The lower-case words of every value the user's scenario holds (its request's own wording aside)."""
    scenario = facts.task.user_scenario
    words: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            words.update(w.lower() for w in _WORD.findall(value))
        elif isinstance(value, dict):
            for key, inner in value.items():
                if key not in ("says", "category"):
                    walk(inner)
        elif isinstance(value, (list, tuple)):
            for inner in value:
                walk(inner)

    walk(scenario.facts)
    walk(scenario.intents)
    walk(scenario.known_info or "")
    return frozenset(words)


def _may_change(word: str, protected: frozenset[str]) -> bool:
    return len(word) >= 3 and word.islower() and word.isalpha() and word not in protected


def _misspell(word: str, rng: np.random.Generator) -> str:
    at = int(rng.integers(len(word) - 1))
    kind = int(rng.integers(4))
    if kind == 0:  # two letters swapped
        return word[:at] + word[at + 1] + word[at] + word[at + 2:]
    if kind == 1:  # a letter dropped
        return word[:at] + word[at + 1:]
    if kind == 2:  # a letter doubled
        return word[:at] + word[at] + word[at:]
    near = _KEYBOARD_NEIGHBOURS.get(word[at], word[at])  # a neighbouring key hit
    return word[:at] + near[int(rng.integers(len(near)))] + word[at + 1:]


@register_perturbation
class Typos(Perturbation):
    """Misspells and recases some of the user's ordinary words (``rate``: the share of them, about).

    Each episode draws its own rate up to ``rate``; each user message its own words. Casing noise writes a word
    in capitals or with a capital first letter.
    """

    name = "typos"
    family = "observation"

    def __init__(self, rate: float = 0.1, casing: float = 0.3) -> None:
        self.rate, self.casing = chance("rate", rate), chance("casing", casing)
        super().__init__(rate=self.rate, casing=self.casing)
        self._protected: frozenset[str] = frozenset()
        self._episode_rate = 0.0

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        super().begin(rng, facts)
        self._protected = protected_words(facts)
        self._episode_rate = float(rng.uniform(self.rate / 2, self.rate))
        return {"episode_rate": round(self._episode_rate, 4)}

    def user_text(self, text: str) -> str:
        rng, protected = self.rng, self._protected

        def change(match: re.Match[str]) -> str:
            lead, word, trail = match.group(1), match.group(2), match.group(3)
            if not _may_change(word, protected) or rng.random() >= self._episode_rate:
                return match.group(0)
            if rng.random() < self.casing:
                word = word.upper() if rng.random() < 0.5 else word.capitalize()
            else:
                word = _misspell(word, rng)
            return lead + word + trail

        return _TOKEN_WORD.sub(change, text)


#: Phrases the simulated users say, each with ways to say it otherwise (matched case-sensitively, whole).
_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Yes, please go ahead.", ("Yes, go ahead.", "Sure, please do that.", "Yes please, proceed.", "Okay, do it.")),
    ("No, please don't do that.", ("No, I don't want that.", "No thanks, please don't.", "No, leave it as it is.")),
    ("What exactly will you do? Please tell me the details first.",
     ("Before I say yes, what exactly are you going to do?", "Can you tell me the details first?")),
    ("I'm not sure; I've told you what I know.", ("I don't know more than I told you.", "Sorry, that's all I know.")),
    ("Thank you.", ("Thanks.", "Thanks a lot.", "Great, thank you.")),
    ("One more thing:", ("Also,", "Another thing:", "Oh, and one more:")),
    ("My email is", ("The email on my account is", "My email address is", "You can reach me at")),
    ("My user id is", ("My user ID is", "The user id on my account is")),
    ("zip code", ("zip", "postal code", "ZIP code")),
    ("Please use", ("I'd like to use", "Let's use")),
    ("It's order", ("That's order", "The order is")),
    ("It's reservation", ("That's reservation", "The reservation is")),
    ("I'd like to", ("I want to", "I would like to", "Could you")),
    ("I want to", ("I'd like to", "I need to")),
    ("Can you", ("Could you", "Would you")),
    ("Hi!", ("Hello!", "Hey there!", "Good morning!")),
    ("Hi.", ("Hello.", "Hey.")),
)
_FILLERS = ("Okay. ", "Well, ", "Um, ", "Right. ")
_PHRASE = re.compile("|".join(re.escape(p) for p, _ in _PHRASES))
_OTHER_WAYS = dict(_PHRASES)


@register_perturbation
class Paraphrase(Perturbation):
    """Says the user's turns otherwise, from templates: known phrases swapped for others of the same meaning
    (``rate``: the chance of each swap), and now and then a filler word in front (``fillers``)."""

    name = "paraphrase"
    family = "observation"

    def __init__(self, rate: float = 0.7, fillers: float = 0.2) -> None:
        self.rate, self.fillers = chance("rate", rate), chance("fillers", fillers)
        super().__init__(rate=self.rate, fillers=self.fillers)

    def user_text(self, text: str) -> str:
        rng = self.rng

        def swap(match: re.Match[str]) -> str:
            if rng.random() >= self.rate:
                return match.group(0)
            ways = _OTHER_WAYS[match.group(0)]
            return ways[int(rng.integers(len(ways)))]

        said = _PHRASE.sub(swap, text)
        lead = len(said) - len(said.lstrip())
        if said.strip() and rng.random() < self.fillers:
            said = said[:lead] + _FILLERS[int(rng.integers(len(_FILLERS)))] + said[lead:]
        return said


_SNAKE = re.compile(r"^[a-z]+(?:_[a-z]+)+$")  # a field name: no digit (a key with one is a value: an id)


def _renamed(key: str, style: str) -> str:
    if not _SNAKE.match(key):
        return key
    words = key.split("_")
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    return "-".join(words)  # kebab


@register_perturbation
class ResultFields(Perturbation):
    """Reorders the keys of the agent's JSON tool results (``reorder``: the chance per object) and spells field
    names in another style for the episode (``rename``: the chance the episode renames; camelCase, PascalCase or
    kebab-case). Values and list orders stay, and so do keys that are values: one with a digit (an id), and one
    the agent may have to send back (a word of the policy, a parameter's name at any depth of a tool's schema, as
    airline's passengers' ``first_name``, or a string of a schema's ``enum``, as airline's cabins)."""

    name = "result_fields"
    family = "observation"

    def __init__(self, reorder: float = 0.5, rename: float = 0.5) -> None:
        self.reorder, self.rename = chance("reorder", reorder), chance("rename", rename)
        super().__init__(reorder=self.reorder, rename=self.rename)
        self._style: str | None = None
        self._kept: frozenset[str] = frozenset()
        self._kept_for: tuple[str, list[dict[str, Any]], frozenset[str]] | None = None

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        super().begin(rng, facts)
        styles = ("camel", "pascal", "kebab")
        self._style = styles[int(rng.integers(3))] if rng.random() < self.rename else None
        if self._style is not None:
            self._kept = self._words_kept(facts.policy, facts.tool_schemas)
        return {"style": self._style}

    def _words_kept(self, policy: str, schemas: list[dict[str, Any]]) -> frozenset[str]:
        """The field-like words of the policy and the schemas' own words; worked out again only where the env's
        (shared, read-only) policy or schema list is another object than last episode's."""
        last = self._kept_for
        if last is not None and last[0] is policy and last[1] is schemas:
            return last[2]
        kept = frozenset(_WORD_OR_FIELD.findall(policy)) | _schema_words(schemas)
        self._kept_for = (policy, schemas, kept)
        return kept

    def _change(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._change(v) for v in value]
        if not isinstance(value, dict):
            return value
        items = []
        for key, inner in value.items():
            if self._style is not None and key not in self._kept:
                renamed = _renamed(key, self._style)
                key = key if renamed in value else renamed  # never two keys made one
            items.append((key, self._change(inner)))
        if len(items) > 1 and self.rng.random() < self.reorder:
            items = [items[i] for i in self.rng.permutation(len(items))]
        return dict(items)

    def tool_result(self, call: Call, text: str) -> str:
        if not text.startswith(("{", "[")):
            return text
        try:
            changed = self._change(loads(text))
        except (JSONError, RecursionError):  # not JSON, or nested deeper than a rewrite may go: left as it is
            return text
        # written as the tool wrote it: json.dumps's spacing, or pydantic's compact UTF-8
        spaced = '": ' in text or '":' not in text
        return json.dumps(changed, ensure_ascii=text.isascii(), separators=(", ", ": ") if spaced else (",", ":"))


_WORD_OR_FIELD = re.compile(r"[a-z]+(?:_[a-z]+)+")


def _schema_words(schemas: list[dict[str, Any]]) -> frozenset[str]:
    """Every property name and every string of every ``enum`` in ``schemas``."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "enum" and isinstance(inner, list):
                    found.update(v for v in inner if isinstance(v, str))
                    continue
                if key == "properties" and isinstance(inner, dict):
                    found.update(inner)
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(schemas)
    return frozenset(found)
