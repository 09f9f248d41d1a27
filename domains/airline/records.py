"""Airline rows as tau2's JSON records, declared once: what tools return, what the export writes, and how
TAU2's ``db.json`` loads (see :mod:`mua_gym.kit.records`)."""

from __future__ import annotations

from typing import Any, Mapping

from sqlalchemy import bindparam, select

from mua_gym.domains.airline.schema import (
    flight_dates, flights, payment_methods, reservation_flights, reservation_passengers, reservation_payments,
    reservations, saved_passengers, user_reservations, users,
)
from mua_gym.kit.records import Column, Database, Group, Ids, Many, Record
from mua_gym.world import World

P = bindparam
CABINS = ("basic_economy", "economy", "business")

USER = select(users).where(users.c.user_id == P("uid"))
USER_METHODS = (select(payment_methods).where(payment_methods.c.user_id == P("uid"))
                .order_by(payment_methods.c.position))
RESERVATION = select(reservations).where(reservations.c.reservation_id == P("rid"))
RESERVATION_FLIGHTS = (select(reservation_flights.c.flight_number, reservation_flights.c.origin,
                              reservation_flights.c.destination, reservation_flights.c.date,
                              reservation_flights.c.price)
                       .where(reservation_flights.c.reservation_id == P("rid"))
                       .order_by(reservation_flights.c.position))
RESERVATION_PAYMENTS = (select(reservation_payments.c.payment_id, reservation_payments.c.amount)
                        .where(reservation_payments.c.reservation_id == P("rid"))
                        .order_by(reservation_payments.c.position))
FLIGHT = select(flights).where(flights.c.flight_number == P("fn"))
FLIGHT_DATE = select(flight_dates).where(flight_dates.c.flight_number == P("fn"), flight_dates.c.date == P("date"))


def _method_shape(row: Mapping[str, Any]) -> tuple[str, ...]:
    if row["source"] == "credit_card":
        return ("source", "id", "brand", "last_four")
    return ("source", "id", "amount")


def _status_shape(row: Mapping[str, Any]) -> tuple[str, ...]:
    """tau2's flight status union: which fields a date of each status has."""
    return STATUS_FIELDS.get(row["status"], ("status",))


STATUS_FIELDS = {
    "available": ("status", "available_seats", "prices"),
    "landed": ("status", "actual_departure_time_est", "actual_arrival_time_est"),
    "flying": ("status", "actual_departure_time_est", "estimated_arrival_time_est"),
    "delayed": ("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
}
FLIGHT_DAYS = Record(flight_dates, {
    "status": "status",
    "available_seats": Group({c: Column(f"seats_{c}", default=None) for c in CABINS}, optional=True),
    "prices": Group({c: Column(f"price_{c}", default=None) for c in CABINS}, optional=True),
    **{k: k for k in ("actual_departure_time_est", "actual_arrival_time_est", "estimated_departure_time_est",
                      "estimated_arrival_time_est")},
}, key="date", shape=_status_shape)
FLIGHTS = Record(flights, {
    **{k: k for k in ("flight_number", "origin", "destination", "scheduled_departure_time_est",
                      "scheduled_arrival_time_est")},
    "dates": Many(FLIGHT_DAYS, keyed=True),
}, key="flight_number")
METHODS = Record(payment_methods, {"source": "source", "id": "method_id", "brand": "brand", "last_four": "last_four",
                                   "amount": Column("amount", load=float)},
                 key="method_id", shape=_method_shape)
PASSENGER_FIELDS = {"first_name": "first_name", "last_name": "last_name", "dob": "dob"}
USERS = Record(users, {
    "user_id": "user_id",
    "name": Group({"first_name": "first_name", "last_name": "last_name"}),
    "address": Group({k: Column(k, default=None) for k in ("address1", "address2", "city", "country", "state", "zip")}),
    "email": "email",
    "dob": "dob",
    "payment_methods": Many(METHODS, keyed=True),
    "saved_passengers": Many(Record(saved_passengers, PASSENGER_FIELDS)),
    "membership": "membership",
    "reservations": Ids(user_reservations, "reservation_id"),
}, key="user_id")
RESERVATIONS = Record(reservations, {
    **{k: k for k in ("reservation_id", "user_id", "origin", "destination", "flight_type", "cabin")},
    "flights": Many(Record(reservation_flights, {k: k for k in ("flight_number", "origin", "destination", "date",
                                                                 "price")})),
    "passengers": Many(Record(reservation_passengers, PASSENGER_FIELDS)),
    "payment_history": Many(Record(reservation_payments, {"payment_id": "payment_id", "amount": "amount"})),
    **{k: k for k in ("created_at", "total_baggages", "nonfree_baggages", "insurance")},
    "status": Column("status", default=None),
}, key="reservation_id")

DATABASE = Database({"flights": Many(FLIGHTS, keyed=True), "users": Many(USERS, keyed=True),
                     "reservations": Many(RESERVATIONS, keyed=True)})


# what the tools and the conformance tests call: each record's compiled reader
user_record = USERS.read
reservation_record = RESERVATIONS.read
flight_record = FLIGHTS.read


def export_db(world: World) -> dict[str, Any]:
    """The world in TAU2's airline JSON shape: ``{"flights": ..., "users": ..., "reservations": ...}``."""
    return DATABASE.export(world)


def seats_and_prices(row: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    return ({c: row[f"seats_{c}"] for c in CABINS}, {c: row[f"price_{c}"] for c in CABINS})


def search_record(flight: dict[str, Any], day: dict[str, Any], date: str | None) -> dict[str, Any]:
    """A flight as a search result (tau2 leaves ``date`` empty in direct searches)."""
    seats, prices = seats_and_prices(day)
    return {"flight_number": flight["flight_number"], "origin": flight["origin"],
            "destination": flight["destination"], "status": "available",
            "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
            "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"], "date": date,
            "available_seats": seats, "prices": prices}
