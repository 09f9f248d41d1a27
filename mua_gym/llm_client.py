"""What the LLM user, the LLM judge and the LLM agent share about calling litellm.

- :func:`import_litellm`: litellm, imported on first use (it costs seconds), told not to fetch its cost map
  over the network and not to print its "Give Feedback / Get Help" banner on every failure.
- :func:`failure_kind`: whether a failed call can heal. Permanent (never retried): bad request (unknown
  provider, bad parameters, context window, content policy), authentication, permission denied, not found,
  unprocessable entity, and a ``TypeError`` raised before any request (bad keywords). Unreachable
  (retried once: a server that is restarting comes back, one that is not running does not): connection
  refused or failed. Transient (retried with backoff): rate limits, timeouts, 5xx, everything else.
- :func:`probe`: one tiny call that checks a model's configuration, raising a one-line
  :class:`ModelConfigError` that names the fix.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal, Mapping

from mua_gym.redact import Redactor

__all__ = [
    "AgentModelError", "FailureKind", "JudgeModelError", "ModelConfigError", "UserModelError", "check_models",
    "describe_failure", "failure_kind", "import_litellm", "probe", "retries_allowed",
]

FailureKind = Literal["permanent", "unreachable", "transient"]

#: HTTP statuses that a retry cannot change.
_PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 413, 422})
_PROBE_MESSAGES = [{"role": "user", "content": "Reply with OK."}]
# A client that has no key at all fails before any request; litellm reports that as a 500 with no provider status.
_NO_CREDENTIALS = re.compile(r"missing credentials|api_key client option must be set|api key is (missing|required)",
                             re.IGNORECASE)


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
    if _is_connection_failure(exc):
        return "unreachable"
    status = _status(exc)
    if status in _PERMANENT_STATUS:
        return "permanent"
    return "transient"


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


def _one_line(text: str, limit: int = 300) -> str:
    line = re.sub(r"\s+", " ", text).strip()
    return line if len(line) <= limit else line[:limit - 3] + "..."


def describe_failure(exc: BaseException, model: str, kwargs: Mapping[str, Any], key_hint: str,
                     redactor: Redactor | None = None) -> str:
    """One line saying why a call to ``model`` failed and what to change (``key_hint``: how to pass a key)."""
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
    detail = (redactor or Redactor())(str(exc))
    return _one_line(f"{model} failed: {type(exc).__name__}: {detail}")


def probe(model: str, kwargs: Mapping[str, Any], *, role: str, key_hint: str,
          error: type[ModelConfigError] = ModelConfigError, timeout: float = 30.0) -> None:
    """Makes one tiny call to ``model``; returns if it answers, else raises ``error`` with the fix in one line.

    ``role`` (``"user"``, ``"judge"``, ``"agent"``) starts the message; ``key_hint`` says how the caller passes a
    key (``"user_kwargs={'api_key': ...}"``), named in the fix for a failed authentication.
    """
    litellm = import_litellm()
    request = {**kwargs, "model": model, "messages": _PROBE_MESSAGES, "max_tokens": 1, "max_retries": 0,
               "timeout": timeout}
    try:
        litellm.completion(**request)
    except Exception as exc:  # every failure is reported as the one-line configuration error
        message = describe_failure(exc, model, kwargs, key_hint, Redactor.of(dict(kwargs)))
        raise error(_one_line(f"{role} model: {message}")) from None


def check_models(*parts: object) -> None:
    """Calls ``check()`` on each part that has one (LLM user, judge, agent): one probe call per model.

    Returns None when every model answers; raises the first part's :class:`ModelConfigError` otherwise.
    """
    for part in parts:
        check = getattr(part, "check", None)
        if callable(check):
            check()
