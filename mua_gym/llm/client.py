"""What the LLM user, the LLM judge and the LLM agent share about calling a model (through litellm, or the fast
client of an OpenAI-compatible server).

- :func:`import_litellm`: litellm, imported on first use (it costs seconds), told not to fetch its cost map
  over the network and not to print its "Give Feedback / Get Help" banner on every failure.
- :func:`failure_kind`: whether a failed call can heal. Permanent (never retried): bad request (unknown
  provider, bad parameters, context window, content policy), authentication, permission denied, not found,
  unprocessable entity, a ``TypeError`` raised before any request (bad keywords), and an api_base with user
  info that the async client refuses to combine with a key. Unreachable (retried once: a server that is
  restarting comes back, one that is not running does not): connection refused or failed. Transient (retried
  with backoff): rate limits, timeouts, 5xx, everything else.
- :func:`acall` / :func:`call`: one model call with a timeout, retried as :func:`retries_allowed` says with
  exponential backoff, raising the caller's error (its text redacted) once retrying cannot help; ``acall`` also
  sends it to an OpenAI-compatible server through the fast client (:mod:`mua_gym.llm.openai_http`) instead.
- :func:`probe`: one tiny call that checks a model's configuration, raising a one-line
  :class:`ModelConfigError` that names the fix.
- :func:`one_line`: an error text (or exception) on one line, for messages that must not wrap.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping
from urllib.parse import urlsplit

from mua_gym.llm.openai_http import OpenAIServer
from mua_gym.llm.redact import Redactor

__all__ = [
    "LIMIT_KEYWORDS", "AgentModelError", "CallLimits", "FailureKind", "JudgeModelError", "ModelConfigError",
    "UserModelError", "acall", "add_usage", "call", "chat_message", "check_models", "describe_failure", "failure_kind",
    "import_litellm", "one_line", "probe", "probe_server", "retries_allowed", "split_call_limits",
]

FailureKind = Literal["permanent", "unreachable", "transient"]

#: HTTP statuses that a retry cannot change.
_PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 413, 422})
_PROBE_MESSAGES = [{"role": "user", "content": "Reply with OK."}]
# A client that has no key at all fails before any request; litellm reports that as a 500 with no provider status.
_NO_CREDENTIALS = re.compile(r"missing credentials|api_key client option must be set|api key is (missing|required)",
                             re.IGNORECASE)
# aiohttp refuses, before any request, an api_base with user info when the client also sends a key.
_CONFLICTING_AUTH = re.compile(r"cannot combine (authorization header|auth argument)", re.IGNORECASE)


class ModelConfigError(ValueError):
    """A model is misconfigured (unknown provider or model, bad key, unreachable server); the text says the fix."""


class UserModelError(ModelConfigError):
    """The user simulator's model is misconfigured."""


class JudgeModelError(ModelConfigError):
    """The NL-assertion judge's model is misconfigured."""


class AgentModelError(ModelConfigError):
    """The agent's model is misconfigured."""


def import_litellm() -> Any:
    """The litellm module, configured for quiet offline-safe use."""
    # Without these, importing litellm fetches a cost map over the network (a block of up to seconds).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # The banner is printed on every failed call, retries included; our errors say what went wrong.
    litellm.suppress_debug_info = True
    return litellm


def failure_kind(exc: BaseException) -> FailureKind:
    """Whether the failed call that raised ``exc`` is worth retrying (see the module docstring)."""
    if isinstance(exc, TypeError) and not _is_openai_error(exc):
        return "permanent"  # bad keywords, raised before any request: the same call fails the same way
    if any(_CONFLICTING_AUTH.search(str(e)) for e in _chain(exc)):  # newer SDKs wrap it as a connection error
        return "permanent"
    if _is_connection_failure(exc):
        return "unreachable"
    status = _status(exc)
    if status in _PERMANENT_STATUS:
        return "permanent"
    return "transient"


def _chain(exc: BaseException, limit: int = 8) -> list[BaseException]:
    """``exc`` and what it was raised from (its causes and contexts), nearest first, at most ``limit`` deep."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(out) < limit and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _has_user_info(api_base: object) -> bool:
    if not isinstance(api_base, str):
        return False
    try:
        parts = urlsplit(api_base)
    except ValueError:
        return False
    return parts.username is not None or parts.password is not None


@dataclass(frozen=True)
class CallLimits:
    """How long one model call may take (seconds), how often a failure that can heal is retried, and the first
    backoff (seconds; it doubles with each retry)."""

    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 0.5

    def __post_init__(self) -> None:
        _require("timeout", self.timeout, _is_number(self.timeout) and self.timeout > 0, "a number > 0")
        _require("max_retries", self.max_retries, _is_number(self.max_retries) and isinstance(self.max_retries, int)
                 and self.max_retries >= 0, "a whole number >= 0")
        _require("backoff", self.backoff, _is_number(self.backoff) and self.backoff >= 0, "a number >= 0")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _require(name: str, value: object, ok: bool, kind: str) -> None:
    if not ok:
        raise ValueError(f"{name} must be {kind}, got {value!r}")


#: The keywords of :class:`CallLimits`: ours, never sent to the provider.
LIMIT_KEYWORDS = ("timeout", "max_retries", "backoff")


def split_call_limits(request: Mapping[str, Any]) -> tuple[dict[str, Any], CallLimits]:
    """``request`` without the :data:`LIMIT_KEYWORDS`, and the limits they set (defaults for those missing)."""
    rest = {k: v for k, v in request.items() if k not in LIMIT_KEYWORDS}
    return rest, CallLimits(**{k: request[k] for k in LIMIT_KEYWORDS if k in request})


def _bounded(request: Mapping[str, Any], limits: CallLimits) -> dict[str, Any]:
    # The retries are ours (they know which failures can heal): the provider client must not add its own.
    return {"max_retries": 0, **request, "timeout": limits.timeout}


def _retry_delay(exc: BaseException, attempt: int, limits: CallLimits) -> float | None:
    """Seconds to wait before retrying after failed try number ``attempt`` (from 0), or None to give up."""
    if attempt >= retries_allowed(failure_kind(exc), limits.max_retries):
        return None
    return limits.backoff * (2 ** attempt)


def _call_failed(role: str, exc: BaseException, attempt: int, redactor: Redactor) -> str:
    if failure_kind(exc) == "permanent":
        tries = "(not retried: it cannot heal)"
    else:
        tries = "after 1 try" if attempt == 0 else f"after {attempt + 1} tries"
    return f"{role} model call failed {tries}: {type(exc).__name__}: {redactor(str(exc))}"


async def acall(request: Mapping[str, Any], limits: CallLimits, *, role: str, error: Callable[[str], Exception],
                redactor: Redactor, server: OpenAIServer | None = None) -> Any:
    """The model's response to ``request`` (``litellm.acompletion`` keywords), each try cut off after
    ``limits.timeout``; raises ``error("<role> model call failed ...")``, redacted, once retrying cannot help.

    With ``server`` the request goes to that OpenAI-compatible server (:mod:`mua_gym.llm.openai_http`) as the JSON
    body, and the response is its JSON (a dict); without, through litellm (its response object).
    :func:`chat_message` and :func:`add_usage` read either.
    """
    if server is not None:
        def send() -> Any:
            return server.complete(request, limits.timeout)
    else:
        litellm = import_litellm()
        bounded = _bounded(request, limits)
        if bounded.get("api_key") and _has_user_info(bounded.get("api_base")):
            # aiohttp refuses this pair before any request; some SDK versions then report only "Connection error"
            raise error(f"{role} model call failed (not retried: it cannot heal): the api_base carries credentials "
                        "(user info) and an api_key is set too, which the async HTTP client refuses: pass one of them")

        def send() -> Any:
            return asyncio.wait_for(litellm.acompletion(**bounded), limits.timeout)
    attempt = 0
    while True:
        try:
            return await send()
        except Exception as exc:  # classified: permanent ones fail now, the rest are retried
            delay = _retry_delay(exc, attempt, limits)
            if delay is None:
                raise error(_call_failed(role, exc, attempt, redactor)) from None
            await asyncio.sleep(delay)
            attempt += 1


def chat_message(response: Any) -> dict[str, Any]:
    """The first choice's message of a chat response (litellm's object or a server's JSON) as
    ``{"content": str | None, "tool_calls": [{"id", "type", "function": {"name", "arguments"}}, ...]}``."""
    if isinstance(response, dict):
        message = response["choices"][0].get("message") or {}
        calls = [{"id": c.get("id"), "type": "function",
                  "function": {"name": (c.get("function") or {}).get("name"),
                               "arguments": (c.get("function") or {}).get("arguments")}}
                 for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        return {"content": message.get("content"), "tool_calls": calls}
    choice = response.choices[0].message
    return {"content": choice.content,
            "tool_calls": [{"id": c.id, "type": "function",
                            "function": {"name": c.function.name, "arguments": c.function.arguments}}
                           for c in (getattr(choice, "tool_calls", None) or [])]}


def call(request: Mapping[str, Any], limits: CallLimits, *, role: str, error: Callable[[str], Exception],
         redactor: Redactor) -> Any:
    """:func:`acall` without an event loop (``litellm.completion``); the provider client enforces the timeout."""
    litellm = import_litellm()
    request = _bounded(request, limits)
    attempt = 0
    while True:
        try:
            return litellm.completion(**request)
        except Exception as exc:  # classified: permanent ones fail now, the rest are retried
            delay = _retry_delay(exc, attempt, limits)
            if delay is None:
                raise error(_call_failed(role, exc, attempt, redactor)) from None
            time.sleep(delay)
            attempt += 1


def retries_allowed(kind: FailureKind, max_retries: int) -> int:
    """How many retries a failure of ``kind`` gets when the caller allows ``max_retries``."""
    if kind == "permanent":
        return 0
    if kind == "unreachable":
        return min(1, max_retries)
    return max_retries


def _is_openai_error(exc: BaseException) -> bool:
    return any(cls.__module__.split(".")[0] in ("openai", "litellm") for cls in type(exc).__mro__)


def _status(exc: BaseException) -> int | None:
    """The HTTP status the failure amounts to (401 for a client that was given no key at all)."""
    status = None
    for name in ("status_code", "provider_status_code"):
        value = getattr(exc, name, None)
        try:
            if value is not None:
                status = int(value)
                break
        except (TypeError, ValueError):
            continue
    if status in (None, 500) and getattr(exc, "provider_status_code", None) is None and \
            _NO_CREDENTIALS.search(str(exc)):
        return 401
    return status


def _is_connection_failure(exc: BaseException) -> bool:
    if _is_timeout(exc):  # litellm's Timeout is an APIConnectionError, but a slow server is not an absent one
        return False
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "APIConnectionError" in names or isinstance(exc, ConnectionError):
        return True
    # litellm reports a refused connection to an OpenAI-compatible server as a 500 with no provider status.
    return ("InternalServerError" in names and getattr(exc, "provider_status_code", None) is None
            and "connection error" in str(exc).lower())


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or any(cls.__name__ in ("Timeout", "APITimeoutError")
                                                for cls in type(exc).__mro__)


def _provider(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else model


def _unknown_provider(litellm: Any, model: str, kwargs: Mapping[str, Any]) -> bool:
    try:
        litellm.get_llm_provider(model, custom_llm_provider=kwargs.get("custom_llm_provider"),
                                 api_base=kwargs.get("api_base"))
    except Exception:  # litellm raises BadRequestError for a model it cannot route
        return True
    return False


def _key_variables(litellm: Any, model: str) -> str:
    try:
        missing = litellm.validate_environment(model).get("missing_keys") or []
    except Exception:  # an unroutable model: fall back on the provider's conventional name
        missing = []
    names = [n for n in missing if n.endswith(("_KEY", "_TOKEN"))] or [f"{_provider(model).upper()}_API_KEY"]
    return " or ".join(names)


def add_usage(usage: dict[str, float], response: Any) -> None:
    """Adds a chat response's token counts (and its price, where litellm knows the model's) to ``usage``."""
    if isinstance(response, dict):  # a server's JSON: token counts, no price
        counts = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
            usage[k] = usage.get(k, 0) + int(counts.get(k) or 0)
        return
    u = getattr(response, "usage", None)
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        usage[k] = usage.get(k, 0) + int(getattr(u, k, 0) or 0)
    # litellm has already priced the call while logging it; pricing it again costs milliseconds of CPU.
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if isinstance(cost, (int, float)):
        usage["cost"] = usage.get("cost", 0.0) + float(cost)


def one_line(error: str | BaseException, limit: int | None = None) -> str:
    """``error`` (a text, or an exception's message) with its whitespace runs collapsed to single spaces, cut to
    ``limit`` characters with "..." when longer; an exception without a message gives its type's name."""
    if isinstance(error, BaseException):
        # A KeyError's str() is the repr of its key; its message is what the caller wrote.
        text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
        line = re.sub(r"\s+", " ", text).strip() or type(error).__name__
    else:
        line = re.sub(r"\s+", " ", error).strip()
    return line if limit is None or len(line) <= limit else line[:limit - 3] + "..."


def describe_failure(exc: BaseException, model: str, kwargs: Mapping[str, Any], key_hint: str,
                     redactor: Redactor | None = None) -> str:
    """One line saying why a call to ``model`` failed and what to change (``key_hint``: how to pass a key),
    redacted: the endpoint it names may carry a user and password."""
    # Redacted before it is cut, so that no cut can leave part of a secret unrecognised.
    return one_line((redactor or Redactor())(_diagnose(exc, model, kwargs, key_hint)), 300)


def _diagnose(exc: BaseException, model: str, kwargs: Mapping[str, Any], key_hint: str) -> str:
    litellm = import_litellm()
    where = str(kwargs.get("api_base") or f"{_provider(model)}'s default endpoint")
    status = _status(exc)
    if status == 400 and _unknown_provider(litellm, model, kwargs):
        if "/" not in model:
            return f"litellm cannot tell the provider of model {model!r}: name it provider/model, e.g. openai/{model}"
        return (f"unknown provider {_provider(model)!r} in model {model!r}: use a litellm model name such as "
                "openai/gpt-4o-mini")
    if status == 401:
        return f"authentication failed for {model}: set {_key_variables(litellm, model)} or pass {key_hint}"
    if status == 403:
        return f"permission denied for {model}: the key has no access to this model"
    if status == 404:
        return f"model {model!r} not found at {where}: check the model name"
    if _is_connection_failure(exc):
        return f"cannot reach {where} for {model}: is the server running?"
    if _is_timeout(exc):
        return f"{model} did not answer at {where} in time: is the server up and the model loaded?"
    return f"{model} failed: {type(exc).__name__}: {exc}"


def probe(model: str, kwargs: Mapping[str, Any], *, role: str, key_hint: str,
          error: type[ModelConfigError] = ModelConfigError, timeout: float = 30.0,
          server: OpenAIServer | None = None) -> None:
    """Makes one tiny call to ``model``; returns if it answers, else raises ``error`` with the fix in one line.

    ``role`` (``"user"``, ``"judge"``, ``"agent"``) starts the message; ``key_hint`` says how the caller passes a
    key (``"user_kwargs={'api_key': ...}"``), named in the fix for a failed authentication. The
    :data:`LIMIT_KEYWORDS` in ``kwargs`` are not sent; a ``timeout`` there shorter than ``timeout`` wins. With
    ``server`` the call goes to that OpenAI-compatible server (:func:`probe_server`), not through litellm.
    """
    if server is not None:
        return probe_server(server, model, kwargs, role=role, key_hint=key_hint, error=error, timeout=timeout)
    litellm = import_litellm()
    kwargs, limits = split_call_limits(kwargs)
    request = {**kwargs, "model": model, "messages": _PROBE_MESSAGES, "max_tokens": 1, "max_retries": 0,
               "timeout": min(timeout, limits.timeout)}
    try:
        litellm.completion(**request)
    except Exception as exc:  # every failure is reported as the one-line configuration error
        message = describe_failure(exc, model, kwargs, key_hint, Redactor.of(dict(kwargs)))
        raise error(one_line(f"{role} model: {message}", 300)) from None


def probe_server(server: OpenAIServer, model: str, kwargs: Mapping[str, Any], *, role: str, key_hint: str,
                 error: type[ModelConfigError] = ModelConfigError, timeout: float = 30.0) -> None:
    """:func:`probe` for a model served by an OpenAI-compatible ``server`` (no litellm): one tiny call, or a
    one-line ``error`` naming the fix."""
    kwargs, limits = split_call_limits(kwargs)
    body = {**kwargs, "model": model, "messages": _PROBE_MESSAGES, "max_tokens": 1}
    try:
        server.complete_blocking(body, min(timeout, limits.timeout))
    except Exception as exc:  # every failure is reported as the one-line configuration error
        status = _status(exc)
        where = server.base_url
        if status == 401:
            fix = f"authentication failed at {where} for {model}: pass {key_hint}"
        elif status == 404:
            fix = f"model {model!r} not found at {where}: check the model name and that the URL ends in /v1"
        elif _is_connection_failure(exc):
            fix = f"cannot reach {where} for {model}: is the server running?"
        elif _is_timeout(exc):
            fix = f"{model} did not answer at {where} in time: is the server up and the model loaded?"
        else:
            fix = f"{model} failed at {where}: {type(exc).__name__}: {exc}"
        raise error(one_line(Redactor.of(dict(kwargs))(f"{role} model: {fix}"), 300)) from None


def check_models(*parts: object) -> None:
    """Calls ``check()`` on each part that has one (LLM user, judge, agent): one probe call per model.

    Returns None when every model answers; raises the first part's :class:`ModelConfigError` otherwise.
    """
    for part in parts:
        check = getattr(part, "check", None)
        if callable(check):
            check()
