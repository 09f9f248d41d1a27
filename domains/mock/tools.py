"""The mock shop's tools: what the agent may do, and the one thing only the customer can do.

Statements are built once, here, with bound parameters; tools run them through the world's fast path.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import bindparam, func, insert, select, update

from mua_gym.domains.mock.schema import counters, customers, devices, order_lines, orders, products
from mua_gym.stdtools import calculate, transfer_to_human_agents
from mua_gym.tools import ToolError, Toolkit, tool
from mua_gym.world import World

P = bindparam

CUSTOMER = select(customers.c.customer_id, customers.c.name, customers.c.email, customers.c.zip,
                  customers.c.gift_balance).where(customers.c.customer_id == P("cid"))
CUSTOMER_BY_EMAIL = select(customers.c.customer_id).where(customers.c.email == P("email"))
CUSTOMER_ORDERS = select(orders.c.order_id).where(orders.c.customer_id == P("cid")).order_by(orders.c.order_id)
ORDER = select(orders).where(orders.c.order_id == P("oid"))
ORDER_LINES = (select(order_lines.c.product_id, order_lines.c.quantity, order_lines.c.unit_price)
               .where(order_lines.c.order_id == P("oid")).order_by(order_lines.c.line))
PRODUCTS = select(products).order_by(products.c.product_id)
PRODUCT = select(products).where(products.c.product_id == P("pid"))
SET_ORDER_STATUS = (update(orders).where(orders.c.order_id == P("oid"))
                    .values(status=P("v_status"), cancel_reason=P("v_reason")))
ADD_STOCK = update(products).where(products.c.product_id == P("pid")).values(stock=products.c.stock + P("v_qty"))
ADD_GIFT = (update(customers).where(customers.c.customer_id == P("cid"))
            .values(gift_balance=func.round(customers.c.gift_balance + P("v_amount"), 2)))
SET_EMAIL = update(customers).where(customers.c.customer_id == P("cid")).values(email=P("v_email"))
NEXT_ORDER = select(counters.c.value).where(counters.c.name == "order")
BUMP_ORDER = update(counters).where(counters.c.name == "order").values(value=counters.c.value + 1)
NEW_ORDER = insert(orders).values(order_id=P("v_oid"), customer_id=P("v_cid"), status="pending",
                                  payment=P("v_payment"), total=P("v_total"))
NEW_LINE = insert(order_lines).values(order_id=P("v_oid"), line=P("v_line"), product_id=P("v_pid"),
                                      quantity=P("v_qty"), unit_price=P("v_price"))
PHONE = select(devices.c.customer_id, devices.c.notifications).order_by(devices.c.customer_id)
SET_NOTIFICATIONS = update(devices).where(devices.c.customer_id == P("cid")).values(notifications=P("v_on"))


class OrderItem(BaseModel):
    product_id: str = Field(description="The product's id, such as 'P01'.")
    quantity: int = Field(ge=1, le=20, description="How many units.")


def _customer(world: World, customer_id: str) -> dict:
    row = world.fetch_one(CUSTOMER, cid=customer_id)
    if row is None:
        raise ToolError(f"customer {customer_id} not found")
    return row


def _order(world: World, order_id: str) -> dict:
    order = world.fetch_one(ORDER, oid=order_id)
    if order is None:
        raise ToolError(f"order {order_id} not found")
    order["items"] = world.fetch_all(ORDER_LINES, oid=order_id)
    return order


@tool(kind="read")
def find_customer_by_email(world: World, email: str) -> str:
    """Find a customer's id by their email address.

    Args:
        email: The customer's email, such as 'ana@example.com'.
    """
    found = world.fetch_scalar(CUSTOMER_BY_EMAIL, email=email.strip().lower())
    if found is None:
        raise ToolError("no customer with that email")
    return found


@tool(kind="read")
def get_customer(world: World, customer_id: str) -> dict:
    """Get a customer's profile and the ids of their orders.

    Args:
        customer_id: The customer's id, such as 'C001'.
    """
    customer = _customer(world, customer_id)
    customer["orders"] = world.fetch_column(CUSTOMER_ORDERS, cid=customer_id)
    return customer


@tool(kind="read")
def get_order(world: World, order_id: str) -> dict:
    """Get an order's status, payment, total and items.

    Args:
        order_id: The order's id, such as 'O1001'.
    """
    return _order(world, order_id)


@tool(kind="read")
def list_products(world: World) -> list:
    """List every product with its id, name, price and stock."""
    return world.fetch_all(PRODUCTS)


def _refund_gift(world: World, order: dict) -> None:
    if order["payment"] == "gift_card":
        world.execute(ADD_GIFT, cid=order["customer_id"], v_amount=order["total"])


@tool(kind="write")
def cancel_order(world: World, order_id: str, reason: str) -> dict:
    """Cancel a pending order. Gift-card payments are refunded to the gift card at once.

    Args:
        order_id: The order's id.
        reason: Why the customer cancels: 'no longer needed' or 'ordered by mistake'.
    """
    if reason not in ("no longer needed", "ordered by mistake"):
        raise ToolError("reason must be 'no longer needed' or 'ordered by mistake'")
    order = _order(world, order_id)
    if order["status"] != "pending":
        raise ToolError(f"only pending orders can be cancelled; this one is {order['status']}")
    world.execute(SET_ORDER_STATUS, oid=order_id, v_status="cancelled", v_reason=reason)
    for item in order["items"]:
        world.execute(ADD_STOCK, pid=item["product_id"], v_qty=item["quantity"])
    _refund_gift(world, order)
    return _order(world, order_id)


@tool(kind="write")
def return_order(world: World, order_id: str) -> dict:
    """Return a delivered order; the refund goes to the original payment method.

    Args:
        order_id: The order's id.
    """
    order = _order(world, order_id)
    if order["status"] != "delivered":
        raise ToolError(f"only delivered orders can be returned; this one is {order['status']}")
    world.execute(SET_ORDER_STATUS, oid=order_id, v_status="returned", v_reason=order["cancel_reason"])
    _refund_gift(world, order)
    return _order(world, order_id)


@tool(kind="write")
def place_order(world: World, customer_id: str, items: list[OrderItem], payment: str) -> dict:
    """Place a new order for a customer.

    Args:
        customer_id: The customer's id.
        items: The products and quantities to order.
        payment: 'card' or 'gift_card'. A gift card must cover the whole total.
    """
    customer = _customer(world, customer_id)
    if payment not in ("card", "gift_card"):
        raise ToolError("payment must be 'card' or 'gift_card'")
    if not items:
        raise ToolError("an order needs at least one item")
    total = 0.0
    priced = []
    for item in items:
        product = world.fetch_one(PRODUCT, pid=item.product_id)
        if product is None:
            raise ToolError(f"product {item.product_id} not found")
        if product["stock"] < item.quantity:
            raise ToolError(f"only {product['stock']} of {item.product_id} in stock")
        total += product["price"] * item.quantity
        priced.append((item, product["price"]))
    total = round(total, 2)
    if payment == "gift_card":
        if customer["gift_balance"] < total:
            raise ToolError(f"gift card balance {customer['gift_balance']} does not cover {total}")
        world.execute(ADD_GIFT, cid=customer_id, v_amount=-total)
    number = world.fetch_scalar(NEXT_ORDER)
    world.execute(BUMP_ORDER)
    order_id = f"O{number}"
    world.execute(NEW_ORDER, v_oid=order_id, v_cid=customer_id, v_payment=payment, v_total=total)
    for line, (item, price) in enumerate(priced, start=1):
        world.execute(NEW_LINE, v_oid=order_id, v_line=line, v_pid=item.product_id, v_qty=item.quantity,
                      v_price=price)
        world.execute(ADD_STOCK, pid=item.product_id, v_qty=-item.quantity)
    return _order(world, order_id)


@tool(kind="write")
def update_email(world: World, customer_id: str, email: str) -> dict:
    """Change a customer's email address.

    Args:
        customer_id: The customer's id.
        email: The new address.
    """
    _customer(world, customer_id)
    email = email.strip().lower()
    if "@" not in email or email.startswith("@") or email.endswith("@"):
        raise ToolError(f"{email!r} is not an email address")
    taken = world.fetch_scalar(CUSTOMER_BY_EMAIL, email=email)
    if taken is not None and taken != customer_id:
        raise ToolError("that email belongs to another customer")
    world.execute(SET_EMAIL, cid=customer_id, v_email=email)
    return _customer(world, customer_id)


@tool(kind="write")
def toggle_notifications(world: World) -> str:
    """Turn the shop app's notifications on your phone on or off (you, the customer, do this yourself)."""
    phone = world.fetch_one(PHONE)
    if phone is None:
        raise ToolError("no phone in this world")
    world.execute(SET_NOTIFICATIONS, cid=phone["customer_id"], v_on=not phone["notifications"])
    return f"notifications are now {'off' if phone['notifications'] else 'on'}"


AGENT_TOOLS = Toolkit.of(
    find_customer_by_email, get_customer, get_order, list_products, cancel_order, return_order, place_order,
    update_email, calculate, transfer_to_human_agents,
)
USER_TOOLS = Toolkit.of(toggle_notifications)
