"""A pizza counter: the customer orders pizzas, or cancels one that is not in the oven yet."""

from __future__ import annotations

from sqlalchemy import Connection, MetaData, insert, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from mua_gym import Action, Domain, EvaluationSpec, Task, ToolError, Toolkit, World, tool


class Base(DeclarativeBase):
    metadata = MetaData()


class Pizza(Base):
    __tablename__ = "pizzas"
    name: Mapped[str] = mapped_column(primary_key=True)
    price: Mapped[float]


class Ticket(Base):
    __tablename__ = "tickets"
    ticket: Mapped[int] = mapped_column(primary_key=True)
    customer: Mapped[str]
    pizza: Mapped[str]
    status: Mapped[str]  # queued | baking | cancelled


pizzas, tickets = Pizza.__table__, Ticket.__table__


@tool(kind="read")
def list_menu(world: World) -> list:
    """List the pizzas and their prices."""
    return [dict(r) for r in world.conn.execute(select(pizzas).order_by(pizzas.c.name)).mappings()]


@tool(kind="write")
def order_pizza(world: World, customer: str, pizza: str) -> dict:
    """Order one pizza for a customer.

    Args:
        customer: The customer's name.
        pizza: The pizza's name, as on the menu.
    """
    if world.conn.execute(select(pizzas.c.name).where(pizzas.c.name == pizza)).scalar() is None:
        raise ToolError(f"{pizza!r} is not on the menu")
    number = (world.conn.execute(select(tickets.c.ticket).order_by(tickets.c.ticket.desc())).scalar() or 0) + 1
    world.conn.execute(insert(tickets).values(ticket=number, customer=customer, pizza=pizza, status="queued"))
    return {"ticket": number, "pizza": pizza, "status": "queued"}


@tool(kind="write")
def cancel_ticket(world: World, ticket: int) -> dict:
    """Cancel a queued pizza.

    Args:
        ticket: The ticket number.
    """
    status = world.conn.execute(select(tickets.c.status).where(tickets.c.ticket == ticket)).scalar()
    if status is None:
        raise ToolError(f"no ticket {ticket}")
    if status != "queued":
        raise ToolError(f"ticket {ticket} is {status} and cannot be cancelled")
    world.conn.execute(update(tickets).where(tickets.c.ticket == ticket).values(status="cancelled"))
    return {"ticket": ticket, "status": "cancelled"}


def build_world(conn: Connection, *, seed: int = 0) -> None:
    conn.execute(insert(pizzas), [{"name": "margherita", "price": 9.0}, {"name": "funghi", "price": 11.5}])
    conn.execute(insert(tickets), [{"ticket": 1, "customer": "Sam", "pizza": "funghi", "status": "queued"},
                                   {"ticket": 2, "customer": "Lou", "pizza": "margherita", "status": "baking"}])


def pizza_tasks(domain: Domain, split: str) -> list[Task]:
    tasks = [
        Task(id="pizza-order", domain="pizza", split="train",
             script=["Hi, I'm Kim. One margherita please.", "Yes, please."],
             gold_actions=[Action(name="order_pizza", arguments={"customer": "Kim", "pizza": "margherita"})],
             evaluation=EvaluationSpec(reward_basis=["DB"])),
        Task(id="pizza-cancel", domain="pizza", split="test",
             script=["Hi, Sam here. Please cancel my ticket 1.", "Yes."],
             gold_actions=[Action(name="cancel_ticket", arguments={"ticket": 1})],
             evaluation=EvaluationSpec(reward_basis=["DB"])),
    ]
    return [t for t in tasks if t.split == split]


DOMAIN = Domain(
    name="pizza",
    metadata=Base.metadata,
    tools=Toolkit.of(list_menu, order_pizza, cancel_ticket),
    policy="You take pizza orders at the counter. Confirm before ordering or cancelling.",
    worlds={"generated": build_world},
    task_sources={"generated": pizza_tasks},
)
