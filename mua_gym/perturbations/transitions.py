"""Transition perturbations: agent tool calls that fail as real services fail, without running.

A faulted call never reaches the world, so the world is exactly as it was before the call and the same call,
made again, runs as it would have. The agent is not charged a tool error for it (``info["tool_errors"]`` and
the validity term count the agent's own mistakes).
"""

from __future__ import annotations

from typing import Any

from mua_gym.perturbations.base import Call, Perturbation, register_perturbation
from mua_gym.tools import ToolResult

__all__ = ["FAULTS", "ToolFaults"]

#: Each fault and what the failed call answers (``{}``: a detail drawn per fault).
FAULTS: dict[str, str] = {
    "timeout": "the request timed out after {} s; nothing was changed",
    "rate_limit": "429 Too Many Requests: rate limit exceeded; retry in {} s",
    "server_error": "503 Service Unavailable: the server could not handle the request (trace {})",
    "permission_denied": "403 Forbidden: the session's permission check failed (token {}); the request was not "
                         "applied",
    "malformed_result": "could not parse the service's response: '{}'",
    "schema_drift": "422 Unprocessable Entity: the request does not match the service's schema version {}; "
                    "nothing was changed",
}
_BROKEN_BODIES = ('{"result": {"st', '<html><body>502 Bad Gateway', '{"data": [', '\\x00\\x1f\\x8b', '{"ok": tru')


@register_perturbation
class ToolFaults(Perturbation):
    """Fails each agent tool call with chance ``rate``, with one of ``kinds`` (default: every fault of
    :data:`FAULTS`) drawn per call. ``tools``: only calls of these tools (default: any); each must be one the
    env offers (ValueError from ``make`` otherwise: a misspelt name would silently never fault)."""

    name = "tool_faults"
    family = "transition"

    def __init__(self, rate: float = 0.2, kinds: list[str] | str | None = None,
                 tools: list[str] | str | None = None) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"rate is a chance, at least 0 and below 1 (at 1 no call could ever run), not {rate!r}")
        kinds = list(FAULTS) if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
        unknown = sorted(set(kinds) - set(FAULTS))
        if unknown or not kinds:
            raise ValueError(f"kinds must name some of {', '.join(FAULTS)}; unknown: {unknown or '(none named)'}")
        self.rate, self.kinds = float(rate), kinds
        self.only = None if tools is None else frozenset([tools] if isinstance(tools, str) else tools)
        if self.only is not None and (not self.only or not all(isinstance(t, str) and t for t in self.only)):
            raise ValueError(f"tools names the tools whose calls may fail, not {tools!r}")
        only = {} if self.only is None else {"tools": sorted(self.only)}
        super().__init__(rate=self.rate, kinds=list(kinds), **only)

    def check_tools(self, offered: frozenset[str]) -> None:
        missing = sorted(self.only - offered) if self.only is not None else []
        if missing:
            raise ValueError(f"tool_faults: tools {missing} are not offered to the agent; offered: "
                             f"{', '.join(sorted(offered))}")

    def intercept(self, call: Call) -> ToolResult | None:
        if call.kind is None or (self.only is not None and call.name not in self.only):
            return None  # an unknown tool's call is the agent's own error, not the service's
        rng = self.rng
        if rng.random() >= self.rate:
            return None
        kind = self.kinds[int(rng.integers(len(self.kinds)))]
        detail: Any = {
            "timeout": lambda: int(rng.integers(10, 61)),
            "rate_limit": lambda: int(rng.integers(1, 31)),
            "server_error": lambda: f"{int(rng.integers(16 ** 8)):08x}",
            "permission_denied": lambda: f"{int(rng.integers(16 ** 6)):06x}",
            "malformed_result": lambda: _BROKEN_BODIES[int(rng.integers(len(_BROKEN_BODIES)))],
            "schema_drift": lambda: f"2026-{int(rng.integers(1, 13)):02d}",
        }[kind]()
        self.event({"turn": call.turn, "tool": call.name, "fault": kind})
        return ToolResult.failure(FAULTS[kind].format(detail))
