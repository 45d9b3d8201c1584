"""Stock held in a product line: the products kind's steps and the counter's
journal, each step one conditional update (DESIGN §3, §3.8)."""

from datetime import UTC, datetime, timedelta

import pytest
from pymongo.collection import Collection
from pymongo.errors import AutoReconnect

from catalog.errors import NotStocked, OutOfStock
from catalog.selectors.stock import stock_level
from catalog.services.counters import RECOVERY
from catalog.services.counters import finished as _finished
from catalog.services.stock import stock_ledger_settle, stock_restock
from shop.cart_state import ACTIVE, COMPLETE
from shop.documents import Cart, CartLine
from shop.kinds import PRODUCTS, line_stock
from shop.services.common import carts, touched
from tests.stock import held_by, hold, stock_problems

NOW = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


def inventory(mongo_db, sku="SKU-1"):
    return mongo_db.inventories.find_one({"_id": sku})


def line_of(cart_id: str, sku: str) -> CartLine:
    cart = Cart._from_son(carts().find_one({"_id": cart_id}))
    return next(x for x in cart.items if x.sku == sku)


def grow(cart_id: str, sku: str, units: int) -> bool:
    """The cart's line takes ``units`` more, guarded on the line as read."""
    old = line_of(cart_id, sku)
    taken = PRODUCTS.take(cart_id=cart_id, line=PRODUCTS.part(old, units), now=NOW)
    if PRODUCTS.grow(cart_id=cart_id, line=taken, old=old.quantity, now=NOW):
        return True
    PRODUCTS.untake(cart_id=cart_id, line=taken)
    return False


def release(cart_id: str, sku: str, line: CartLine | None = None) -> bool:
    """The line (as read now, or as given) taken off its cart."""
    line = line or line_of(cart_id, sku)
    return PRODUCTS.take_back(
        cart_id=cart_id, line=line, update=touched({}, NOW), now=NOW
    )


def sell(cart_id: str) -> bool:
    """Every line sold in the write that completes the active cart."""
    cart = Cart._from_son(carts().find_one({"_id": cart_id}))

    def complete(push):
        query = {"_id": cart_id, "state": ACTIVE}
        change = line_stock.merged({"$set": {"state": COMPLETE}}, push)
        return carts().update_one(query, change).modified_count

    entries = PRODUCTS.backs(lines=cart.items, sold=True, now=NOW)
    return line_stock.give(cart_id=cart_id, entries=entries, write=complete)


def journal(mongo_db, sku="SKU-1") -> tuple[int, int]:
    doc = inventory(mongo_db, sku)
    return len(doc.get("takes") or []), len(doc.get("gives") or [])


@pytest.fixture
def sku():
    stock_restock(sku="SKU-1", quantity=100, note="initial")
    return "SKU-1"


def test_a_take_moves_units_into_the_cart_s_line(mongo_db, sku):
    hold(sku, "cart-a", 2, NOW)

    doc = inventory(mongo_db)
    assert doc["quantity"] == 98
    assert held_by("cart-a", sku) == 2
    # No list of holders on the counter: only the finished take's entry,
    # which this process's next write drops.
    assert journal(mongo_db) == (1, 0)
    assert line_stock.held_units()[sku] == 2  # nothing in flight
    assert "reservations" not in doc


def test_a_take_drops_the_finished_entries_of_earlier_moves(mongo_db, sku):
    """Three lines, a growth and a release: each write to the counter drops
    what the moves before it finished, so only the last one's entry stays."""
    for cart in ("cart-a", "cart-b", "cart-c"):
        hold(sku, cart, 1, NOW)
    assert grow("cart-a", sku, 2)
    assert release("cart-b", sku)
    hold(sku, "cart-d", 1, NOW)

    assert journal(mongo_db) == (1, 0)
    assert stock_problems() == []


def test_a_refused_take_keeps_the_finished_entries_for_the_next_write(mongo_db, sku):
    hold(sku, "cart-a", 1, NOW)
    with pytest.raises(OutOfStock):
        hold(sku, "cart-b", 1000, NOW)
    hold(sku, "cart-c", 1, NOW)

    (entry,) = inventory(mongo_db)["takes"]
    assert entry["hold"] == "SKU-1|cart-c"


def test_the_reconciler_drops_finished_entries_without_fencing_their_carts(
    mongo_db, sku
):
    """An entry no process dropped (its writer stopped, or never wrote the
    SKU again): the cart proves the move, so the entry goes and the cart is
    left as it was."""
    hold(sku, "cart-a", 2, NOW)
    assert release("cart-a", sku)
    hold(sku, "cart-b", 1, NOW)
    # The release's give-back entry went with the last take; the take stays.
    assert journal(mongo_db) == (1, 0)

    undone = line_stock.recover(before=NOW + timedelta(minutes=5))

    assert undone == 0
    assert journal(mongo_db) == (0, 0)
    assert not mongo_db.carts.find_one({"_id": "cart-b"}).get("stock_void")
    assert held_by("cart-b", sku) == 1
    assert stock_problems() == []


def test_a_recovery_s_fence_outlives_a_write_that_drops_its_op(mongo_db, sku):
    """Only the cleanup's retention ends a recovery's fence: a write told to
    drop that op's finished entry keeps it."""
    fence = {"op": "x", "hold": "h", "at": NOW, "by": RECOVERY, "fence": False}
    mongo_db.inventories.update_one({"_id": sku}, {"$push": {"gives": fence}})
    _finished.add(sku, gives=["x"])

    hold(sku, "cart-a", 1, NOW)

    assert inventory(mongo_db)["gives"] == [fence]


def test_a_take_short_of_units_says_how_many_are_left_and_changes_nothing(
    mongo_db, sku
):
    hold(sku, "cart-a", 99, NOW)

    with pytest.raises(OutOfStock) as refused:
        hold(sku, "cart-b", 2, NOW)

    assert refused.value.available == 1
    assert "only 1 left" in refused.value.message
    assert inventory(mongo_db)["quantity"] == 1
    assert held_by("cart-b", sku) == 0
    assert journal(mongo_db) == (1, 0)  # cart-a's finished take only


def test_a_take_of_a_location_without_stock_is_refused(mongo_db):
    with pytest.raises(NotStocked):
        hold("NOPE", "cart-a", 1, NOW)
    assert mongo_db.inventories.count_documents({}) == 0


def test_a_growth_beyond_free_stock_is_refused_and_changes_nothing(mongo_db, sku):
    hold(sku, "cart-a", 2, NOW)

    with pytest.raises(OutOfStock):
        grow("cart-a", sku, 99)

    assert held_by("cart-a", sku) == 2
    assert inventory(mongo_db)["quantity"] == 98


def test_a_growth_from_a_stale_read_is_refused_and_its_units_go_back(mongo_db, sku):
    hold(sku, "cart-a", 2, NOW)
    stale = line_of("cart-a", sku)
    assert grow("cart-a", sku, 1)

    taken = PRODUCTS.take(cart_id="cart-a", line=PRODUCTS.part(stale, 1), now=NOW)
    assert not PRODUCTS.grow(cart_id="cart-a", line=taken, old=stale.quantity, now=NOW)
    PRODUCTS.untake(cart_id="cart-a", line=taken)

    assert held_by("cart-a", sku) == 3
    assert inventory(mongo_db)["quantity"] == 97
    assert stock_problems() == []


def test_a_release_gives_the_units_back_once(mongo_db, sku):
    hold(sku, "cart-a", 3, NOW)
    as_read = line_of("cart-a", sku)

    assert release("cart-a", sku, as_read)
    assert not release("cart-a", sku, as_read)

    assert inventory(mongo_db)["quantity"] == 100
    assert held_by("cart-a", sku) == 0
    assert mongo_db.carts.find_one({"_id": "cart-a"})["stock_back"] == []
    assert stock_problems() == []


def test_a_release_of_a_line_that_changed_is_refused(mongo_db, sku):
    hold(sku, "cart-a", 3, NOW)
    as_read = line_of("cart-a", sku)
    assert grow("cart-a", sku, 1)

    assert not release("cart-a", sku, as_read)

    assert held_by("cart-a", sku) == 4
    assert stock_problems() == []


def test_a_complete_sells_every_line_in_its_own_write(mongo_db, sku):
    stock_restock(sku="SKU-2", quantity=10)
    hold(sku, "cart-a", 2, NOW)
    hold("SKU-2", "cart-a", 3, NOW)

    assert sell("cart-a")
    assert not sell("cart-a")  # complete already: nothing sold twice

    one, two = stock_level(sku=sku), stock_level(sku="SKU-2")
    assert (one.free, one.held, one.sold) == (98, 0, 2)
    assert (two.free, two.held, two.sold) == (7, 0, 3)
    assert mongo_db.carts.find_one({"_id": "cart-a"})["stock_back"] == []
    assert stock_problems() == []


def test_restock_is_recorded_in_the_ledger_and_conservation_holds(mongo_db, sku):
    hold(sku, "cart-a", 10, NOW)
    sell("cart-a")

    assert stock_restock(sku=sku, quantity=25, note="delivery") == 2

    level = stock_level(sku=sku)
    assert (level.free, level.sold, level.received) == (115, 10, 125)
    ledger = list(mongo_db.stock_ledger.find({"sku": sku}).sort("seq", 1))
    assert [(e["seq"], e["quantity"], "pending" in e) for e in ledger] == [
        (1, 100, False),
        (2, 25, False),
    ]
    assert stock_problems() == []


def test_a_ledger_entry_written_before_a_crash_is_applied_once(mongo_db, sku):
    # A restock that died after writing its ledger entry, before applying it.
    mongo_db.stock_ledger.insert_one(
        {"sku": sku, "seq": 2, "quantity": 7, "note": "", "at": NOW, "pending": True}
    )
    assert [p.sku for p in stock_problems()] == []  # not applied: not counted

    assert stock_ledger_settle() == 1
    assert stock_ledger_settle() == 0

    assert stock_level(sku=sku).free == 107
    assert stock_problems() == []


def test_conservation_check_names_a_sku_whose_units_changed_outside_services(
    mongo_db, sku
):
    mongo_db.inventories.update_one({"_id": sku}, {"$inc": {"quantity": 1}})

    problems = stock_problems()

    assert [p.sku for p in problems] == [sku]
    assert "101" in problems[0].message


def test_a_sale_whose_counters_reply_is_lost_is_tried_again_and_counts_once(
    mongo_db, sku, monkeypatch
):
    """The counters' statement of a two-line complete applies on the server
    and its reply is lost (a dropped connection, a failover): it is sent
    once more, and its filter (the moves' ops) lets nothing apply twice."""
    stock_restock(sku="SKU-2", quantity=10)
    for each in (sku, "SKU-2"):
        hold(each, "cart-a", 2, NOW)
    real, lost = Collection.update_many, []

    def reply_lost_once(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        if self.name == "inventories" and not lost:
            lost.append(result.modified_count)
            raise AutoReconnect("connection closed")
        return result

    monkeypatch.setattr(Collection, "update_many", reply_lost_once)
    assert sell("cart-a")

    assert lost == [2]
    for each, free in ((sku, 98), ("SKU-2", 8)):
        level = stock_level(sku=each)
        assert (level.free, level.held, level.sold) == (free, 0, 2)
    assert mongo_db.carts.find_one({"_id": "cart-a"})["stock_back"] == []
    assert stock_problems() == []


def test_a_release_from_a_read_before_the_line_was_added_again_is_refused(
    mongo_db, sku
):
    """A request read the line, then another removed it and added as many
    again (a new take, whose counter entry waits for its process's next
    write): the first request's release is refused, so it never gives back
    with the old line's takes, and the new take keeps its proof."""
    hold(sku, "cart-a", 2, NOW)
    as_read = line_of("cart-a", sku)
    assert release("cart-a", sku)
    hold(sku, "cart-a", 2, NOW)

    assert not release("cart-a", sku, as_read)
    line_stock.recover(before=NOW + timedelta(minutes=5))

    assert held_by("cart-a", sku) == 2
    assert inventory(mongo_db)["quantity"] == 98
    assert stock_problems() == []


def test_a_login_moves_no_line_out_of_a_cart_in_checkout(mongo_db, sku):
    hold(sku, "anon", 2, NOW)
    hold(sku, "account", 1, NOW)
    mongo_db.carts.update_one({"_id": "anon"}, {"$set": {"state": "pending"}})

    moved = PRODUCTS.move(
        source_id="anon", target_id="account", line=line_of("anon", sku), now=NOW
    )

    assert moved is None
    assert [
        x["quantity"] for x in mongo_db.carts.find_one({"_id": "anon"})["items"]
    ] == [2]
    assert held_by("account", sku) == 1
    assert stock_problems() == []
