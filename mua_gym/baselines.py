"""Blind baseline agents: they never call a tool and never read the task, the tools or the policy; they only talk.

A fair environment pays them nothing, however they talk: every domain's test split must give each of them a mean
reward of at most 1% (``tests/test_blind_agents.py`` holds every domain to that). They are the attacks a reward
hacker tries first:

- ``greetings``: pleasantries only;
- ``affirmations``: "yes / confirm / done" over and over;
- ``requests``: one request per turn, cycling through every request word and every phone request the scenario
  user recognises (read from its own tables, so the list stays complete), then "anything else?";
- ``mixed``: a greeting, then requests interleaved with affirmations, then "anything else?";
- ``answers``: every answer an information request could have, said at once (each flight status there is, a
  zero amount, a made-up tracking number), so that an answer judged by words alone would be paid.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from mua_gym.agents import Agent

__all__ = ["BLIND_AGENTS", "BlindAgent", "affirmations_agent", "answers_agent", "greetings_agent", "mixed_agent",
           "request_lines", "requests_agent"]

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


def request_lines() -> list[str]:
    """One request per line: first each phone setting's first example (mostly fixes), with "Please", then the
    remaining examples, each led by the next request word in turn, until every word and example was said."""
    from mua_gym.user_sims.phone_requests import REQUEST_WORDS, SETTINGS

    first = [f"Please {s.examples[0]}." for s in SETTINGS]
    rest = [e for s in SETTINGS for e in s.examples[1:]]
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
    """Every recognised request once (``lines``: :func:`request_lines`), then "anything else?"."""
    return BlindAgent(list(lines) if lines is not None else request_lines(), then=CLOSING)


def mixed_agent(lines: Sequence[str] | None = None) -> BlindAgent:
    """A greeting, then each request followed by an affirmation, then "anything else?"."""
    requests = list(lines) if lines is not None else request_lines()
    said = [GREETINGS[0]]
    for i, line in enumerate(requests):
        said += [line, AFFIRMATIONS[i % len(AFFIRMATIONS)]]
    return BlindAgent(said, then=CLOSING)


def answers_agent() -> BlindAgent:
    """Every possible answer at once, cycling (an answer judged only by its words would be paid)."""
    return BlindAgent(ANSWERS)


#: The blind scripts by name: each makes a fresh agent.
BLIND_AGENTS: dict[str, Callable[[], BlindAgent]] = {
    "greetings": greetings_agent, "affirmations": affirmations_agent, "requests": requests_agent,
    "mixed": mixed_agent, "answers": answers_agent,
}
