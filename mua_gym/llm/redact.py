"""Keeping credentials out of error texts, logs and trajectories.

Provider errors can echo the key they were sent, in whatever shape the provider's keys have. So redaction
replaces, in any text it is given:

- every configured secret: the value of any keyword whose name is a credential's (``api_key``, ``token``,
  ``password``, ``Authorization`` ...), at any depth of the user, agent or judge keywords; a setting whose name
  merely mentions one (``max_tokens``) is not a secret, and is written down and compared like any setting;
- the value of every environment variable whose name looks like a credential (``OPENAI_API_KEY``,
  ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ...), read when the text is redacted;
- strings shaped like keys (``sk-...``, ``Bearer ...``, ``AIza...``) whatever configured them;
- the user and password of any URL (``https://bob:pw@host`` -> ``https://[redacted]@host``) and the values of
  its credential-named query parameters (``?api_key=...``, ``&token=...``); a configured or environment URL also
  makes its password, its user info and that user info's base64 (what HTTP basic authentication sends, and what a
  provider may echo) secrets of their own.

Values shorter than :data:`MIN_SECRET_LENGTH` characters are left alone: placeholders such as ``"x"`` or
``"EMPTY"`` (what local servers are given) would otherwise turn every error into mush, and real provider
keys are far longer; URL user info is always redacted. Redaction runs on error paths only; it costs one pass over
the text per secret and one per pattern.
"""

from __future__ import annotations

import base64
import os
import re
from typing import Any, Iterable, Mapping
from urllib.parse import unquote

__all__ = ["MIN_SECRET_LENGTH", "PLACEHOLDER", "Redactor", "is_secret_name", "masked", "redact", "secret_values",
           "url_secrets"]

#: Shorter values are placeholders, not secrets (see the module docstring).
MIN_SECRET_LENGTH = 6
PLACEHOLDER = "[redacted]"

#: A name is a credential's where its last word is one of these (``api_key``, ``HF_TOKEN``, ``Authorization``,
#: ``client_secret``), or where any word is a credential word (``password_prod``); never a setting that merely
#: mentions one (``max_tokens``, ``keyword``, ``auth_url``, ``SSH_AUTH_SOCK``).
_CREDENTIAL_LAST_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "passphrase",
                                    "credential", "credentials", "auth", "authorization", "bearer", "cookie"})
_CREDENTIAL_WORDS = frozenset({"apikey", "password", "passwd", "passphrase", "secret", "credentials"})
#: A name's last word naming where a credential is, not the credential itself.
_POINTER_WORDS = frozenset({"file", "path", "env", "name", "id", "url", "sock", "type", "dir"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# Key-shaped strings that no configuration announced: OpenAI/Anthropic-style prefixes, bearer tokens, Google keys.
# Each alternative starts at a non-word boundary and consumes its run greedily, so a scan is linear.
_KEY_SHAPED = re.compile(
    r"(?<![A-Za-z0-9])(?:sk|pk|rk|api|key)[-_][A-Za-z0-9_\-]{8,}"
    r"|(?<![A-Za-z0-9])Bearer\s+[A-Za-z0-9._~+/\-]{8,}=*"
    r"|(?<![A-Za-z0-9])AIza[A-Za-z0-9_\-]{20,}",
    re.IGNORECASE)
# The user info of a URL: after "://", up to its last "@" before the host's end. Every match starts right after a
# "://" and cannot run past the next "/", so the scans are disjoint and the pass is linear.
_URL_USERINFO = re.compile(r"(?<=://)[^\s/?#\"<>\\]*@")
# A query parameter: each match starts at a "?" or "&", and neither name nor value can hold one, so a pass is linear.
_QUERY_PARAMETER = re.compile(r"(?P<sep>[?&])(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^\s&#?\"'<>]+)")


def is_secret_name(name: str) -> bool:
    """Whether a keyword, header, query parameter or environment variable called ``name`` holds a credential: by
    its words (``x-api-key``, ``OPENAI_API_KEY``, ``authToken``), so that ``max_tokens`` is a setting, not one."""
    words = [w.lower() for w in _WORD.findall(name)]
    if not words or words[-1] in _POINTER_WORDS:
        return False
    return words[-1] in _CREDENTIAL_LAST_WORDS or not _CREDENTIAL_WORDS.isdisjoint(words)


def secret_values(*configs: Mapping[str, Any] | None) -> set[str]:
    """The credential values in keyword dicts (nested dicts and lists included) and the credentials in their URLs
    (see :func:`url_secrets`), long enough to redact."""
    found: set[str] = set()
    for config in configs:
        if config:
            _collect(config, False, found)
    return found


def masked(value: Any) -> Any:
    """A copy of a JSON-like config safe to write down: the value of every credential-named key (at any depth)
    is :data:`PLACEHOLDER`, and every string is redacted (URL user info, key-shaped strings)."""
    if isinstance(value, Mapping):
        return {k: PLACEHOLDER if is_secret_name(str(k)) and v is not None else masked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def _collect(value: Any, secret: bool, found: set[str]) -> None:
    if isinstance(value, Mapping):
        for name, item in value.items():
            _collect(item, secret or is_secret_name(str(name)), found)
    elif isinstance(value, (list, tuple, set)):
        for item in value:
            _collect(item, secret, found)
    elif isinstance(value, str) and "://" in value:
        found |= url_secrets(value)
        if secret:
            _collect_value(value, found)
    elif secret and isinstance(value, (str, int)) and not isinstance(value, bool):
        _collect_value(str(value), found)


def _collect_value(text: str, found: set[str]) -> None:
    # "Bearer <token>" and the like: the token alone is the secret too.
    for part in (text, *text.split()):
        if len(part) >= MIN_SECRET_LENGTH:
            found.add(part)


def url_secrets(text: str) -> set[str]:
    """The credentials in the URLs of ``text``, long enough to redact: each user info (as written and decoded),
    its password, its base64 (an HTTP basic-auth header) and the values of credential-named query parameters."""
    found: set[str] = set()
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group()[:-1]
        for form in {userinfo, unquote(userinfo)}:
            found |= {form, form.partition(":")[2], base64.b64encode(form.encode()).decode()}
    for match in _QUERY_PARAMETER.finditer(text):
        if is_secret_name(match["name"]):
            found |= {match["value"], unquote(match["value"])}
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH}


def _environment_secrets(environ: Mapping[str, str]) -> set[str]:
    found: set[str] = set()
    for name, value in environ.items():
        if is_secret_name(name) and len(value) >= MIN_SECRET_LENGTH:
            found.add(value)
        if "://" in value:  # OPENAI_BASE_URL and the like may carry a user and password
            found |= url_secrets(value)
    return found


def _redact_query_parameter(match: re.Match[str]) -> str:
    if is_secret_name(match["name"]) and len(match["value"]) >= MIN_SECRET_LENGTH:
        return f"{match['sep']}{match['name']}={PLACEHOLDER}"
    return match.group()


class Redactor:
    """Redacts a fixed set of configured secrets, plus the environment's and key-shaped ones, from texts."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = frozenset(s for s in secrets if len(s) >= MIN_SECRET_LENGTH)

    @classmethod
    def of(cls, *configs: Mapping[str, Any] | None) -> "Redactor":
        """A redactor for the secrets in these keyword dicts (see :func:`secret_values`)."""
        return cls(secret_values(*configs))

    def __call__(self, text: str) -> str:
        """``text`` with every known secret replaced by :data:`PLACEHOLDER`."""
        return redact(text, self.secrets)


def redact(text: str, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """``text`` with ``secrets``, credential environment values, URL credentials and key-shaped strings replaced."""
    values = set(secrets) | _environment_secrets(os.environ if environ is None else environ)
    # Longest first, so that a secret containing another is replaced whole.
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, PLACEHOLDER)
    text = _URL_USERINFO.sub(PLACEHOLDER + "@", text)
    text = _QUERY_PARAMETER.sub(_redact_query_parameter, text)
    return _KEY_SHAPED.sub(PLACEHOLDER, text)
