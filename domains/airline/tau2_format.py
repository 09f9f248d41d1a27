"""TAU2's airline data in and out: load its ``db.json`` into our tables, and export a world back to that shape."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Connection, insert, select

from mua_gym import tau2
from mua_gym.domains.airline.records import (
    CABINS, FLIGHT, RESERVATION, USER, flight_record, reservation_record, user_record,
)
from mua_gym.domains.airline.schema import (
    airports, flight_dates, flights, payment_methods, reservation_flights, reservation_passengers,
    reservation_payments, reservations, saved_passengers, user_reservations, users,
)
from mua_gym.world import World

ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
# Cities of the IATA codes TAU2's flights use, for a data folder without tau2's code beside it.
CITIES = {"SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago", "DFW": "Dallas",
          "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami", "BOS": "Boston", "PHX": "Phoenix",
          "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando", "EWR": "Newark", "CLT": "Charlotte",
          "MSP": "Minneapolis", "DTW": "Detroit", "PHL": "Philadelphia", "LGA": "LaGuardia"}


def tau2_airports(db: dict[str, Any]) -> list[tuple[str, str]]:
    """The airport list exactly as the installed tau2 answers ``list_all_airports`` (it lives in its code)."""
    source = tau2.tau2_tools_source("airline") or ""
    found = re.findall(r'AirportCode\(\s*iata="([A-Z]{3})",\s*city="([^"]+)"\s*\)', source)
    if found:
        return found
    codes = dict.fromkeys(c for f in db["flights"].values() for c in (f["origin"], f["destination"]))
    return [(c, CITIES.get(c, c)) for c in codes]


def load_db(conn: Connection, db: dict[str, Any], airport_list: list[tuple[str, str]] | None = None) -> None:
    """Fills empty airline tables from a TAU2 airline database (the parsed ``db.json``)."""
    rows: dict[Any, list[dict[str, Any]]] = {t: [] for t in (
        airports, flights, flight_dates, users, payment_methods, saved_passengers, user_reservations, reservations,
        reservation_flights, reservation_passengers, reservation_payments)}
    for i, (iata, city) in enumerate(airport_list if airport_list is not None else tau2_airports(db)):
        rows[airports].append({"iata": iata, "position": i, "city": city})
    for f_pos, f in enumerate(db["flights"].values()):
        rows[flights].append({"flight_number": f["flight_number"], "position": f_pos, "origin": f["origin"],
                              "destination": f["destination"],
                              "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                              "scheduled_arrival_time_est": f["scheduled_arrival_time_est"]})
        for d_pos, (date, st) in enumerate(f["dates"].items()):
            row = {"flight_number": f["flight_number"], "date": date, "position": d_pos, "status": st["status"]}
            for cabin in CABINS:
                row[f"seats_{cabin}"] = (st.get("available_seats") or {}).get(cabin)
                row[f"price_{cabin}"] = (st.get("prices") or {}).get(cabin)
            for key in ("actual_departure_time_est", "actual_arrival_time_est", "estimated_departure_time_est",
                        "estimated_arrival_time_est"):
                row[key] = st.get(key)
            rows[flight_dates].append(row)
    for u_pos, u in enumerate(db["users"].values()):
        uid = u["user_id"]
        rows[users].append({"user_id": uid, "position": u_pos, "first_name": u["name"]["first_name"],
                            "last_name": u["name"]["last_name"], "email": u["email"], "dob": u["dob"],
                            "membership": u["membership"], **{k: u["address"].get(k) for k in ADDRESS}})
        for m_pos, (key, m) in enumerate(u["payment_methods"].items()):
            rows[payment_methods].append({"user_id": uid, "method_id": key, "position": m_pos, "source": m["source"],
                                          "brand": m.get("brand"), "last_four": m.get("last_four"),
                                          "amount": None if m.get("amount") is None else float(m["amount"])})
        rows[saved_passengers] += [{"user_id": uid, "position": i, **p} for i, p in enumerate(u["saved_passengers"])]
        rows[user_reservations] += [{"user_id": uid, "position": i, "reservation_id": r}
                                    for i, r in enumerate(u["reservations"])]
    for r_pos, r in enumerate(db["reservations"].values()):
        rid = r["reservation_id"]
        rows[reservations].append({"reservation_id": rid, "position": r_pos, "status": r.get("status"),
                                   **{k: r[k] for k in ("user_id", "origin", "destination", "flight_type", "cabin",
                                                        "created_at", "total_baggages", "nonfree_baggages",
                                                        "insurance")}})
        rows[reservation_flights] += [{"reservation_id": rid, "position": i, "flight_number": s["flight_number"],
                                       "origin": s["origin"], "destination": s["destination"], "date": s["date"],
                                       "price": s["price"]} for i, s in enumerate(r["flights"])]
        rows[reservation_passengers] += [{"reservation_id": rid, "position": i, "first_name": p["first_name"],
                                          "last_name": p["last_name"], "dob": p["dob"]}
                                         for i, p in enumerate(r["passengers"])]
        rows[reservation_payments] += [{"reservation_id": rid, "position": i, "payment_id": p["payment_id"],
                                        "amount": p["amount"]} for i, p in enumerate(r["payment_history"])]
    for table, batch in rows.items():
        if batch:
            conn.execute(insert(table), batch)


ALL_FLIGHTS = select(flights.c.flight_number).order_by(flights.c.position)
ALL_USERS = select(users.c.user_id).order_by(users.c.position)
ALL_RESERVATIONS = select(reservations.c.reservation_id).order_by(reservations.c.position)


def export_db(world: World) -> dict[str, Any]:
    """The world in TAU2's airline JSON shape: ``{"flights": ..., "users": ..., "reservations": ...}``."""
    return {
        "flights": {fn: flight_record(world, world.fetch_one(FLIGHT, fn=fn)) for fn in world.fetch_column(ALL_FLIGHTS)},
        "users": {uid: user_record(world, world.fetch_one(USER, uid=uid)) for uid in world.fetch_column(ALL_USERS)},
        "reservations": {rid: reservation_record(world, world.fetch_one(RESERVATION, rid=rid))
                         for rid in world.fetch_column(ALL_RESERVATIONS)},
    }
