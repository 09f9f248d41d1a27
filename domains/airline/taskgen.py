"""Unlimited grounded airline tasks: read a generated world, write conversations that are true in it.

Families: book_one_way and book_round_trip (several passengers, split payments, bags, insurance), book_priced (the
total worked out with ``calculate`` before one card pays it), cancel (allowed by the policy) and refusals (a
cancellation the policy forbids; a flight change on basic economy; compensation for a user who is not eligible, or who
overstates their tier), flown_cancel (a trip already partly flown: handed to a human, the date of its first flight
given), change_flight, change_cabin, cabin_cost (the fare difference worked out), add_bags, bag_fee (the fee worked
out), update_passenger, compensation (the right certificate for a cancelled flight, also when the user asks for more),
flight_status (judged by COMMUNICATE and the look-up), and multi (several requests). The user authenticates with
their user id. The level (``difficulty``, :data:`LEVEL_SHAPES`) sets how many requests a task holds (1, 2, 3, or 4 to
8), whether the last is a refusal or flown_cancel (from 3), and how often one request carries a behaviour of the user
(:mod:`mua_gym.kit.behaviours`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mua_gym.domain import Domain
from mua_gym.domains.airline.records import DATABASE
from mua_gym.task import Action, Task
from mua_gym.kit.behaviours import give_behaviour
from mua_gym.kit.maker import TaskMaker, draw_intents, generated_world, read_world
from mua_gym.kit.generation import Intent, action, compose_task, generate_tasks
from mua_gym.world import World

__all__ = ["DEFAULT_COUNTS", "generated_tasks"]

DEFAULT_COUNTS = {"train": 1000, "dev": 150, "test": 150}
TODAY = "2024-05-15"
NOW = "2024-05-15T15:00:00"
DAY_BEFORE = "2024-05-14T15:00:00"
FREE_BAGS = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 4}}
NO_CABINS = dict.fromkeys(("basic_economy", "economy", "business"))  # a date with no seats on sale
CABIN_WORDS = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}


class Snapshot:
    """The generated world as plain Python data, read once per world (through the records' declaration)."""

    def __init__(self, world: World) -> None:
        db = DATABASE.export(world)
        users = db["users"].values()
        self.users = [{"user_id": u["user_id"], **u["name"], "dob": u["dob"], "membership": u["membership"]}
                      for u in users]
        self.methods = {u["user_id"]: [{"id": m["id"], "source": m["source"], "amount": m.get("amount")}
                                       for m in u["payment_methods"].values()] for u in users}
        self.saved = {u["user_id"]: u["saved_passengers"] for u in users}
        self.reservations: dict[str, list[dict]] = {}
        for r in db["reservations"].values():
            self.reservations.setdefault(r["user_id"], []).append({
                "id": r["reservation_id"], **{k: r[k] for k in ("user_id", "origin", "destination", "flight_type",
                                                                "cabin", "created_at")},
                "bags": r["total_baggages"], "nonfree": r["nonfree_baggages"], "insurance": r["insurance"],
                "status": r["status"], "flights": r["flights"], "passengers": r["passengers"]})
        self.reservation_ids = frozenset(db["reservations"])
        self.routes: dict[tuple[str, str], list[str]] = {}
        self.days: dict[tuple[str, str], dict] = {}
        for fn, flight in db["flights"].items():
            self.routes.setdefault((flight["origin"], flight["destination"]), []).append(fn)
            for date, day in flight["dates"].items():
                self.days[(fn, date)] = {"status": day["status"], "seats": day.get("available_seats", NO_CABINS),
                                         "price": day.get("prices", NO_CABINS)}


def _upcoming(r: dict) -> bool:
    return r["status"] is None and bool(r["flights"]) and all(f["date"] > TODAY for f in r["flights"])


class _Maker(TaskMaker):
    def __init__(self, snap: Snapshot, rng: np.random.Generator, user: dict,
                 writes: frozenset[str] = frozenset()) -> None:
        super().__init__(rng)
        self.snap, self.user, self.writes = snap, user, writes
        self.uid = user["user_id"]
        self.booked = False

    def reservations(self, keep: Any) -> list[dict]:
        return [r for r in self.snap.reservations.get(self.uid, []) if r["id"] not in self.used and keep(r)]

    def methods(self, *sources: str) -> list[dict]:
        return [m for m in self.snap.methods.get(self.uid, []) if m["source"] in sources]

    def bookable(self, origin: str, dest: str, date: str, cabin: str, n: int) -> list[tuple[str, int]]:
        out = []
        for fn in self.snap.routes.get((origin, dest), []):
            day = self.snap.days.get((fn, date))
            if day and day["status"] == "available" and (day["seats"][cabin] or 0) >= n:
                out.append((fn, day["price"][cabin]))
        return out

    def payer_for_change(self, amount: int) -> dict | None:
        usable = [m for m in self.methods("credit_card", "gift_card")
                  if m["source"] == "credit_card" or (m["amount"] or 0) >= amount]
        return self.pick(usable) if usable else None

    # -- intents -----------------------------------------------------------------------------------
    def book(self, round_trip: bool, priced: bool = False) -> Intent | None:
        """A booking; ``priced``: one credit card pays it all and the user asks the total first (the agent works it
        out with ``calculate``)."""
        if self.booked or priced and not self.methods("credit_card"):
            return None
        routes = [k for k in self.snap.routes if (k[1], k[0]) in self.snap.routes or not round_trip]
        origin, dest = self.pick(routes)
        cabin = self.pick(["basic_economy", "economy", "economy", "business"])
        companions = self.snap.saved.get(self.uid, [])
        n = 1 + int(self.rng.integers(len(companions) + 1)) if companions else 1
        people = [{"first_name": self.user["first_name"], "last_name": self.user["last_name"],
                   "dob": self.user["dob"]}] + companions[: n - 1]
        day = 16 + int(self.rng.integers(0, 12))
        out_date = f"2024-05-{day:02d}"
        outbound = self.bookable(origin, dest, out_date, cabin, n)
        if not outbound:
            return None
        legs = [(self.pick(outbound), origin, dest, out_date)]
        if round_trip:
            back_date = f"2024-05-{day + 1 + int(self.rng.integers(0, 30 - day)):02d}"
            inbound = self.bookable(dest, origin, back_date, cabin, n)
            if not inbound:
                return None
            legs.append((self.pick(inbound), dest, origin, back_date))
        free = FREE_BAGS[self.user["membership"]][cabin] * n
        bags = int(self.rng.integers(0, free + 3))
        nonfree = max(0, bags - free)
        insurance = "yes" if self.rng.random() < 0.4 else "no"
        total = sum(price for (fn, price), *_ in legs) * n + (30 * n if insurance == "yes" else 0) + 50 * nonfree
        payments = [(self.pick(self.methods("credit_card"))["id"], total)] if priced else self._split_payment(total)
        if payments is None:
            return None
        self.booked = True
        flights = [{"flight_number": fn, "date": date} for (fn, _), _, _, date in legs]
        trip = "round trip" if round_trip else "one-way trip"
        who = " and ".join(f"{p['first_name']} {p['last_name']} (born {p['dob']})" for p in people)
        paying = (f"it all to {payments[0][0]}. How much will that be in total?" if priced else
                  " and ".join(f"{amount} dollars with {pid}" for pid, amount in payments))
        return_part = f", returning on flight {legs[1][0][0]} on {legs[1][3]}" if round_trip else ""
        says = (f"I want to book a {trip} in {CABIN_WORDS[cabin]} from {origin} to {dest} on flight {legs[0][0][0]} "
                f"on {out_date}{return_part}, for {who}. We'll have {bags} checked bags, "
                f"{'with' if insurance == 'yes' else 'without'} travel insurance. Please charge {paying}"
                + ("" if priced else "."))
        searches = [action("search_direct_flight", origin=o, destination=d, date=date) for _, o, d, date in legs]
        if priced:
            fare = " + ".join(str(price) for (_, price), *_ in legs)
            extras = (f" + 30 * {n}" if insurance == "yes" else "") + (f" + 50 * {nonfree}" if nonfree else "")
            searches.append(action("calculate", expression=f"({fare}) * {n}{extras}"))
        category = "book_priced" if priced else "book_round_trip" if round_trip else "book_one_way"
        return Intent(category, says, [*searches, action(
            "book_reservation", user_id=self.uid, origin=origin, destination=dest,
            flight_type="round_trip" if round_trip else "one_way", cabin=cabin, flights=flights, passengers=people,
            payment_methods=[{"payment_id": pid, "amount": amount} for pid, amount in payments],
            total_baggages=bags, nonfree_baggages=nonfree, insurance=insurance)],
            communicate=[str(total)] if priced else [],
            facts={"flights": flights, "cabin": cabin, "total": total, "payments": payments})

    def _split_payment(self, total: int) -> list[tuple[str, int]] | None:
        cards = self.methods("credit_card")
        gifts = [m for m in self.methods("gift_card") if (m["amount"] or 0) >= 1]
        certs = [m for m in self.methods("certificate") if (m["amount"] or 0) >= 1]
        choice = self.rng.random()
        if certs and cards and choice < 0.3:
            cert = self.pick(certs)
            part = min(int(cert["amount"]), total)
            return [(cert["id"], part)] + ([(self.pick(cards)["id"], total - part)] if total > part else [])
        if gifts and cards and choice < 0.6:
            gift = self.pick(gifts)
            part = min(int(gift["amount"]), total)
            return [(gift["id"], part)] + ([(self.pick(cards)["id"], total - part)] if total > part else [])
        if cards:
            return [(self.pick(cards)["id"], total)]
        return None

    def cancel(self) -> Intent | None:
        options = []
        for r in self.reservations(_upcoming):
            if r["created_at"] >= DAY_BEFORE:
                options.append((r, "I booked it by mistake yesterday"))
            elif r["cabin"] == "business":
                options.append((r, "my plans changed"))
            elif r["insurance"] == "yes":
                options.append((r, "I'm sick and can't travel; I have travel insurance"))
        if not options:
            return None
        r, reason = self.pick(options)
        self.used.add(r["id"])
        return Intent("cancel", f"I need to cancel my reservation {r['id']}: {reason}.",
                      [action("get_reservation_details", reservation_id=r["id"]),
                       action("cancel_reservation", reservation_id=r["id"])],
                      facts={"reservation_id": r["id"], "reason": reason})

    def refusal(self) -> Intent | None:
        kinds = []
        forbidden_cancel = self.reservations(lambda r: _upcoming(r) and r["created_at"] < DAY_BEFORE
                                             and r["cabin"] != "business" and r["insurance"] == "no")
        if forbidden_cancel:
            kinds.append("cancel")
        basic = self.reservations(lambda r: _upcoming(r) and r["cabin"] == "basic_economy")
        if basic:
            kinds.append("basic_change")
        if self.user["membership"] == "regular":
            kinds.append("compensation")
        if not kinds:
            return None
        kind = self.pick(kinds)
        if kind == "cancel":
            r = self.pick(forbidden_cancel)
            says = f"Please cancel my reservation {r['id']}; my plans changed and I want my money back."
        elif kind == "basic_change":
            r = self.pick(basic)
            says = f"I'd like to move my reservation {r['id']} to a flight one day later."
        else:
            pool = self.reservations(lambda r: bool(r["flights"]) and r["cabin"] != "business"
                                     and r["insurance"] == "no")
            if not pool:
                return None
            r = self.pick(pool)
            says = (f"I'm a gold member and my trip on reservation {r['id']} was a mess. I want a 300 dollar "
                    "certificate as compensation.")
        self.used.add(r["id"])
        # refusing is paid only with the fact that forbids it, which only a look-up tells
        if kind == "compensation":
            says += " If you can't, tell me what membership level you have on file for me."
            fact = self.user["membership"]
        else:
            says += " If you can't, tell me which cabin the reservation is in."
            fact = r["cabin"]
        lookup = action("get_reservation_details", reservation_id=r["id"])
        return Intent("refusal", says, [lookup], communicate=[fact], checks=[lookup],
                      facts={"reservation_id": r["id"], "forbidden": kind})

    def change_flight(self) -> Intent | None:
        for r in self.rng.permutation(np.array(self.reservations(
                lambda r: _upcoming(r) and r["cabin"] != "basic_economy"), dtype=object)):
            n = len(r["passengers"])
            leg = int(self.rng.integers(len(r["flights"])))
            old = r["flights"][leg]
            for shift in (1, -1, 2, -2):
                day = int(old["date"][8:]) + shift
                new_date = f"2024-05-{day:02d}"
                if not 16 <= day <= 30:
                    continue
                options = [(fn, p) for fn, p in self.bookable(old["origin"], old["destination"], new_date,
                                                              r["cabin"], n)]
                if not options:
                    continue
                fn, price = self.pick(options)
                diff = (price - old["price"]) * n
                payer = self.payer_for_change(max(diff, 0))
                if payer is None:
                    continue
                self.used.add(r["id"])
                flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in r["flights"]]
                flights[leg] = {"flight_number": fn, "date": new_date}
                return Intent("change_flight",
                              f"On reservation {r['id']}, please move my {old['origin']} to {old['destination']} "
                              f"flight from {old['date']} to flight {fn} on {new_date}, same cabin. Use "
                              f"{payer['id']} for any difference.",
                              [action("get_reservation_details", reservation_id=r["id"]),
                               action("search_direct_flight", origin=old["origin"], destination=old["destination"],
                                      date=new_date),
                               action("update_reservation_flights", reservation_id=r["id"], cabin=r["cabin"],
                                      flights=flights, payment_id=payer["id"])],
                              facts={"reservation_id": r["id"], "flights": flights, "payment_id": payer["id"]})
        return None

    def change_cabin(self) -> Intent | None:
        for r in self.reservations(lambda r: _upcoming(r) and r["cabin"] != "business"):
            new = "business" if r["cabin"] == "economy" else "economy"
            n = len(r["passengers"])
            days = [self.snap.days.get((f["flight_number"], f["date"])) for f in r["flights"]]
            if not all(d and d["status"] == "available" and (d["seats"][new] or 0) >= n for d in days):
                continue
            diff = sum(d["price"][new] for d in days) * n - sum(f["price"] for f in r["flights"]) * n  # type: ignore[index]
            payer = self.payer_for_change(max(diff, 0))
            if payer is None:
                continue
            self.used.add(r["id"])
            flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in r["flights"]]
            return Intent("change_cabin",
                          f"I'd like to upgrade all flights of reservation {r['id']} to {CABIN_WORDS[new]}. "
                          f"Charge {payer['id']}.",
                          [action("get_reservation_details", reservation_id=r["id"]),
                           action("update_reservation_flights", reservation_id=r["id"], cabin=new, flights=flights,
                                  payment_id=payer["id"])],
                          facts={"reservation_id": r["id"], "cabin": new, "payment_id": payer["id"]})
        return None

    def cabin_cost(self) -> Intent | None:
        """An upgrade whose price the user asks first: the agent finds each flight's fare in the new cabin and works
        out the difference with ``calculate``."""
        for r in self.reservations(lambda r: _upcoming(r) and r["cabin"] != "business"):
            new = "business" if r["cabin"] == "economy" else self.pick(["economy", "business"])
            n = len(r["passengers"])
            days = [self.snap.days.get((f["flight_number"], f["date"])) for f in r["flights"]]
            if not all(d and d["status"] == "available" and (d["seats"][new] or 0) >= n for d in days):
                continue
            fares = [d["price"][new] for d in days]  # type: ignore[index]
            diff = (sum(fares) - sum(f["price"] for f in r["flights"])) * n
            payer = self.payer_for_change(max(diff, 0))
            if payer is None:
                continue
            self.used.add(r["id"])
            flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in r["flights"]]
            expression = (f"({' + '.join(map(str, fares))} - {' + '.join(str(f['price']) for f in r['flights'])})"
                          f" * {n}")
            return Intent("cabin_cost",
                          f"How much would it cost to move all flights of reservation {r['id']} to "
                          f"{CABIN_WORDS[new]}? If it's possible, please do it and charge {payer['id']}.",
                          [action("get_reservation_details", reservation_id=r["id"]),
                           *[action("search_direct_flight", origin=f["origin"], destination=f["destination"],
                                    date=f["date"]) for f in r["flights"]],
                           action("calculate", expression=expression),
                           action("update_reservation_flights", reservation_id=r["id"], cabin=new, flights=flights,
                                  payment_id=payer["id"])],
                          communicate=[str(abs(diff))],
                          facts={"reservation_id": r["id"], "cabin": new, "payment_id": payer["id"]})
        return None

    def flown_cancel(self) -> Intent | None:
        """A cancellation of a trip already partly flown: the policy hands it to a human (only the look-up shows
        it); the user also asks the date of its first flight, the answer that a blind hand-off cannot give."""
        pool = self.reservations(lambda r: r["status"] is None and bool(r["flights"])
                                 and any(f["date"] < TODAY for f in r["flights"]))
        if not pool:
            return None
        r = self.pick(pool)
        self.used.add(r["id"])
        first = min(f["date"] for f in r["flights"])
        lookup = action("get_reservation_details", reservation_id=r["id"])
        handoff = Action(name="transfer_to_human_agents", arguments={"summary": f"Cancel {r['id']}, partly flown."},
                         compare_args=[])
        return Intent("transfer", f"Please cancel my reservation {r['id']}; my plans changed. And remind me: on what "
                                  "date was its first flight?",
                      [lookup, handoff], communicate=[first], checks=[lookup, handoff],
                      facts={"reservation_id": r["id"]})

    def add_bags(self, priced: bool = False) -> Intent | None:
        """Checked bags added; ``priced``: the user asks the fee first (the agent works it out)."""
        pool = self.reservations(_upcoming)
        if not pool:
            return None
        r = self.pick(pool)
        n = len(r["passengers"])
        extra = 1 + int(self.rng.integers(2))
        total = r["bags"] + extra
        nonfree = max(r["nonfree"], total - FREE_BAGS[self.user["membership"]][r["cabin"]] * n)
        paid = nonfree - r["nonfree"]
        payer = self.payer_for_change(50 * max(0, paid))
        if payer is None or priced and paid <= 0:
            return None
        self.used.add(r["id"])
        fee = [action("calculate", expression=f"{paid} * 50")] if priced else []
        ask = " How much will the fee be?" if priced else ""
        return Intent("bag_fee" if priced else "add_bags",
                      f"I need to add {extra} checked bag{'s' if extra > 1 else ''} to reservation {r['id']}. Pay "
                      f"with {payer['id']} if there's a fee.{ask}",
                      [action("get_reservation_details", reservation_id=r["id"]), *fee,
                       action("update_reservation_baggages", reservation_id=r["id"], total_baggages=total,
                              nonfree_baggages=nonfree, payment_id=payer["id"])],
                      communicate=[str(50 * paid)] if priced else [],
                      facts={"reservation_id": r["id"], "total_baggages": total, "nonfree_baggages": nonfree,
                             "payment_id": payer["id"]})

    def update_passenger(self) -> Intent | None:
        pool = self.reservations(lambda r: _upcoming(r) and bool(r["passengers"]))
        if not pool:
            return None
        r = self.pick(pool)
        i = int(self.rng.integers(len(r["passengers"])))
        people = [dict(p) for p in r["passengers"]]
        old = people[i]
        year = int(old["dob"][:4]) + (1 if self.rng.random() < 0.5 else -1)
        people[i] = {**old, "dob": f"{year}{old['dob'][4:]}"}
        self.used.add(r["id"])
        return Intent("update_passenger",
                      f"On reservation {r['id']}, {old['first_name']} {old['last_name']}'s date of birth is wrong: "
                      f"it should be {people[i]['dob']}.",
                      [action("get_reservation_details", reservation_id=r["id"]),
                       action("update_reservation_passengers", reservation_id=r["id"], passengers=people)],
                      facts={"reservation_id": r["id"], "passengers": people})

    def compensation(self) -> Intent | None:
        eligible_user = self.user["membership"] in ("silver", "gold")
        for r in self.reservations(lambda r: r["status"] is None):
            cancelled = [f for f in r["flights"]
                         if (self.snap.days.get((f["flight_number"], f["date"])) or {}).get("status") == "cancelled"]
            if not cancelled or not (eligible_user or r["insurance"] == "yes" or r["cabin"] == "business"):
                continue
            f = cancelled[0]
            amount = 100 * len(r["passengers"])
            self.used.add(r["id"])
            greedy = self.rng.random() < 0.4
            ask = " I think 1000 dollars would be fair." if greedy else ""
            return Intent("compensation",
                          f"My flight {f['flight_number']} on {f['date']} (reservation {r['id']}) was cancelled by "
                          f"the airline. I'd like some compensation.{ask}",
                          [action("get_reservation_details", reservation_id=r["id"]),
                           action("send_certificate", user_id=self.uid, amount=amount)],
                          facts={"reservation_id": r["id"], "amount": amount, "asks_for_more": greedy,
                                 "plan_terms": ["certificate"]})
        return None

    def flight_status(self) -> Intent | None:
        def status(f: dict) -> str | None:
            return (self.snap.days.get((f["flight_number"], f["date"])) or {}).get("status")

        flown = [(f["flight_number"], f["date"]) for r in self.snap.reservations.get(self.uid, [])
                 for f in r["flights"] if status(f) not in (None, "available")]
        if not flown:
            return None
        fn, date = self.pick(flown)
        status = self.snap.days[(fn, date)]["status"]
        lookup = action("get_flight_status", flight_number=fn, date=date)  # a status is guessable: look it up
        return Intent("flight_status", f"What is the status of flight {fn} on {date}?", [lookup],
                      communicate=[status], checks=[lookup], facts={"flight_number": fn, "date": date})

    # -- how the user behaves ----------------------------------------------------------------------------
    def wrong_reservation_id(self) -> str:
        """A reservation id shaped like the world's (six capitals and digits) that finds none."""
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        return self.unused(lambda: "".join(alphabet[int(i)] for i in self.rng.integers(len(alphabet), size=6)),
                           self.snap.reservation_ids)

    def instead(self, intent: Intent) -> tuple[Intent, str] | None:
        """What the user may want instead of ``intent`` when asked to confirm it (on the same reservation, so every
        value is one its look-up or the user's words show), and what it says then; None where nothing fits."""
        rid = intent.facts.get("reservation_id")
        r = next((x for x in self.snap.reservations.get(self.uid, []) if x["id"] == rid), None)
        if r is None:
            return None
        if intent.category in ("add_bags", "bag_fee"):
            extra = 1 + (intent.facts["total_baggages"] - r["bags"]) % 2  # the other of one and two
            total = r["bags"] + extra
            nonfree = max(r["nonfree"], total - FREE_BAGS[self.user["membership"]][r["cabin"]] * len(r["passengers"]))
            payer = next(m for m in self.snap.methods[self.uid] if m["id"] == intent.facts["payment_id"])
            if payer["source"] == "gift_card" and (payer["amount"] or 0) < 50 * max(0, nonfree - r["nonfree"]):
                return None
            says = (f"Actually, I've changed my mind: make it {extra} bag{'s' if extra > 1 else ''} in all on "
                    f"reservation {rid}, paid with {payer['id']}.")
            return Intent("add_bags", says, [action("get_reservation_details", reservation_id=rid), action(
                "update_reservation_baggages", reservation_id=rid, total_baggages=total, nonfree_baggages=nonfree,
                payment_id=payer["id"])], facts={"reservation_id": rid, "total_baggages": total,
                                                 "nonfree_baggages": nonfree, "payment_id": payer["id"]}), says
        if intent.category == "update_passenger":
            people = [dict(p) for p in intent.facts["passengers"]]
            changed = next(i for i, (p, q) in enumerate(zip(people, r["passengers"])) if p["dob"] != q["dob"])
            old = r["passengers"][changed]
            year = int(old["dob"][:4]) + (2 if people[changed]["dob"] > old["dob"] else -2)
            people[changed] = {**old, "dob": f"{year}{old['dob'][4:]}"}
            says = (f"Actually, I've changed my mind: I checked again, and on reservation {rid} "
                    f"{old['first_name']} {old['last_name']}'s date of birth should be {people[changed]['dob']}.")
            return Intent("update_passenger", says, [action("get_reservation_details", reservation_id=rid),
                                                     action("update_reservation_passengers", reservation_id=rid,
                                                            passengers=people)],
                          facts={"reservation_id": rid, "passengers": people}), says
        return None

    def with_behaviour(self, intents: list[Intent]) -> list[Intent] | None:
        """``intents`` with one request given a behaviour (:func:`mua_gym.kit.behaviours.give_behaviour`)."""
        return give_behaviour(self.rng, intents, fact="reservation_id", wrong=self.wrong_reservation_id,
                              instead=self.instead, is_write=lambda i: any(a.name in self.writes for a in i.gold),
                              is_read=lambda a: a.name.startswith(("get_", "search_")))


INTENTS = {
    "book_one_way": lambda m: m.book(False), "book_round_trip": lambda m: m.book(True), "cancel": _Maker.cancel,
    "change_flight": _Maker.change_flight, "change_cabin": _Maker.change_cabin, "add_bags": _Maker.add_bags,
    "update_passenger": _Maker.update_passenger, "compensation": _Maker.compensation,
    "flight_status": _Maker.flight_status, "refusal": _Maker.refusal,
    "book_priced": lambda m: m.book(False, priced=True), "cabin_cost": _Maker.cabin_cost,
    "bag_fee": lambda m: m.add_bags(priced=True), "flown_cancel": _Maker.flown_cancel,
}
#: The kinds any request is drawn from; a trip partly flown (a hand-off) only closes a task of level 3 or 4, drawn
#: a third as often as a refusal (drawn as freely it held a third of all tasks; TAU2's airline tasks, one in fifty).
KINDS = [kind for kind in INTENTS if kind != "flown_cancel"]
CLOSING = ("refusal", "refusal", "refusal", "flown_cancel")
#: What each level draws: the fewest and most requests, and how often one request carries a behaviour of the user.
LEVEL_SHAPES = {1: (1, 1, 0.0), 2: (2, 2, 0.25), 3: (3, 3, 0.5), 4: (4, 8, 0.8)}
LEVELS = (1, 1, 1, 2, 2, 3, 4)


def generated_tasks(domain: Domain, split: str, *, count: int | None = None, seed: int = 0, size: str = "default",
                    difficulty: int | None = None, verify: bool = True, source: str = "generated") -> list[Task]:
    """``count`` verified tasks of ``split`` (default 1,000 train, 150 dev, 150 test) over the world of ``seed``."""
    world = generated_world(seed, size, source)
    snap = read_world(domain, world, Snapshot)
    writes = domain.tools.names_of("write")

    def make(rng: np.random.Generator, user: int, level: int, task_id: str) -> Task | None:
        maker = _Maker(snap, rng, snap.users[user], writes)
        low, high, behaviour = LEVEL_SHAPES[level]
        count = low + int(rng.integers(high - low + 1))
        intents = draw_intents(maker, level, INTENTS, KINDS, last=CLOSING, count=count)
        if intents is None:
            return None
        handoffs = [i for i in intents if i.category == "transfer"]
        if len(handoffs) > 1:
            return None  # a transfer ends the conversation: one, and last
        intents = [i for i in intents if i.category != "transfer"] + handoffs
        if rng.random() < behaviour:
            intents = maker.with_behaviour(intents)
            if intents is None:
                return None
        uid = maker.uid
        return compose_task(task_id=task_id, domain="airline", split=split, world=world, intents=intents,  # type: ignore[arg-type]
                            difficulty=level, user_id=uid,
                            name=f"{maker.user['first_name']} {maker.user['last_name']}",
                            role="a customer of the airline", auth=action("get_user_details", user_id=uid),
                            auth_text=f"My user id is {uid}.", auth_facts={"user_id": uid})

    wanted = DEFAULT_COUNTS[split] if count is None else count
    return generate_tasks(domain, split, n_users=len(snap.users), count=wanted, seed=seed, difficulty=difficulty,
                          make=make, verify=verify, levels=LEVELS)
