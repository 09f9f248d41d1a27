"""The mock shop's world: a fixed core that the tasks are about, plus seeded filler for scale."""

from __future__ import annotations

import numpy as np
from sqlalchemy import Connection, insert

from mua_gym.domains.mock.schema import counters, customers, devices, order_lines, orders, products

PRODUCTS = [
    ("P01", "Espresso cup", 9.5, 40),
    ("P02", "Pour-over kettle", 34.99, 12),
    ("P03", "Burr grinder", 89.0, 7),
    ("P04", "Paper filters (100)", 4.25, 200),
    ("P05", "Travel mug", 19.99, 0),
]
CUSTOMERS = [
    ("C001", "Ana Lopez", "ana@example.com", "10001", 0.0),
    ("C002", "Ben Okafor", "ben@example.com", "94110", 50.0),
    ("C003", "Chen Wei", "chen@example.com", "60601", 0.0),
    ("C004", "Dina Haddad", "dina@example.com", "73301", 25.0),
]
# order id, customer, status, payment, [(product, quantity)]
ORDERS = [
    ("O1001", "C001", "pending", "card", [("P01", 2)]),
    ("O1002", "C001", "pending", "card", [("P04", 3), ("P01", 1)]),
    ("O1003", "C002", "pending", "gift_card", [("P02", 1)]),
    ("O1004", "C002", "delivered", "gift_card", [("P04", 2)]),
    ("O1005", "C003", "delivered", "card", [("P05", 2), ("P01", 2)]),
    ("O1006", "C004", "shipped", "card", [("P03", 1)]),
    ("O1007", "C003", "pending", "card", [("P04", 1)]),
]
FIRST_NAMES = ["Ava", "Leo", "Mia", "Noah", "Ivy", "Omar", "Zoe", "Raj", "Eli", "Nia", "Kai", "Lea"]
LAST_NAMES = ["Smith", "Garcia", "Kim", "Novak", "Rossi", "Mensah", "Ito", "Silva", "Berg", "Khan"]
STATUSES = ["pending", "shipped", "delivered", "cancelled"]


def build(conn: Connection, *, seed: int = 0, extra_customers: int = 20, orders_per_customer: int = 3) -> None:
    """Fills the mock world: the fixed core, then ``extra_customers`` seeded customers with their orders."""
    if extra_customers < 0 or orders_per_customer < 0:
        raise ValueError("extra_customers and orders_per_customer must be >= 0")
    rng = np.random.default_rng(seed)
    price = {p[0]: p[2] for p in PRODUCTS}
    conn.execute(insert(products), [dict(product_id=p, name=n, price=pr, stock=s) for p, n, pr, s in PRODUCTS])
    people = [dict(customer_id=c, name=n, email=e, zip=z, gift_balance=g) for c, n, e, z, g in CUSTOMERS]
    for i in range(extra_customers):
        first = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]
        last = LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
        cid = f"C{100 + i:03d}"
        people.append(dict(customer_id=cid, name=f"{first} {last}", email=f"{first}.{last}.{cid}@example.org".lower(),
                           zip=f"{int(rng.integers(10000, 99999))}", gift_balance=float(rng.integers(0, 5)) * 10))
    conn.execute(insert(customers), people)
    conn.execute(insert(devices), [dict(customer_id="C001", notifications=False)])
    order_rows, line_rows = [], []
    plan = [(o, c, s, pay, items) for o, c, s, pay, items in ORDERS]
    number = 2001
    for person in people[len(CUSTOMERS):]:
        for _ in range(orders_per_customer):
            picks = rng.choice(len(PRODUCTS), size=int(rng.integers(1, 4)), replace=False)
            items = [(PRODUCTS[int(k)][0], int(rng.integers(1, 4))) for k in sorted(picks)]
            status = STATUSES[int(rng.integers(len(STATUSES)))]
            plan.append((f"O{number}", person["customer_id"], status, "card", items))
            number += 1
    for order_id, cid, status, payment, items in plan:
        total = round(sum(price[p] * q for p, q in items), 2)
        order_rows.append(dict(order_id=order_id, customer_id=cid, status=status, payment=payment, total=total))
        line_rows += [dict(order_id=order_id, line=i, product_id=p, quantity=q, unit_price=price[p])
                      for i, (p, q) in enumerate(items, start=1)]
    conn.execute(insert(orders), order_rows)
    conn.execute(insert(order_lines), line_rows)
    conn.execute(insert(counters), [dict(name="order", value=number)])
