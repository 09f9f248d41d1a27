"""Airline: flight bookings and changes, with TAU2 Airline's tool interface on an SQL world.

World sources: ``generated`` (seeded worlds of our own) and ``tau2`` (TAU2's airline database, read from the
installed ``tau2`` package or ``path=``). Task sources: ``generated`` (unlimited verified tasks) and ``tau2``
(TAU2's 50 tasks, train/test).
"""

from __future__ import annotations

from pathlib import Path

from mua_gym.domain import tau2
from mua_gym.domain import Domain
from mua_gym.domains.airline.taskgen import generated_tasks
from mua_gym.domains.airline.schema import Base
from mua_gym.domains.airline.tau2_format import load_db
from mua_gym.domains.airline.tools import AGENT_TOOLS
from mua_gym.kit import deferred

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")


DOMAIN = Domain(
    name="airline",
    metadata=Base.metadata,
    tools=AGENT_TOOLS,
    policy=tau2.policy_function("airline", POLICY),
    worlds={"generated": deferred("mua_gym.domains.airline.generate:build_generated"),
            "tau2": tau2.json_world("airline", load_db)},
    task_sources={"generated": generated_tasks, "tau2": tau2.task_source("airline")},
    reward_basis=("DB", "COMMUNICATE"),
    # a flight's status, a cabin and a membership are answers: a reply naming every option answers nothing
    answer_vocabularies=(("available", "on time", "delayed", "flying", "landed", "cancelled", "scheduled",
                          "diverted"),
                         ("basic_economy", "economy", "business"), ("regular", "silver", "gold")),
    description="An airline: flights by date with seats and prices, users with payment methods, reservations.",
)
