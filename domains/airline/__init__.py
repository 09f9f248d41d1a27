"""Airline: flight bookings and changes, with TAU2 Airline's tool interface on an SQL world.

World sources: ``generated`` (seeded worlds of our own) and ``tau2`` (TAU2's airline database, read from the
installed ``tau2`` package or ``path=``). Task sources: ``generated`` (unlimited verified tasks) and ``tau2``
(TAU2's 50 tasks, train/test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mua_gym import tau2
from mua_gym.domain import Domain
from mua_gym.domains.airline.taskgen import generated_tasks
from mua_gym.domains.airline.schema import Base
from mua_gym.domains.airline.tau2_format import build_tau2, tau2_tasks
from mua_gym.domains.airline.tools import AGENT_TOOLS

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")


def policy(source: str, path: str | None = None, **params: Any) -> str:
    """Our policy for our worlds; TAU2's own policy, read at run time, for TAU2's."""
    return tau2.read_policy("airline", path) if source == "tau2" else POLICY


def _generated_world(conn: Any, **params: Any) -> None:
    from mua_gym.domains.airline.generate import build_generated

    build_generated(conn, **params)


DOMAIN = Domain(
    name="airline",
    metadata=Base.metadata,
    tools=AGENT_TOOLS,
    policy=policy,
    worlds={"generated": _generated_world, "tau2": build_tau2},
    task_sources={"generated": generated_tasks, "tau2": tau2_tasks},
    reward_basis=("DB", "COMMUNICATE"),
    description="An airline: flights by date with seats and prices, users with payment methods, reservations.",
)
