"""Baseline agents a fair reward pays nothing: the attacks a reward hacker tries.

Blind agents never call a tool and never read the task, the tools or the policy; they only talk:

- ``greetings``: pleasantries only;
- ``affirmations``: "yes / confirm / done" over and over;
- ``requests``: one request per turn, cycling through every request word and every request the scenario user of
  the episode's domain recognises (read from the domain's ``user_vocabulary`` at reset, so the list stays
  complete), then "anything else?";
- ``mixed``: a greeting, then requests interleaved with affirmations, then "anything else?";
- ``answers``: every answer an information request could have, said at once (each flight status there is, a
  zero amount, a made-up tracking number), so that an answer judged by words alone would be paid.

Semi-blind agents (:data:`EXPLOIT_AGENTS`) make the look-ups a task needs (its gold read calls, read from the task:
a stronger attacker than any policy), then do anything but solve it:

- ``lookup-silence``: say nothing useful; ``lookup-refuse``: refuse politely; ``lookup-confirm``: "yes, done";
- ``lookup-stop``: end the episode (a trainer's cut: the driver calls ``finish``);
- ``lookup-transfer``: transfer to a human agent;
- ``lookup-dump``: paste every tool result to the user; ``lookup-recite``: recite them one field a message;
- ``lookup-hidden``: write every result into the text of a message that carries a tool call (the user never
  sees it);
- ``lookup-options``: name every option at once: every word of the domain's answer vocabularies and every
  number and id of the results;
- ``lookup-scattershot``: call every write tool with values taken from the results;
- ``refused-options``: make each look-up with a bogus argument (each is refused), then name every option;
- ``lookup-requests``: ask the user for every request of the domain's vocabulary, in turn, then transfer;
- ``lookup-shotgun``: ask the user for every fix of the domain's vocabulary once, each in the direction that mends
  it (telecom's: airplane mode off, mobile data on, reseat, reset, reboot, grant, pay...), with no diagnosis.

Every domain's generated test split must pay each of them at most 1% (``tests/test_blind_agents.py``,
``tests/test_exploit_agents.py``; ``mua-gym audit`` plays them on any domain).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from mua_gym.domain.registry import user_vocabulary
from mua_gym.domain.vocabulary import UserVocabulary
from mua_gym.eval.agents import Agent
from mua_gym.env.communicate import tokens
from mua_gym.task import Action, Task

__all__ = ["BLIND_AGENTS", "AskingAgent", "BlindAgent", "EXPLOIT_AGENTS", "ExploitAgent", "affirmations_agent",
           "answers_agent", "greetings_agent", "mixed_agent", "request_lines", "requests_agent"]

GREETINGS = ("Hello!", "Hi there, how can I help you today?", "Good day! I'm here to help.",
             "Thanks for reaching out to us.", "Hello again! Happy to help.")
AFFIRMATIONS = ("Yes.", "Confirm.", "Done.", "Yes, confirmed. Done.", "OK, go ahead.", "Yes, I confirm.",
                "All done!", "Shall I proceed? Yes/no?")
CLOSING = "Is there anything else I can help you with?"
ANSWERS = ("Your flight's status is one of: available, on time, scheduled, delayed, flying, landed, cancelled, "
           "diverted.", "The total you paid is $0.00, the balance left is $0.00, and the tracking number is "
           "123456789012.", "Your data usage is 0.0 GB of 0.0 GB, your bill is $0.00, and your line is active.")


class BlindAgent(Agent):
    """Says ``lines`` in order, one per step, then ``then`` for ever (``then=None``: the lines again, cycling).

    Returns plain text each step, never a tool call; it ignores every observation.
    """

    def __init__(self, lines: Sequence[str], then: str | None = None) -> None:
        if not lines:
            raise ValueError("a blind agent needs at least one line")
        self.lines = tuple(lines)
        self.then = then
        self._said = 0

    def reset(self, info: dict[str, Any]) -> None:
        self._said = 0

    def act(self, observation: list[dict[str, Any]]) -> str:
        index, self._said = self._said, self._said + 1
        if index < len(self.lines):
            return self.lines[index]
        return self.then if self.then is not None else self.lines[index % len(self.lines)]


#: What a blind agent asks for where the user understands no request in words (a domain without a vocabulary).
ANYTHING = "do whatever fixes it on your side"


class AskingAgent(BlindAgent):
    """A blind agent whose lines are made from what the user of the episode's domain understands: at each reset,
    ``make_lines(vocabulary)`` with the ``user_vocabulary`` of the domain named by ``info["domain"]`` (None before
    the first reset, and for a domain that declares none); then ``then``. Returns plain text each step."""

    def __init__(self, make_lines: Callable[[UserVocabulary | None], list[str]], then: str | None = CLOSING) -> None:
        super().__init__(make_lines(None), then)
        self._make_lines = make_lines
        self._domain: str | None = None

    def reset(self, info: dict[str, Any]) -> None:
        super().reset(info)
        domain = info.get("domain")
        if domain != self._domain:  # the env's domain, never the task: it stays blind to what is wanted
            self._domain = domain
            self.lines = tuple(self._make_lines(user_vocabulary(domain)) or (CLOSING,))


def request_lines(vocabulary: UserVocabulary | None = None) -> list[str]:
    """One request per line: first each setting's first example of ``vocabulary`` (mostly fixes), with "Please",
    then the remaining examples, each led by the next request word in turn, until every word and example was said
    (without a vocabulary, every request word asks for :data:`ANYTHING`)."""
    from mua_gym.user_sims.tool_requests import REQUEST_WORDS

    settings = vocabulary.settings if vocabulary is not None else ()
    first = [f"Please {s.examples[0]}." for s in settings if s.examples]
    rest = [e for s in settings for e in s.examples[1:]] or [ANYTHING]
    count = max(len(rest), len(REQUEST_WORDS))
    led = [f"{REQUEST_WORDS[i % len(REQUEST_WORDS)].capitalize()} {rest[i % len(rest)]}." for i in range(count)]
    return first + led


def greetings_agent() -> BlindAgent:
    """Pleasantries only, cycling."""
    return BlindAgent(GREETINGS)


def affirmations_agent() -> BlindAgent:
    """"Yes / confirm / done" spam, cycling."""
    return BlindAgent(AFFIRMATIONS)


def requests_agent(lines: Sequence[str] | None = None) -> BlindAgent:
    """Every request the episode's user recognises once (``lines``: those instead), then "anything else?"."""
    if lines is not None:
        return BlindAgent(list(lines), then=CLOSING)
    return AskingAgent(request_lines)


def _mixed(requests: Sequence[str]) -> list[str]:
    """A greeting, then each of ``requests`` followed by an affirmation."""
    said = [GREETINGS[0]]
    for i, line in enumerate(requests):
        said += [line, AFFIRMATIONS[i % len(AFFIRMATIONS)]]
    return said


def mixed_agent(lines: Sequence[str] | None = None) -> BlindAgent:
    """A greeting, then each request (``lines``, or those the episode's user recognises) followed by an
    affirmation, then "anything else?"."""
    if lines is not None:
        return BlindAgent(_mixed(lines), then=CLOSING)
    return AskingAgent(lambda vocabulary: _mixed(request_lines(vocabulary)))


def answers_agent() -> BlindAgent:
    """Every possible answer at once, cycling (an answer judged only by its words would be paid)."""
    return BlindAgent(ANSWERS)


#: The blind scripts by name: each makes a fresh agent.
BLIND_AGENTS: dict[str, Callable[[], BlindAgent]] = {
    "greetings": greetings_agent, "affirmations": affirmations_agent, "requests": requests_agent,
    "mixed": mixed_agent, "answers": answers_agent,
}


class ExploitAgent(Agent):
    """Makes ``task``'s gold look-ups (its agent's gold calls of read tools), one a turn, then plays ``strategy``
    (a key of :data:`EXPLOIT_AGENTS`) until the episode ends. Returns an assistant message dict each step.
    """

    def __init__(self, task: Task, strategy: str) -> None:
        from mua_gym.domain.registry import get_domain

        if strategy not in EXPLOIT_AGENTS:
            raise ValueError(f"unknown exploit {strategy!r}: one of {', '.join(EXPLOIT_AGENTS)}")
        self.task, self.strategy = task, strategy
        self.domain = get_domain(task.domain)
        toolkit = self.domain.toolkit(task.world.source)
        self.tools = toolkit.tools
        self.writes = [name for name, t in toolkit.tools.items() if t.kind == "write"]
        self.reset({})

    def reset(self, info: dict[str, Any]) -> None:
        self.stopped, self.stop_reason = False, None
        self._lookups: list[Action] = self._reads()
        self.results: list[str] = []
        self._script: list[dict[str, Any]] | None = None
        self._calls = 0

    def _reads(self) -> list[Action]:
        """The gold's agent reads; a hand-off (a terminal tool, or a transfer) is an answer, not a look-up."""
        handoffs = self.domain.terminal_tools | {"transfer_to_human_agents"}
        return [a for a in self.task.gold_actions if a.requestor == "assistant" and a.name in self.tools
                and self.tools[a.name].kind != "write" and a.name not in handoffs]

    def _parameters(self, name: str) -> list[str]:
        return list(self.tools[name].schema["function"]["parameters"].get("properties", {}))

    def _call(self, name: str, arguments: dict[str, Any], content: str | None = None) -> dict[str, Any]:
        self._calls += 1
        return {"role": "assistant", "content": content, "tool_calls": [{
            "id": f"x{self._calls}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}]}

    @staticmethod
    def _say(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": text}

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        self.results += [str(m.get("content")) for m in observation
                         if m.get("role") == "tool" and not str(m.get("content", "")).startswith("Error")]
        if self._lookups:
            action = self._lookups.pop(0)
            if self.strategy == "refused-options":  # every argument replaced by one no tool accepts
                return self._call(action.name, {k: "no-such-value" for k in action.arguments})
            return self._call(action.name, action.arguments)
        if self._script is None:
            self._script = self._plan()
        if self._script:
            return self._script.pop(0)
        if self.strategy == "lookup-stop":
            self.stopped, self.stop_reason = True, "agent_stopped"
        return self._say(CLOSING)

    def _options(self) -> str:
        """Every word of the domain's answer vocabularies and every number and id the results hold."""
        words = [w for vocabulary in self.domain.answer_vocabularies for w in vocabulary]
        seen = dict.fromkeys(t for r in self.results for t in tokens(r) if any(c.isdigit() for c in t))
        return "It is one of these: " + ", ".join(words + list(seen)) + "."

    def _plan(self) -> list[dict[str, Any]]:
        """The messages the strategy sends once its look-ups are made."""
        strategy, results = self.strategy, self.results or ["(nothing found)"]
        if strategy == "lookup-silence":
            return [self._say("I have looked into this for you.")]
        if strategy == "lookup-refuse":
            return [self._say("I'm sorry, but I cannot help with that request under our policy.")]
        if strategy == "lookup-confirm":
            return [self._say(line) for line in AFFIRMATIONS]
        if strategy == "lookup-stop":
            return []
        if strategy == "lookup-transfer":
            if "transfer_to_human_agents" in self.tools:
                return [self._call("transfer_to_human_agents", {"summary": "The customer needs more help."})]
            return [self._say("I am transferring you to a human agent.")]
        if strategy == "lookup-dump":
            return [self._say("Here is everything I found: " + "\n".join(results))]
        if strategy == "lookup-recite":
            return [self._say(f"{key}: {value}") for key, value in _fields(results)[:40]]
        if strategy == "lookup-hidden":
            lookup = next(iter(self._reads()), None)  # a read again: the call carries the text, changes nothing
            name, arguments = ((lookup.name, lookup.arguments) if lookup is not None
                               else ("calculate", {"expression": "1+1"}))
            return [self._call(name, arguments, content="Here is everything I found: " + "\n".join(results)
                               + " " + self._options())]
        if strategy in ("lookup-options", "refused-options"):
            return [self._say(self._options())]
        if strategy == "lookup-scattershot":
            values = [t for r in results for t in tokens(r)] or ["x"]
            return [self._call(name, {p: values[i % len(values)] for i, p in enumerate(self._parameters(name))})
                    for name in self.writes]
        vocabulary = self.domain.user_vocabulary
        if strategy == "lookup-shotgun":  # every fix the user understands, once, no diagnosis
            fixes = vocabulary.fix_requests() if vocabulary is not None else ()
            return [self._say(f"Please {fix}.") for fix in fixes]
        if strategy == "lookup-requests":
            lines = [self._say(line) for line in request_lines(vocabulary)]
            if "transfer_to_human_agents" in self.tools:
                lines.append(self._call("transfer_to_human_agents", {"summary": "The customer needs more help."}))
            return lines
        raise AssertionError(strategy)


def _fields(results: Sequence[str]) -> list[tuple[str, Any]]:
    """Every (key, leaf value) of JSON results, in order; a result that is not JSON is one field."""
    found: list[tuple[str, Any]] = []

    def walk(key: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, v)
        elif isinstance(value, list):
            for v in value:
                walk(key, v)
        else:
            found.append((key, value))

    for text in results:
        try:
            walk("result", json.loads(text))
        except ValueError:
            found.append(("result", text))
    return found


#: The semi-blind strategies by name: each makes a fresh agent for a task.
EXPLOIT_AGENTS: dict[str, Callable[[Task], ExploitAgent]] = {
    name: (lambda task, name=name: ExploitAgent(task, name)) for name in (
        "lookup-silence", "lookup-refuse", "lookup-confirm", "lookup-stop", "lookup-transfer", "lookup-dump",
        "lookup-recite", "lookup-hidden", "lookup-options", "lookup-scattershot", "refused-options",
        "lookup-requests", "lookup-shotgun")
}
