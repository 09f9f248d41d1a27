"""Retail rows as tau2's JSON records, declared once: what tools return, what the export writes, and how
TAU2's ``db.json`` loads (see :mod:`mua_gym.kit.records`).

Key order follows tau2's models, so that a tool's text is the same string an agent sees in tau2.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from sqlalchemy import Connection, bindparam, select

from mua_gym.domains.retail.schema import (
    fulfillments, order_items, orders, payment_methods, payments, products, user_orders, users, variants,
)
from mua_gym.kit.records import REQUIRED, Column, Database, Group, Ids, Many, Record
from mua_gym.world import World

P = bindparam

ORDER = select(orders).where(orders.c.order_id == P("oid"))
ORDER_ITEMS = (select(order_items.c.name, order_items.c.product_id, order_items.c.item_id, order_items.c.price,
                      order_items.c.options, order_items.c.position)
               .where(order_items.c.order_id == P("oid")).order_by(order_items.c.position))
ORDER_PAYMENTS = (select(payments.c.transaction_type, payments.c.amount, payments.c.payment_method_id)
                  .where(payments.c.order_id == P("oid")).order_by(payments.c.position))
USER = select(users).where(users.c.user_id == P("uid"))
USER_METHOD = select(payment_methods).where(payment_methods.c.user_id == P("uid"),
                                            payment_methods.c.method_id == P("mid"))
PRODUCT = select(products.c.name, products.c.product_id).where(products.c.product_id == P("pid"))
VARIANT = select(variants).where(variants.c.item_id == P("iid"))

ADDRESS = Group({k: k for k in ("address1", "address2", "city", "country", "state", "zip")})


def _json(name: str, default: Any = REQUIRED) -> Column:
    """A list or map kept whole as JSON text: read and written whole, its order part of what the agent sees."""
    return Column(name, load=json.dumps, read=json.loads, default=default)


def _method_shape(row: Mapping[str, Any]) -> tuple[str, ...]:
    if row["source"] == "credit_card":
        return ("source", "id", "brand", "last_four")
    if row["source"] == "gift_card":
        return ("source", "id", "balance")
    return ("source", "id")


VARIANTS = Record(variants, {"item_id": "item_id", "options": _json("options"),
                             "available": Column("available", load=bool, read=bool),
                             "price": Column("price", load=float)}, key="item_id")
PRODUCTS = Record(products, {"name": "name", "product_id": "product_id", "variants": Many(VARIANTS, keyed=True)},
                  key="product_id")
METHODS = Record(payment_methods, {"source": "source", "id": "method_id", "brand": "brand", "last_four": "last_four",
                                   "balance": Column("balance", load=float)},
                 key="method_id", shape=_method_shape)
USERS = Record(users, {"user_id": "user_id", "name": Group({"first_name": "first_name", "last_name": "last_name"}),
                       "address": ADDRESS, "email": "email", "payment_methods": Many(METHODS, keyed=True),
                       "orders": Ids(user_orders, "order_id")},
               key="user_id")
ORDER_ITEM = Record(order_items, {"name": "name", "product_id": "product_id", "item_id": "item_id",
                                  "price": Column("price", load=float), "options": _json("options")})
FULFILLMENT = Record(fulfillments, {"tracking_id": _json("tracking_ids"), "item_ids": _json("item_ids")})
PAYMENT = Record(payments, {"transaction_type": "transaction_type", "amount": Column("amount", load=float),
                            "payment_method_id": "payment_method_id"})
ORDERS = Record(orders, {
    "order_id": "order_id", "user_id": "user_id", "address": ADDRESS, "items": Many(ORDER_ITEM),
    "status": "status", "fulfillments": Many(FULFILLMENT), "payment_history": Many(PAYMENT),
    "cancel_reason": Column("cancel_reason", default=None),
    "exchange_items": _json("exchange_items", default=None),
    "exchange_new_items": _json("exchange_new_items", default=None),
    "exchange_payment_method_id": Column("exchange_payment_method_id", default=None),
    "exchange_price_difference": Column("exchange_price_difference", default=None),
    "return_items": _json("return_items", default=None),
    "return_payment_method_id": Column("return_payment_method_id", default=None),
}, key="order_id")

DATABASE = Database({"products": Many(PRODUCTS, keyed=True), "users": Many(USERS, keyed=True),
                     "orders": Many(ORDERS, keyed=True)})


# what the tools and the conformance tests call: each record's compiled reader
order_record = ORDERS.read
user_record = USERS.read
product_record = PRODUCTS.read
variant_record = VARIANTS.read


def load_db(conn: Connection, db: dict[str, Any]) -> None:
    """Fills empty retail tables from a TAU2 retail database (the parsed ``db.json``)."""
    DATABASE.load(conn, db)


def export_db(world: World) -> dict[str, Any]:
    """The world in TAU2's retail JSON shape: ``{"products": ..., "users": ..., "orders": ...}``."""
    return DATABASE.export(world)
