"""Action-space perturbations: distractor tools, reworded or misleading descriptions, fake cost notes.

Tool names, parameter names and what each tool does stay true: the agent can still find and call every tool
a task needs, and a distractor's call is refused without touching the world.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from mua_gym.perturbations.base import Call, EpisodeFacts, Perturbation, chance, register_perturbation
from mua_gym.tools import ToolResult

__all__ = ["CostNotes", "DistractorTools", "ToolDescriptions"]

#: Other verbs a tool's name might start with.
_VERBS = {"get": ("fetch", "retrieve"), "find": ("lookup", "search"), "list": ("show", "enumerate"),
          "cancel": ("void", "abort"), "modify": ("edit", "update"), "update": ("modify", "edit"),
          "book": ("reserve",), "send": ("issue",), "calculate": ("compute",), "transfer": ("handoff",),
          "exchange": ("swap",), "return": ("refund",), "search": ("find",), "toggle": ("switch",)}
_REFUSALS = ("tool '{}' is not enabled for this account", "tool '{}' is deprecated and no longer served",
             "tool '{}' is only available to supervisors")


def _function(schema: dict[str, Any]) -> dict[str, Any]:
    return schema.get("function", {})


def _with_function(schema: dict[str, Any], function: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``function`` in place of its own; the rest is shared, as the env shares its clean schemas
    (read-only) across episodes: copying only what changes keeps a perturbed reset cheap."""
    return {**schema, "function": function}


def _variants(name: str) -> list[str]:
    """Names like ``name``: a synonym verb, a version suffix, a legacy prefix."""
    verb, _, rest = name.partition("_")
    out = [f"{other}_{rest}" for other in _VERBS.get(verb, ()) if rest]
    return out + [f"{name}_v2", f"legacy_{name}", f"{name}_batch"]


@register_perturbation
class DistractorTools(Perturbation):
    """Offers ``count`` extra tools per episode, each a near copy of a real one (a similar name, the same
    parameters and description, maybe marked new); calling one is refused with an error and changes nothing."""

    name = "distractor_tools"
    family = "action"

    def __init__(self, count: int = 2) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count is a whole number of 0 or more, not {count!r}")
        self.count = count
        super().__init__(count=self.count)
        self._added: list[tuple[str, dict[str, Any]]] = []  # (the tool copied, the distractor)
        self._refusals: dict[str, str] = {}

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        super().begin(rng, facts)
        taken = {_function(s).get("name") for s in facts.tool_schemas}
        self._added, self._refusals = [], {}
        order = rng.permutation(len(facts.tool_schemas)) if facts.tool_schemas else []
        for index in order[:self.count]:
            original = facts.tool_schemas[int(index)]
            names = [n for n in _variants(_function(original)["name"]) if n not in taken]
            if not names:
                continue
            name = names[int(rng.integers(len(names)))]
            taken.add(name)
            function = {**_function(original), "name": name}
            if rng.random() < 0.5:
                function["description"] = "(New) " + function.get("description", "")
            self._added.append((_function(original)["name"], _with_function(original, function)))
            self._refusals[name] = _REFUSALS[int(rng.integers(len(_REFUSALS)))].format(name)
        return {"added": [_function(s)["name"] for _, s in self._added]}

    def tools(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not self._added:
            return schemas
        merged = list(schemas)
        for original, schema in self._added:  # each right after the tool it copies
            names = [_function(s).get("name") for s in merged]
            merged.insert(names.index(original) + 1 if original in names else len(merged), schema)
        return merged

    def intercept(self, call: Call) -> ToolResult | None:
        refusal = self._refusals.get(call.name)
        if refusal is None:
            return None
        self.event({"turn": call.turn, "tool": call.name, "did": "refused_distractor"})
        return ToolResult.failure(refusal)


#: Rewordings of tool and parameter descriptions: (pattern, replacements); meanings kept. A word with more than
#: one sense in the descriptions ("first": in "first name" too) or a policy's term of art ("explicit") is not one.
_REWORDINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\bGet\b", ("Retrieve", "Fetch", "Look up")),
    (r"\bReturns\b", ("Gives back", "Responds with", "Yields")),
    (r"\bFind\b", ("Look up", "Search for")),
    (r"\bcustomer\b", ("client", "account holder")),
    (r"\be\.g\.", ("for example", "such as")),
)


_COMPILED = tuple((re.compile(pattern), ways) for pattern, ways in _REWORDINGS)


@functools.lru_cache(maxsize=4096)
def _matches(text: str) -> tuple[tuple[int, int, tuple[str, ...]], ...]:
    """Where the rewordings match ``text``: (start, end, the replacements), rewording by rewording, left to right.

    A tool's texts are the same every episode, so each is scanned once. Replacing the matches all at once
    gives what applying the rewordings one after another would, because no replacement matches any pattern
    (a test holds this)."""
    return tuple((m.start(), m.end(), ways) for pattern, ways in _COMPILED for m in pattern.finditer(text))


def _reword(text: str, rng: np.random.Generator) -> str:
    # drawn in the order of the matches (as the one-after-another rewording drew), placed left to right
    chosen = sorted((start, end, ways[int(rng.integers(len(ways)))]) for start, end, ways in _matches(text))
    pieces, at = [], 0
    for start, end, word in chosen:
        pieces += [text[at:start], word]
        at = end
    return "".join(pieces) + text[at:] if pieces else text


def _reworded_parameters(parameters: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """``parameters`` with each property's description reworded, in the properties' order (new dicts only
    where a description changes)."""
    properties = parameters.get("properties")
    if not properties:
        return parameters
    out = {}
    for key, prop in properties.items():
        if isinstance(prop.get("description"), str):
            prop = {**prop, "description": _reword(prop["description"], rng)}
        out[key] = prop
    return {**parameters, "properties": out}


@register_perturbation
class ToolDescriptions(Perturbation):
    """Rewords tool and parameter descriptions (``paraphrase``: the chance per tool) and misleads: a tool's
    description swapped with another tool's (``misleading``: the chance per tool). Names and parameters stay, and
    so does anything a perturbation before it in the stack added to a description (a cost note).

    Its record: ``reworded`` (the tools whose texts it reworded) and ``swapped`` (those given another's
    description)."""

    name = "tool_descriptions"
    family = "action"

    def __init__(self, paraphrase: float = 1.0, misleading: float = 0.3) -> None:
        self.paraphrase, self.misleading = chance("paraphrase", paraphrase), chance("misleading", misleading)
        super().__init__(paraphrase=self.paraphrase, misleading=self.misleading)
        self._changed: dict[str, tuple[str, dict[str, Any]]] = {}  # name: (its clean description, new function)

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        super().begin(rng, facts)
        schemas = facts.tool_schemas
        descriptions = [_function(s).get("description", "") for s in schemas]
        self._changed = {}
        reworded, swapped = [], []
        for i, schema in enumerate(schemas):
            name = _function(schema).get("name", "")
            function = dict(_function(schema))
            touched = False
            if len(schemas) > 1 and rng.random() < self.misleading:
                other = int(rng.integers(len(schemas) - 1))
                other += other >= i
                function["description"] = descriptions[other]
                swapped.append(name)
                touched = True
            if rng.random() < self.paraphrase:
                function["description"] = _reword(function.get("description", ""), rng)
                if "parameters" in function:
                    function["parameters"] = _reworded_parameters(function["parameters"], rng)
                reworded.append(name)
                touched = True
            if touched:
                self._changed[name] = (descriptions[i], function)
        return {"reworded": reworded, "swapped": swapped}

    def tools(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for schema in schemas:
            changed = self._changed.get(_function(schema).get("name", ""))
            if changed is not None:
                clean, function = changed
                now = _function(schema).get("description", "")
                if now != clean and clean and clean in now:  # what came before keeps its additions around the text
                    function = {**function, "description": now.replace(clean, function.get("description", ""), 1)}
                schema = _with_function(schema, function)
            out.append(schema)
        return out


@register_perturbation
class CostNotes(Perturbation):
    """Adds made-up cost and latency notes to tool descriptions (``rate``: the chance per tool)."""

    name = "cost_notes"
    family = "action"

    def __init__(self, rate: float = 1.0) -> None:
        self.rate = chance("rate", rate)
        super().__init__(rate=self.rate)
        self._notes: dict[str, str] = {}

    def begin(self, rng: np.random.Generator, facts: EpisodeFacts) -> dict[str, Any]:
        super().begin(rng, facts)
        self._notes = {}
        for schema in facts.tool_schemas:
            if rng.random() < self.rate:
                cost, latency = float(rng.uniform(0.01, 2.0)), int(rng.integers(40, 3000))
                self._notes[_function(schema).get("name", "")] = (
                    f" (Cost: {cost:.2f} credits per call; typical latency {latency} ms.)")
        return {"annotated": sorted(self._notes)}

    def tools(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for schema in schemas:
            note = self._notes.get(_function(schema).get("name", ""))
            if note is not None:
                function = _function(schema)
                schema = _with_function(schema, {**function, "description": function.get("description", "") + note})
            out.append(schema)
        return out
