"""Moved in 0.1: the reading of a request to :mod:`mua_gym.user_sims.tool_requests`, and telecom's phone settings,
which are now its own words, to :mod:`mua_gym.domains.telecom.user_requests` (``DOMAIN.user_vocabulary``).

Each old name still resolves here, with a ``DeprecationWarning`` naming its new home; this module goes in mua_gym 0.2.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

#: Old name -> (new module, new name). The two readers keep their old signatures: telecom's words, bound.
_MOVED = {
    "REQUEST_WORDS": ("mua_gym.user_sims.tool_requests", "REQUEST_WORDS"),
    "PhoneRequest": ("mua_gym.user_sims.tool_requests", "ToolRequest"),
    "named_request": ("mua_gym.user_sims.tool_requests", "named_request"),
    "Setting": ("mua_gym.domain.vocabulary", "Setting"),
    "SETTINGS": ("mua_gym.domains.telecom.user_requests", "SETTINGS"),
    "request_in_words": ("mua_gym.user_sims.tool_requests", "RequestReader.request_in_words"),
    "switch_state": ("mua_gym.user_sims.tool_requests", "RequestReader.switch_state"),
}


def __getattr__(name: str) -> Any:
    """The moved ``name`` from its new home, with a DeprecationWarning."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, new = _MOVED[name]
    warnings.warn(f"{__name__}.{name} moved to {module}.{new}; the old path goes in mua_gym 0.2", DeprecationWarning,
                  stacklevel=2)
    if new.startswith("RequestReader."):  # the old (text, tools) / (setting, text) calls read telecom's words
        from mua_gym.domains.telecom.user_requests import VOCABULARY
        from mua_gym.user_sims.tool_requests import reader_for

        return getattr(reader_for(VOCABULARY), new.partition(".")[2])
    return getattr(importlib.import_module(module), new)
