"""Retail: an online store's customer support, with TAU2 Retail's tool interface on an SQL world.

World sources: ``generated`` (seeded worlds of our own, ``size`` from tiny to 10x) and ``tau2`` (TAU2's
retail database, read from the installed ``tau2`` package or ``path=``). Task sources: ``generated``
(unlimited verified tasks of our own) and ``tau2`` (TAU2's 114 tasks, train/test).
"""

from __future__ import annotations

from pathlib import Path

from mua_gym.domain import tau2
from mua_gym.domain import Domain
from mua_gym.domains.retail.taskgen import generated_tasks
from mua_gym.domains.retail.schema import Base
from mua_gym.domains.retail.records import load_db
from mua_gym.domains.retail.tools import AGENT_TOOLS
from mua_gym.kit import deferred
from mua_gym.tools import Toolkit

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")


def tau2_toolkit() -> Toolkit:
    """Exactly the installed tau2's retail tool set (26.3 lacks get_item_details, added upstream later)."""
    source = tau2.tau2_tools_source("retail")
    if source is not None and "def get_item_details" not in source:
        return AGENT_TOOLS.without(["get_item_details"])
    return AGENT_TOOLS


DOMAIN = Domain(
    name="retail",
    metadata=Base.metadata,
    tools=AGENT_TOOLS,
    policy=tau2.policy_function("retail", POLICY),
    worlds={"generated": deferred("mua_gym.domains.retail.generate:build_generated"),
            "tau2": tau2.json_world("retail", load_db)},
    task_sources={"generated": generated_tasks, "tau2": tau2.task_source("retail")},
    source_tools={"tau2": tau2_toolkit},
    reward_basis=("DB", "COMMUNICATE"),
    # an order's status is an answer: a reply naming every status answers nothing
    answer_vocabularies=(("pending", "processed", "delivered", "cancelled", "return requested",
                          "exchange requested"),),
    description="An online store: users, payment methods, products and their items, orders.",
)
