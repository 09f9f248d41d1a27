"""Optional dependencies: each comes with a pip extra, and a missing one is named in one line.

``import mua_gym`` imports none of them; a feature imports its own through :func:`require_extra` when used.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "require_extra"]


class MissingExtraError(ImportError):
    """A feature was used without its optional dependency installed; the message names the pip extra."""


def require_extra(module: str, extra: str, feature: str, error: type[MissingExtraError] = MissingExtraError
                  ) -> ModuleType:
    """Imports ``module`` for ``feature`` (what the user called, e.g. ``mua-gym report``), or raises ``error``
    in one line naming ``pip install "mua_gym[<extra>]"``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise error(f"{feature} needs {module.split('.')[0]} ({exc}): pip install \"mua_gym[{extra}]\"") from None
