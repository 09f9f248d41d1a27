"""Unlimited grounded retail tasks: read a generated world, write conversations that are true in it.

Every task is built from the user's real orders, items and payment methods, and is verified when it is
made: every gold call succeeds, replaying the gold actions scores 1.0, and doing nothing scores 0.0.
Splits are disjoint by user (a seeded permutation of the world's users: 80% train, 10% dev, 10% test).

Families: cancel, modify_items, modify_address, modify_payment, user_address, return, exchange, information (order
total, tracking number, gift card balance; judged by COMMUNICATE and the look-up), refusal (a request the policy
forbids: the right answer looks it up and changes nothing), refund_total and price_difference (an amount the agent
works out with ``calculate`` and states), and claim (a parcel lost or damaged: a delivered order is handed to a human,
its tracking number given; one not delivered yet gets its status). A task of several requests is ``multi``. Each task
authenticates by email or by name and zip. The level (``difficulty``, :data:`LEVEL_SHAPES`) sets how many requests a
task holds (1, 2, 3, or 4 to 6), whether the last is a refusal or a claim (from 3), how often a request is told by an
item instead of its order's id (the agent lists the orders) and how often one request carries a behaviour of the user
(:mod:`mua_gym.kit.behaviours`: a change of mind on confirmation, an id held back or given wrong first).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from mua_gym.domain import Domain
from mua_gym.domains.retail.records import DATABASE
from mua_gym.task import Action, Task
from mua_gym.kit.maker import TaskMaker, draw_intents, generated_world, read_world
from mua_gym.kit.behaviours import give_behaviour
from mua_gym.kit.generation import Intent, action, compose_task, generate_tasks
from mua_gym.world import World

__all__ = ["DEFAULT_COUNTS", "generated_tasks"]

DEFAULT_COUNTS = {"train": 2000, "dev": 200, "test": 200}
SINGLE = ["cancel", "modify_items", "modify_address", "modify_payment", "user_address", "return", "exchange",
          "information", "refusal", "refund_total", "price_difference", "claim"]
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
        self.order_ids = frozenset(db["orders"])


def _options(options: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


def _money(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


class _Maker(TaskMaker):
    def __init__(self, snap: Snapshot, rng: np.random.Generator, user: dict,
                 writes: frozenset[str] = frozenset()) -> None:
        super().__init__(rng)
        self.snap, self.user, self.writes = snap, user, writes

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
        if "user_address" in self.used:  # one default address a task: a second would undo the first
            return None
        self.used.add("user_address")
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


    # -- families that need more than one call's reasoning -------------------------------------------------
    def refund_total(self) -> Intent | None:
        """A return of two items or more, and the customer asks what comes back: the agent adds it up."""
        delivered = [o for o in self.orders("delivered") if o["payments"] and len(o["items"]) >= 2]
        if not delivered:
            return None
        order = self.pick(delivered)
        self.used.add(order["id"])
        count = 2 + int(self.rng.integers(len(order["items"]) - 1))
        picked = sorted(int(i) for i in self.rng.choice(len(order["items"]), size=count, replace=False))
        items = [order["items"][i] for i in picked]
        method = order["payments"][0]["method"]
        names = ", ".join(f"the {i['name']} ({_options(i['options'])})" for i in items)
        return Intent("refund_total", f"I want to return {names} from my delivered order {order['id']}, refunded to "
                                      f"{method}. How much will I get back in total?",
                      [action("get_order_details", order_id=order["id"]),
                       action("calculate", expression=" + ".join(_money(i["price"]) for i in items)),
                       action("return_delivered_order_items", order_id=order["id"],
                              item_ids=[i["item_id"] for i in items], payment_method_id=method)],
                      communicate=[_money(round(sum(i["price"] for i in items), 2))],
                      facts={"order_id": order["id"], "item_ids": [i["item_id"] for i in items],
                             "payment_method_id": method})

    def price_difference(self) -> Intent | None:
        """An exchange of one item where the customer asks the price difference: the agent works it out."""
        for order in self.rng.permutation(np.array(self.orders("delivered"), dtype=object)):
            swaps = [(pos, v) for pos, v in self.swaps(order) if round(v["price"] - order["items"][pos]["price"], 2)]
            if not swaps:
                continue
            pos, new = swaps[0]
            old = order["items"][pos]
            diff = round(new["price"] - old["price"], 2)
            method = self.method_for(max(diff, 0.0))
            if method is None:
                continue
            self.used.add(order["id"])
            return Intent("price_difference",
                          f"From my delivered order {order['id']} I want to exchange the {old['name']} "
                          f"({_options(old['options'])}) for one with {_options(new['options'])}. What is the price "
                          f"difference? Use {method['id']} for it.",
                          [action("get_order_details", order_id=order["id"]),
                           action("get_product_details", product_id=old["product_id"]),
                           action("calculate", expression=f"{_money(new['price'])} - {_money(old['price'])}"),
                           action("exchange_delivered_order_items", order_id=order["id"], item_ids=[old["item_id"]],
                                  new_item_ids=[new["item_id"]], payment_method_id=method["id"])],
                          communicate=[_money(abs(diff))],
                          facts={"order_id": order["id"], "item_ids": [old["item_id"]],
                                 "new_item_ids": [new["item_id"]], "payment_method_id": method["id"]})
        return None

    def claim(self) -> Intent | None:
        """A parcel reported lost or damaged: a delivered order goes to a human (no tool files a claim), one not
        delivered yet gets its status (the look-up decides which)."""
        candidates = self.orders("delivered", "processed", "pending")
        if not candidates:
            return None
        order = self.pick(candidates)
        self.used.add(order["id"])
        lookup = action("get_order_details", order_id=order["id"])
        if order["status"] != "delivered":
            return Intent("claim_status", f"My order {order['id']} never arrived. Can you send me a replacement? If "
                                          "not, tell me what status the order is in.",
                          [lookup], communicate=[order["status"]], checks=[lookup],
                          facts={"order_id": order["id"], "claim": "never arrived"})
        if not order["tracking"]:
            return None
        problem = self.pick(["never arrived", "arrived damaged"])
        handoff = Action(name="transfer_to_human_agents", arguments={"summary": f"Order {order['id']} {problem}."},
                         compare_args=[])
        # the tracking number is the stated answer: without one, looking up and handing off would be paid blind
        return Intent("transfer", f"My order {order['id']} {problem}. Can you send me a replacement? And please give "
                                  "me its tracking number so I can check with the carrier.",
                      [lookup, handoff], communicate=[order["tracking"][0]], checks=[lookup, handoff],
                      facts={"order_id": order["id"], "claim": problem})

    # -- how the customer tells it ---------------------------------------------------------------------
    def by_item(self, intent: Intent) -> Intent | None:
        """``intent`` told by an item of its order instead of the order's id (the customer does not have it): the
        agent lists the customer's orders (``get_user_details``) and finds the one with that item. None where no
        item of the order is in no other order of the customer."""
        order_id = intent.facts.get("order_id")
        if not isinstance(order_id, str) or intent.says.count(order_id) != 1:
            return None
        orders = self.snap.orders.get(self.user["user_id"], [])
        order = next(o for o in orders if o["id"] == order_id)
        elsewhere = {i["name"] for o in orders if o["id"] != order_id for i in o["items"]}
        unique = [i for i in order["items"] if i["name"] not in elsewhere]
        if not unique:
            return None
        item = self.pick(unique)
        says = intent.says.replace(order_id, f"(the one with the {item['name']}; I don't have its number)")
        listing = action("get_user_details", user_id=self.user["user_id"])
        return replace(intent, says=says, gold=[listing, *intent.gold],
                       checks=[listing, *intent.checks] if intent.checks else [])

    def wrong_order_id(self) -> str:
        """An order id shaped like the world's that finds no order."""
        return self.unused(lambda: f"#W{int(self.rng.integers(1_000_000, 10_000_000))}", self.snap.order_ids)

    def instead(self, intent: Intent) -> tuple[Intent, str] | None:
        """What the customer may want instead of ``intent`` when asked to confirm it (on the same order, so every
        value is one its look-up shows), and what it says then; None where nothing fits."""
        order_id = intent.facts.get("order_id")
        order = next((o for o in self.snap.orders.get(self.user["user_id"], []) if o["id"] == order_id), None)
        if order is None:
            return None
        if intent.category in ("return", "exchange", "refund_total", "price_difference") and order["payments"]:
            taken = set(intent.facts.get("item_ids", ()))
            others = [i for i in order["items"] if i["item_id"] not in taken]
            if intent.category == "exchange":  # the same items, returned rather than exchanged
                items = [i for i in order["items"] if i["item_id"] in taken]
            elif others:  # another item of the order returned instead
                items = [self.pick(others)]
            else:
                return None
            method = order["payments"][0]["method"]
            names = ", ".join(f"the {i['name']} ({_options(i['options'])})" for i in items)
            says = (f"Actually, I've changed my mind: instead, I'd like to return {names} from order {order['id']}, "
                    f"refunded to {method}.")
            return Intent("return", says,
                          [action("get_order_details", order_id=order["id"]),
                           action("return_delivered_order_items", order_id=order["id"],
                                  item_ids=[i["item_id"] for i in items], payment_method_id=method)],
                          facts={"order_id": order["id"], "item_ids": [i["item_id"] for i in items],
                                 "payment_method_id": method}), says
        if intent.category in ("modify_items", "modify_address", "modify_payment") and order["status"] == "pending":
            says = (f"Actually, I've changed my mind: instead, please cancel order {order['id']} entirely; it is no "
                    "longer needed.")
            return Intent("cancel", says,
                          [action("get_order_details", order_id=order["id"]),
                           action("cancel_pending_order", order_id=order["id"], reason="no longer needed")],
                          facts={"order_id": order["id"], "reason": "no longer needed"}), says
        return None

    def with_behaviour(self, intents: list[Intent]) -> list[Intent] | None:
        """``intents`` with one request given a behaviour (:func:`mua_gym.kit.behaviours.give_behaviour`)."""
        return give_behaviour(self.rng, intents, fact="order_id", wrong=self.wrong_order_id, instead=self.instead,
                              is_write=lambda i: any(a.name in self.writes for a in i.gold),
                              is_read=lambda a: a.name.startswith(("get_", "find_")))

INTENTS = {"cancel": _Maker.cancel, "modify_items": _Maker.modify_items, "modify_address": _Maker.modify_address,
           "modify_payment": _Maker.modify_payment, "user_address": _Maker.user_address, "return": _Maker.return_,
           "exchange": _Maker.exchange, "information": _Maker.information, "refusal": _Maker.refusal,
           "refund_total": _Maker.refund_total, "price_difference": _Maker.price_difference, "claim": _Maker.claim}
#: What each level draws: how many requests, and how often one request is told by an item instead of the order's
#: id and one carries a behaviour of the user (see the module docstring).
LEVEL_SHAPES = {1: (1, 1, 0.0, 0.0), 2: (2, 2, 0.2, 0.25), 3: (3, 3, 0.3, 0.5), 4: (4, 6, 0.4, 0.8)}
LEVELS = (1, 1, 1, 2, 2, 3, 4)


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
    writes = domain.tools.names_of("write")

    def make(rng: np.random.Generator, user: int, level: int, task_id: str) -> Task | None:
        maker = _Maker(snap, rng, snap.users[user], writes)
        low, high, by_item, behaviour = LEVEL_SHAPES[level]
        count = low + int(rng.integers(high - low + 1))
        intents = draw_intents(maker, level, INTENTS, SINGLE, last=("refusal", "refusal", "claim"), count=count)
        if intents is None:
            return None
        handoffs = [i for i in intents if i.category == "transfer"]
        if len(handoffs) > 1:
            return None  # a transfer ends the conversation: one, and last
        intents = [i for i in intents if i.category != "transfer"] + handoffs
        intents = [(maker.by_item(i) or i) if rng.random() < by_item else i for i in intents]
        if rng.random() < behaviour:
            intents = maker.with_behaviour(intents)
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
                          make=make, verify=verify, levels=LEVELS)
