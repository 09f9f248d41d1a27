"""TAU2's retail data in and out: load its ``db.json`` into our tables, and export a world back to that shape."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, insert, select

from mua_gym.domains.retail.records import (
    ADDRESS_FIELDS, PRODUCT, USER, order_record, product_record, user_record,
)
from mua_gym.domains.retail.schema import (
    fulfillments, order_items, orders, payment_methods, payments, products, user_orders, users, variants,
)
from mua_gym.world import World

ORDER_EXTRAS = ("cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
                "exchange_price_difference", "return_items", "return_payment_method_id")


JSON_LISTS = ("exchange_items", "exchange_new_items", "return_items")


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def load_db(conn: Connection, db: dict[str, Any]) -> None:
    """Fills empty retail tables from a TAU2 retail database (the parsed ``db.json``)."""
    product_rows, variant_rows = [], []
    for p_pos, product in enumerate(db["products"].values()):
        product_rows.append({"product_id": product["product_id"], "position": p_pos, "name": product["name"]})
        for v_pos, v in enumerate(product["variants"].values()):
            variant_rows.append({"item_id": v["item_id"], "product_id": product["product_id"], "position": v_pos,
                                 "options": json.dumps(v["options"]), "available": bool(v["available"]),
                                 "price": float(v["price"])})
    user_rows, method_rows, user_order_rows = [], [], []
    for u_pos, user in enumerate(db["users"].values()):
        user_rows.append({"user_id": user["user_id"], "position": u_pos, "first_name": user["name"]["first_name"],
                          "last_name": user["name"]["last_name"], "email": user["email"],
                          **{k: user["address"][k] for k in ADDRESS_FIELDS}})
        for m_pos, (key, m) in enumerate(user["payment_methods"].items()):
            method_rows.append({"user_id": user["user_id"], "method_id": key, "position": m_pos,
                                "source": m["source"], "brand": m.get("brand"), "last_four": m.get("last_four"),
                                "balance": None if m.get("balance") is None else float(m["balance"])})
        user_order_rows += [{"user_id": user["user_id"], "position": i, "order_id": oid}
                            for i, oid in enumerate(user["orders"])]
    order_rows, item_rows, fulfillment_rows, payment_rows = [], [], [], []
    for o_pos, order in enumerate(db["orders"].values()):
        oid = order["order_id"]
        row = {"order_id": oid, "position": o_pos, "user_id": order["user_id"], "status": order["status"],
               **{k: order["address"][k] for k in ADDRESS_FIELDS}}
        for key in ORDER_EXTRAS:
            value = order.get(key)
            row[key] = _json_or_none(value) if key in JSON_LISTS else value
        order_rows.append(row)
        item_rows += [{"order_id": oid, "position": i, "name": it["name"], "product_id": it["product_id"],
                       "item_id": it["item_id"], "price": float(it["price"]), "options": json.dumps(it["options"])}
                      for i, it in enumerate(order["items"])]
        fulfillment_rows += [{"order_id": oid, "position": i, "tracking_ids": json.dumps(f["tracking_id"]),
                              "item_ids": json.dumps(f["item_ids"])} for i, f in enumerate(order["fulfillments"])]
        payment_rows += [{"order_id": oid, "position": i, "transaction_type": p["transaction_type"],
                          "amount": float(p["amount"]), "payment_method_id": p["payment_method_id"]}
                         for i, p in enumerate(order["payment_history"])]
    for table, rows in ((products, product_rows), (variants, variant_rows), (users, user_rows),
                        (payment_methods, method_rows), (user_orders, user_order_rows), (orders, order_rows),
                        (order_items, item_rows), (fulfillments, fulfillment_rows), (payments, payment_rows)):
        if rows:
            conn.execute(insert(table), rows)


ALL_PRODUCT_IDS = select(products.c.product_id).order_by(products.c.position)
ALL_USER_IDS = select(users.c.user_id).order_by(users.c.position)
ALL_ORDERS = select(orders).order_by(orders.c.position)


def export_db(world: World) -> dict[str, Any]:
    """The world in TAU2's retail JSON shape: ``{"products": ..., "users": ..., "orders": ...}``."""
    product_ids = world.fetch_column(ALL_PRODUCT_IDS)
    user_ids = world.fetch_column(ALL_USER_IDS)
    order_rows = world.fetch_all(ALL_ORDERS)
    return {
        "products": {pid: product_record(world, world.fetch_one(PRODUCT, pid=pid)) for pid in product_ids},
        "users": {uid: user_record(world, world.fetch_one(USER, uid=uid)) for uid in user_ids},
        "orders": {row["order_id"]: order_record(world, row) for row in order_rows},
    }
