"""Reading TAU2's prose user scenarios for the rule-driven :class:`~mua_gym.user_sims.scenario.ScenarioUser`.

TAU2's tasks tell their user in second-person prose what it knows and wants (``known_info``, ``reason_for_call``,
``unknown_info``, ``task_instructions``); they carry no structured facts. :func:`read_scenario` turns that prose,
read at run time from the task, into what the scenario user needs:

- ``facts``: the identity it discloses when asked plainly (name, zip, email, user id, phone number, where it is)
  and, per plain question, the values its scenario names (order and reservation ids, payment method, passengers,
  the data it would buy); every value is a piece of the scenario's own text (a name may be read off the user id);
- ``opening``: its reason for calling in the first person, without the sentences that only instruct it (what not
  to reveal, how to behave, what to do when the agent says something);
- ``refusal``: why the rule user cannot play the task, or None. A rule user follows no instruction that hangs on
  the conversation: one conditional on what the agent says or asks ("if the agent asks for confirmation, only
  exchange ..."), a fallback on the agent's answer ("if not, ..."), a change of mind, a wrong answer first,
  insisting against a refusal, or a choice that hangs on a price the agent quotes. Behaviours it has by design
  (it follows the agent's guidance, reports its phone's tool results, asks what exactly a bare "shall I?" means,
  accepts a bill payment) are not refused.

Everything is parsed with ``str`` methods and regular expressions without nested quantifiers: linear in the text.
``refusals(mua_gym.domain.tau2.load_tasks("retail", "test"))`` lists a split's tasks the rule user refuses, and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mua_gym.task import Task

__all__ = ["Tau2Reading", "first_person", "is_prose", "playable", "read_scenario", "refusals", "scripted_opening",
           "sentences"]


@dataclass(frozen=True)
class Tau2Reading:
    """What the rule user takes from one TAU2 scenario (see the module docstring)."""

    facts: dict[str, Any] = field(default_factory=dict)
    #: Values by the request key the scenario user answers from (``order_id``, ``reservation_id``, ...).
    requests: dict[str, list[Any]] = field(default_factory=dict)
    opening: str = ""
    refusal: str | None = None


# -- sentences and pronouns -------------------------------------------------------------------------------------
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n")
_LIST_BREAK = re.compile(r":\s*\n\s*(?=-)|\n[ \t]*(?=- )")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split at ``.``, ``!`` or ``?`` before a space, and at line ends), stripped."""
    text = _LIST_BREAK.sub(" ", text)  # a list's items ("to:\n- add bags") stay in their sentence
    out, at = [], 0
    for end in _SENTENCE_END.finditer(text):
        piece = text[at:end.end()].strip()
        if piece.strip(".!? "):
            out.append(piece)
        at = end.end()
    rest = text[at:].strip()
    if rest.strip(".!? "):
        out.append(rest)
    return out


_WORDS = re.compile(r"[A-Za-z']+|[^A-Za-z']+")
#: Words after which "you" is an object ("help you", "to you"): it becomes "me"; elsewhere "I".
_OBJECT_AFTER = frozenset("""to for with help helps give gives tell tells send sends ask asks let lets at about from by
call calls contact charge charges refund refunds than on of allow allows offer offers get gets show shows told
asked informed assured reminded promised""".split())
_PLAIN = {"your": "my", "yours": "mine", "yourself": "myself", "you're": "I'm", "you've": "I've", "you'd": "I'd",
          "you'll": "I'll", "youre": "I'm"}
#: The verb that follows a second-person subject, as it reads after "I".
_AFTER_I = {"are": "am", "were": "was", "aren't": "am not", "weren't": "wasn't"}
#: Third-person verbs: "you X is" is the possessive "your" misspelt ("You mobile data is ...").
_THIRD_PERSON = frozenset({"is", "was", "has", "does"})
_VERBS = frozenset("are want have think know wish need would will can may might also just only do did".split())


def first_person(text: str) -> str:
    """``text`` (second person: "You want to return your ...") as the user says it ("I want to return my ...").

    Word by word, one pass: "your" becomes "my", "you" becomes "I" (or "me" after a preposition or a verb that
    takes an object), and a verb after a new "I" agrees ("are" becomes "am")."""
    pieces = _WORDS.findall(text)
    words = [i for i, p in enumerate(pieces) if p[0].isalpha() or p[0] == "'"]
    out = list(pieces)
    previous = ""
    for n, i in enumerate(words):
        word = pieces[i]
        low = word.lower()
        if low in _PLAIN:
            new = _PLAIN[low]
        elif low == "you":
            after = [pieces[j].lower() for j in words[n + 1:n + 4]]
            if after and not after[0].endswith(("ed", "s")) and after[0] not in _VERBS and (
                    after[1:2] and after[1] in _THIRD_PERSON or after[2:3] and after[2] in _THIRD_PERSON):
                new = "my"
            else:
                new = "me" if previous in _OBJECT_AFTER else "I"
        elif previous == "you" and low in _AFTER_I and out[words[n - 1]] == "I":
            new = _AFTER_I[low]
        else:
            new = word
        if new != word and word[0].isupper() and new not in ("I", "I'm", "I've", "I'd", "I'll"):
            new = new[0].upper() + new[1:]
        out[i] = new
        previous = low
    return "".join(out)


# -- refusal: instructions that hang on the conversation ----------------------------------------------------------
#: Behaviours the rule user has by design: a sentence of one of these is no instruction it would break.
_BY_DESIGN = re.compile(r"follow their guidance|ground your respons|make up the results|ask the agent for "
                        r"clarification|another tool call|pay a bill, you accept|check the status bar", re.IGNORECASE)
#: What refers to the agent's words in a conditional sentence.
_AGENT = re.compile(r"\bagent|\bwhen asked|\bif asked|\bif they\b|\bbefore they\b", re.IGNORECASE)
#: A condition; "if" that means "whether" ("you wonder if the agent can ...", "and if you can order it") is none.
_CONDITION = re.compile(r"(?<!wonder )(?<!know )(?<!ask )\b(?:if(?! (?:you|the agent|they) can )|when|whenever|unless|"
                        r"until|before|once)\b", re.IGNORECASE)
#: Sentences that hang on the conversation without naming the agent, each with what it asks of the user.
_CONVERSATIONAL = [
    (re.compile(r"\bif not\b|\bif so\b|\botherwise\b|\bif (?:that|this) (?:does|doesn|did|is|isn|fails)|"
                r"\bif (?:you|it) (?:can't|cannot|can not|are unable)|\bnot possible\b|\bif it refuses|"
                r"\bno way to do\b",
                re.IGNORECASE), "a fallback on the agent's answer"),
    (re.compile(r"change (?:your|their) mind|\brethink|\babruptly|\bhalfway|\bafter the change\b", re.IGNORECASE),
     "a change of mind mid-conversation"),
    (re.compile(r"\binsist|\bpersist|\bmaximum of|\bafter a few exchanges|\bright away", re.IGNORECASE),
     "pushing back on the agent's answers"),
    (re.compile(r"\brespond exactly|\bsay that\b|\bsay it is\b|\bfirst\b[^.]*\bthen correct|\binitially\b",
                re.IGNORECASE), "scripted or wrong answers first"),
    (re.compile(r"\bonly if\b|\bup to \$|\bwilling to pay\b|\bif [^.]*\binstead\b|\bif more than\b|\bif less than\b",
                re.IGNORECASE), "a choice that hangs on what the agent quotes"),
]


def _hangs(sentence: str) -> str | None:
    """What ``sentence`` asks of the user that hangs on the conversation (a phrase), or None."""
    if _BY_DESIGN.search(sentence):
        return None
    if _AGENT.search(sentence) and _CONDITION.search(sentence):
        return "an instruction conditional on what the agent says or asks"
    return next((why for pattern, why in _CONVERSATIONAL if pattern.search(sentence)), None)


def _refusal(scenario_sentences: list[str]) -> str | None:
    """Why a rule user cannot play a scenario of these sentences (quoting the first that hangs on the conversation),
    or None."""
    for sentence in scenario_sentences:
        reason = _hangs(sentence)
        if reason is not None:
            quoted = " ".join(sentence.split())
            quoted = quoted if len(quoted) <= 120 else quoted[:117] + "..."
            return f"{reason} ({quoted!r}), which only a language-model user can follow"
    return None


# -- facts ----------------------------------------------------------------------------------------------------
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d+\b")
_ZIP = re.compile(r"(?<![\d-])\d{5}(?![\d-])")
_PHONE = re.compile(r"\b\d{3}-\d{3}-\d{4}\b")
_ORDER = re.compile(r"#?\bW\d{7}\b")
_RESERVATION = re.compile(r"\b[A-Z0-9]{6}\b")
_BOOKING = re.compile(r"reservation|confirmation|booking", re.IGNORECASE)
_NAME_CUE = re.compile(r"\byou are\b|\byour name is\b|\byou name is\b|\bcalled\b", re.IGNORECASE)
_NAME = re.compile(r"([A-Z][a-z]+) ([A-Z][a-z]+)\b")
_NAME_STOP = re.compile(r"[,.(]|\b(?:in|from|living|residing|with|and|user)\b|\b[a-z]+_[a-z]+_\d+\b")
_PASSENGER = re.compile(r"([A-Z][a-z]+) ([A-Z][a-z]+),? (?:DOB|dob|born|date of birth)[: ]*(\d{4}-\d{2}-\d{2})")
#: A street address up to its zip code ("live in 445 Maple Drive, Suite 394, Fort Worth, Texas, 76165").
_ADDRESS = re.compile(r"\blive (?:in|at) (\d+ [A-Z][^.()]{0,80}?\d{5})")
_ABROAD = re.compile(r"\babroad in ([A-Z][a-z]+(?: [A-Z][a-z]+)?)")
_REFUEL = re.compile(r"\brefuel (\d+(?:\.\d+)?) ?GB", re.IGNORECASE)
#: Payment methods a scenario may name, longest first ("credit card ending in 7334" before "credit card").
_PAYMENT = re.compile(r"(?:credit card|card) ending in \d{4}|\bpaypal\b|\bgift card\b|\bcertificates?\b|\bvisa\b|"
                      r"\bmastercard\b|\bamex\b|\boriginal (?:payment method|credit card|payment)\b", re.IGNORECASE)
_PAY_WORDS = re.compile(r"\bpay|\brefund|\bpayment|\bcredit|\buse\b", re.IGNORECASE)


def _name(known: str, user_id: str | None) -> tuple[str, str] | None:
    """(first, last) name the scenario gives, else read off a ``first_last_123`` user id, else None."""
    for cue in _NAME_CUE.finditer(known):
        tail = known[cue.end():cue.end() + 60]
        stop = _NAME_STOP.search(tail, 1)
        tail = tail[:stop.start()] if stop is not None else tail
        found = _NAME.search(tail)
        if found is not None:
            return found.group(1), found.group(2)
    if user_id is not None:
        first, last = user_id.split("_")[:2]
        return first.capitalize(), last.capitalize()
    return None


def _facts(known: str, text: str) -> dict[str, Any]:
    """The identity ``known`` (the scenario's known_info) states, the user id and emails from all of ``text``."""
    facts: dict[str, Any] = {}
    ids = list(dict.fromkeys(_USER_ID.findall(text)))
    if ids:
        facts["user_id"] = ids[0]
    emails = list(dict.fromkeys(e.rstrip(".") for e in _EMAIL.findall(text)))
    if emails:
        facts["email"] = " and ".join(emails)
    name = _name(known, facts.get("user_id"))
    zips = list(dict.fromkeys(_ZIP.findall(known)))
    if name is not None:
        facts["name"] = f"{name[0]} {name[1]}"
        if zips:
            facts["first_name"], facts["last_name"] = name
            facts["zip"] = " or ".join(reversed(zips))  # the last named is where the user lives now
    address = _ADDRESS.search(known)
    if address is not None:
        facts["home_address"] = address.group(1)
    phone = _PHONE.search(known)
    if phone is not None:
        facts["phone_number"] = phone.group(0)
    abroad = _ABROAD.search(known)
    if abroad is not None:
        facts["location"] = abroad.group(1)
    elif "at home" in known:
        facts["location"] = "home"
    return facts


def _requests(all_sentences: list[str]) -> dict[str, list[Any]]:
    """The values the user gives to plain questions: the ids, payment methods, passengers and data amount its
    scenario names (each as written there)."""
    text = " ".join(all_sentences)
    requests: dict[str, list[Any]] = {}
    orders = list(dict.fromkeys("#" + o.lstrip("#") for o in _ORDER.findall(text)))  # ("#W..." as orders are named)
    if orders:
        requests["order_id"] = orders
    reservations = [t for s in all_sentences if _BOOKING.search(s) for t in _RESERVATION.findall(s) if not t.isdigit()]
    if reservations:
        requests["reservation_id"] = list(dict.fromkeys(reservations))
    methods = {m.group(0).lower().rstrip("s"): m.group(0) for s in all_sentences if _PAY_WORDS.search(s)
               for m in _PAYMENT.finditer(s)}  # (one per method, "certificates" and "certificate" alike)
    if methods:
        requests["payment_method_id"] = [f"the original {m[9:]}" if key.startswith("original") else f"my {m}"
                                         for key, m in methods.items()]
    people = [{"first_name": p.group(1), "last_name": p.group(2), "dob": p.group(3)} for p in _PASSENGER.finditer(text)]
    if people:
        requests["passengers"] = [people]
    refuel = _REFUEL.search(text)
    if refuel is not None:
        requests["refuel_gb"] = [float(refuel.group(1))]
    return requests


# -- the opening ----------------------------------------------------------------------------------------------
#: Sentences (or parentheses) that tell the user how to talk, what to hide or who it is: never said aloud; so are
#: sentences in the imperative ("Provide all details upfront", "Ask the agent ...").
_INSTRUCTION = re.compile(r"\breveal|\bmention|\bprovide all|\bdo not remember|\bdon't remember|\bforgot|"
                          r"\bprefer not|\byou know it|\bpersona|\bmake sure|\bhuman agent|\b(?:ask|tell) the agent|"
                          r"^(?:provide|ask|insist|make|say|be|try|mention|do not|don't|never|always|tell|keep|act|"
                          r"pretend)\b", re.IGNORECASE)
#: The agent, as the user addresses it ("through the agent" is "through you").
_THE_AGENT = re.compile(r"\b(?:the|an?) (?:customer service |service )?agent\b", re.IGNORECASE)
_PARENS = re.compile(r"\s*\(([^()]*)\)")
_BRACES = re.compile(r"\{([^{}]*)\}")


def _spoken(sentence: str) -> str:
    """A sentence of the reason for calling as the user says it: parentheses that instruct dropped, a dict of
    options written out in words, in the first person."""
    sentence = _PARENS.sub(lambda m: "" if _INSTRUCTION.search(m.group(1)) else f" ({m.group(1)})", sentence)
    sentence = _BRACES.sub(lambda m: m.group(1).replace("'", "").replace(": ", " "), sentence)
    return _THE_AGENT.sub("you", first_person(" ".join(sentence.split())))


def _opening(reason: list[str]) -> str:
    """The reason for calling, in the user's words: its sentences that state what the user wants."""
    said = [_spoken(s) for s in reason if not _INSTRUCTION.search(_PARENS.sub("", s)) and _hangs(s) is None]
    said = [s if s[-1:] in ".!?" else s + "." for s in said if s.strip(".!?;: ")]
    return " ".join(said) or "I need some help, please."


def scripted_opening(reason: str, known: str) -> str:
    """What a user with no conversation of its own (the scripted user) opens with: the reason for calling and what it
    knows, in its words, leaving out the sentences that only instruct it."""
    known_said = [_spoken(s) for s in sentences(known) if not _INSTRUCTION.search(_PARENS.sub("", s))]
    return " ".join([_opening(sentences(reason)), *(s if s[-1:] in ".!?" else s + "." for s in known_said if s)])


# -- the reading ----------------------------------------------------------------------------------------------
_READINGS: dict[tuple[str, str], Tau2Reading] = {}


def _text(task: Task) -> tuple[str, str, str, str]:
    s = task.user_scenario
    return (s.known_info or "", s.reason_for_call or "", s.unknown_info or "", s.instructions or "")


def read_scenario(task: Task) -> Tau2Reading:
    """The rule user's reading of ``task``'s prose scenario: facts, plain answers, opening and refusal (kept per
    scenario text: a task's words do not change between episodes)."""
    known, reason, unknown, instructions = _text(task)
    key = (task.id, "\x00".join((known, reason, unknown, instructions)))
    found = _READINGS.get(key)
    if found is not None:
        return found
    reason_sentences = sentences(reason)
    every = [*sentences(known), *reason_sentences, *sentences(unknown), *sentences(instructions)]
    facts = _facts(known, "\n".join((known, reason, unknown, instructions)))
    refusal = _refusal(every)
    reading = Tau2Reading(facts=facts, requests=_requests(every), opening=_opening(reason_sentences),
                          refusal=f"task {task.id!r} ({task.domain}): {refusal}" if refusal else None)
    if len(_READINGS) > 10_000:  # (a process reading many task lists keeps memory bounded)
        _READINGS.clear()
    _READINGS[key] = reading
    return reading


def is_prose(task: Task) -> bool:
    """Whether ``task`` has a prose scenario and no structured intents (TAU2's tasks): one this module reads."""
    s = task.user_scenario
    return not s.intents and bool(s.known_info or s.reason_for_call)


def playable(task: Task) -> str | None:
    """Why the rule-driven scenario user cannot play ``task`` (a sentence naming the task and the instruction it
    cannot follow), or None where it can (every task with structured intents)."""
    return read_scenario(task).refusal if is_prose(task) else None


def refusals(tasks: list[Task]) -> dict[str, str]:
    """Why the scenario user refuses each of ``tasks`` it cannot play, by task id (the others are left out)."""
    return {t.id: why for t in tasks if (why := playable(t)) is not None}
