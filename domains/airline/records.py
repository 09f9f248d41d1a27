"""Reading airline rows back as tau2-shaped records (what tools return, and what the export writes)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from mua_gym.domains.airline.schema import (
    flight_dates, flights, payment_methods, reservation_flights, reservation_passengers, reservation_payments,
    reservations, saved_passengers, user_reservations, users,
)
from mua_gym.world import World

P = bindparam
CABINS = ("basic_economy", "economy", "business")

USER = select(users).where(users.c.user_id == P("uid"))
USER_METHODS = (select(payment_methods).where(payment_methods.c.user_id == P("uid"))
                .order_by(payment_methods.c.position))
USER_PASSENGERS = (select(saved_passengers.c.first_name, saved_passengers.c.last_name, saved_passengers.c.dob)
                   .where(saved_passengers.c.user_id == P("uid")).order_by(saved_passengers.c.position))
USER_RESERVATION_IDS = (select(user_reservations.c.reservation_id).where(user_reservations.c.user_id == P("uid"))
                        .order_by(user_reservations.c.position))
RESERVATION = select(reservations).where(reservations.c.reservation_id == P("rid"))
RESERVATION_FLIGHTS = (select(reservation_flights.c.flight_number, reservation_flights.c.origin,
                              reservation_flights.c.destination, reservation_flights.c.date,
                              reservation_flights.c.price)
                       .where(reservation_flights.c.reservation_id == P("rid"))
                       .order_by(reservation_flights.c.position))
RESERVATION_PASSENGERS = (select(reservation_passengers.c.first_name, reservation_passengers.c.last_name,
                                 reservation_passengers.c.dob)
                          .where(reservation_passengers.c.reservation_id == P("rid"))
                          .order_by(reservation_passengers.c.position))
RESERVATION_PAYMENTS = (select(reservation_payments.c.payment_id, reservation_payments.c.amount)
                        .where(reservation_payments.c.reservation_id == P("rid"))
                        .order_by(reservation_payments.c.position))
FLIGHT = select(flights).where(flights.c.flight_number == P("fn"))
FLIGHT_DATE = select(flight_dates).where(flight_dates.c.flight_number == P("fn"), flight_dates.c.date == P("date"))
FLIGHT_DATES = select(flight_dates).where(flight_dates.c.flight_number == P("fn")).order_by(flight_dates.c.position)


def method_record(row: dict[str, Any]) -> dict[str, Any]:
    if row["source"] == "credit_card":
        return {"source": "credit_card", "id": row["method_id"], "brand": row["brand"], "last_four": row["last_four"]}
    return {"source": row["source"], "id": row["method_id"], "amount": row["amount"]}


def user_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    uid = row["user_id"]
    return {
        "user_id": uid,
        "name": {"first_name": row["first_name"], "last_name": row["last_name"]},
        "address": {k: row[k] for k in ("address1", "address2", "city", "country", "state", "zip")},
        "email": row["email"],
        "dob": row["dob"],
        "payment_methods": {m["method_id"]: method_record(m) for m in world.fetch_all(USER_METHODS, uid=uid)},
        "saved_passengers": world.fetch_all(USER_PASSENGERS, uid=uid),
        "membership": row["membership"],
        "reservations": world.fetch_column(USER_RESERVATION_IDS, uid=uid),
    }


def reservation_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    rid = row["reservation_id"]
    return {
        "reservation_id": rid,
        "user_id": row["user_id"],
        "origin": row["origin"],
        "destination": row["destination"],
        "flight_type": row["flight_type"],
        "cabin": row["cabin"],
        "flights": world.fetch_all(RESERVATION_FLIGHTS, rid=rid),
        "passengers": world.fetch_all(RESERVATION_PASSENGERS, rid=rid),
        "payment_history": world.fetch_all(RESERVATION_PAYMENTS, rid=rid),
        "created_at": row["created_at"],
        "total_baggages": row["total_baggages"],
        "nonfree_baggages": row["nonfree_baggages"],
        "insurance": row["insurance"],
        "status": row["status"],
    }


def seats_and_prices(row: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    return ({c: row[f"seats_{c}"] for c in CABINS}, {c: row[f"price_{c}"] for c in CABINS})


def status_record(row: dict[str, Any]) -> dict[str, Any]:
    """One date of a flight, in tau2's shape for its status."""
    status = row["status"]
    if status == "available":
        seats, prices = seats_and_prices(row)
        return {"status": status, "available_seats": seats, "prices": prices}
    if status == "landed":
        return {"status": status, "actual_departure_time_est": row["actual_departure_time_est"],
                "actual_arrival_time_est": row["actual_arrival_time_est"]}
    if status == "flying":
        return {"status": status, "actual_departure_time_est": row["actual_departure_time_est"],
                "estimated_arrival_time_est": row["estimated_arrival_time_est"]}
    if status in ("delayed", "on time"):
        return {"status": status, "estimated_departure_time_est": row["estimated_departure_time_est"],
                "estimated_arrival_time_est": row["estimated_arrival_time_est"]}
    return {"status": status}


def flight_record(world: World, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "flight_number": row["flight_number"],
        "origin": row["origin"],
        "destination": row["destination"],
        "scheduled_departure_time_est": row["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": row["scheduled_arrival_time_est"],
        "dates": {d["date"]: status_record(d) for d in world.fetch_all(FLIGHT_DATES, fn=row["flight_number"])},
    }


def search_record(flight: dict[str, Any], day: dict[str, Any], date: str | None) -> dict[str, Any]:
    """A flight as a search result (tau2 leaves ``date`` empty in direct searches)."""
    seats, prices = seats_and_prices(day)
    return {"flight_number": flight["flight_number"], "origin": flight["origin"],
            "destination": flight["destination"], "status": "available",
            "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
            "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"], "date": date,
            "available_seats": seats, "prices": prices}
