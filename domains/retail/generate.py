"""A seeded generator of retail worlds shaped like tau2-bench's retail database.

:func:`build_generated` fills an empty retail schema with a product catalogue (product types with option
variants, prices and availability), users (names, addresses, e-mails, payment methods) and their orders
(items, fulfillments, payment history), at tau2's scale by default. Only ``numpy.random.default_rng(seed)``
is drawn from, in a fixed order, so a seed and a size always give the same database, bit for bit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
from sqlalchemy import Connection

from mua_gym.domains.retail.schema import (
    fulfillments,
    order_items,
    orders,
    payment_methods,
    payments,
    products,
    user_orders,
    users,
    variants,
)
from mua_gym.kit.people import UniqueIds, unique
from mua_gym.kit.records import insert_rows
from mua_gym.kit.sampling import quota_indices, scaled_size, weighted_indices

# ---------------------------------------------------------------------------------------------------------
# Catalogue: product type -> (price range, options as (key, values) in the order they are listed, the key
# whose values are listed cheapest first and raise the price, or None).

_Options = tuple[tuple[str, tuple[str, ...]], ...]

CATALOGUE: tuple[tuple[str, tuple[float, float], _Options, str | None], ...] = (
    ("T-Shirt", (12.0, 45.0), (
        ("color", ("black", "white", "blue", "red", "green", "gray")),
        ("size", ("S", "M", "L", "XL", "XXL")),
        ("material", ("cotton", "polyester", "linen")),
        ("style", ("crew neck", "v-neck")),
    ), None),
    ("Hoodie", (30.0, 95.0), (
        ("size", ("S", "M", "L", "XL")),
        ("color", ("black", "gray", "navy", "maroon", "olive")),
        ("material", ("cotton", "fleece", "polyester")),
        ("style", ("pullover", "zip-up")),
    ), None),
    ("Jeans", (35.0, 140.0), (
        ("waist", ("28", "30", "32", "34", "36", "38")),
        ("fit", ("slim", "straight", "relaxed", "bootcut")),
        ("color", ("dark wash", "light wash", "black")),
    ), None),
    ("Running Shoes", (60.0, 190.0), (
        ("size", ("7", "8", "9", "10", "11", "12")),
        ("color", ("black", "white", "blue", "red", "gray")),
        ("material", ("mesh", "synthetic", "knit")),
        ("sole", ("rubber", "foam", "EVA")),
    ), None),
    ("Hiking Boots", (80.0, 260.0), (
        ("size", ("7", "8", "9", "10", "11", "12")),
        ("material", ("leather", "synthetic", "suede")),
        ("waterproof", ("yes", "no")),
    ), None),
    ("Backpack", (30.0, 190.0), (
        ("color", ("black", "gray", "navy", "green", "red")),
        ("size", ("small", "medium", "large")),
        ("material", ("nylon", "polyester", "canvas", "leather")),
        ("compartment", ("laptop", "hydration", "camera")),
    ), "size"),
    ("Water Bottle", (10.0, 55.0), (
        ("capacity", ("500ml", "750ml", "1000ml", "1500ml")),
        ("material", ("plastic", "aluminum", "stainless steel", "glass")),
        ("color", ("black", "white", "blue", "red", "green")),
    ), "capacity"),
    ("Travel Mug", (12.0, 45.0), (
        ("capacity", ("12 oz", "16 oz", "20 oz")),
        ("material", ("plastic", "ceramic", "stainless steel")),
        ("color", ("black", "white", "blue", "red", "green")),
        ("lid", ("flip", "slide", "straw")),
    ), "capacity"),
    ("Desk Lamp", (25.0, 170.0), (
        ("color", ("black", "white", "silver", "brass")),
        ("brightness", ("low", "medium", "high")),
        ("power source", ("USB", "AC adapter", "battery")),
    ), "brightness"),
    ("Office Chair", (120.0, 550.0), (
        ("material", ("fabric", "mesh", "leather")),
        ("color", ("black", "gray", "blue", "red")),
        ("armrest", ("none", "fixed", "adjustable")),
        ("backrest height", ("standard", "high-back")),
    ), "material"),
    ("Standing Desk", (180.0, 850.0), (
        ("size", ("120 x 60 cm", "140 x 70 cm", "160 x 80 cm")),
        ("material", ("laminate", "bamboo", "oak", "walnut")),
        ("color", ("black", "white", "natural")),
        ("motor", ("single", "dual")),
    ), "size"),
    ("Bookshelf", (60.0, 420.0), (
        ("material", ("wood", "metal", "glass")),
        ("color", ("white", "black", "oak", "walnut")),
        ("height", ("3 ft", "4 ft", "5 ft", "6 ft")),
    ), "height"),
    ("Laptop", (650.0, 2400.0), (
        ("screen size", ("13-inch", "14-inch", "15-inch", "16-inch")),
        ("processor", ("quad-core", "hexa-core", "octa-core")),
        ("ram", ("8GB", "16GB", "32GB")),
        ("storage", ("256GB SSD", "512GB SSD", "1TB SSD")),
    ), "storage"),
    ("Tablet", (220.0, 1200.0), (
        ("screen size", ("8-inch", "10-inch", "12-inch")),
        ("storage", ("64GB", "128GB", "256GB", "512GB")),
        ("color", ("black", "silver", "gold", "blue")),
    ), "storage"),
    ("Smartphone", (350.0, 1300.0), (
        ("color", ("black", "white", "blue", "green", "purple")),
        ("storage", ("128GB", "256GB", "512GB", "1TB")),
        ("RAM", ("6GB", "8GB", "12GB")),
        ("screen size", ("6.1-inch", "6.7-inch")),
    ), "storage"),
    ("Smart Watch", (120.0, 650.0), (
        ("color", ("black", "silver", "gold", "rose gold")),
        ("band material", ("silicone", "nylon", "leather", "metal")),
        ("display", ("LCD", "AMOLED")),
    ), "band material"),
    ("Wireless Earbuds", (40.0, 280.0), (
        ("color", ("black", "white", "blue")),
        ("battery life", ("6 hours", "8 hours", "10 hours")),
        ("water resistance", ("none", "IPX4", "IPX7")),
    ), "battery life"),
    ("Headphones", (50.0, 400.0), (
        ("type", ("in-ear", "on-ear", "over-ear")),
        ("connectivity", ("wired", "wireless")),
        ("color", ("black", "white", "red", "blue")),
    ), "type"),
    ("Bluetooth Speaker", (30.0, 320.0), (
        ("color", ("black", "blue", "red", "green", "gray")),
        ("battery life", ("8 hours", "12 hours", "20 hours")),
        ("water resistance", ("none", "IPX5", "IPX7")),
    ), "battery life"),
    ("Mechanical Keyboard", (60.0, 280.0), (
        ("switch type", ("linear", "tactile", "clicky")),
        ("backlight", ("none", "white", "RGB")),
        ("size", ("60%", "80%", "full size")),
    ), "size"),
    ("Gaming Mouse", (20.0, 150.0), (
        ("color", ("black", "white", "gray")),
        ("sensor type", ("optical", "laser")),
        ("connectivity", ("wired", "wireless", "bluetooth")),
        ("grip", ("palm", "claw")),
    ), None),
    ("Computer Monitor", (130.0, 1000.0), (
        ("screen size", ("24-inch", "27-inch", "32-inch", "34-inch")),
        ("resolution", ("1080p", "1440p", "4K")),
        ("refresh rate", ("60Hz", "144Hz", "165Hz")),
    ), "resolution"),
    ("Digital Camera", (350.0, 2800.0), (
        ("resolution", ("20MP", "24MP", "30MP", "45MP")),
        ("zoom", ("3x", "5x", "10x")),
        ("storage", ("SD card", "CF card")),
    ), "resolution"),
    ("Action Camera", (150.0, 520.0), (
        ("resolution", ("1080p", "4K", "5K")),
        ("waterproof", ("yes", "no")),
        ("color", ("black", "silver", "blue")),
        ("stabilization", ("standard", "advanced")),
    ), "resolution"),
    ("E-Reader", (90.0, 320.0), (
        ("screen size", ("6-inch", "7-inch", "8-inch")),
        ("connectivity", ("Wi-Fi", "Wi-Fi + Cellular")),
        ("storage", ("8GB", "16GB", "32GB")),
        ("color", ("black", "white", "sage")),
    ), "storage"),
    ("Portable Charger", (15.0, 110.0), (
        ("capacity", ("5000mAh", "10000mAh", "20000mAh", "30000mAh")),
        ("output", ("USB-A", "USB-C", "Wireless")),
        ("color", ("black", "white", "blue")),
    ), "capacity"),
    ("Electric Kettle", (20.0, 150.0), (
        ("capacity", ("1L", "1.5L", "1.7L", "2L")),
        ("material", ("plastic", "stainless steel", "glass")),
        ("color", ("black", "white", "silver")),
    ), "capacity"),
    ("Coffee Maker", (40.0, 380.0), (
        ("color", ("black", "white", "red", "stainless steel")),
        ("capacity", ("4 cups", "8 cups", "10 cups", "12 cups")),
        ("type", ("drip", "french press", "single serve", "espresso")),
    ), "type"),
    ("Blender", (30.0, 330.0), (
        ("capacity", ("500ml", "1L", "1.5L", "2L")),
        ("material", ("plastic", "glass", "stainless steel")),
        ("speed settings", ("3", "5", "8", "10")),
    ), "speed settings"),
    ("Air Purifier", (80.0, 560.0), (
        ("room size", ("small", "medium", "large")),
        ("filter type", ("ionic", "carbon", "HEPA")),
        ("features", ("quiet operation", "night mode", "smart sensors")),
    ), "room size"),
    ("Vacuum Cleaner", (90.0, 650.0), (
        ("type", ("handheld", "canister", "upright", "robotic")),
        ("bagged/bagless", ("bagged", "bagless")),
        ("features", ("HEPA filter", "pet hair removal", "cordless")),
    ), "type"),
    ("Cookware Set", (60.0, 560.0), (
        ("material", ("nonstick", "cast iron", "stainless steel", "copper")),
        ("pieces", ("5-piece", "8-piece", "10-piece", "12-piece")),
        ("color", ("black", "silver", "red")),
    ), "pieces"),
    ("Kitchen Knife Set", (40.0, 380.0), (
        ("pieces", ("3-piece", "6-piece", "9-piece", "12-piece")),
        ("blade material", ("stainless steel", "carbon steel", "ceramic")),
        ("handle material", ("plastic", "wood", "steel")),
    ), "pieces"),
    ("Yoga Mat", (15.0, 110.0), (
        ("thickness", ("4mm", "6mm", "8mm")),
        ("material", ("PVC", "TPE", "natural rubber", "cork")),
        ("color", ("purple", "blue", "green", "black", "pink")),
    ), "thickness"),
    ("Adjustable Dumbbell", (50.0, 480.0), (
        ("weight range", ("5-25 lbs", "10-40 lbs", "15-50 lbs", "30-60 lbs")),
        ("material", ("iron", "steel", "rubber", "urethane")),
        ("set type", ("single", "pair")),
    ), "weight range"),
    ("Bicycle", (280.0, 2200.0), (
        ("frame size", ("small", "medium", "large")),
        ("color", ("black", "red", "blue", "green", "white")),
        ("type", ("city", "hybrid", "mountain", "road")),
    ), "type"),
    ("Cycling Helmet", (30.0, 240.0), (
        ("size", ("S", "M", "L")),
        ("color", ("black", "white", "red", "blue")),
        ("ventilation", ("low", "medium", "high")),
    ), "ventilation"),
    ("Tent", (70.0, 650.0), (
        ("size", ("2-person", "4-person", "6-person", "8-person")),
        ("material", ("polyester", "nylon", "canvas")),
        ("color", ("green", "orange", "blue", "gray")),
        ("season", ("3-season", "4-season")),
    ), "size"),
    ("Sleeping Bag", (40.0, 320.0), (
        ("temperature rating", ("summer", "3-season", "winter")),
        ("size", ("regular", "long", "wide")),
        ("insulation", ("synthetic", "down")),
        ("color", ("green", "blue", "red", "black")),
    ), "temperature rating"),
    ("Fishing Rod", (30.0, 380.0), (
        ("length", ("6 ft", "7 ft", "8 ft", "9 ft")),
        ("material", ("fiberglass", "graphite", "carbon fiber")),
        ("action", ("slow", "medium", "fast")),
    ), "material"),
    ("Sunglasses", (20.0, 280.0), (
        ("frame color", ("black", "brown", "silver", "gold", "tortoise")),
        ("lens color", ("gray", "brown", "green", "blue")),
        ("lens type", ("non-polarized", "polarized")),
        ("frame material", ("plastic", "metal", "acetate")),
    ), "lens type"),
    ("Wall Clock", (15.0, 140.0), (
        ("diameter", ("10 inches", "12 inches", "14 inches")),
        ("material", ("plastic", "wood", "metal")),
        ("color", ("black", "white", "natural", "silver")),
        ("display", ("analog", "digital")),
    ), "diameter"),
    ("Skateboard", (45.0, 240.0), (
        ("deck material", ("plastic", "maple", "bamboo")),
        ("length", ("28 inch", "31 inch", "34 inch")),
        ("design", ("plain", "graphic", "custom")),
    ), "deck material"),
    ("Notebook", (4.0, 38.0), (
        ("size", ("pocket", "A5", "A4")),
        ("cover type", ("soft cover", "hard cover")),
        ("paper", ("lined", "dotted", "grid", "blank")),
    ), "size"),
    ("Fountain Pen", (15.0, 280.0), (
        ("nib size", ("extra fine", "fine", "medium", "broad")),
        ("color", ("black", "blue", "red", "green", "silver")),
        ("material", ("plastic", "resin", "metal")),
    ), "material"),
    ("Perfume", (30.0, 260.0), (
        ("scent family", ("floral", "woody", "citrus", "oriental", "fresh")),
        ("size", ("30ml", "50ml", "100ml")),
        ("gender", ("men", "women", "unisex")),
    ), "size"),
    ("Suitcase", (70.0, 480.0), (
        ("size", ("carry-on", "medium", "large")),
        ("material", ("softshell", "hardshell", "aluminum")),
        ("color", ("black", "navy", "red", "silver", "green")),
    ), "size"),
    ("Garden Hose", (15.0, 110.0), (
        ("length", ("25 ft", "50 ft", "75 ft", "100 ft")),
        ("material", ("vinyl", "latex", "rubber")),
        ("color", ("green", "black", "blue")),
    ), "length"),
    ("Jigsaw Puzzle", (10.0, 55.0), (
        ("pieces", ("500", "1000", "1500", "2000")),
        ("theme", ("animals", "landscapes", "art", "fantasy", "cities")),
        ("difficulty level", ("beginner", "intermediate", "expert")),
    ), "pieces"),
    ("Cordless Drill", (45.0, 330.0), (
        ("voltage", ("12V", "18V", "20V", "24V")),
        ("type", ("standard", "hammer drill", "impact driver")),
        ("color", ("black", "yellow", "red", "blue")),
    ), "voltage"),
)

# ---------------------------------------------------------------------------------------------------------
# People and places.

FIRST_NAMES = (
    "Aaron", "Abigail", "Adam", "Aiden", "Alice", "Amara", "Amelia", "Andre", "Anna", "Arjun", "Ava", "Beatriz",
    "Benjamin", "Bianca", "Caleb", "Camila", "Carlos", "Charlotte", "Chen", "Chloe", "Daniel", "Daria", "David",
    "Diego", "Elena", "Eli", "Elijah", "Emily", "Emma", "Ethan", "Fatima", "Felix", "Gabriel", "Grace", "Hana",
    "Harper", "Hassan", "Henry", "Ines", "Isaac", "Isabella", "Ivan", "Jack", "Jamal", "James", "Jasmine", "Javier",
    "Julia", "Kai", "Kenji", "Laila", "Leo", "Liam", "Lucas", "Lucia", "Maya", "Mei", "Mia", "Mohamed", "Nadia",
    "Naomi", "Nathan", "Nina", "Noah", "Olivia", "Omar", "Owen", "Priya", "Rafael", "Ravi", "Rosa", "Ruby",
    "Samuel", "Sara", "Sofia", "Sophie", "Tariq", "Theo", "Uma", "Victor", "Vivian", "William", "Yara", "Yusuf",
    "Zara", "Zoe",
)
LAST_NAMES = (
    "Adams", "Ahmed", "Alvarez", "Anderson", "Baker", "Bennett", "Brooks", "Campbell", "Carter", "Castro", "Chang",
    "Clark", "Collins", "Cooper", "Cruz", "Davis", "Diaz", "Edwards", "Evans", "Fischer", "Flores", "Foster",
    "Garcia", "Gomez", "Gonzalez", "Gupta", "Hall", "Harris", "Hayes", "Hernandez", "Hughes", "Ibrahim", "Jackson",
    "Jensen", "Johnson", "Kaur", "Khan", "Kim", "Kowalski", "Lee", "Lewis", "Lopez", "Martin", "Mendoza", "Meyer",
    "Mitchell", "Moore", "Morales", "Murphy", "Nakamura", "Nguyen", "Novak", "Okafor", "Olsen", "Ortiz", "Park",
    "Patel", "Perez", "Petrov", "Phillips", "Price", "Ramirez", "Reed", "Reyes", "Rivera", "Roberts", "Rossi",
    "Russo", "Sanchez", "Santos", "Schmidt", "Shah", "Silva", "Singh", "Stewart", "Sullivan", "Suzuki", "Taylor",
    "Thompson", "Torres", "Turner", "Walker", "Wang", "Ward", "Watson", "Wright", "Yamamoto", "Young", "Zhang",
)
# city, state, the first three digits of its zip codes
CITIES = (
    ("New York", "NY", "100"), ("Buffalo", "NY", "142"), ("Los Angeles", "CA", "900"), ("San Diego", "CA", "921"),
    ("San Francisco", "CA", "941"), ("Sacramento", "CA", "958"), ("Chicago", "IL", "606"), ("Houston", "TX", "770"),
    ("Dallas", "TX", "752"), ("Austin", "TX", "787"), ("San Antonio", "TX", "782"), ("Phoenix", "AZ", "850"),
    ("Tucson", "AZ", "857"), ("Philadelphia", "PA", "191"), ("Pittsburgh", "PA", "152"), ("Jacksonville", "FL", "322"),
    ("Miami", "FL", "331"), ("Tampa", "FL", "336"), ("Orlando", "FL", "328"), ("Columbus", "OH", "432"),
    ("Cleveland", "OH", "441"), ("Cincinnati", "OH", "452"), ("Charlotte", "NC", "282"), ("Raleigh", "NC", "276"),
    ("Indianapolis", "IN", "462"), ("Seattle", "WA", "981"), ("Spokane", "WA", "992"), ("Denver", "CO", "802"),
    ("Washington", "DC", "200"), ("Boston", "MA", "021"), ("Nashville", "TN", "372"), ("Memphis", "TN", "381"),
    ("Detroit", "MI", "482"), ("Portland", "OR", "972"), ("Las Vegas", "NV", "891"), ("Louisville", "KY", "402"),
    ("Baltimore", "MD", "212"), ("Milwaukee", "WI", "532"), ("Madison", "WI", "537"), ("Albuquerque", "NM", "871"),
    ("Kansas City", "MO", "641"), ("St. Louis", "MO", "631"), ("Atlanta", "GA", "303"), ("Omaha", "NE", "681"),
    ("Minneapolis", "MN", "554"), ("New Orleans", "LA", "701"), ("Salt Lake City", "UT", "841"),
    ("Richmond", "VA", "232"), ("Boise", "ID", "837"), ("Hartford", "CT", "061"), ("Providence", "RI", "029"),
    ("Des Moines", "IA", "503"), ("Oklahoma City", "OK", "731"), ("Anchorage", "AK", "995"),
    ("Honolulu", "HI", "968"),
)
STREET_NAMES = (
    "Maple", "Oak", "Elm", "Cedar", "Pine", "Willow", "Birch", "Chestnut", "Walnut", "Spruce", "Lakeview", "Hillcrest",
    "River", "Park", "Main", "Highland", "Sunset", "Sunrise", "Meadow", "Forest", "Valley", "Ridge", "Harbor",
    "Broadway", "Lincoln", "Washington", "Jefferson", "Franklin", "Church", "Mill", "Spring", "Cherry", "Laurel",
    "Magnolia", "Dogwood", "Aspen", "Juniper", "Orchard", "Canyon", "Bayview",
)
STREET_SUFFIXES = ("Street", "Avenue", "Road", "Lane", "Drive", "Boulevard", "Court", "Place", "Way")
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")

# ---------------------------------------------------------------------------------------------------------
# Scale and mixes.

DEFAULT_PRODUCTS, DEFAULT_USERS, DEFAULT_ORDERS = 50, 500, 1000
SIZES: dict[str, tuple[int, int, int]] = {  # products, users, orders
    "tiny": (8, 20, 40),
    "small": (20, 100, 200),
    "default": (DEFAULT_PRODUCTS, DEFAULT_USERS, DEFAULT_ORDERS),
    "large": (DEFAULT_PRODUCTS, 10 * DEFAULT_USERS, 10 * DEFAULT_ORDERS),
}
MIN_VARIANTS, MAX_VARIANTS = 5, 20
AVAILABLE_SHARE = 0.64
STATUSES = ("pending", "delivered", "processed", "cancelled")
STATUS_WEIGHTS = (0.423, 0.373, 0.102, 0.102)  # dealt out exactly (largest remainders), then shuffled
ITEM_COUNTS = (1, 2, 3, 4, 5)
ITEM_COUNT_WEIGHTS = (0.22, 0.26, 0.24, 0.17, 0.11)
METHOD_COUNT_WEIGHTS = (0.45, 0.35, 0.20)  # 1, 2 or 3 payment methods
SPLIT_FULFILLMENT_SHARE = 0.2  # orders of 2+ items shipped in two parcels
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
ADDRESS_KEYS = ("address1", "address2", "city", "country", "state", "zip")  # an order keeps them


def _scale(size: str | float) -> tuple[int, int, int]:
    return scaled_size(size, SIZES, lambda k: (DEFAULT_PRODUCTS, max(1, round(DEFAULT_USERS * k)),
                                               round(DEFAULT_ORDERS * k)))


def _catalogue(rng: np.random.Generator, ids: UniqueIds, n_products: int) -> tuple[list[dict[str, Any]], ...]:
    """Products and their variants; each product type is used at most once."""
    kinds = rng.permutation(len(CATALOGUE))[:n_products].tolist()
    product_ids = ids.take(10, len(kinds))
    product_rows: list[dict[str, Any]] = []
    variant_rows: list[dict[str, Any]] = []
    for position, (kind, product_id) in enumerate(zip(kinds, product_ids)):
        name, (low, high), options, graded = CATALOGUE[kind]
        radices = [len(values) for _, values in options]
        space = int(np.prod(radices))
        count = min(space, int(rng.integers(MIN_VARIANTS, MAX_VARIANTS + 1)))
        combos = rng.choice(space, size=count, replace=False).tolist()
        base = float(rng.uniform(low, high))
        jitter = rng.uniform(0.85, 1.15, size=count).tolist()
        available = (rng.random(count) < AVAILABLE_SHARE).tolist()
        item_ids = ids.take(10, count)
        product_rows.append(dict(product_id=product_id, position=position, name=name))
        for v, combo in enumerate(combos):
            chosen: dict[str, str] = {}
            grade = 0
            rest = combo
            for (key, values), radix in zip(reversed(options), reversed(radices)):
                rest, index = divmod(rest, radix)
                chosen[key] = values[index]
                if key == graded:
                    grade = index
            chosen = {key: chosen[key] for key, _ in options}
            price = max(1.0, round(base * (1.0 + 0.18 * grade) * jitter[v], 2))
            variant_rows.append(dict(item_id=item_ids[v], product_id=product_id, position=v,
                                     options=json.dumps(chosen), available=bool(available[v]), price=price))
    return product_rows, variant_rows


def _people(rng: np.random.Generator, ids: UniqueIds, n_users: int) -> tuple[list[dict[str, Any]], list[list[dict]]]:
    """Users, and per user their payment methods (as rows, in profile order)."""
    firsts = rng.integers(len(FIRST_NAMES), size=n_users).tolist()
    lasts = rng.integers(len(LAST_NAMES), size=n_users).tolist()
    cities = rng.integers(len(CITIES), size=n_users).tolist()
    zips = rng.integers(100, size=n_users).tolist()
    id_digits = rng.integers(1000, 10000, size=n_users).tolist()
    email_digits = rng.integers(1000, 10000, size=n_users).tolist()
    numbers = rng.integers(100, 1000, size=n_users).tolist()
    streets = rng.integers(len(STREET_NAMES), size=n_users).tolist()
    suffixes = rng.integers(len(STREET_SUFFIXES), size=n_users).tolist()
    unit_kinds = rng.random(n_users).tolist()
    suites = rng.integers(100, 1000, size=n_users).tolist()
    apartments = rng.integers(1, 100, size=n_users).tolist()

    user_rows: list[dict[str, Any]] = []
    triples: set[tuple[str, str, str]] = set()
    user_ids: set[str] = set()
    emails: set[str] = set()
    for i in range(n_users):
        first, last = FIRST_NAMES[firsts[i]], LAST_NAMES[lasts[i]]
        city, state, zip3 = CITIES[cities[i]]
        zip_code = f"{zip3}{zips[i]:02d}"
        while (first, last, zip_code) in triples:  # rare: draw this person again
            first = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]
            last = LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
            city, state, zip3 = CITIES[int(rng.integers(len(CITIES)))]
            zip_code = f"{zip3}{int(rng.integers(100)):02d}"
        triples.add((first, last, zip_code))
        user_id = unique(user_ids, lambda: f"{first.lower()}_{last.lower()}_{int(rng.integers(1000, 10000))}",
                         f"{first.lower()}_{last.lower()}_{id_digits[i]}")
        email = unique(emails, lambda: f"{first.lower()}.{last.lower()}{int(rng.integers(1000, 10000))}@example.com",
                       f"{first.lower()}.{last.lower()}{email_digits[i]}@example.com")
        kind = unit_kinds[i]
        address2 = f"Suite {suites[i]}" if kind < 0.55 else f"Apt {apartments[i]}" if kind < 0.8 else ""
        user_rows.append(dict(user_id=user_id, position=i, first_name=first, last_name=last,
                              address1=f"{numbers[i]} {STREET_NAMES[streets[i]]} {STREET_SUFFIXES[suffixes[i]]}",
                              address2=address2, city=city, country="USA", state=state, zip=zip_code, email=email))
    return user_rows, _wallets(rng, ids, [u["user_id"] for u in user_rows])


def _wallets(rng: np.random.Generator, ids: UniqueIds, user_ids: list[str]) -> list[list[dict[str, Any]]]:
    """Per user 1-3 payment methods; there is always a credit card or PayPal account, so any order can be paid."""
    n = len(user_ids)
    counts = [k + 1 for k in weighted_indices(rng, METHOD_COUNT_WEIGHTS, n)]
    first_draws = rng.random(n).tolist()
    extra_draws = rng.random((n, 2)).tolist()
    orders = np.argsort(rng.random((n, 3)), axis=1, kind="stable").tolist()
    sources: list[str] = []
    per_user: list[list[str]] = []
    for i in range(n):
        mine = ["credit_card" if first_draws[i] < 0.6 else "paypal"]
        for draw in extra_draws[i][: counts[i] - 1]:
            source = "gift_card" if draw < 0.5 else "credit_card" if draw < 0.8 else "paypal"
            mine.append("credit_card" if source == "paypal" and "paypal" in mine else source)
        mine = [mine[k] for k in orders[i] if k < counts[i]]  # the profile's order
        per_user.append(mine)
        sources += mine
    total = len(sources)
    numbers = ids.take(7, total)
    brands = rng.integers(len(CARD_BRANDS), size=total).tolist()
    last_fours = rng.integers(10000, size=total).tolist()
    balances = rng.uniform(0.0, 300.0, size=total).tolist()
    wallets: list[list[dict[str, Any]]] = []
    k = 0
    for user_id, mine in zip(user_ids, per_user):
        rows = []
        for position, source in enumerate(mine):
            card, gift = source == "credit_card", source == "gift_card"
            rows.append(dict(user_id=user_id, method_id=f"{source}_{numbers[k]}", position=position, source=source,
                             brand=CARD_BRANDS[brands[k]] if card else None,
                             last_four=f"{last_fours[k]:04d}" if card else None,
                             balance=round(balances[k], 2) if gift else None))
            k += 1
        wallets.append(rows)
    return wallets


def build_generated(conn: Connection, *, seed: int = 0, size: str | float = "default") -> None:
    """Fills an empty retail schema with a seeded, tau2-like world.

    ``size`` is ``"tiny"`` (8 products, 20 users, 40 orders), ``"small"`` (20, 100, 200), ``"default"``
    (50 products with about 600 variants, 500 users, 1,000 orders), ``"large"`` (50, 5,000, 10,000), or a
    number that multiplies the default users and orders (products stay 50).
    """
    n_products, n_users, n_orders = _scale(size)
    rng = np.random.default_rng(seed)
    ids = UniqueIds(rng)

    product_rows, variant_rows = _catalogue(rng, ids, n_products)
    user_rows, wallets = _people(rng, ids, n_users)
    draws = _order_draws(rng, ids, n_users, n_orders, len(variant_rows))
    tables = _order_tables(draws, product_rows, variant_rows, user_rows, wallets)

    insert_rows(conn, [
        (products, product_rows), (variants, variant_rows), (users, user_rows),
        (payment_methods, [m for wallet in wallets for m in wallet]), (orders, tables.orders),
        (order_items, tables.items), (user_orders, tables.user_orders), (payments, tables.payments),
        (fulfillments, tables.fulfillments)])


@dataclass(frozen=True)
class _OrderDraws:
    """Every order's random draws, by order: the owner (a user's index), the status, the item count, the draws that
    place a two-parcel split and pick the payment method, the cancel reason, the order's id and its parcel count;
    and the items picked (indices of variants, order after order) and the tracking ids (parcel after parcel)."""

    owners: list[int]
    statuses: list[str]
    item_counts: list[int]
    cuts: list[float]
    method_draws: list[float]
    reasons: list[int]
    order_ids: list[str]
    parcel_counts: list[int]
    picks: list[int]
    tracking_ids: list[str]


def _order_draws(rng: np.random.Generator, ids: UniqueIds, n_users: int, n_orders: int,
                 n_variants: int) -> _OrderDraws:
    """The draws of ``n_orders`` orders, in a fixed order."""
    # Who placed each order: everyone at least once when there are enough orders, the rest at random.
    if n_orders >= n_users:
        owners = np.concatenate([np.arange(n_users), rng.integers(n_users, size=n_orders - n_users)])
    else:
        owners = rng.integers(n_users, size=n_orders)
    owners = rng.permutation(owners).tolist()
    statuses = [STATUSES[k] for k in rng.permutation(quota_indices(STATUS_WEIGHTS, n_orders)).tolist()]
    item_counts = [ITEM_COUNTS[k] for k in weighted_indices(rng, ITEM_COUNT_WEIGHTS, n_orders)]
    picks = rng.integers(n_variants, size=sum(item_counts)).tolist()
    # A shipped order of 2+ items goes out in two parcels with this chance, split after item ``cut``.
    splits = (rng.random(n_orders) < SPLIT_FULFILLMENT_SHARE).tolist()
    cuts = rng.random(n_orders).tolist()
    method_draws = rng.random(n_orders).tolist()
    reasons = rng.integers(len(CANCEL_REASONS), size=n_orders).tolist()
    order_ids = ids.take(7, n_orders, "#W")
    parcel_counts = [0 if st == "pending" else 2 if split and count >= 2 else 1
                     for st, split, count in zip(statuses, splits, item_counts)]
    return _OrderDraws(owners=owners, statuses=statuses, item_counts=item_counts, cuts=cuts,
                       method_draws=method_draws, reasons=reasons, order_ids=order_ids, parcel_counts=parcel_counts,
                       picks=picks, tracking_ids=ids.take(12, sum(parcel_counts)))


@dataclass
class _OrderTables:
    """The order tables' rows as the orders are made, and what making them reads: the products' names and the
    tracking ids still to hand out."""

    product_names: dict[str, str]
    tracking_ids: Iterator[str]
    orders: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    fulfillments: list[dict[str, Any]] = field(default_factory=list)
    payments: list[dict[str, Any]] = field(default_factory=list)
    user_orders: list[dict[str, Any]] = field(default_factory=list)


def _order_tables(draws: _OrderDraws, product_rows: list[dict[str, Any]], variant_rows: list[dict[str, Any]],
                  user_rows: list[dict[str, Any]], wallets: list[list[dict[str, Any]]]) -> _OrderTables:
    """Every order's rows, made from the draws (nothing more is drawn)."""
    t = _OrderTables({p["product_id"]: p["name"] for p in product_rows}, iter(draws.tracking_ids))
    per_user: list[list[str]] = [[] for _ in user_rows]
    next_pick = 0
    for position, order_id in enumerate(draws.order_ids):
        owner, count = draws.owners[position], draws.item_counts[position]
        per_user[owner].append(order_id)
        chosen = [variant_rows[k] for k in draws.picks[next_pick:next_pick + count]]
        next_pick += count
        _add_order(t, draws, position, user_rows[owner], wallets[owner], chosen)
    t.user_orders = [dict(user_id=user_rows[u]["user_id"], position=i, order_id=order_id)
                     for u in range(len(user_rows)) for i, order_id in enumerate(per_user[u])]
    return t


def _add_order(t: _OrderTables, draws: _OrderDraws, position: int, user: dict[str, Any],
               wallet: list[dict[str, Any]], chosen: list[dict[str, Any]]) -> None:
    """Adds order ``position`` of ``user`` for the ``chosen`` variants: its items, parcels, payment (and refund, if
    cancelled) and the order itself."""
    order_id, status, count = draws.order_ids[position], draws.statuses[position], draws.item_counts[position]
    for i, v in enumerate(chosen):
        t.items.append(dict(order_id=order_id, position=i, name=t.product_names[v["product_id"]],
                            product_id=v["product_id"], item_id=v["item_id"], price=v["price"],
                            options=v["options"]))
    amount = round(sum(v["price"] for v in chosen), 2)
    item_ids = [v["item_id"] for v in chosen]
    if draws.parcel_counts[position] == 2:
        cut = 1 + int(draws.cuts[position] * (count - 1))
        parcels = [item_ids[:cut], item_ids[cut:]]
    else:
        parcels = [item_ids] * draws.parcel_counts[position]
    for i, parcel in enumerate(parcels):
        t.fulfillments.append(dict(order_id=order_id, position=i, tracking_ids=json.dumps([next(t.tracking_ids)]),
                                   item_ids=json.dumps(parcel)))
    usable = [m for m in wallet if m["source"] != "gift_card" or m["balance"] >= amount]
    method_id = usable[int(draws.method_draws[position] * len(usable))]["method_id"]
    t.payments.append(dict(order_id=order_id, position=0, transaction_type="payment", amount=amount,
                           payment_method_id=method_id))
    cancel_reason = None
    if status == "cancelled":
        t.payments.append(dict(order_id=order_id, position=1, transaction_type="refund", amount=amount,
                               payment_method_id=method_id))
        cancel_reason = CANCEL_REASONS[draws.reasons[position]]
    t.orders.append(dict(order_id=order_id, position=position, user_id=user["user_id"],
                         **{k: user[k] for k in ADDRESS_KEYS}, status=status, cancel_reason=cancel_reason,
                         exchange_items=None, exchange_new_items=None, exchange_payment_method_id=None,
                         exchange_price_difference=None, return_items=None, return_payment_method_id=None))
