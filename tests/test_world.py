import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mua_gym.world.diff import HASH_MOD, row_hash
from mua_gym.world.image import WorldImage
from mua_gym.world import World


def full_hash(world: World) -> str:
    """The canonical hash recomputed from every row of the live database, without change tracking."""
    total = sum(row_hash(info.name, row) for info in world.image.tables.values()
                for row in world.raw.execute(info.select_all))
    return f"{total % HASH_MOD:032x}"


def test_reset_and_hash(world):
    start = world.state_hash()
    assert world.call_tool("cancel_order", {"order_id": "O1001", "reason": "no longer needed"}).error is False
    changed = world.state_hash()
    assert changed != start
    assert changed == full_hash(world)
    world.reset()
    assert world.state_hash() == start
    assert world.changes() == {}


def test_hash_ignores_row_order_and_volatile_columns(world, mock):
    start = world.state_hash()
    world.raw.execute("UPDATE customers SET last_contact = 12345")
    assert world.state_hash() == start
    assert world.changes() == {}
    # Same content, rows re-inserted in another order (other rowids): same hash.
    rows = world.raw.execute("SELECT * FROM order_lines ORDER BY order_id DESC, line DESC").fetchall()
    world.raw.execute("PRAGMA foreign_keys = OFF")
    world.raw.execute("DELETE FROM order_lines")
    world.raw.executemany("INSERT INTO order_lines VALUES (?, ?, ?, ?, ?)", rows)
    assert world.state_hash() == start
    assert world.changes() == {}


def test_same_seed_same_world_other_seed_other_world(mock):
    a = mock.image()
    b = WorldImage.build(mock.metadata, lambda c: mock.worlds["generated"](c, seed=0))
    c = WorldImage.build(mock.metadata, lambda c: mock.worlds["generated"](c, seed=1))
    assert a.hash == b.hash
    assert a.data == b.data  # bit-identical bytes for the same seed
    assert a.hash != c.hash


def test_failing_write_leaves_world_unchanged(world):
    before = world.state_hash()
    snapshot = _content(world)
    # Ordering more than the stock fails after the gift-card check; the world must not move.
    r = world.call_tool("place_order", {"customer_id": "C002", "items": [
        {"product_id": "P04", "quantity": 1}, {"product_id": "P03", "quantity": 8}], "payment": "gift_card"})
    assert r.error and r.content.startswith("Error: only 7 of P03")
    assert world.state_hash() == before
    assert _content(world) == snapshot


def test_tool_that_raises_midway_is_rolled_back(mock):
    from mua_gym.tools import Toolkit, tool

    @tool(kind="write")
    def half_write(world: World) -> str:
        """Writes, then crashes."""
        world.raw.execute("UPDATE products SET stock = 0")
        raise RuntimeError("boom")

    w = World(mock.image(), Toolkit.of(half_write))
    before = w.state_hash()
    r = w.call_tool("half_write", {})
    assert r.error and r.content == "Error: boom"
    assert w.state_hash() == before
    assert w.raw.execute("SELECT SUM(stock) FROM products").fetchone()[0] == 259


def test_snapshot_restore_round_trip(world, mock):
    world.call_tool("update_email", {"customer_id": "C003", "email": "x@y.z"})
    snap = world.snapshot()
    h = world.state_hash()
    world.call_tool("cancel_order", {"order_id": "O1007", "reason": "no longer needed"})
    assert world.state_hash() != h
    world.restore(snap)
    assert world.state_hash() == h
    assert world.changes().keys() == {"customers"}
    other = mock.new_world()
    other.restore(snap)  # branching: another world of the same image continues from the snapshot
    assert other.state_hash() == h
    foreign = World(WorldImage.build(mock.metadata, lambda c: mock.worlds["generated"](c, seed=3)))
    with pytest.raises(ValueError):
        foreign.restore(snap)


def test_diff_structure(world, mock):
    gold = mock.new_world()
    gold.call_tool("cancel_order", {"order_id": "O1001", "reason": "no longer needed"})
    gold.call_tool("place_order", {"customer_id": "C001", "items": [{"product_id": "P02", "quantity": 1}],
                                   "payment": "card"})
    d = world.diff(gold)
    assert set(d.tables) == {"orders", "order_lines", "products", "counters"}
    orders = d.tables["orders"]
    assert [r.key for r in orders.inserted] == [{"order_id": "O2061"}]
    assert [(r.key, r.changed, r.before, r.after) for r in orders.updated] == [
        ({"order_id": "O1001"}, ["status", "cancel_reason"], {"status": "pending", "cancel_reason": None},
         {"status": "cancelled", "cancel_reason": "no longer needed"})]
    assert gold.diff(world).tables["orders"].deleted[0].key == {"order_id": "O2061"}
    assert world.diff(world).empty


def test_fast_diff_equals_full_diff(mock):
    a, b = mock.new_world(), mock.new_world()
    a.call_tool("update_email", {"customer_id": "C001", "email": "a@b.c"})
    b.call_tool("return_order", {"order_id": "O1004"})
    b.call_tool("update_email", {"customer_id": "C001", "email": "q@b.c"})
    fresh_image = WorldImage.build(mock.metadata, lambda c: mock.worlds["generated"](c, seed=0))
    b_full = World(fresh_image)
    b_full.load(b.serialize())
    assert a.diff(b) == a.diff(b_full)  # same-image fast path vs. the full-table comparison


def test_replace_conflicts_are_tracked(world):
    # INSERT OR REPLACE deletes the old row under the hood; tracking must see it.
    world.raw.execute("INSERT OR REPLACE INTO products VALUES ('P01', 'Espresso cup', 10.0, 40)")
    assert world.state_hash() == full_hash(world)
    assert world.changes() == {"products": {("P01",): ("P01", "Espresso cup", 10.0, 40)}}


CALLS = st.one_of(
    st.builds(lambda o, r: ("cancel_order", {"order_id": o, "reason": r}),
              st.sampled_from(["O1001", "O1002", "O1003", "O1006", "O2001", "O9999"]),
              st.sampled_from(["no longer needed", "ordered by mistake", "bored"])),
    st.builds(lambda o: ("return_order", {"order_id": o}), st.sampled_from(["O1004", "O1005", "O1001", "O2002"])),
    st.builds(lambda c, e: ("update_email", {"customer_id": c, "email": e}),
              st.sampled_from(["C001", "C002", "C100", "C999"]),
              st.sampled_from(["new@x.org", "ben@example.com", "bad", "z@z.z"])),
    st.builds(lambda c, p, q, pay: ("place_order", {"customer_id": c, "items": [{"product_id": p, "quantity": q}],
                                                    "payment": pay}),
              st.sampled_from(["C001", "C002", "C004"]), st.sampled_from(["P01", "P03", "P05", "P99"]),
              st.integers(1, 9), st.sampled_from(["card", "gift_card"])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(CALLS, max_size=8))
def test_tracked_hash_equals_full_hash(mock, calls):
    w = mock.new_world()
    for name, args in calls:
        w.call_tool(name, args)
    assert w.state_hash() == full_hash(w)
    # The change set names exactly the rows that differ from a fresh world.
    fresh = mock.new_world()
    d = fresh.diff(w)
    assert d.count() == sum(len(rows) for rows in w.changes().values())
    # A reset rewrites only the changed rows, and gives back the image exactly (volatile columns included).
    w.raw.execute("UPDATE customers SET last_contact = 7 WHERE customer_id = 'C002'")
    w.reset()
    assert w.changes() == {} and w.state_hash() == fresh.state_hash()
    for table in ("customers", "products", "orders", "order_lines", "counters", "devices"):
        q = f"SELECT rowid, * FROM {table} ORDER BY rowid"
        assert w.raw.execute(q).fetchall() == fresh.raw.execute(q).fetchall()
    w.close()
    fresh.close()


def test_sql_injection_in_arguments_is_inert(world):
    before = world.state_hash()
    r = world.call_tool("get_order", {"order_id": "O1001' OR '1'='1"})
    assert r.error
    r = world.call_tool("find_customer_by_email", {"email": "x'; DROP TABLE customers; --"})
    assert r.error
    assert world.state_hash() == before
    assert world.raw.execute("SELECT COUNT(*) FROM customers").fetchone()[0] == 24


def test_image_is_sqlite(mock):
    con = sqlite3.connect(":memory:")
    con.deserialize(mock.image().data)
    assert con.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 67


def test_after_call_hook_runs_inside_the_call_and_setup_tools_are_separate(mock):
    from mua_gym.tools import Toolkit, tool

    @tool(kind="write")
    def break_stock(world: World) -> str:
        """Setup only: empties the stock."""
        world.raw.execute("UPDATE products SET stock = 0")
        return "ok"

    calls = []

    def recount(world: World) -> None:
        calls.append(world.raw.execute("SELECT SUM(stock) FROM products").fetchone()[0])
        if calls[-1] == 0:
            raise RuntimeError("sync refused")

    w = World(mock.image(), mock.tools, mock.user_tools, after_call=recount, setup_tools=Toolkit.of(break_stock))
    before = w.state_hash()
    assert w.call_tool("break_stock", {}).content == "Error: unknown tool 'break_stock'"
    assert not w.call_tool("get_order", {"order_id": "O1001"}).error and calls == [259]
    r = w.call_tool("break_stock", {}, requestor="setup")
    assert r.content == "Error: sync refused" and w.state_hash() == before  # the hook is part of the atomic call


@pytest.mark.parametrize("how", ["raw", "execute", "conn"])
def test_a_read_tool_that_writes_is_an_error_and_its_writes_are_undone(mock, how):
    from sqlalchemy import column, table, text, update

    from mua_gym.tools import Toolkit, tool

    @tool(kind="read")
    def peek(world: World) -> str:
        """Says it reads; writes."""
        if how == "raw":
            world.raw.execute("UPDATE products SET stock = 0")
        elif how == "execute":
            world.execute(update(table("products", column("stock"))).values(stock=0))
        else:
            world.conn.execute(text("UPDATE products SET stock = 0"))
        return "fine"

    @tool(kind="read")
    def count() -> int:
        """Reads nothing from the world."""
        return 3

    w = World(mock.image(), Toolkit.of(peek, count))
    before = w.state_hash()
    r = w.call_tool("peek", {})
    assert r.error and "declared kind='read' but wrote" in r.content and "kind='write'" in r.content
    assert w.state_hash() == before
    assert w.raw.execute("SELECT SUM(stock) FROM products").fetchone()[0] == 259
    assert w.call_tool("count", {}).content == "3" and w.state_hash() == before

def test_tools_may_use_the_sqlalchemy_connection_inside_their_savepoint(mock):
    from sqlalchemy import text

    from mua_gym.tools import Toolkit, tool

    @tool(kind="write")
    def via_core(world: World) -> str:
        """Writes through SQLAlchemy, then fails."""
        world.conn.execute(text("UPDATE products SET stock = stock + 1"))
        raise RuntimeError("after the write")

    w = World(mock.image(), Toolkit.of(via_core))
    before = w.state_hash()
    assert w.call_tool("via_core", {}).content == "Error: after the write"
    assert w.state_hash() == before


def _statements(w: World, call) -> list[str]:
    """The SQL statements SQLite ran for ``call()`` on ``w``."""
    ran: list[str] = []
    w.raw.set_trace_callback(ran.append)
    try:
        call()
    finally:
        w.raw.set_trace_callback(None)
    return ran


def test_calls_share_one_standing_savepoint_and_each_failure_undoes_only_its_own_call(mock):
    from sqlalchemy import text

    from mua_gym.tools import Toolkit, tool

    @tool(kind="read")
    def stock() -> int:
        """The total stock."""
        return w.raw.execute("SELECT SUM(stock) FROM products").fetchone()[0]

    @tool(kind="write")
    def add(n: int) -> str:
        """Adds n to every stock; fails after writing when n is negative."""
        w.conn.execute(text("UPDATE products SET stock = stock + :n"), {"n": abs(n)})
        if n < 0:
            raise RuntimeError("refused after writing")
        return "ok"

    @tool(kind="read")
    def sneaky() -> str:
        """Says it reads; writes."""
        w.raw.execute("UPDATE products SET stock = 0")
        return "fine"

    w = World(mock.image(), Toolkit.of(stock, add, sneaky))
    total = lambda: w.call_tool("stock", {}).content  # noqa: E731
    assert total() == "259"
    # a read after a read takes no savepoint: only the tool's own statement runs
    assert [s.split()[0] for s in _statements(w, total)] == ["SELECT"]
    assert w.call_tool("add", {"n": 1}).content == "ok" and total() == "264"  # 5 products
    assert w.call_tool("add", {"n": -10}).error and total() == "264"  # its own writes undone, the last call's kept
    assert w.call_tool("sneaky", {}).error and total() == "264"
    with w.savepoint():  # a call inside a block nests its own savepoint; the block's writes stay with the block
        assert w.call_tool("add", {"n": 1}).content == "ok"
        assert w.call_tool("add", {"n": -1}).error
    assert total() == "269"
    with pytest.raises(KeyError):
        with w.savepoint():
            assert w.call_tool("add", {"n": 100}).content == "ok"
            raise KeyError("the block fails")
    assert total() == "269" and w.call_tool("sneaky", {}).error and total() == "269"
    # a reset releases the standing savepoint before it rolls back: one rolled back over slows every later reset
    assert _statements(w, w.reset)[:2] == ["RELEASE mua_tool", "ROLLBACK"]
    assert total() == "259" and w.call_tool("add", {"n": -5}).error and total() == "259"
    # A transaction ended by hand takes the standing savepoint with it: a failing call then says it stays written.
    w.raw.execute("ROLLBACK")
    w.raw.execute("BEGIN")
    failed = w.call_tool("add", {"n": -1})
    assert failed.error and "its writes stay" in failed.content
    w.reset()
    assert total() == "259" and w.call_tool("add", {"n": -1}).content == "Error: refused after writing"
    assert total() == "259"


def _content(w: World) -> dict[str, list[tuple]]:
    """Every row of every table, volatile columns and rowids included."""
    return {t: w.raw.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid").fetchall() for t in w.image.tables}


def _brute_changes(w: World, pristine: World) -> dict:
    """World.changes() computed the slow way: every table of both worlds compared key by key."""
    out: dict = {}
    for name, info in w.image.tables.items():
        now = {info.key(r): r for r in w.raw.execute(info.select_all)}
        then = {info.key(r): r for r in pristine.raw.execute(info.select_all)}
        rows = {k: now.get(k) for k in set(now) | set(then) if now.get(k) != then.get(k)}
        if rows:
            out[name] = rows
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(CALLS, max_size=6), then=st.lists(CALLS, max_size=6), edits=st.lists(st.sampled_from([
    "DELETE FROM order_lines WHERE rowid = (SELECT min(rowid) FROM order_lines)",
    "UPDATE order_lines SET line = line + 10 WHERE rowid = (SELECT max(rowid) FROM order_lines)",
    "INSERT INTO products VALUES ('P50', 'Tea', 2.0, 5)",
    "UPDATE products SET product_id = 'P51' WHERE product_id = 'P50'",
    "UPDATE products SET rowid = rowid + 100 WHERE product_id = 'P02'",
    "INSERT OR REPLACE INTO products SELECT 'P03', name, price, stock + 1 FROM products WHERE product_id = 'P01'",
]), max_size=4))
def test_reset_to_a_delta_reaches_that_state_from_any_state(mock, first, then, edits):
    a = mock.new_world()
    for name, args in first:
        a.call_tool(name, args)
    for sql in edits:  # rows deleted, keys changed, rows moved to other rowids: what no tool of the mock does
        try:
            a.raw.execute(sql)
        except sqlite3.IntegrityError:
            pass
    a.raw.execute("UPDATE customers SET last_contact = 3 WHERE customer_id = 'C001'")  # volatile columns travel too
    delta, wanted, wanted_hash = a.delta(), _content(a), a.state_hash()
    b = mock.new_world()
    for name, args in then:
        b.call_tool(name, args)
    b.reset(delta)
    assert _content(b) == wanted
    assert b.state_hash() == wanted_hash == full_hash(b)
    assert b.changes() == a.changes() == _brute_changes(a, mock.new_world()) and b.delta() == delta
    for name, args in then:  # an episode from that start, then the same start again (a rollback to it)
        b.call_tool(name, args)
    b.reset(delta)
    assert _content(b) == wanted and b.state_hash() == wanted_hash and b.delta() == delta
    c = World(mock.image())
    c.load(a.serialize())  # the bytes of the live content (what the connection would serialize is the image)
    assert _content(c) == wanted and c.state_hash() == wanted_hash
    c.reset()
    assert _content(c) == _content(mock.new_world())
    b.reset()  # and back to the image: the delta's rows are tracked like any change
    assert b.changes() == {} and _content(b) == _content(mock.new_world())
    a.close()
    b.close()
    c.close()


@pytest.mark.parametrize("shared", [True, False])
def test_a_world_whose_transaction_was_ended_by_hand_still_resets(mock, shared):
    pristine = _content(mock.new_world())
    if shared:  # a COMMIT would write the file every world of the image shares: refused, and nothing changes
        w = World(mock.image(), mock.tools, shared_base=True)
        assert not w.call_tool("update_email", {"customer_id": "C001", "email": "q@x.org"}).error
        before = _content(w)
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            w.raw.execute("COMMIT")
        assert _content(w) == before and open(w.image.file(), "rb").read() == w.image.data
    for end in ("ROLLBACK", "ROLLBACK; BEGIN") if shared else ("COMMIT", "ROLLBACK", "COMMIT; BEGIN"):
        w = World(mock.image(), mock.tools, shared_base=shared)
        assert not w.call_tool("update_email", {"customer_id": "C001", "email": "q@x.org"}).error
        for statement in end.split("; "):  # not allowed by the contract, but a notebook may do it
            w.raw.execute(statement)
        assert not w.call_tool("update_email", {"customer_id": "C002", "email": "r@x.org"}).error
        w.reset()
        assert _content(w) == pristine and w.changes() == {}
        assert not w.call_tool("update_email", {"customer_id": "C003", "email": "s@x.org"}).error
        w.reset()
        assert _content(w) == pristine
        w.close()


def _with_memo(mock) -> World:
    """A mock world with a memo (the mock domain asks for none)."""
    plain = mock.new_world()
    world = World(plain.image, plain.tools, memo=True)
    plain.close()
    return world


def test_a_world_has_a_memo_only_where_its_domain_asks(mock):
    import mua_gym

    plain = mock.new_world()
    assert plain.memo is None and plain.memory() == {}
    assert not plain.call_tool("update_email", {"customer_id": "C001", "email": "p@x.org"}).error
    plain.reset(plain.delta(), {"ignored": (("customers",), 1)})  # nothing to remember it in
    assert plain.memory() == {}
    telecom = mua_gym.get_domain("telecom").new_world()
    assert telecom.memo is not None
    plain.close()
    telecom.close()


def test_memory_lasts_until_its_tables_are_written(mock):
    w = _with_memo(mock)
    w.memo.remember("emails", ("customers",), {"C001": "x"})
    assert w.memo.recall("emails") == {"C001": "x"}
    assert w.call_tool("cancel_order", {"order_id": "O1001", "reason": "no longer needed"}).error is False
    assert w.memo.recall("emails") is not None  # another table was written
    assert w.call_tool("update_email", {"customer_id": "C001", "email": "new@x.org"}).error is False
    assert w.memo.recall("emails") is None
    for forget in (lambda: w.call_tool("update_email", {"customer_id": "C999", "email": "a@b.c"}),  # failed call
                   lambda: w.restore(w.snapshot()), w.reset):
        w.memo.remember("emails", ("customers",), 1)
        forget()
        assert w.memo.recall("emails") is None
    # A start state's memory travels with its delta into another world of the image.
    assert w.call_tool("update_email", {"customer_id": "C002", "email": "new@x.org"}).error is False
    w.memo.remember("emails", ("customers",), 2)
    delta, memory = w.delta(), w.memory()
    other = _with_memo(mock)
    other.reset(delta, memory)
    assert other.memo.recall("emails") == 2
    other.reset()
    assert other.memo.recall("emails") is None
    w.close()
    other.close()


def test_reset_to_a_delta_where_rows_swapped_a_unique_value(mock):
    a, b = mock.new_world(), mock.new_world()
    assert not a.call_tool("update_email", {"customer_id": "C002", "email": "z@z.z"}).error
    assert not b.call_tool("update_email", {"customer_id": "C001", "email": "z@z.z"}).error
    b.reset(a.delta())  # C001 must give the address up before C002 can take it
    assert _content(b) == _content(a) and b.state_hash() == a.state_hash()
    a.close()
    b.close()


def test_memory_notices_writes_made_around_execute(mock):
    w = _with_memo(mock)
    w.memo.remember("stock", ("products",), 259)
    w.raw.execute("UPDATE counters SET value = value")  # touches no remembered table, but the world cannot tell
    assert w.memo.recall("stock") is None
    w.memo.remember("stock", ("products",), 259)
    from sqlalchemy import text
    w.conn.execute(text("UPDATE products SET stock = 0"))
    assert w.memo.recall("stock") is None
    w.memo.remember("stock", ("products",), 0)
    assert w.memo.recall("stock") == 0  # and reads change nothing
    w.raw.execute("SELECT * FROM products").fetchall()
    assert w.memo.recall("stock") == 0
    w.close()


def test_changes_take_a_kept_row_while_its_table_is_unwritten(mock):
    w, pristine = _with_memo(mock), _with_memo(mock)
    assert not w.call_tool("update_email", {"customer_id": "C001", "email": "k@x.org"}).error
    info = w.image.tables["customers"]
    rid = w.raw.execute("SELECT rowid FROM customers WHERE customer_id = 'C001'").fetchone()[0]
    real = w.raw.execute(info.select_full_by_rowid, (rid,)).fetchone()
    w.memo.remember_row("customers", rid, real)
    assert w.memo.known_row("customers", rid) == real and w.changes() == _brute_changes(w, pristine)
    email = info.every_column.index("email")
    fake = real[:email] + ("kept@x.org",) + real[email + 1:]
    w.memo.remember_row("customers", rid, fake)  # a domain's word is taken: the row is not read again
    assert w.changes()["customers"][("C001",)][info.columns.index("email")] == "kept@x.org"
    assert not w.call_tool("cancel_order", {"order_id": "O1001", "reason": "no longer needed"}).error  # not customers
    assert w.memo.known_row("customers", rid) == fake
    assert not w.call_tool("update_email", {"customer_id": "C002", "email": "m@x.org"}).error
    assert w.memo.known_row("customers", rid) is None  # its table was written: read again
    assert w.changes() == _brute_changes(w, pristine)
    w.close()
    pristine.close()


def test_writes_around_the_tools_in_a_savepoint(mock):
    w, pristine = _with_memo(mock), _with_memo(mock)
    assert not w.call_tool("update_email", {"customer_id": "C001", "email": "a@x.org"}).error
    info = w.image.tables["customers"]
    rid = w.raw.execute("SELECT rowid FROM customers WHERE customer_id = 'C001'").fetchone()[0]
    with pytest.raises(RuntimeError):
        with w.savepoint():
            w.raw.execute("UPDATE customers SET email = 'b@x.org' WHERE customer_id = 'C001'")
            w.memo.remember_row("customers", rid, w.raw.execute(info.select_full_by_rowid, (rid,)).fetchone())
            raise RuntimeError("undo")
    assert w.memo.known_row("customers", rid) is None  # what was kept inside the block is forgotten with it
    assert w.changes() == _brute_changes(w, pristine)
    assert w.changes()["customers"][("C001",)][info.columns.index("email")] == "a@x.org"
    with w.savepoint():
        w.raw.execute("UPDATE customers SET email = 'c@x.org' WHERE customer_id = 'C001'")
    assert w.changes() == _brute_changes(w, pristine)
    w.close()
    pristine.close()


def test_worlds_share_their_image_file_and_never_write_it(mock):
    image = mock.image()
    first, second = World(image, mock.tools, shared_base=True), World(image, mock.tools, shared_base=True)
    pristine = open(image.file(), "rb").read()
    assert pristine == image.data and first._on_file and second._on_file
    assert not first.call_tool("update_email", {"customer_id": "C001", "email": "q@x.org"}).error
    assert first.changes() and not second.changes()  # each world's writes are its own
    assert second.call_tool("cancel_order", {"order_id": "O1001", "reason": "no longer needed"}).error is False
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):  # a COMMIT would write the shared file
        first.raw.execute("COMMIT")
    first.raw.execute("ROLLBACK")  # ended by hand: the world opens its transaction again before it writes
    assert not first.call_tool("update_email", {"customer_id": "C002", "email": "r@x.org"}).error
    with first.savepoint():
        first.raw.execute("UPDATE products SET stock = 1")
    first.reset()
    second.reset()
    assert open(image.file(), "rb").read() == pristine
    assert first.state_hash() == second.state_hash() == World(image, mock.tools, shared_base=False).state_hash()
    first.close()
    second.close()


def test_a_shared_base_world_holds_far_less_than_a_copy(mock):
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("sqlite3")
    if name is None:
        pytest.skip("no libsqlite3 to read SQLite's heap from")
    used = ctypes.CDLL(name).sqlite3_memory_used
    used.restype = ctypes.c_int64
    builder = mock.new_world(extra_customers=2000)  # a world of ~2 MB, as the benchmarks use
    image = builder.image
    builder.close()

    def heap_per_world(shared: bool) -> float:
        before = used()
        worlds = [World(image, mock.tools, shared_base=shared) for _ in range(10)]
        for w in worlds:
            assert not w.call_tool("get_order", {"order_id": "O1001"}).error
            assert not w.call_tool("update_email", {"customer_id": "C001", "email": "q@x.org"}).error
        per = (used() - before) / 10
        for w in worlds:
            w.close()
        return per

    copy, shared = heap_per_world(False), heap_per_world(True)
    assert copy > len(image.data) * 0.9  # a copy holds the whole database
    print(f"SQLite heap per world: copy {copy / 1e3:.0f} KB, shared {shared / 1e3:.0f} KB")
    assert shared < copy / 3, (shared, copy, len(image.data))


def test_an_image_file_goes_with_its_image_and_not_from_a_forked_child(mock, tmp_path):
    import gc
    import os

    from mua_gym.world.image import WorldImage, _remove_file

    image = WorldImage.from_bytes(mock.image().metadata, mock.image().data, mock.image().hash)
    path = image.file()
    kept = tmp_path / "kept.sqlite"
    kept.write_bytes(b"x")
    _remove_file(str(kept), os.getpid() + 1)  # as a child's exit would run it
    assert kept.exists()
    del image
    gc.collect()
    assert not os.path.exists(path)


def test_image_files_of_killed_processes_are_swept_and_no_others(mock, tmp_path, monkeypatch):
    import os
    import signal
    import subprocess
    import sys
    import tempfile

    from mua_gym.world import image as image_module
    from mua_gym.world.image import WorldImage

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child.send_signal(signal.SIGKILL)  # killed: its finalizers never ran
    child.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        monkeypatch.setattr(image_module, "_swept", False)
        dead = tmp_path / f"mua-gym-image-{child.pid}-abc.sqlite"
        live = tmp_path / f"mua-gym-image-{sleeper.pid}-abc.sqlite"
        other = tmp_path / f"other-{child.pid}-abc.sqlite"
        for path in (dead, live, other):
            path.write_bytes(b"x")
        image = WorldImage.from_bytes(mock.image().metadata, mock.image().data, mock.image().hash)
        path = image.file()  # a process's first file sweeps
        assert os.path.basename(path).startswith(f"mua-gym-image-{os.getpid()}-")
        assert not dead.exists() and live.exists() and other.exists()
        dead.write_bytes(b"x")
        WorldImage.from_bytes(mock.image().metadata, mock.image().data, mock.image().hash).file()
        assert dead.exists()  # once a process only: a file is not a hot path for directory scans
        assert image_module.sweep_stale_files(str(tmp_path)) == [str(dead)] and os.path.exists(path)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_write_that_reached_the_shared_file_is_noticed_and_new_worlds_get_a_fresh_one(mock):
    image = mock.image()
    w = World(image, mock.tools, shared_base=True)
    pristine, path = _content(World(image, mock.tools)), image.file()
    assert not w.call_tool("update_email", {"customer_id": "C001", "email": "q@x.org"}).error
    w.raw.execute("ROLLBACK")  # against the contract: ends the world's transaction ...
    w.raw.execute("UPDATE products SET stock = 0")  # ... so this write commits, to the shared file
    assert open(path, "rb").read() != image.data
    with pytest.warns(RuntimeWarning, match="reached its image's shared file"):
        w.reset()
    assert _content(w) == pristine and not w._on_file  # this world: a private copy of the image
    fresh = World(image, mock.tools, shared_base=True)
    assert image.file() != path and _content(fresh) == pristine


def test_a_removed_image_file_is_written_again_and_odd_folder_names_work(mock, tmp_path, monkeypatch):
    import os
    import tempfile

    from mua_gym.world.image import WorldImage

    image = WorldImage.from_bytes(mock.image().metadata, mock.image().data, mock.image().hash)
    os.remove(image.file())  # as a tmp cleaner might
    assert _content(World(image, mock.tools, shared_base=True)) == _content(World(image, mock.tools))
    odd = tmp_path / "a #b?c%d"
    odd.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(odd))
    other = WorldImage.from_bytes(mock.image().metadata, mock.image().data, mock.image().hash)
    assert other.file().startswith(str(odd))
    w = World(other, mock.tools, shared_base=True)
    assert w.call_tool("get_order", {"order_id": "O1001"}).error is False


def test_make_passes_shared_base_to_the_worlds_it_builds():
    import mua_gym

    shared, private = mua_gym.make("mua/Mock-v0", shared_base=True), mua_gym.make("mua/Mock-v0")
    for env in (shared, private):
        env.reset(seed=0)
    assert shared.unwrapped.world._on_file and not private.unwrapped.world._on_file
    shared.close()
    private.close()
