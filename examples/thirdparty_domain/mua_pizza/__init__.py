"""A pizza counter: the customer orders pizzas, or cancels one that is not in the oven yet."""

from __future__ import annotations

from sqlalchemy import Connection, MetaData, bindparam, func, insert, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from mua_gym import Action, Domain, EvaluationSpec, Task, ToolError, World, tool


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

# Statements are built once, with named parameters; World.fetch_* and World.execute run them precompiled.
P = bindparam
MENU = select(pizzas).order_by(pizzas.c.name)
ON_MENU = select(pizzas.c.name).where(pizzas.c.name == P("pizza"))
LAST_TICKET = select(func.max(tickets.c.ticket))
NEW_TICKET = insert(tickets).values(ticket=P("v_ticket"), customer=P("v_customer"), pizza=P("v_pizza"),
                                    status="queued")
TICKET_STATUS = select(tickets.c.status).where(tickets.c.ticket == P("ticket"))
CANCEL = update(tickets).where(tickets.c.ticket == P("ticket")).values(status="cancelled")


@tool(kind="read")
def list_menu(world: World) -> list:
    """List the pizzas and their prices."""
    return world.fetch_all(MENU)


@tool(kind="write")
def order_pizza(world: World, customer: str, pizza: str) -> dict:
    """Order one pizza for a customer.

    Args:
        customer: The customer's name.
        pizza: The pizza's name, as on the menu.
    """
    if world.fetch_scalar(ON_MENU, pizza=pizza) is None:
        raise ToolError(f"{pizza!r} is not on the menu")
    number = (world.fetch_scalar(LAST_TICKET) or 0) + 1
    world.execute(NEW_TICKET, v_ticket=number, v_customer=customer, v_pizza=pizza)
    return {"ticket": number, "pizza": pizza, "status": "queued"}


@tool(kind="write")
def cancel_ticket(world: World, ticket: int) -> dict:
    """Cancel a queued pizza.

    Args:
        ticket: The ticket number.
    """
    status = world.fetch_scalar(TICKET_STATUS, ticket=ticket)
    if status is None:
        raise ToolError(f"no ticket {ticket}")
    if status != "queued":
        raise ToolError(f"ticket {ticket} is {status} and cannot be cancelled")
    world.execute(CANCEL, ticket=ticket)
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
    tools=[list_menu, order_pizza, cancel_ticket],
    policy="You take pizza orders at the counter. Confirm before ordering or cancelling.",
    worlds=build_world,
    task_sources=pizza_tasks,
)
