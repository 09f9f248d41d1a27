"""The domain kit: mechanics that every domain's world generator and task maker share, kept once here.

A domain imports what it needs from the submodules (``sampling``, ``people``, ``maker``, ``records``, ``generation``,
``fairness``); the runtime never imports the kit.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["deferred"]


def deferred(target: str) -> Callable[..., Any]:
    """``"package.module:function"`` as a function that imports it on its first call: a domain names its world
    generator this way, so that importing the domain (every registry lookup does) stays cheap."""
    module, _, name = target.partition(":")
    found: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not found:
            found.append(getattr(importlib.import_module(module), name))
        return found[0](*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = module  # what the disk cache's key digests: the target's code, not the kit's
    call.__doc__ = f"{target}, imported on first call."
    return call
