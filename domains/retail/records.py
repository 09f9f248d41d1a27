"""Reading retail rows back as tau2-shaped records (what tools return, and what the export writes).

Key order follows tau2's models, so that a tool's text is the same string an agent sees in tau2.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, select

from mua_gym.domains.retail.schema import (
    fulfillments, order_items, orders, payment_methods, payments, products, user_orders, users, variants,
)
from mua_gym.world import World

P = bindparam

ORDER = select(orders).where(orders.c.order_id == P("oid"))
ORDER_ITEMS = (select(order_items.c.name, order_items.c.product_id, order_items.c.item_id, order_items.c.price,
                      order_items.c.options, order_items.c.position)
               .where(order_items.c.order_id == P("oid")).order_by(order_items.c.position))
ORDER_FULFILLMENTS = (select(fulfillments.c.tracking_ids, fulfillments.c.item_ids)
                      .where(fulfillments.c.order_id == P("oid")).order_by(fulfillments.c.position))
ORDER_PAYMENTS = (select(payments.c.transaction_type, payments.c.amount, payments.c.payment_method_id)
                  .where(payments.c.order_id == P("oid")).order_by(payments.c.position))
USER = select(users).where(users.c.user_id == P("uid"))
USER_METHODS = (select(payment_methods).where(payment_methods.c.user_id == P("uid"))
                .order_by(payment_methods.c.position))
USER_METHOD = select(payment_methods).where(payment_methods.c.user_id == P("uid"),
                                            payment_methods.c.method_id == P("mid"))
USER_ORDER_IDS = (select(user_orders.c.order_id).where(user_orders.c.user_id == P("uid"))
                  .order_by(user_orders.c.position))
PRODUCT = select(products.c.name, products.c.product_id).where(products.c.product_id == P("pid"))
PRODUCT_VARIANTS = (select(variants.c.item_id, variants.c.options, variants.c.available, variants.c.price)
                    .where(variants.c.product_id == P("pid")).order_by(variants.c.position))
VARIANT = select(variants).where(variants.c.item_id == P("iid"))

ADDRESS_FIELDS = ("address1", "address2", "city", "country", "state", "zip")


def address_of(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ADDRESS_FIELDS}


def _list(text: str | None) -> list[Any] | None:
    return None if text is None else json.loads(text)


def order_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    """The tau2 order for an ``orders`` row."""
    oid = row["order_id"]
    return {
        "order_id": oid,
        "user_id": row["user_id"],
        "address": address_of(row),
        "items": [{"name": i["name"], "product_id": i["product_id"], "item_id": i["item_id"], "price": i["price"],
                   "options": json.loads(i["options"])} for i in world.fetch_all(ORDER_ITEMS, oid=oid)],
        "status": row["status"],
        "fulfillments": [{"tracking_id": json.loads(f["tracking_ids"]), "item_ids": json.loads(f["item_ids"])}
                         for f in world.fetch_all(ORDER_FULFILLMENTS, oid=oid)],
        "payment_history": world.fetch_all(ORDER_PAYMENTS, oid=oid),
        "cancel_reason": row["cancel_reason"],
        "exchange_items": _list(row["exchange_items"]),
        "exchange_new_items": _list(row["exchange_new_items"]),
        "exchange_payment_method_id": row["exchange_payment_method_id"],
        "exchange_price_difference": row["exchange_price_difference"],
        "return_items": _list(row["return_items"]),
        "return_payment_method_id": row["return_payment_method_id"],
    }


def method_record(row: dict[str, Any]) -> dict[str, Any]:
    if row["source"] == "credit_card":
        return {"source": "credit_card", "id": row["method_id"], "brand": row["brand"], "last_four": row["last_four"]}
    if row["source"] == "gift_card":
        return {"source": "gift_card", "id": row["method_id"], "balance": row["balance"]}
    return {"source": row["source"], "id": row["method_id"]}


def user_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    uid = row["user_id"]
    return {
        "user_id": uid,
        "name": {"first_name": row["first_name"], "last_name": row["last_name"]},
        "address": address_of(row),
        "email": row["email"],
        "payment_methods": {m["method_id"]: method_record(m) for m in world.fetch_all(USER_METHODS, uid=uid)},
        "orders": world.fetch_column(USER_ORDER_IDS, uid=uid),
    }


def variant_record(row: dict[str, Any]) -> dict[str, Any]:
    return {"item_id": row["item_id"], "options": json.loads(row["options"]), "available": bool(row["available"]),
            "price": row["price"]}


def product_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": row["name"],
        "product_id": row["product_id"],
        "variants": {v["item_id"]: variant_record(v) for v in world.fetch_all(PRODUCT_VARIANTS, pid=row["product_id"])},
    }
