"""A seeded generator of airline worlds shaped like tau2-bench's airline database.

:func:`build_generated` fills an empty airline schema with airports, a route network of flights (each
route flown both ways, with one-stop connections through busier airports), every flight's status on each
date from 2024-05-01 to 2024-05-30 as seen at "now" (2024-05-15 15:00 EST), users (names, addresses,
payment methods, saved passengers) and their reservations (real direct or one-stop itineraries, priced
from the flight dates), at tau2's scale by default. Only ``numpy.random.default_rng(seed)`` is drawn from,
in a fixed order, so a seed and a size always give the same database, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import Connection, Table

from mua_gym.domains.airline.schema import (
    airports,
    flight_dates,
    flights,
    payment_methods,
    reservation_flights,
    reservation_passengers,
    reservation_payments,
    reservations,
    saved_passengers,
    user_reservations,
    users,
)
from mua_gym.kit.people import UniqueIds, unique
from mua_gym.kit.records import insert_rows
from mua_gym.kit.sampling import quota_indices, scaled_size, weighted_indices

# ---------------------------------------------------------------------------------------------------------
# Places: IATA code, city, latitude, longitude (the position gives flight durations).

AIRPORTS: tuple[tuple[str, str, float, float], ...] = (
    ("ATL", "Atlanta", 33.64, -84.43),
    ("BOS", "Boston", 42.36, -71.01),
    ("CLT", "Charlotte", 35.21, -80.94),
    ("DCA", "Washington", 38.85, -77.04),
    ("DEN", "Denver", 39.86, -104.67),
    ("DFW", "Dallas", 32.90, -97.04),
    ("DTW", "Detroit", 42.21, -83.35),
    ("IAH", "Houston", 29.98, -95.34),
    ("JFK", "New York", 40.64, -73.78),
    ("LAS", "Las Vegas", 36.08, -115.15),
    ("LAX", "Los Angeles", 33.94, -118.41),
    ("MCO", "Orlando", 28.43, -81.31),
    ("MIA", "Miami", 25.80, -80.29),
    ("MSP", "Minneapolis", 44.88, -93.22),
    ("ORD", "Chicago", 41.98, -87.90),
    ("PHX", "Phoenix", 33.43, -112.01),
    ("SAN", "San Diego", 32.73, -117.19),
    ("SEA", "Seattle", 47.45, -122.31),
    ("SFO", "San Francisco", 37.62, -122.38),
    ("SLC", "Salt Lake City", 40.79, -111.98),
)

FIRST_NAMES = (
    "Aaliyah", "Adrian", "Aisha", "Alejandro", "Amir", "Anika", "Anthony", "Aria", "Arthur", "Asha", "Audrey",
    "Benjamin", "Bruno", "Camille", "Carmen", "Cheng", "Clara", "Connor", "Dalia", "Daniel", "Dev", "Dominic",
    "Eleanor", "Elias", "Elif", "Emma", "Esther", "Ethan", "Farah", "Felipe", "Gianna", "Grace", "Hamza", "Hannah",
    "Hiro", "Imani", "Isla", "Jacob", "Jade", "Jonas", "Joseph", "Kavya", "Keira", "Kofi", "Lara", "Leila",
    "Lena", "Lily", "Lorenzo", "Luis", "Malik", "Marco", "Maria", "Mason", "Mateo", "Mina", "Nia", "Nico",
    "Noor", "Oliver", "Paloma", "Quinn", "Rania", "Reza", "Rohan", "Sakura", "Santiago", "Selin", "Sienna",
    "Simon", "Sofia", "Stella", "Tomas", "Valentina", "Wei", "Xavier", "Yasmin", "Yuki", "Zain", "Zoe",
)
LAST_NAMES = (
    "Abbott", "Ali", "Andersen", "Arnold", "Banerjee", "Barnes", "Bell", "Bianchi", "Brown", "Chavez", "Chen",
    "Cohen", "Coleman", "Costa", "Dang", "Dubois", "Dunn", "Ellis", "Fernandez", "Fisher", "Ford", "Fuller",
    "Gallagher", "Gordon", "Graham", "Hansen", "Hart", "Hoffman", "Holmes", "Howard", "Iyer", "Jimenez", "Jones",
    "Kelly", "Kennedy", "Kumar", "Larsen", "Li", "Liu", "Lund", "Malik", "Marshall", "Medina", "Miller", "Moreno",
    "Nash", "Nelson", "Obi", "Ortega", "Owens", "Pham", "Porter", "Quinn", "Rao", "Reid", "Romero", "Ross",
    "Saito", "Schultz", "Sharma", "Simmons", "Sorensen", "Stone", "Tanaka", "Thomas", "Tran", "Vargas", "Vega",
    "Wagner", "Webb", "Weber", "White", "Wilson", "Wong", "Yilmaz", "Zhou",
)
# city, state, the first three digits of its zip codes
CITIES = (
    ("New York", "NY", "100"), ("Brooklyn", "NY", "112"), ("Los Angeles", "CA", "900"), ("San Diego", "CA", "921"),
    ("San Jose", "CA", "951"), ("Oakland", "CA", "946"), ("Chicago", "IL", "606"), ("Houston", "TX", "770"),
    ("Dallas", "TX", "752"), ("Austin", "TX", "787"), ("El Paso", "TX", "799"), ("Phoenix", "AZ", "850"),
    ("Scottsdale", "AZ", "852"), ("Philadelphia", "PA", "191"), ("Pittsburgh", "PA", "152"), ("Miami", "FL", "331"),
    ("Tampa", "FL", "336"), ("Orlando", "FL", "328"), ("Columbus", "OH", "432"), ("Cleveland", "OH", "441"),
    ("Charlotte", "NC", "282"), ("Durham", "NC", "277"), ("Seattle", "WA", "981"), ("Tacoma", "WA", "984"),
    ("Denver", "CO", "802"), ("Boulder", "CO", "803"), ("Washington", "DC", "200"), ("Boston", "MA", "021"),
    ("Cambridge", "MA", "021"), ("Nashville", "TN", "372"), ("Detroit", "MI", "482"), ("Ann Arbor", "MI", "481"),
    ("Portland", "OR", "972"), ("Las Vegas", "NV", "891"), ("Reno", "NV", "895"), ("Baltimore", "MD", "212"),
    ("Minneapolis", "MN", "554"), ("St. Paul", "MN", "551"), ("Atlanta", "GA", "303"), ("Savannah", "GA", "314"),
    ("New Orleans", "LA", "701"), ("Salt Lake City", "UT", "841"), ("Richmond", "VA", "232"),
    ("Arlington", "VA", "222"), ("Kansas City", "MO", "641"), ("St. Louis", "MO", "631"), ("Honolulu", "HI", "968"),
    ("Anchorage", "AK", "995"), ("Albuquerque", "NM", "871"), ("Madison", "WI", "537"),
)
STREET_NAMES = (
    "Acorn", "Amber", "Ash", "Beacon", "Birch", "Bluebird", "Brookside", "Cedar", "Cliff", "Clover", "Cottonwood",
    "Crescent", "Eagle", "Elm", "Fairview", "Fox", "Glen", "Hawthorn", "Heather", "Hickory", "Holly", "Ivy", "Lake",
    "Lilac", "Maple", "Meadow", "Mesa", "Mill", "Oak", "Pecan", "Pine", "Poplar", "Prairie", "Quail", "Rosewood",
    "Sage", "Shore", "Summit", "Sycamore", "Tulip",
)
STREET_SUFFIXES = ("Street", "Avenue", "Road", "Lane", "Drive", "Boulevard", "Court", "Place", "Way")
CARD_BRANDS = ("visa", "mastercard")
CABINS = ("basic_economy", "economy", "business")

# ---------------------------------------------------------------------------------------------------------
# The calendar: flight dates 2024-05-01 ... 2024-05-30, "now" is 2024-05-15 15:00 EST.

FIRST_DATE = date(2024, 5, 1)
N_DATES = 30
DATES = tuple((FIRST_DATE + timedelta(days=k)).isoformat() for k in range(N_DATES))
TODAY = 14  # index of 2024-05-15
NOW_MINUTE = 15 * 60
NOW = datetime(2024, 5, 15, 15, 0, 0)
START = datetime(2024, 5, 1)

# Ids the tools hand out for new bookings and certificates; never generated.
RESERVED_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
RESERVED_METHOD_NUMBERS = ("3221322", "3221323", "3221324")
ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# ---------------------------------------------------------------------------------------------------------
# Scale and mixes.

DEFAULT_AIRPORTS, DEFAULT_FLIGHTS, DEFAULT_USERS, DEFAULT_RESERVATIONS = 20, 300, 500, 2000
SIZES: dict[str, tuple[int, int, int, int]] = {  # airports, flights, users, reservations
    "tiny": (8, 30, 20, 60),
    "small": (12, 100, 100, 400),
    "default": (DEFAULT_AIRPORTS, DEFAULT_FLIGHTS, DEFAULT_USERS, DEFAULT_RESERVATIONS),
    "large": (DEFAULT_AIRPORTS, DEFAULT_FLIGHTS, 10 * DEFAULT_USERS, 10 * DEFAULT_RESERVATIONS),
}
FLIGHTS_PER_ROUTE = 5.5  # flights per airport pair, both ways together
OVERNIGHT_SHARE = 0.1  # flights arriving the next day ("+1")
FIRST_DEPARTURE_HOUR = 5
MIN_LAYOVER, MAX_LAYOVER = 60, 600  # minutes between the legs of a one-stop connection
CANCELLED_SHARE = 0.07  # flight dates up to today that were cancelled
ON_SCHEDULE_SHARE = 0.8  # departures within -10..+20 minutes of schedule; the rest leave 21..180 minutes late
MEMBERSHIPS = ("gold", "silver", "regular")
MEMBERSHIP_WEIGHTS = (0.3, 0.3, 0.4)  # dealt out exactly (largest remainders), then shuffled
FREE_BAGS = {"regular": (0, 1, 2), "silver": (1, 2, 3), "gold": (2, 3, 4)}  # per passenger, by cabin
METHOD_COUNT_WEIGHTS = (0.25, 0.35, 0.25, 0.15)  # 1-4 payment methods
EXTRA_METHOD_SOURCES = ("credit_card", "gift_card", "certificate")
EXTRA_METHOD_WEIGHTS = (0.3, 0.3, 0.4)
CERTIFICATE_AMOUNTS = (100.0, 150.0, 250.0, 500.0)
SAVED_COUNT_WEIGHTS = (0.15, 0.45, 0.3, 0.1)  # 0-3 saved passengers
ROUND_TRIP_SHARE = 0.48
ONESTOP_SHARE = 0.35  # itineraries (each way) through a connection
ONESTOP_WITH_DIRECT_SHARE = 0.6  # one-stop trips between airports that also have a direct flight
PASSENGER_WEIGHTS = (0.46, 0.33, 0.16, 0.05)  # 1-4 passengers
SELF_SHARE = 0.8  # the user flies on their own reservation
BAG_WEIGHTS = (0.5, 0.22, 0.14, 0.06, 0.04, 0.02, 0.02)  # 0-6 checked bags
INSURANCE_SHARE = 0.5
CANCELLED_RESERVATION_SHARE = 0.05
MAX_STAY = 7  # days between the outbound and the return of a round trip: 1..MAX_STAY


def _scale(size: str | float) -> tuple[int, int, int, int]:
    return scaled_size(size, SIZES, lambda k: (DEFAULT_AIRPORTS, DEFAULT_FLIGHTS, max(1, round(DEFAULT_USERS * k)),
                                               round(DEFAULT_RESERVATIONS * k)))


def _clock(minute: int) -> str:
    """Minutes after midnight as "HH:MM:SS", with "+1" from the next midnight on."""
    day, minute = divmod(minute, 1440)
    return f"{minute // 60:02d}:{minute % 60:02d}:00" + ("+1" if day else "")


def _stamp(day: int, minute: int) -> str:
    """An ISO datetime ``minute`` minutes after midnight of flight date ``day`` (may run into the next day)."""
    return (START + timedelta(days=day, minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S")


def _duration(a: tuple[str, str, float, float], b: tuple[str, str, float, float]) -> int:
    """Scheduled minutes in the air between two airports: great-circle distance at ~800 km/h, plus taxi."""
    lat1, lon1, lat2, lon2 = map(math.radians, (a[2], a[3], b[2], b[3]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    km = 2 * 6371.0 * math.asin(math.sqrt(h))
    return max(60, 30 * round((0.6 + km / 800.0) * 2))


# ---------------------------------------------------------------------------------------------------------
# Network and flights.


def _network(rng: np.random.Generator, n_airports: int, n_flights: int):
    """Airports, and the flights as (origin, destination, departure minute, arrival minute), in number order.

    Airport pairs form a connected graph that favours busier airports (hubs); every pair is flown both ways.
    """
    chosen = sorted(rng.choice(len(AIRPORTS), size=n_airports, replace=False).tolist())
    places = [AIRPORTS[k] for k in chosen]
    n = len(places)
    weight = rng.uniform(1.0, 4.0, size=n)

    # A random spanning tree grown towards heavy airports, then extra pairs, heavy pairs first.
    order = rng.permutation(n).tolist()
    attach = rng.random(n).tolist()
    pairs: list[tuple[int, int]] = []
    for i in range(1, n):
        earlier = order[:i]
        cumulative = np.cumsum(weight[earlier]) / weight[earlier].sum()
        j = earlier[min(int(np.searchsorted(cumulative, attach[i], side="right")), i - 1)]
        pairs.append((min(order[i], j), max(order[i], j)))
    target = min(n * (n - 1) // 2, max(n + n // 2, round(n_flights / FLIGHTS_PER_ROUTE)))
    present = set(pairs)
    rest = [(a, b) for a in range(n) for b in range(a + 1, n) if (a, b) not in present]
    if target > len(pairs):
        p = np.array([weight[a] * weight[b] for a, b in rest])
        extra = rng.choice(len(rest), size=target - len(pairs), replace=False, p=p / p.sum())
        pairs += [rest[k] for k in extra.tolist()]
    pairs.sort()
    directions = [d for a, b in pairs for d in ((a, b), (b, a))]
    if n_flights < len(directions):
        raise ValueError(f"{n_flights} flights cannot fly {len(directions)} route directions")
    p = np.array([weight[a] * weight[b] for a, b in directions])
    counts = (1 + rng.multinomial(n_flights - len(directions), p / p.sum())).tolist()
    legs = [d for d, c in zip(directions, counts) for _ in range(c)]
    legs = [legs[k] for k in rng.permutation(len(legs)).tolist()]

    overnight = (rng.permutation(n_flights) < round(OVERNIGHT_SHARE * n_flights)).tolist()
    hour_draws = rng.random(n_flights).tolist()
    out = []
    for (a, b), night, u in zip(legs, overnight, hour_draws):
        minutes = _duration(places[a], places[b])
        if night:  # leaves late enough to land after midnight
            low, high = math.ceil((1440 - minutes) / 60), 23
        else:  # lands by 23:30
            low, high = FIRST_DEPARTURE_HOUR, (1410 - minutes) // 60
        departure = 60 * (low + int(u * (high - low + 1)))
        out.append((places[a][0], places[b][0], departure, departure + minutes))
    return places, out


def _flight_dates(rng: np.random.Generator, legs: list[tuple[str, str, int, int]]):
    """Per flight and date: status rows, and every date's prices by cabin (also the past ones, for bookings)."""
    n = len(legs)
    hours = np.array([(arr - dep) / 60 for _, _, dep, arr in legs])[:, None]
    base = rng.uniform(50, 80, size=(n, 1)) + 18 * (hours - 1)
    basic = np.clip(np.rint(base * rng.uniform(0.85, 1.3, size=(n, N_DATES))), 50, 200).astype(int)
    economy = np.minimum(300, basic + rng.integers(40, 111, size=(n, N_DATES)))
    business = np.clip(np.rint(economy * rng.uniform(2.2, 5.0, size=(n, N_DATES))), 300, 2000).astype(int)
    prices = np.stack([basic, economy, business], axis=2).tolist()
    seats = rng.integers(0, 21, size=(n, N_DATES, 3)).tolist()
    cancelled = (rng.random((n, N_DATES)) < CANCELLED_SHARE).tolist()
    late = rng.random((n, N_DATES)) >= ON_SCHEDULE_SHARE
    delays = np.where(late, rng.integers(21, 181, size=(n, N_DATES)), rng.integers(-10, 21, size=(n, N_DATES)))
    delays = delays.tolist()
    noise = rng.integers(-20, 21, size=(n, N_DATES)).tolist()

    empty = dict(seats_basic_economy=None, seats_economy=None, seats_business=None, price_basic_economy=None,
                 price_economy=None, price_business=None, actual_departure_time_est=None,
                 actual_arrival_time_est=None, estimated_departure_time_est=None, estimated_arrival_time_est=None)
    rows: list[dict[str, Any]] = []
    for f, (_, _, dep, arr) in enumerate(legs):
        number = f"HAT{f + 1:03d}"
        for day, when in enumerate(DATES):
            row = dict(flight_number=number, date=when, position=day, **empty)
            if day > TODAY:
                be, ec, bu = seats[f][day]
                pb, pe, pu = prices[f][day]
                row.update(status="available", seats_basic_economy=be, seats_economy=ec, seats_business=bu,
                           price_basic_economy=pb, price_economy=pe, price_business=pu)
            elif cancelled[f][day]:
                row.update(status="cancelled")
            else:
                left = dep + delays[f][day]
                landed = max(left + 30, left + (arr - dep) + noise[f][day])
                if day < TODAY or landed <= NOW_MINUTE:
                    row.update(status="landed", actual_departure_time_est=_stamp(day, left),
                               actual_arrival_time_est=_stamp(day, landed))
                elif left <= NOW_MINUTE:
                    row.update(status="flying", actual_departure_time_est=_stamp(day, left),
                               estimated_arrival_time_est=_stamp(day, landed))
                elif delays[f][day] > 20 or dep <= NOW_MINUTE:
                    row.update(status="delayed", estimated_departure_time_est=_stamp(day, left),
                               estimated_arrival_time_est=_stamp(day, landed))
                else:
                    row.update(status="on time", estimated_departure_time_est=_stamp(day, dep),
                               estimated_arrival_time_est=_stamp(day, arr))
            rows.append(row)
    return rows, prices


def _connections(legs: list[tuple[str, str, int, int]]) -> list[tuple[int, int, int]]:
    """One-stop connections (first flight, second flight, days between their dates), in flight order.

    The second flight leaves the first one's destination 1-10 hours after it lands, on the day it lands,
    and does not fly back to where the first one came from.
    """
    by_origin: dict[str, list[int]] = {}
    for f, leg in enumerate(legs):
        by_origin.setdefault(leg[0], []).append(f)
    out = []
    for f1, (origin, stop, _, arr) in enumerate(legs):
        days, landed = divmod(arr, 1440)
        for f2 in by_origin.get(stop, []):
            if legs[f2][1] != origin and landed + MIN_LAYOVER <= legs[f2][2] <= landed + MAX_LAYOVER:
                out.append((f1, f2, days))
    return out


# ---------------------------------------------------------------------------------------------------------
# People.


def _dobs(rng: np.random.Generator, shape: Any, first: int = 1950, last: int = 2005) -> list:
    """Birth dates "YYYY-MM-DD" from ``first``'s New Year to ``last``'s New Year's Eve, as (nested) lists."""
    low = np.datetime64(f"{first}-01-01")
    days = rng.integers((np.datetime64(f"{last}-12-31") - low).astype(np.int64) + 1, size=shape)
    return (low + days.astype("timedelta64[D]")).astype(str).tolist()


def _people(rng: np.random.Generator, ids: UniqueIds, n_users: int):
    """User rows, and per user their payment methods and saved passengers (rows, in profile order)."""
    firsts = rng.integers(len(FIRST_NAMES), size=n_users).tolist()
    lasts = rng.integers(len(LAST_NAMES), size=n_users).tolist()
    id_digits = rng.integers(1000, 10000, size=n_users).tolist()
    email_digits = rng.integers(1000, 10000, size=n_users).tolist()
    cities = rng.integers(len(CITIES), size=n_users).tolist()
    zips = rng.integers(100, size=n_users).tolist()
    numbers = rng.integers(10, 1000, size=n_users).tolist()
    streets = rng.integers(len(STREET_NAMES), size=n_users).tolist()
    suffixes = rng.integers(len(STREET_SUFFIXES), size=n_users).tolist()
    unit_kinds = rng.random(n_users).tolist()
    units = rng.integers(100, 1000, size=n_users).tolist()
    dobs = _dobs(rng, n_users)
    tiers = [MEMBERSHIPS[k] for k in rng.permutation(quota_indices(MEMBERSHIP_WEIGHTS, n_users)).tolist()]

    user_rows: list[dict[str, Any]] = []
    user_ids: set[str] = set()
    emails: set[str] = set()
    for i in range(n_users):
        first, last = FIRST_NAMES[firsts[i]], LAST_NAMES[lasts[i]]
        user_id = unique(user_ids, lambda: f"{first.lower()}_{last.lower()}_{int(rng.integers(1000, 10000))}",
                         f"{first.lower()}_{last.lower()}_{id_digits[i]}")
        email = unique(emails, lambda: f"{first.lower()}.{last.lower()}{int(rng.integers(1000, 10000))}@example.com",
                       f"{first.lower()}.{last.lower()}{email_digits[i]}@example.com")
        city, state, zip3 = CITIES[cities[i]]
        kind = unit_kinds[i]
        address2 = f"Suite {units[i]}" if kind < 0.55 else f"Apt {units[i] % 100 + 1}" if kind < 0.75 else None
        user_rows.append(dict(user_id=user_id, position=i, first_name=first, last_name=last,
                              address1=f"{numbers[i]} {STREET_NAMES[streets[i]]} {STREET_SUFFIXES[suffixes[i]]}",
                              address2=address2, city=city, country="USA", state=state,
                              zip=f"{zip3}{zips[i]:02d}", email=email, dob=dobs[i], membership=tiers[i]))
    user_ids_in_order = [u["user_id"] for u in user_rows]
    return user_rows, _wallets(rng, ids, user_ids_in_order), _saved(rng, user_rows)


def _wallets(rng: np.random.Generator, ids: UniqueIds, user_ids: list[str]) -> list[list[dict[str, Any]]]:
    """Per user 1-4 payment methods; there is always a credit card or a gift card to pay bookings with."""
    n = len(user_ids)
    counts = [k + 1 for k in weighted_indices(rng, METHOD_COUNT_WEIGHTS, n)]
    first_draws = rng.random(n).tolist()
    extra_draws = weighted_indices(rng, EXTRA_METHOD_WEIGHTS, 3 * n)
    orders = np.argsort(rng.random((n, 4)), axis=1, kind="stable").tolist()
    per_user: list[list[str]] = []
    for i in range(n):
        mine = ["credit_card" if first_draws[i] < 0.55 else "gift_card"]
        mine += [EXTRA_METHOD_SOURCES[k] for k in extra_draws[3 * i:3 * i + counts[i] - 1]]
        per_user.append([mine[k] for k in orders[i] if k < counts[i]])  # the profile's order
    total = sum(counts)
    numbers = ids.take(7, total)
    brands = rng.integers(len(CARD_BRANDS), size=total).tolist()
    last_fours = rng.integers(10000, size=total).tolist()
    balances = rng.integers(0, 301, size=total).tolist()
    certificates = rng.integers(len(CERTIFICATE_AMOUNTS), size=total).tolist()
    wallets: list[list[dict[str, Any]]] = []
    k = 0
    for user_id, mine in zip(user_ids, per_user):
        rows = []
        for position, source in enumerate(mine):
            card = source == "credit_card"
            amount = (float(balances[k]) if source == "gift_card"
                      else CERTIFICATE_AMOUNTS[certificates[k]] if source == "certificate" else None)
            rows.append(dict(user_id=user_id, method_id=f"{source}_{numbers[k]}", position=position, source=source,
                             brand=CARD_BRANDS[brands[k]] if card else None,
                             last_four=f"{last_fours[k]:04d}" if card else None, amount=amount))
            k += 1
        wallets.append(rows)
    return wallets


def _saved(rng: np.random.Generator, user_rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Per user 0-3 saved passengers: relatives (the user's last name) and friends."""
    n = len(user_rows)
    counts = weighted_indices(rng, SAVED_COUNT_WEIGHTS, n)
    firsts = rng.integers(len(FIRST_NAMES), size=(n, 3)).tolist()
    lasts = rng.integers(len(LAST_NAMES), size=(n, 3)).tolist()
    family = (rng.random((n, 3)) < 0.4).tolist()
    dobs = _dobs(rng, (n, 3), 1940, 2020)
    out = []
    for i, user in enumerate(user_rows):
        out.append([dict(user_id=user["user_id"], position=j, first_name=FIRST_NAMES[firsts[i][j]],
                         last_name=user["last_name"] if family[i][j] else LAST_NAMES[lasts[i][j]], dob=dobs[i][j])
                    for j in range(counts[i])])
    return out


def _reservation_ids(rng: np.random.Generator, n: int) -> list[str]:
    used = set(RESERVED_RESERVATION_IDS)
    out: list[str] = []
    while len(out) < n:
        for row in rng.integers(len(ID_ALPHABET), size=(n - len(out), 6)).tolist():
            ident = "".join(ID_ALPHABET[k] for k in row)
            if ident not in used:
                used.add(ident)
                out.append(ident)
    return out


# ---------------------------------------------------------------------------------------------------------


def build_generated(conn: Connection, *, seed: int = 0, size: str | float = "default") -> None:
    """Fills an empty airline schema with a seeded, tau2-like world.

    ``size`` is ``"tiny"`` (8 airports, 30 flights, 20 users, 60 reservations), ``"small"`` (12, 100, 100,
    400), ``"default"`` (20 airports, 300 flights, 500 users, 2,000 reservations), ``"large"`` (20, 300,
    5,000, 20,000), or a number that multiplies the default users and reservations (the network stays).
    """
    n_airports, n_flights, n_users, n_reservations = _scale(size)
    rng = np.random.default_rng(seed)
    ids = UniqueIds(rng, RESERVED_METHOD_NUMBERS)

    places, legs = _network(rng, n_airports, n_flights)
    date_rows, prices = _flight_dates(rng, legs)
    user_rows, wallets, saved = _people(rng, ids, n_users)
    routes = _routes(legs)
    draws = _reservation_draws(rng, n_reservations, n_users)
    bookings = [_booking(routes, draws, position, prices, user_rows, wallets, saved)
                for position in range(n_reservations)]

    airport_rows = [dict(iata=iata, position=i, city=city) for i, (iata, city, _, _) in enumerate(places)]
    flight_rows = [dict(flight_number=routes.numbers[f], position=f, origin=o, destination=d,
                        scheduled_departure_time_est=_clock(dep), scheduled_arrival_time_est=_clock(arr))
                   for f, (o, d, dep, arr) in enumerate(legs)]
    insert_rows(conn, [
        (airports, airport_rows), (flights, flight_rows), (flight_dates, date_rows), (users, user_rows),
        (payment_methods, [m for wallet in wallets for m in wallet]),
        (saved_passengers, [s for people in saved for s in people]),
        *_reservation_tables(routes, user_rows, bookings)])


@dataclass(frozen=True)
class _Routes:
    """The flights as trips are made of them: the legs (origin, destination, departure and arrival minute) and
    their numbers, the direct flights per (origin, destination), the one-stop connections, those per (origin, final
    destination), and those between airports that also have a direct flight (or all of them, where none do)."""

    legs: list[tuple[str, str, int, int]]
    numbers: list[str]
    direct: dict[tuple[str, str], list[int]]
    connections: list[tuple[int, int, int]]
    onestop: dict[tuple[str, str], list[tuple[int, int, int]]]
    with_direct: list[tuple[int, int, int]]


def _routes(legs: list[tuple[str, str, int, int]]) -> _Routes:
    """The flights of ``legs`` by route, direct and one-stop."""
    direct: dict[tuple[str, str], list[int]] = {}
    for f, leg in enumerate(legs):
        direct.setdefault(leg[:2], []).append(f)
    connections = _connections(legs)
    onestop: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    for c in connections:
        onestop.setdefault((legs[c[0]][0], legs[c[1]][1]), []).append(c)
    with_direct = [c for c in connections if (legs[c[0]][0], legs[c[1]][1]) in direct] or connections
    return _Routes(legs, [f"HAT{f + 1:03d}" for f in range(len(legs))], direct, connections, onestop, with_direct)


class _Uniforms(NamedTuple):
    """One reservation's uniform draws in [0, 1): the choices a reservation makes from them."""

    trip: float  # round trip or one way
    out_kind: float  # outbound direct or one-stop
    pool: float  # a one-stop outbound between airports with a direct flight too, or any
    out_pick: float
    back_kind: float
    back_pick: float
    stay: float  # days before the return
    first_date: float
    self_flies: float
    insurance: float
    method: float
    cancel: float
    created: float


@dataclass(frozen=True)
class _ReservationDraws:
    """Every reservation's random draws, by reservation: the owner, the uniforms, the cabin, the passenger and bag
    counts, the names, family ties and birth dates of up to 4 other passengers, and the reservation's id."""

    owners: list[int]
    uniforms: list[list[float]]
    cabins: list[int]
    pax_counts: list[int]
    bag_counts: list[int]
    other_firsts: list[list[int]]
    other_lasts: list[list[int]]
    other_family: list[list[bool]]
    other_dobs: list[list[str]]
    reservation_ids: list[str]


def _reservation_draws(rng: np.random.Generator, n: int, n_users: int) -> _ReservationDraws:
    """The draws of ``n`` reservations, in a fixed order (the arguments below are drawn as written)."""
    return _ReservationDraws(
        owners=rng.integers(n_users, size=n).tolist(),
        uniforms=rng.random((n, len(_Uniforms._fields))).tolist(),
        cabins=rng.integers(len(CABINS), size=n).tolist(),
        pax_counts=[k + 1 for k in weighted_indices(rng, PASSENGER_WEIGHTS, n)],
        bag_counts=weighted_indices(rng, BAG_WEIGHTS, n),
        other_firsts=rng.integers(len(FIRST_NAMES), size=(n, 4)).tolist(),
        other_lasts=rng.integers(len(LAST_NAMES), size=(n, 4)).tolist(),
        other_family=(rng.random((n, 4)) < 0.5).tolist(),
        other_dobs=_dobs(rng, (n, 4), 1940, 2020),
        reservation_ids=_reservation_ids(rng, n))


@dataclass(frozen=True)
class _Booking:
    """One reservation as made: who owns it, the trip, the cabin, the passengers, bags, insurance, what it cost,
    when it was made and paid with what, and whether it was cancelled."""

    reservation_id: str
    owner: int
    origin: str
    destination: str
    flight_type: str
    cabin: str
    segments: list[tuple[int, int]]  # (flight, date index)
    fares: list[int]
    people: list[tuple[str, str, str]]  # first name, last name, birth date
    total_bags: int
    nonfree: int
    insurance: str
    total: int
    created_at: str
    method_id: str
    status: str | None


def _booking(routes: _Routes, draws: _ReservationDraws, position: int, prices: list,
             user_rows: list[dict[str, Any]], wallets: list[list[dict[str, Any]]],
             saved: list[list[dict[str, Any]]]) -> _Booking:
    """Reservation ``position``, made from its draws (nothing more is drawn)."""
    owner = draws.owners[position]
    u = _Uniforms(*draws.uniforms[position])
    user, cabin, pax = user_rows[owner], draws.cabins[position], draws.pax_counts[position]
    origin, destination, flight_type, segments = _trip(routes, u)
    insurance = "yes" if u.insurance < INSURANCE_SHARE else "no"
    total_bags = draws.bag_counts[position]
    nonfree = max(0, total_bags - FREE_BAGS[user["membership"]][cabin] * pax)
    fares = [prices[f][day][cabin] for f, day in segments]
    usable = [m for m in wallets[owner] if m["source"] != "certificate"]  # never empty
    return _Booking(
        reservation_id=draws.reservation_ids[position], owner=owner, origin=origin, destination=destination,
        flight_type=flight_type, cabin=CABINS[cabin], segments=segments, fares=fares,
        people=_passengers(draws, position, user, saved[owner], u.self_flies, pax),
        total_bags=total_bags, nonfree=nonfree, insurance=insurance,
        total=sum(fares) * pax + (30 * pax if insurance == "yes" else 0) + 50 * nonfree,
        created_at=_booked_at(routes.legs, segments, u.created).strftime("%Y-%m-%dT%H:%M:%S"),
        method_id=usable[int(u.method * len(usable))]["method_id"],
        status="cancelled" if u.cancel < CANCELLED_RESERVATION_SHARE else None)


def _trip(routes: _Routes, u: _Uniforms) -> tuple[str, str, str, list[tuple[int, int]]]:
    """A trip's origin, destination, flight type ("one_way" or "round_trip") and segments (flight, date index)."""
    legs = routes.legs
    # Outbound: a random flight, or a random connection (mostly between airports with a direct flight too).
    if u.out_kind < ONESTOP_SHARE and routes.connections:
        pool = routes.with_direct if u.pool < ONESTOP_WITH_DIRECT_SHARE else routes.connections
        f1, f2, days = pool[int(u.out_pick * len(pool))]
        out = [(f1, 0), (f2, days)]
    else:
        out = [(int(u.out_pick * len(legs)), 0)]
    origin, destination = legs[out[0][0]][0], legs[out[-1][0]][1]
    last, last_day = out[-1]
    arrival_day = last_day + legs[last][3] // 1440
    trip = list(out)
    flight_type = "one_way"
    if u.trip < ROUND_TRIP_SHARE:
        back = routes.direct.get((destination, origin), [])
        back_onestop = routes.onestop.get((destination, origin), [])
        if back or back_onestop:
            flight_type = "round_trip"
            back_start = max(1 + int(u.stay * MAX_STAY), arrival_day + 1)
            trip += [(f, back_start + d) for f, d in _itinerary(back, back_onestop, u.back_kind, u.back_pick)]
    span = max(d for _, d in trip)
    first_day = int(u.first_date * (N_DATES - span))
    return origin, destination, flight_type, [(f, first_day + d) for f, d in trip]


def _itinerary(direct: list[int], onestop: list[tuple[int, int, int]], kind: float,
               pick: float) -> list[tuple[int, int]]:
    """(flight, days after the trip's first date) per leg: one-stop when ``kind`` says so and one exists."""
    if onestop and (kind < ONESTOP_SHARE or not direct):
        f1, f2, days = onestop[int(pick * len(onestop))]
        return [(f1, 0), (f2, days)]
    return [(direct[int(pick * len(direct))], 0)]


def _passengers(draws: _ReservationDraws, position: int, user: dict[str, Any], saved: list[dict[str, Any]],
                self_flies: float, pax: int) -> list[tuple[str, str, str]]:
    """The ``pax`` passengers (first name, last name, birth date): mostly the user, then their saved passengers,
    then others (some of the user's family)."""
    people = [(user["first_name"], user["last_name"], user["dob"])] if self_flies < SELF_SHARE else []
    people += [(s["first_name"], s["last_name"], s["dob"]) for s in saved][: pax - len(people)]
    for k in range(pax - len(people)):
        people.append((FIRST_NAMES[draws.other_firsts[position][k]],
                       user["last_name"] if draws.other_family[position][k]
                       else LAST_NAMES[draws.other_lasts[position][k]],
                       draws.other_dobs[position][k]))
    return people


def _booked_at(legs: list[tuple[str, str, int, int]], segments: list[tuple[int, int]], created: float) -> datetime:
    """When the reservation was made: between two weeks before the first departure (not before May) and two hours
    before it, by now."""
    departs = START + timedelta(days=segments[0][1], minutes=legs[segments[0][0]][2])
    latest = min(departs - timedelta(hours=2), NOW)
    earliest = max(latest - timedelta(days=14), START)
    if earliest >= latest:
        earliest = latest - timedelta(days=1)
    return earliest + timedelta(seconds=int(created * (latest - earliest).total_seconds()))


def _reservation_tables(routes: _Routes, user_rows: list[dict[str, Any]],
                        bookings: list[_Booking]) -> list[tuple[Table, list[dict[str, Any]]]]:
    """The rows of the reservation tables, table by table in the order they are written."""
    reservation_rows: list[dict[str, Any]] = []
    segment_rows: list[dict[str, Any]] = []
    passenger_rows: list[dict[str, Any]] = []
    payment_rows: list[dict[str, Any]] = []
    per_user: list[list[str]] = [[] for _ in user_rows]
    for position, b in enumerate(bookings):
        per_user[b.owner].append(b.reservation_id)
        reservation_rows.append(dict(reservation_id=b.reservation_id, position=position,
                                     user_id=user_rows[b.owner]["user_id"], origin=b.origin,
                                     destination=b.destination, flight_type=b.flight_type, cabin=b.cabin,
                                     created_at=b.created_at, total_baggages=b.total_bags, nonfree_baggages=b.nonfree,
                                     insurance=b.insurance, status=b.status))
        for i, ((f, day), fare) in enumerate(zip(b.segments, b.fares)):
            segment_rows.append(dict(reservation_id=b.reservation_id, position=i, flight_number=routes.numbers[f],
                                     origin=routes.legs[f][0], destination=routes.legs[f][1], date=DATES[day],
                                     price=fare))
        for i, (first, last_name, dob) in enumerate(b.people):
            passenger_rows.append(dict(reservation_id=b.reservation_id, position=i, first_name=first,
                                       last_name=last_name, dob=dob))
        payment_rows.append(dict(reservation_id=b.reservation_id, position=0, payment_id=b.method_id, amount=b.total))
        if b.status == "cancelled":
            payment_rows.append(dict(reservation_id=b.reservation_id, position=1, payment_id=b.method_id,
                                     amount=-b.total))
    user_reservation_rows = [dict(user_id=user_rows[i]["user_id"], position=k, reservation_id=r)
                             for i in range(len(user_rows)) for k, r in enumerate(per_user[i])]
    return [(reservations, reservation_rows), (reservation_flights, segment_rows),
            (reservation_passengers, passenger_rows), (reservation_payments, payment_rows),
            (user_reservations, user_reservation_rows)]
