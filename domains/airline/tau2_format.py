"""TAU2's airline data in: its ``db.json`` (declared in :mod:`records`) and the airport list tau2 keeps in code."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Connection, insert

from mua_gym.domain import tau2
from mua_gym.domains.airline.records import DATABASE
from mua_gym.domains.airline.schema import airports

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
    """Fills empty airline tables from a TAU2 airline database (the parsed ``db.json``) and its airport list."""
    listed = airport_list if airport_list is not None else tau2_airports(db)
    if listed:
        conn.execute(insert(airports), [{"iata": iata, "position": i, "city": city} for i, (iata, city) in
                                        enumerate(listed)])
    DATABASE.load(conn, db)
