"""``ScenarioUser``: a rule-driven customer that plays a task's structured scenario. No model, deterministic.

It recognises what the agent asks for (identity, order ids, payment methods, confirmation, "anything
else?", a transfer) and answers from the scenario's facts and intents; it states its next intent when asked
what else, and stops when its intents are done. The persona sets how much it says up front, how long it
waits before walking away, and how wordy it is. Tasks without structured intents fall back to their
scripted opening line.
"""

from __future__ import annotations

import re
from typing import Any

from mua_gym.messages import AssistantMessage, ToolMessage
from mua_gym.task import Persona, Task
from mua_gym.user_sims.base import STOP, TRANSFER, UserReply, UserSimulator, UserView
from mua_gym.user_sims.persona import PersonaMode, resolve_persona

__all__ = ["ScenarioUser"]


def _has(text: str, *patterns: str) -> bool:
    return any(re.search(p, text) for p in patterns)


class ScenarioUser(UserSimulator):
    name = "scenario"

    def __init__(self, persona: PersonaMode = "task") -> None:
        self.persona_mode = persona
        self.persona = Persona()
        self.task: Task | None = None
        self.facts: dict[str, Any] = {}
        self.intents: list[dict[str, Any]] = []
        self.stated = 0  # intents told to the agent so far
        self.agent_turns = 0
        self.pending_actions: list[dict[str, Any]] = []

    # -- protocol ----------------------------------------------------------------------------------
    async def start(self, task: Task, *, seed: int | None = None,
                    tools: list[dict[str, Any]] | None = None) -> UserReply:
        self.task = task
        self.persona = resolve_persona(task, self.persona_mode, seed)
        self.facts = dict(task.user_scenario.facts)
        self.intents = [dict(i) for i in task.user_scenario.intents]
        self.agent_turns = 0
        self.pending_actions = []
        if not self.intents:  # no structure: say what the task's script opens with
            self.stated = 0
            opening = task.script[0] if task.script else (task.user_scenario.reason_for_call or
                                                          task.user_scenario.instructions or "Hi, I need help.")
            return UserReply(content=opening)
        return UserReply(content=self._opening())

    async def respond(self, view: UserView) -> UserReply:
        last = view[-1] if view else None
        if isinstance(last, ToolMessage):  # the result of a phone action the agent asked for
            return UserReply(content=self._say(f"Done. It says: {last.content[:200]}"))
        text = (last.content or "") if isinstance(last, AssistantMessage) else ""
        self.agent_turns += 1
        if self.agent_turns > self.persona.patience:
            return UserReply(content="This is taking too long; I'll try another time. " + STOP, walked_away=True)
        return self._answer(text.lower())

    # -- what to say -------------------------------------------------------------------------------
    def _identity(self) -> str:
        f = self.facts
        if "email" in f:
            return f"My email is {f['email']}."
        if "first_name" in f:
            return f"I'm {f['first_name']} {f['last_name']}, zip code {f['zip']}."
        return ""

    def _intent_text(self, index: int) -> str:
        intent = self.intents[index]
        return intent.get("says") or intent.get("request") or f"I need help with {intent.get('category', 'an issue')}."

    def _opening(self) -> str:
        disclosure = self.persona.disclosure
        if disclosure == "forthcoming":
            self.stated = len(self.intents)
            body = " Also, ".join(self._intent_text(i) for i in range(len(self.intents)))
            return self._say(f"Hi! {self._identity()} {body}")
        self.stated = 1
        if disclosure == "minimal":
            return self._say(f"Hi. {self._intent_text(0)}")
        return self._say(f"Hi! {self._identity()} {self._intent_text(0)}")

    def _say(self, text: str) -> str:
        text = " ".join(text.split())
        if self.persona.verbosity == "chatty":
            return f"{text} Thanks so much for your help, I really appreciate it."
        return text

    def _current(self) -> dict[str, Any]:
        return self.intents[max(0, min(self.stated, len(self.intents)) - 1)] if self.intents else {}

    def _next_or_stop(self) -> UserReply:
        if self.stated < len(self.intents):
            self.stated += 1
            return UserReply(content=self._say(f"One more thing: {self._intent_text(self.stated - 1)}"))
        return UserReply(content=STOP)

    def _answer(self, text: str) -> UserReply:
        if _has(text, r"transfer", r"human agent", r"representative") and not _has(text, r"\?$"):
            return UserReply(content=TRANSFER)
        if _has(text, r"anything else", r"something else", r"else (i|we) can", r"other (questions|requests)"):
            return self._next_or_stop()
        if _has(text, r"user ?id"):
            return UserReply(content=self._say("I don't know my user id. " + self._identity()))
        if _has(text, r"e-?mail") and "email" in self.facts and _has(text, r"\?"):
            return UserReply(content=self._say(f"It's {self.facts['email']}."))
        if _has(text, r"\bname\b", r"zip", r"postal") and "first_name" in self.facts and _has(text, r"\?"):
            f = self.facts
            return UserReply(content=self._say(f"{f['first_name']} {f['last_name']}, zip code {f['zip']}."))
        if _has(text, r"e-?mail", r"\bname\b", r"zip", r"verify", r"identif", r"authenticat") and _has(text, r"\?"):
            identity = self._identity()
            if identity:
                return UserReply(content=self._say(identity))
        if _has(text, r"order (id|number)", r"which order") and "order_id" in self._current():
            return UserReply(content=self._say(f"It's order {self._current()['order_id']}."))
        if _has(text, r"reservation (id|number|code)", r"booking (reference|code)") and \
                "reservation_id" in self._current():
            return UserReply(content=self._say(f"It's {self._current()['reservation_id']}."))
        if _has(text, r"payment method", r"which card", r"how would you like to pay", r"refund to") and \
                "payment_method_id" in self._current() and _has(text, r"\?"):
            return UserReply(content=self._say(f"Please use {self._current()['payment_method_id']}."))
        if _has(text, r"shall i", r"should i", r"would you like me to", r"do you want me to", r"proceed", r"confirm",
                r"go ahead", r"yes/no", r"\(yes", r"is (that|this) (correct|right|ok)", r"sound good"):
            if self._current().get("accept", True):
                return UserReply(content=self._say("Yes, please go ahead."))
            return UserReply(content=self._say("No, please don't do that."))
        if _has(text, r"\?$", r"\?\s*$"):
            return UserReply(content=self._say("I'm not sure; I've told you what I know."))
        if self.stated < len(self.intents):
            return self._next_or_stop()
        return UserReply(content=self._say("Thank you."))
