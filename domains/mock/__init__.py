"""A small shop domain (customers, products, orders, one phone setting) that the core's tests run on."""

from __future__ import annotations

from pathlib import Path

from mua_gym.domain import Domain
from mua_gym.domains.mock import world
from mua_gym.domains.mock.schema import Base
from mua_gym.domains.mock.tasks import mock_tasks
from mua_gym.domains.mock.tools import AGENT_TOOLS, USER_TOOLS
from mua_gym.world import World

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")


def notifications_on(world: World) -> bool:
    return bool(world.raw.execute("SELECT notifications FROM devices WHERE customer_id = 'C001'").fetchone()[0])


DOMAIN = Domain(
    name="mock",
    metadata=Base.metadata,
    tools=AGENT_TOOLS,
    user_tools=USER_TOOLS,
    policy=POLICY,
    worlds={"generated": world.build},
    task_sources={"generated": mock_tasks},
    terminal_tools=frozenset({"transfer_to_human_agents"}),
    assertions={"notifications_on": notifications_on},
    description="A coffee-equipment shop: customers, orders, products; the customer's phone has one setting.",
)
