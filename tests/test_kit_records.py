"""The declared JSON <-> table mapping (mua_gym.kit.records) on a small schema of its own: loading, reading back
and exporting follow the one declaration, key order and all. The built-in domains' declarations are checked
against tau2 itself by the conformance suites."""

import json

import pytest
from sqlalchemy import Boolean, Column as SqlColumn, Float, ForeignKey, Integer, MetaData, String, Table, select

from mua_gym.world.image import WorldImage
from mua_gym.kit.records import Column, Database, Group, Ids, Many, One, Record, boolean, number, one_of, text
from mua_gym.world import World

META = MetaData()
SHOPS = Table("shops", META, SqlColumn("shop_id", String, primary_key=True), SqlColumn("position", Integer),
              SqlColumn("name", String), SqlColumn("street", String), SqlColumn("city", String, nullable=True),
              SqlColumn("open", Boolean), SqlColumn("tags", String), SqlColumn("rating", Float, nullable=True),
              SqlColumn("note", String, nullable=True))
ITEMS = Table("items", META, SqlColumn("shop_id", ForeignKey("shops.shop_id"), primary_key=True),
              SqlColumn("sku", String, primary_key=True), SqlColumn("position", Integer),
              SqlColumn("kind", String), SqlColumn("price", Float, nullable=True),
              SqlColumn("size", String, nullable=True))
STAFF = Table("staff", META, SqlColumn("shop_id", ForeignKey("shops.shop_id"), primary_key=True),
              SqlColumn("position", Integer, primary_key=True), SqlColumn("first", String), SqlColumn("last", String))
OWNERS = Table("owners", META, SqlColumn("shop_id", ForeignKey("shops.shop_id"), primary_key=True),
               SqlColumn("position", Integer, primary_key=True), SqlColumn("owner", String))


def _item_shape(row):
    return ("kind", "price") if row["kind"] == "food" else ("kind", "size")


ITEM = Record(ITEMS, {"kind": "kind", "price": Column("price", load=float), "size": "size"}, key="sku",
              shape=_item_shape)
STAFFER = Record(STAFF, {"first": "first", "last": "last"})
SHOP = Record(SHOPS, {
    "id": "shop_id",
    "name": "name",
    "address": Group({"street": "street", "city": Column("city", default=None)}),
    "open": Column("open", load=bool, read=bool),
    "items": Many(ITEM, keyed=True),
    "tags": Column("tags", load=json.dumps, read=json.loads),
    "staff": Many(STAFFER, default_empty=True),
    "owners": Ids(OWNERS, "owner"),
    "rating": Column("rating", load=float, default=None),
    "note": Column("note", default="none given"),
}, key="shop_id")
DATABASE = Database({"shops": Many(SHOP, keyed=True)})

DB = {"shops": {
    "s2": {"id": "s2", "name": "Second", "address": {"street": "2 Elm", "city": "Oslo"}, "open": 1,
           "items": {"k9": {"kind": "food", "price": 3}, "k1": {"kind": "shirt", "size": "M"}},
           "tags": ["b", "a"], "staff": [{"first": "Ann", "last": "Lee"}, {"first": "Bo", "last": "Ek"}],
           "owners": ["zed", "amy"], "rating": 4, "note": "kept"},
    "s1": {"id": "s1", "name": "First", "address": {"street": "1 Oak"}, "open": False, "items": {},
           "tags": {"z": 1, "a": 2}, "owners": []},
}}


def world_of(db):
    return World(WorldImage.build(META, lambda conn: DATABASE.load(conn, db)))


def test_export_gives_back_what_was_loaded_with_defaults_filled_in_declared_key_order():
    exported = DATABASE.export(world_of(DB))
    second, first = exported["shops"]["s2"], exported["shops"]["s1"]
    assert list(exported["shops"]) == ["s2", "s1"]  # the JSON map's order, kept by position
    assert json.dumps(second) == json.dumps({
        "id": "s2", "name": "Second", "address": {"street": "2 Elm", "city": "Oslo"}, "open": True,
        "items": {"k9": {"kind": "food", "price": 3.0}, "k1": {"kind": "shirt", "size": "M"}},
        "tags": ["b", "a"], "staff": [{"first": "Ann", "last": "Lee"}, {"first": "Bo", "last": "Ek"}],
        "owners": ["zed", "amy"], "rating": 4.0, "note": "kept"})
    assert first == {"id": "s1", "name": "First", "address": {"street": "1 Oak", "city": None}, "open": False,
                     "items": {}, "tags": {"z": 1, "a": 2}, "staff": [], "owners": [], "rating": None,
                     "note": "none given"}
    assert list(first["tags"]) == ["z", "a"] and isinstance(first["open"], bool)


def test_rows_hold_the_json_flattened_with_positions_parent_keys_and_map_keys():
    world = world_of(DB)
    items = world.fetch_all(select(ITEMS).order_by(ITEMS.c.shop_id, ITEMS.c.position))
    assert items == [{"shop_id": "s2", "sku": "k9", "position": 0, "kind": "food", "price": 3.0, "size": None},
                     {"shop_id": "s2", "sku": "k1", "position": 1, "kind": "shirt", "price": None, "size": "M"}]
    shop = world.fetch_one(select(SHOPS).where(SHOPS.c.shop_id == "s2"))
    assert shop["tags"] == '["b", "a"]' and shop["street"] == "2 Elm" and shop["position"] == 0
    assert world.fetch_column(select(OWNERS.c.owner).order_by(OWNERS.c.position)) == ["zed", "amy"]


def test_read_of_one_row_is_its_record_and_a_shape_picks_the_keys():
    world = world_of(DB)
    row = world.fetch_one(select(SHOPS).where(SHOPS.c.shop_id == "s2"))
    assert SHOP.read(world, row) == DATABASE.export(world)["shops"]["s2"]
    assert ITEM.read(world, {"kind": "food", "price": 2.5, "size": "L"}) == {"kind": "food", "price": 2.5}
    assert list(ITEM.read(world, {"kind": "hat", "price": None, "size": "S"})) == ["kind", "size"]


def test_a_missing_required_key_fails_the_load_and_names_the_key():
    broken = {"shops": {"s1": {k: v for k, v in DB["shops"]["s1"].items() if k != "name"}}}
    with pytest.raises(KeyError, match="name"):
        world_of(broken)
    with pytest.raises(KeyError, match="owners"):
        world_of({"shops": {"s1": {k: v for k, v in DB["shops"]["s1"].items() if k != "owners"}}})
    with pytest.raises(KeyError, match="shops"):
        world_of({})


def test_the_compiled_reader_is_the_declaration_written_out():
    source, names = SHOP.reader_source()
    keys = [line.split(":")[0].strip().strip("'") for line in source.splitlines()[2:-1]]
    assert keys == list(SHOP.fields)
    assert "row['shop_id']" in source and all(name.isidentifier() for name in names)


# -- one-row records, checks and strictness (telecom's phone is declared this way) ---------------------------
DEVICE_META = MetaData()
GADGETS = Table("gadget", DEVICE_META, SqlColumn("id", Integer, primary_key=True), SqlColumn("mode", String),
                SqlColumn("on", Boolean), SqlColumn("level", Float), SqlColumn("has_vpn", Boolean),
                SqlColumn("vpn_host", String, nullable=True), SqlColumn("vpn_port", Integer, nullable=True),
                SqlColumn("bill_id", String, nullable=True), SqlColumn("bill_paid", Boolean, nullable=True),
                SqlColumn("apn", String), SqlColumn("apn_mms", String, nullable=True))
APPS = Table("apps", DEVICE_META, SqlColumn("name", String, primary_key=True), SqlColumn("position", Integer),
             SqlColumn("allowed", Boolean))
APP = Record(APPS, {"name": "name", "allowed": Column("allowed", load=boolean, read=bool, default=False)},
             key="name", strict=True)
GADGET = Record(GADGETS, {
    "mode": Column("mode", load=one_of("auto", "manual"), default="auto"),
    "on": Column("on", load=boolean, read=bool, default=True),
    "level": Column("level", load=number, default=0.5),
    "vpn": Group({"host": Column("vpn_host", load=text), "port": Column("vpn_port", default=None)},
                 optional=True, present="has_vpn"),
    "bill": Group({"id": Column("bill_id", load=text), "paid": Column("bill_paid", read=bool, default=False)},
                  optional=True, present="bill_id"),
    "apn": Group({"name": Column("apn", default="internet"), "mms": Column("apn_mms", default=None)}, default={}),
    "apps": Many(APP, keyed=True, linked=False, default={"mail": {"name": "mail", "allowed": True}}),
}, strict=True)
GADGET_DB = Database({"gadget": One(GADGET, fixed={"id": 1}, default={})}, strict=True)


def gadget_world(db):
    return World(WorldImage.build(DEVICE_META, lambda conn: GADGET_DB.load(conn, db)))


def test_a_one_row_record_takes_its_defaults_and_fixed_id_and_exports_back():
    world = gadget_world({})
    assert world.fetch_one(select(GADGETS.c.id, GADGETS.c.has_vpn)) == {"id": 1, "has_vpn": 0}
    assert GADGET_DB.export(world) == {"gadget": {
        "mode": "auto", "on": True, "level": 0.5, "vpn": None, "bill": None,
        "apn": {"name": "internet", "mms": None}, "apps": {"mail": {"name": "mail", "allowed": True}}}}
    given = {"gadget": {"mode": "manual", "on": False, "level": 2, "vpn": {"host": "h"},
                        "bill": {"id": "B1"}, "apn": {"mms": "m"}, "apps": {"a": {"name": "a"}, "b": {"name": "b",
                                                                                                  "allowed": True}}}}
    exported = GADGET_DB.export(gadget_world(given))["gadget"]
    assert exported == {"mode": "manual", "on": False, "level": 2.0, "vpn": {"host": "h", "port": None},
                        "bill": {"id": "B1", "paid": False}, "apn": {"name": "internet", "mms": "m"},
                        "apps": {"a": {"name": "a", "allowed": False}, "b": {"name": "b", "allowed": True}}}
    assert list(exported["apps"]) == ["a", "b"] and isinstance(exported["level"], float)


@pytest.mark.parametrize("db, where", [
    ({"gadget": {"mode": "turbo"}}, "gadget.mode: 'turbo' is not one of auto, manual"),
    ({"gadget": {"on": 1}}, "gadget.on: expected a boolean"),
    ({"gadget": {"level": True}}, "gadget.level: expected a number"),
    ({"gadget": {"vpn": {"host": 7}}}, "gadget.vpn.host: expected text"),
    ({"gadget": {"colour": "red"}}, "gadget: unknown field.s. colour"),
    ({"gadget": {"apn": {"name": "x", "speed": 1}}}, "gadget.apn: unknown field.s. speed"),
    ({"gadget": {"vpn": "on"}}, "gadget.vpn: expected an object"),
    ({"gadget": {}, "extra": {}}, "the database: unknown field.s. extra"),
    ({"gadget": {"apps": {"a": {"name": "b"}}}}, "gadget.apps.a: its name is 'b'"),
    ({"gadget": {"apps": ["a"]}}, "gadget.apps: expected an object"),
])
def test_a_value_that_fails_its_check_fails_the_load_and_says_where(db, where):
    with pytest.raises(ValueError, match=where):
        gadget_world(db)
