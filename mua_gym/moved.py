"""Module paths that moved when the core was grouped by job, kept for one release.

Importing an old path (``import mua_gym.llm_client``, ``from mua_gym.judge import Verdicts``) gives the module at its
new home, the same object, with a ``DeprecationWarning`` naming it; the old paths go in version 0.2.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Sequence

__all__ = ["MOVED", "install"]

#: Old module path -> new module path.
MOVED: dict[str, str] = {
    "mua_gym.llm_client": "mua_gym.llm.client",
    "mua_gym.openai_http": "mua_gym.llm.openai_http",
    "mua_gym.judge": "mua_gym.llm.judge",
    "mua_gym.redact": "mua_gym.llm.redact",
    "mua_gym.local_model": "mua_gym.llm.local_model",
    "mua_gym.evaluation": "mua_gym.eval.evaluate",
    "mua_gym.compare": "mua_gym.eval.compare",
    "mua_gym.report": "mua_gym.eval.report",
    "mua_gym.export": "mua_gym.eval.export",
    "mua_gym.audit": "mua_gym.eval.audit",
    "mua_gym.baselines": "mua_gym.eval.baselines",
    "mua_gym.agents": "mua_gym.eval.agents",
    "mua_gym.testing": "mua_gym.eval.fuzz",
    "mua_gym.perturbations.gap": "mua_gym.eval.gap",
    "mua_gym.image": "mua_gym.world.image",
    "mua_gym.sql": "mua_gym.world.sql",
    "mua_gym.diff": "mua_gym.world.diff",
    "mua_gym.memo": "mua_gym.world.memo",
    "mua_gym.registry": "mua_gym.domain.registry",
    "mua_gym.tau2": "mua_gym.domain.tau2",
    "mua_gym.disk_cache": "mua_gym.domain.disk_cache",
    "mua_gym.taskgen": "mua_gym.kit.generation",
    "mua_gym.fairness": "mua_gym.kit.fairness",
    "mua_gym.kit.tasks": "mua_gym.kit.maker",
    "mua_gym.gym_env": "mua_gym.env.gym_env",
    "mua_gym.episode": "mua_gym.env.episode",
    "mua_gym.parsing": "mua_gym.env.parsing",
    "mua_gym.reward": "mua_gym.env.reward",
    "mua_gym.trajectory": "mua_gym.env.trajectory",
    "mua_gym.infos": "mua_gym.env.infos",
    "mua_gym.spaces": "mua_gym.env.spaces",
    "mua_gym.communicate": "mua_gym.env.communicate",
    "mua_gym.html_view": "mua_gym.env.html_view",
    "mua_gym.user_sims.memo": "mua_gym.user_sims.reply_memo",
    "mua_gym.chat_tokens": "mua_gym.integrations.chat_tokens",
    "mua_gym.tool_functions": "mua_gym.integrations.tool_functions",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at its new one."""

    def __init__(self) -> None:
        self._own_specs: dict[str, importlib.machinery.ModuleSpec | None] = {}  # by old path, while loading

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in mua_gym 0.2", DeprecationWarning,
                      stacklevel=2)
        module = importlib.import_module(new)
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module is loaded. importlib has just set the old path's spec on it: it gets its own
        back."""
        module.__spec__ = self._own_specs.pop(module.__spec__.name)


def install() -> None:
    """Puts the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
