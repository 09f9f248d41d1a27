"""A pluggable judge for NL_ASSERTION: any chat model litellm reaches (or an OpenAI-compatible server serves),
one JSON verdict per assertion.

Off unless configured: ``make("mua/Retail-v0", judge="litellm:<model>", judge_kwargs={...})`` (or
``judge="openai:<model>@<base_url>"``), or pass any
async callable ``judge(messages, assertions) -> list[bool]`` (see :class:`mua_gym.env.reward.Judge`). Each call has a
timeout and is retried like the LLM user's (:func:`mua_gym.llm.client.acall`: rate limits, timeouts and 5xx with
backoff, a refused connection once, errors that cannot heal never); one that still fails raises
:class:`JudgeError` with the configured keys redacted. :meth:`LLMJudge.check` probes the model.

Each call's tokens and cost ride on the verdicts it returns (:class:`Verdicts`, a list with a ``usage``):
:func:`mua_gym.env.reward.judge_nl_assertions` records them in ``reward_info["judge_usage"]``, and an eval adds them
to the episode's ``judge_*`` counters. ``LLMJudge.usage`` keeps the judge's own running total.
"""

from __future__ import annotations

import json
from typing import Any

from mua_gym.jsonsafe import first_object
from mua_gym.llm.client import CallLimits, JudgeModelError, acall, add_usage, chat_message, probe
from mua_gym.llm.openai_http import OpenAIServer, model_spec
from mua_gym.llm.redact import Redactor

__all__ = ["JudgeError", "LLMJudge", "Verdicts", "make_judge"]

PROMPT = """\
You are grading a customer-support conversation. For each numbered statement below, decide whether the
conversation shows it to be true. Judge only from the transcript.

Transcript:
{transcript}

Statements:
{statements}

Answer with one JSON object and nothing else, of the form
{{"verdicts": [{{"statement": 1, "true": true, "reason": "..."}}, ...]}} with one entry per statement, in order.
"""


class JudgeError(RuntimeError):
    """The judge's model call failed; the text carries no configured key."""


class Verdicts(list[bool]):
    """A judge's verdicts, one per assertion, with the tokens and cost of the call that made them in ``usage``
    (``prompt_tokens``, ``completion_tokens``, ``total_tokens``, and ``cost`` where litellm prices the model)."""

    def __init__(self, verdicts: list[bool], usage: dict[str, float]) -> None:
        super().__init__(verdicts)
        self.usage = usage


class LLMJudge:
    """Asks ``model`` (through litellm) about the NL assertions of a finished episode.

    ``timeout`` (seconds per try), ``max_retries`` and ``backoff`` (seconds, doubling) bound each call; every other
    keyword goes to litellm.
    """

    def __init__(self, model: str, *, timeout: float = 60.0, max_retries: int = 3, backoff: float = 0.5,
                 server: str | None = None, **litellm_kwargs: Any) -> None:
        self.model = model
        self.limits = CallLimits(timeout, max_retries, backoff)
        self._redact = Redactor.of(litellm_kwargs)
        self._server = None
        if server is not None:
            self._server = OpenAIServer(server, api_key=litellm_kwargs.pop("api_key", None))
        self.kwargs = {"temperature": 0, **litellm_kwargs}
        #: Every answered call's tokens and cost so far, summed (the same keys as :attr:`Verdicts.usage`).
        self.usage: dict[str, float] = {}

    def check(self) -> None:
        """Makes one tiny call to the model; raises :class:`JudgeModelError` (one line, naming the fix) if it fails."""
        probe(self.model, self.kwargs, role="judge", key_hint="judge_kwargs={'api_key': ...}", error=JudgeModelError,
              timeout=min(self.limits.timeout, 30.0), server=self._server)

    async def aclose(self) -> None:
        """Closes the connections of the fast client (``server``), if any."""
        if self._server is not None:
            await self._server.aclose()

    async def __call__(self, messages: list[dict[str, Any]], assertions: list[str]) -> Verdicts:
        """One verdict per assertion, as :class:`Verdicts` carrying the call's usage. Raises :class:`JudgeError`
        where the call fails, ValueError where the reply holds no verdict per assertion (its usage is still
        added to :attr:`usage`)."""
        transcript = "\n".join(f"{m['role'].upper()}: {m.get('content') or ''}" for m in messages
                               if m["role"] in ("user", "assistant") and m.get("content"))
        statements = "\n".join(f"{i}. {a}" for i, a in enumerate(assertions, start=1))
        prompt = [{"role": "user", "content": PROMPT.format(transcript=transcript, statements=statements)}]
        # A JudgeError is reported in reward_info["judge_error"]; its text is redacted (providers echo keys).
        response = await acall({**self.kwargs, "model": self.model, "messages": prompt}, self.limits, role="judge",
                               error=JudgeError, redactor=self._redact, server=self._server)
        usage: dict[str, float] = {}
        add_usage(usage, response)
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + value
        data = first_object(chat_message(response)["content"] or "")
        verdicts = data.get("verdicts") if isinstance(data, dict) else None
        if not isinstance(verdicts, list) or len(verdicts) != len(assertions):
            raise ValueError(f"the judge returned {json.dumps(data)[:200]}, not one verdict per statement")
        return Verdicts([bool(v.get("true")) if isinstance(v, dict) else bool(v) for v in verdicts], usage)


def make_judge(spec: str, **kwargs: Any) -> LLMJudge:
    """A judge from ``litellm:<model>`` or ``openai:<model>@<base_url>`` (the fast client of an
    OpenAI-compatible server); keywords go to :class:`LLMJudge`."""
    named = model_spec(spec)
    if named is not None:
        return LLMJudge(named[0], server=named[1], **kwargs)
    raise ValueError(f"unknown judge {spec!r}; use 'litellm:<model>', 'openai:<model>@<base_url>' or pass an async "
                     "callable")
