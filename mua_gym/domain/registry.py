"""Finding domains: every domain, the built-in ones too, by the ``mua_gym.domains`` entry point group.

A domain's package declares, in its ``setup.cfg`` (mua_gym's own declares retail, airline, telecom and mock
the same way)::

    [options.entry_points]
    mua_gym.domains =
        pizza = mua_pizza:DOMAIN

The entry point may name a :class:`Domain` or a function returning one. Names are read when
``mua_gym`` is imported (cheap: no plugin code runs) so that ``mua/Pizza-v0`` is registered with
Gymnasium; the plugin itself is imported on the first ``make`` or ``get_domain``. A plugin that fails to
load produces a warning naming it, and the other domains keep working.
"""

from __future__ import annotations

import threading
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import gymnasium

from mua_gym.domain import Domain, UserVocabulary, env_name

__all__ = ["ENTRY_POINT_GROUP", "available_domains", "env_id", "get_domain", "register_envs", "user_vocabulary"]

ENTRY_POINT_GROUP = "mua_gym.domains"
_OWN_DISTRIBUTION = "mua_gym"  # its entry points are the built-in domains: another package cannot take their names

_loaded: dict[str, Domain] = {}
_plugins: dict[str, EntryPoint] = {}
_lock = threading.Lock()


class DomainLoadError(RuntimeError):
    """A domain (usually a third-party plugin) could not be loaded."""


def env_id(name: str) -> str:
    return f"mua/{env_name(name)}-v0"


def user_env_id(name: str) -> str:
    """The id of the domain's user-side env, where the policy plays the customer (``mua/Retail-User-v0``)."""
    return f"mua/{env_name(name)}-User-v0"


def _discover_plugins() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # broken metadata must not break import
        warnings.warn(f"mua_gym: could not read entry points of group {ENTRY_POINT_GROUP!r}: {exc}", stacklevel=2)
        return found
    ordered = sorted(eps, key=lambda ep: not _is_builtin(ep))  # the built-in ones claim their names first
    builtin: set[str] = set()
    for ep in ordered:
        name = ep.name.lower()
        if name in builtin:
            warnings.warn(f"mua_gym: plugin {ep.value!r} uses the built-in domain name {ep.name!r}; ignored",
                          stacklevel=2)
            continue
        if _is_builtin(ep):
            builtin.add(name)
        found.setdefault(name, ep)
    return found


def _is_builtin(ep: EntryPoint) -> bool:
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) or ""
    return name.replace("-", "_").lower() == _OWN_DISTRIBUTION


def available_domains() -> list[str]:
    """Names of every domain that can be loaded (built-in and plugins), without loading any."""
    return sorted(set(_plugins) | set(_loaded))


def _load(name: str) -> Domain:
    obj: Any
    if name in _plugins:
        ep = _plugins[name]
        origin = f"entry point {ep.name} = {ep.value}"
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, Domain):
                obj = obj()
        except Exception as exc:
            message = f"mua_gym: domain plugin {origin} failed to load: {type(exc).__name__}: {exc}"
            warnings.warn(message, stacklevel=3)
            raise DomainLoadError(message) from exc
    else:
        raise KeyError(f"unknown domain {name!r}; available: {available_domains()}")
    if not isinstance(obj, Domain):
        message = f"mua_gym: {origin} gave {type(obj).__name__}, not a mua_gym.Domain"
        warnings.warn(message, stacklevel=3)
        raise DomainLoadError(message)
    return obj


def get_domain(name: str) -> Domain:
    """The domain called ``name`` (``"mock"``, ``"retail"``, a plugin's name), loaded once."""
    key = name.lower()
    found = _loaded.get(key)
    if found is not None:
        return found
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load(key)
        return _loaded[key]


def user_vocabulary(name: str | None) -> UserVocabulary | None:
    """The ``user_vocabulary`` the domain called ``name`` declares: None where it declares none, and where no domain
    of that name is known or loads (what its user understands in words is then nothing)."""
    if name is None:
        return None
    try:
        return get_domain(name).user_vocabulary
    except (KeyError, DomainLoadError):  # a task or env of a domain never registered here, or a broken plugin
        return None


def register_domain(domain: Domain) -> str:
    """Makes a domain object available by name (and as a Gymnasium id) without an entry point."""
    with _lock:
        _loaded[domain.name.lower()] = domain
    _register_env(domain.name.lower())
    return env_id(domain.name)


def _register_env(name: str) -> None:
    """Registers the domain's agent env (``mua/<Name>-v0``) and its user-side env (``mua/<Name>-User-v0``)."""
    for eid, entry_point in ((env_id(name), "mua_gym.env.gym_env:MuaEnv"),
                             (user_env_id(name), "mua_gym.eval.user_side:UserEnv")):
        if eid in gymnasium.registry:
            continue
        gymnasium.register(
            id=eid,
            entry_point=entry_point,
            kwargs={"domain": name},
            nondeterministic=True,
            disable_env_checker=True,
            order_enforce=False,  # both envs enforce reset-before-step; OrderEnforcing would hide _repr_html_
        )


def register_envs() -> None:
    """Registers ``mua/<Name>-v0`` for every domain of the entry point group (called on import)."""
    _plugins.clear()
    _plugins.update(_discover_plugins())
    for name in available_domains():
        _register_env(name)
