"""What a dual-control domain's user understands in words: the things on their side an agent may ask about.

A domain declares one :class:`UserVocabulary` (``Domain(user_vocabulary=...)``): each :class:`Setting` says how an
agent names one thing on the user's side (a phone's airplane mode, a thermostat's eco mode), which of the user's
tools reads it, and which change it. The scenario user (:mod:`mua_gym.user_sims.tool_requests`) reads an agent's
request with it; the blind baselines and the fuzzer say its examples. These are plain data: the patterns are
compiled by whoever reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Choice", "Setting", "UserVocabulary"]

#: A value a choice gives an argument: what a tool's JSON arguments hold.
Value = str | int | float | bool


@dataclass(frozen=True)
class Choice:
    """An argument of a setting's tools that the user reads off the agent's sentence.

    ``argument`` takes the first value of ``values`` ((value, regular expression over lower-case text) pairs, in
    order) that the sentence names.
    """

    argument: str
    values: tuple[tuple[Value, str], ...]
    #: The value when the sentence names none (None: the user asks ``question`` and runs nothing).
    default: Value | None = None
    question: str = ""
    #: Every value the sentence names gets a call of its own (each permission named is granted), not only the first.
    each: bool = False
    #: The setting's read tool takes it too (the app whose permissions are checked), not only its action.
    read: bool = False


@dataclass(frozen=True)
class Setting:
    """One thing on the user's side an agent may ask about: how it is named, read, and changed.

    It names at least one user tool, and one switched on and off (``toggle``, ``on_tool``, ``off_tool``) names its
    ``read`` tool too: ValueError otherwise.
    """

    key: str
    #: How an agent names it (a regular expression over lower-case text).
    topic: str
    #: The read tool that shows it (None: it can only be acted on, e.g. a restart).
    read: str | None
    #: How an agent asks about it; the user recognises each (the blind baselines and the tests use them).
    examples: tuple[str, ...]
    #: An on/off setting: the tool that flips it, and the pattern whose group 1 reads its state in ``read``'s text
    #: ("on"/"yes" is on, "off"/"no" off).
    toggle: str | None = None
    state: str | None = None
    #: Tools that switch it on / off directly (a VPN), where there is no toggle.
    on_tool: str | None = None
    off_tool: str | None = None
    #: A one-shot action: the verbs that ask for it (None: naming the setting asks for it) and its tool.
    verbs: str | None = None
    action: str | None = None
    #: The action's arguments read off the sentence (a network mode, the permissions to grant).
    choices: tuple[Choice, ...] = ()

    def __post_init__(self) -> None:
        if not self.tools:  # a request about it would run a tool called None
            raise ValueError(f"setting {self.key!r} names no user tool: give it a read tool or one that changes it")
        if self.switch and self.read is None:  # "check whether it is on" reads it; a set reads it before it flips
            raise ValueError(f"setting {self.key!r} is switched on and off, so it needs the read tool that shows it")

    @property
    def tools(self) -> tuple[str, ...]:
        """Every user tool the setting names: the user must have them all to understand it."""
        return tuple(t for t in (self.read, self.toggle, self.action, self.on_tool, self.off_tool) if t)

    @property
    def switch(self) -> bool:
        """Whether it is switched on and off (a toggle, or tools that switch it on or off) rather than acted on."""
        return bool(self.toggle or self.on_tool or self.off_tool)


@dataclass(frozen=True)
class UserVocabulary:
    """The requests a domain's user understands in words, one :class:`Setting` each, in the order they are looked
    for (the first setting whose topic a sentence names is the one asked about: list the narrower names first)."""

    settings: tuple[Setting, ...]
    #: Whole requests as an agent says them, for fuzzers (none: "please" and each setting's first example).
    samples: tuple[str, ...] = ()
    #: Requests that mend something, each in the direction that mends it: what a blind "shotgun" agent says (none:
    #: the first example of each setting that can be changed).
    fixes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        keys = [s.key for s in self.settings]
        if len(set(keys)) != len(keys):  # a reader keeps each setting's compiled patterns by its key
            raise ValueError(f"two settings of a user vocabulary share a key: {sorted(keys)}")

    def sample_requests(self) -> tuple[str, ...]:
        """The requests a fuzzer says: :attr:`samples`, or "please" and each setting's first example."""
        return self.samples or tuple(f"please {s.examples[0]}" for s in self.settings if s.examples)

    def fix_requests(self) -> tuple[str, ...]:
        """The requests a shotgun agent says: :attr:`fixes`, or the first example of each setting that changes."""
        return self.fixes or tuple(s.examples[0] for s in self.settings if s.examples and (s.switch or s.action))
