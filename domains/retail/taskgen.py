"""Unlimited grounded retail tasks: read a generated world, write conversations that are true in it.

Every task is built from the user's real orders, items and payment methods, and is verified when it is
made: every gold call succeeds, replaying the gold actions scores 1.0, and doing nothing scores 0.0.
Splits are disjoint by user (a seeded permutation of the world's users: 80% train, 10% dev, 10% test).

Categories: cancel, modify_items, modify_address, modify_payment, user_address, return, exchange,
information (order total, tracking number, gift card balance; judged by COMMUNICATE and the look-up), refusal (a request
the policy forbids: the right answer looks it up and changes nothing), and multi (2-3 intents). Each task
authenticates by email or by name and zip. ``difficulty`` 1-3 sets the number of intents; 3 also adds a
forbidden request as a trap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mua_gym.domain import Domain
from mua_gym.domains.retail.records import DATABASE
from mua_gym.task import Action, Task
from mua_gym.kit.maker import TaskMaker, draw_intents, generated_world, read_world
from mua_gym.kit.generation import Intent, action, compose_task, generate_tasks
from mua_gym.world import World

__all__ = ["DEFAULT_COUNTS", "generated_tasks"]

DEFAULT_COUNTS = {"train": 2000, "dev": 200, "test": 200}
SINGLE = ["cancel", "modify_items", "modify_address", "modify_payment", "user_address", "return", "exchange",
          "information", "refusal"]
STREETS = ["Birch Lane", "Harbor Road", "Willow Way", "Summit Avenue", "Orchard Street", "Lakeview Drive"]
CITIES = [("Portland", "OR", "97205"), ("Madison", "WI", "53703"), ("Raleigh", "NC", "27601"),
          ("Tucson", "AZ", "85701"), ("Boise", "ID", "83702"), ("Albany", "NY", "12207")]


class Snapshot:
    """The generated world as plain Python data, read once per world (through the records' declaration)."""

    def __init__(self, world: World) -> None:
        db = DATABASE.export(world)
        self.users = [{"user_id": u["user_id"], **u["name"], "email": u["email"], "zip": u["address"]["zip"],
                       **{k: u["address"][k] for k in ("address1", "address2", "city", "state", "country")}}
                      for u in db["users"].values()]
        self.methods = {u["user_id"]: [{"id": m["id"], "source": m["source"], "balance": m.get("balance")}
                                       for m in u["payment_methods"].values()] for u in db["users"].values()}
        self.orders: dict[str, list[dict]] = {}
        for o in db["orders"].values():
            self.orders.setdefault(o["user_id"], []).append({
                "id": o["order_id"], "status": o["status"],
                "items": o["items"],
                "payments": [{"type": p["transaction_type"], "amount": p["amount"], "method": p["payment_method_id"]}
                             for p in o["payment_history"]],
                "tracking": [t for f in o["fulfillments"] for t in f["tracking_id"]]})
        self.variants = {pid: list(p["variants"].values()) for pid, p in db["products"].items()}


def _options(options: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


def _money(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


class _Maker(TaskMaker):
    def __init__(self, snap: Snapshot, rng: np.random.Generator, user: dict) -> None:
        super().__init__(rng)
        self.snap, self.user = snap, user

    def orders(self, *statuses: str) -> list[dict]:
        return [o for o in self.snap.orders.get(self.user["user_id"], [])
                if o["status"] in statuses and o["id"] not in self.used]

    def swaps(self, order: dict) -> list[tuple[int, dict]]:
        """(item position, another available variant of the same product) pairs for this order."""
        out = []
        for pos, item in enumerate(order["items"]):
            others = [v for v in self.snap.variants.get(item["product_id"], [])
                      if v["available"] and v["item_id"] != item["item_id"]]
            if others:
                out.append((pos, self.pick(others)))
        return out

    def method_for(self, amount: float, exclude: str | None = None) -> dict | None:
        usable = [m for m in self.snap.methods.get(self.user["user_id"], [])
                  if m["id"] != exclude and (m["source"] != "gift_card" or (m["balance"] or 0) >= amount)]
        return self.pick(usable) if usable else None

    # -- intents -----------------------------------------------------------------------------------
    def cancel(self) -> Intent | None:
        pending = self.orders("pending")
        if not pending:
            return None
        order = self.pick(pending)
        reason = self.pick(["no longer needed", "ordered by mistake"])
        self.used.add(order["id"])
        why = "I don't need it anymore" if reason == "no longer needed" else "I ordered it by mistake"
        return Intent("cancel", f"Please cancel my order {order['id']}; {why}.",
                      [action("get_order_details", order_id=order["id"]),
                       action("cancel_pending_order", order_id=order["id"], reason=reason)],
                      facts={"order_id": order["id"], "reason": reason})

    def modify_items(self) -> Intent | None:
        for order in self.rng.permutation(np.array(self.orders("pending"), dtype=object)):
            swaps = self.swaps(order)
            if not swaps:
                continue
            chosen = swaps[: 1 + int(self.rng.integers(min(2, len(swaps))))]
            diff = sum(v["price"] - order["items"][pos]["price"] for pos, v in chosen)
            method = self.method_for(max(diff, 0.0))
            if method is None:
                continue
            self.used.add(order["id"])
            olds = [order["items"][pos]["item_id"] for pos, _ in chosen]
            news = [v["item_id"] for _, v in chosen]
            wants = "; ".join(f"the {order['items'][pos]['name']} ({_options(order['items'][pos]['options'])}) "
                              f"changed to {_options(v['options'])}" for pos, v in chosen)
            products = list(dict.fromkeys(order["items"][pos]["product_id"] for pos, _ in chosen))
            return Intent("modify_items",
                          f"In my pending order {order['id']} I'd like {wants}. Use {method['id']} for any "
                          f"price difference.",
                          [action("get_order_details", order_id=order["id"]),
                           *[action("get_product_details", product_id=p) for p in products],
                           action("modify_pending_order_items", order_id=order["id"], item_ids=olds, new_item_ids=news,
                              payment_method_id=method["id"])],
                          facts={"order_id": order["id"], "item_ids": olds, "new_item_ids": news,
                                 "payment_method_id": method["id"]})
        return None

    def _address(self) -> dict[str, str]:
        city, state, zip_code = self.pick(CITIES)
        return {"address1": f"{int(self.rng.integers(10, 9999))} {self.pick(STREETS)}",
                "address2": self.pick(["", f"Apt {int(self.rng.integers(1, 40))}",
                                       f"Suite {int(self.rng.integers(100, 999))}"]),
                "city": city, "state": state, "country": "USA", "zip": zip_code}

    @staticmethod
    def _say_address(a: dict[str, str]) -> str:
        return ", ".join(x for x in (a["address1"], a["address2"], a["city"], a["state"], a["zip"], a["country"]) if x)

    def modify_address(self) -> Intent | None:
        pending = self.orders("pending")
        if not pending:
            return None
        order = self.pick(pending)
        self.used.add(order["id"])
        address = self._address()
        return Intent("modify_address",
                      f"Please ship my order {order['id']} to {self._say_address(address)} instead.",
                      [action("get_order_details", order_id=order["id"]),
                       action("modify_pending_order_address", order_id=order["id"], **address)],
                      facts={"order_id": order["id"], "address": address})

    def modify_payment(self) -> Intent | None:
        for order in self.orders("pending"):
            if len(order["payments"]) != 1 or order["payments"][0]["type"] != "payment":
                continue
            method = self.method_for(order["payments"][0]["amount"], exclude=order["payments"][0]["method"])
            if method is None:
                continue
            self.used.add(order["id"])
            return Intent("modify_payment", f"I'd like to pay for order {order['id']} with {method['id']} instead.",
                          [action("get_order_details", order_id=order["id"]),
                           action("modify_pending_order_payment", order_id=order["id"],
                                  payment_method_id=method["id"])],
                          facts={"order_id": order["id"], "payment_method_id": method["id"]})
        return None

    def user_address(self) -> Intent | None:
        address = self._address()
        return Intent("user_address", f"Please update the default address on my account to "
                                      f"{self._say_address(address)}.",
                      [action("get_user_details", user_id=self.user["user_id"]),
                       action("modify_user_address", user_id=self.user["user_id"], **address)],
                      facts={"address": address})

    def return_(self) -> Intent | None:
        delivered = [o for o in self.orders("delivered") if o["payments"]]
        if not delivered:
            return None
        order = self.pick(delivered)
        self.used.add(order["id"])
        count = 1 + int(self.rng.integers(len(order["items"])))
        picked = sorted(int(i) for i in self.rng.choice(len(order["items"]), size=count, replace=False))
        items = [order["items"][i] for i in picked]
        gift = [m for m in self.snap.methods.get(self.user["user_id"], []) if m["source"] == "gift_card"]
        method = self.pick(gift) if gift and self.rng.random() < 0.3 else {"id": order["payments"][0]["method"]}
        names = ", ".join(f"the {i['name']} ({_options(i['options'])})" for i in items)
        return Intent("return", f"I want to return {names} from my delivered order {order['id']}, refunded to "
                                f"{method['id']}.",
                      [action("get_order_details", order_id=order["id"]),
                       action("return_delivered_order_items", order_id=order["id"],
                              item_ids=[i["item_id"] for i in items], payment_method_id=method["id"])],
                      facts={"order_id": order["id"], "item_ids": [i["item_id"] for i in items],
                             "payment_method_id": method["id"]})

    def exchange(self) -> Intent | None:
        for order in self.rng.permutation(np.array(self.orders("delivered"), dtype=object)):
            swaps = self.swaps(order)
            if not swaps:
                continue
            chosen = swaps[: 1 + int(self.rng.integers(min(2, len(swaps))))]
            diff = round(sum(v["price"] - order["items"][pos]["price"] for pos, v in chosen), 2)
            method = self.method_for(max(diff, 0.0))
            if method is None:
                continue
            self.used.add(order["id"])
            olds = [order["items"][pos]["item_id"] for pos, _ in chosen]
            news = [v["item_id"] for _, v in chosen]
            wants = "; ".join(f"the {order['items'][pos]['name']} ({_options(order['items'][pos]['options'])}) "
                              f"for one with {_options(v['options'])}" for pos, v in chosen)
            products = list(dict.fromkeys(order["items"][pos]["product_id"] for pos, _ in chosen))
            return Intent("exchange",
                          f"From my delivered order {order['id']} I want to exchange {wants}. Use {method['id']} "
                          f"for any price difference.",
                          [action("get_order_details", order_id=order["id"]),
                           *[action("get_product_details", product_id=p) for p in products],
                           action("exchange_delivered_order_items", order_id=order["id"], item_ids=olds,
                              new_item_ids=news, payment_method_id=method["id"])],
                          facts={"order_id": order["id"], "item_ids": olds, "new_item_ids": news})
        return None

    def information(self) -> Intent | None:
        kind = self.pick(["total", "tracking", "balance"])
        gift = [m for m in self.snap.methods.get(self.user["user_id"], []) if m["source"] == "gift_card"]
        if kind == "balance" and gift:
            card = self.pick(gift)
            lookup = action("get_user_details", user_id=self.user["user_id"])
            return Intent("information", f"What is the balance left on my gift card {card['id']}?", [lookup],
                          communicate=[_money(card["balance"] or 0.0)], checks=[lookup],
                          facts={"gift_card": card["id"]})
        tracked = [o for o in self.orders("delivered", "processed") if o["tracking"]]
        if kind == "tracking" and tracked:
            order = self.pick(tracked)
            self.used.add(order["id"])
            lookup = action("get_order_details", order_id=order["id"])
            return Intent("information", f"What is the tracking number of my order {order['id']}?", [lookup],
                          communicate=[order["tracking"][0]], checks=[lookup], facts={"order_id": order["id"]})
        candidates = self.orders("pending", "processed", "delivered")
        if not candidates:
            return None
        order = self.pick(candidates)
        self.used.add(order["id"])
        total = round(sum(i["price"] for i in order["items"]), 2)
        lookup = action("get_order_details", order_id=order["id"])
        return Intent("information", f"How much did I pay in total for order {order['id']}?", [lookup],
                      communicate=[_money(total)], checks=[lookup], facts={"order_id": order["id"]})

    def refusal(self) -> Intent | None:
        options = []
        done = self.orders("delivered", "processed")
        if done:
            options.append(("cancel", self.pick(done)))
        pending = self.orders("pending")
        if pending:
            options.append(("return", self.pick(pending)))
        if not options:
            return None
        kind, order = self.pick(options)
        self.used.add(order["id"])
        says = (f"Cancel my order {order['id']} please, I don't want it anymore." if kind == "cancel" else
                f"I'd like to return everything in my order {order['id']} for a refund.")
        says += " If you can't, tell me what status the order is in."
        lookup = action("get_order_details", order_id=order["id"])
        # refusing is paid only with the status that forbids it, which only the look-up tells
        return Intent("refusal", says, [lookup], communicate=[order["status"]], checks=[lookup],
                      facts={"order_id": order["id"], "forbidden": kind, "status": order["status"]})


INTENTS = {"cancel": _Maker.cancel, "modify_items": _Maker.modify_items, "modify_address": _Maker.modify_address,
           "modify_payment": _Maker.modify_payment, "user_address": _Maker.user_address, "return": _Maker.return_,
           "exchange": _Maker.exchange, "information": _Maker.information, "refusal": _Maker.refusal}


def _auth(maker: _Maker) -> tuple[Action, str, dict[str, Any]]:
    user = maker.user
    if maker.rng.random() < 0.6:
        return (action("find_user_id_by_email", email=user["email"]), f"My email is {user['email']}.",
                {"email": user["email"]})
    return (action("find_user_id_by_name_zip", first_name=user["first_name"], last_name=user["last_name"],
                   zip=user["zip"]),
            f"I'm {user['first_name']} {user['last_name']}, zip code {user['zip']}.",
            {"first_name": user["first_name"], "last_name": user["last_name"], "zip": user["zip"]})


def generated_tasks(domain: Domain, split: str, *, count: int | None = None, seed: int = 0, size: str = "default",
                    difficulty: int | None = None, verify: bool = True) -> list[Task]:
    """``count`` verified tasks of ``split`` (default 2,000 train, 200 dev, 200 test) over the world of ``seed``."""
    world = generated_world(seed, size)
    snap = read_world(domain, world, Snapshot)

    def make(rng: np.random.Generator, user: int, level: int, task_id: str) -> Task | None:
        maker = _Maker(snap, rng, snap.users[user])
        intents = draw_intents(maker, level, INTENTS, SINGLE)
        if intents is None:
            return None
        auth, auth_text, auth_facts = _auth(maker)
        person = maker.user
        return compose_task(task_id=task_id, domain="retail", split=split, world=world, intents=intents,  # type: ignore[arg-type]
                            difficulty=level, user_id=person["user_id"],
                            name=f"{person['first_name']} {person['last_name']}", role="a customer of an online store",
                            auth=auth, auth_text=auth_text, auth_facts=auth_facts,
                            unknown_info="You do not know your user id.")

    wanted = DEFAULT_COUNTS[split] if count is None else count
    return generate_tasks(domain, split, n_users=len(snap.users), count=wanted, seed=seed, difficulty=difficulty,
                          make=make, verify=verify)
