"""catalog.services.stock: each operation one conditional update (DESIGN §3)."""

from datetime import UTC, datetime, timedelta

import pytest
from pymongo.collection import Collection
from pymongo.errors import AutoReconnect

from catalog.errors import (
    AlreadyReserved,
    InvalidQuantity,
    NotStocked,
    OutOfStock,
    ReservationMissing,
)
from catalog.selectors.stock import (
    StockJournal,
    stock_hold,
    stock_holds_of_cart,
    stock_journal,
    stock_level,
    stock_problems,
)
from catalog.services.counters import RECOVERY
from catalog.services.counters import finished as _finished
from catalog.services.stock import (
    stock_adjust,
    stock_commit,
    stock_commit_all,
    stock_ledger_settle,
    stock_moves_recover,
    stock_release,
    stock_reserve,
    stock_restock,
    stock_transfer,
)

NOW = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


def inventory(mongo_db, sku="SKU-1"):
    return mongo_db.inventories.find_one({"_id": sku})


def holds(mongo_db, sku="SKU-1") -> dict[str, int]:
    """Each cart's units held on the SKU, from the hold documents."""
    found = mongo_db.stock_holds.find({"sku": sku, "quantity": {"$gt": 0}})
    return {doc["cart_id"]: doc["quantity"] for doc in found}


@pytest.fixture
def sku():
    stock_restock(sku="SKU-1", quantity=100, note="initial")
    return "SKU-1"


def test_reserve_moves_units_into_a_reservation_of_the_cart(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    doc = inventory(mongo_db)
    assert doc["quantity"] == 98
    assert holds(mongo_db) == {"cart-a": 2}
    # Nothing left in flight and no list of holders on the counter: only the
    # finished take's entry, which this process's next write drops.
    assert stock_journal(sku=sku) == StockJournal(in_flight=0, finished=1)
    assert "reservations" not in doc


def test_a_take_drops_the_finished_entries_of_earlier_moves(mongo_db, sku):
    """Three holds, a change and a release: each write to the counter drops
    what the moves before it finished, so only the last one's entry stays."""
    for cart in ("cart-a", "cart-b", "cart-c"):
        stock_reserve(sku=sku, cart_id=cart, quantity=1, now=NOW)
    stock_adjust(sku=sku, cart_id="cart-a", delta=2, now=NOW)
    stock_release(sku=sku, cart_id="cart-b")
    stock_reserve(sku=sku, cart_id="cart-d", quantity=1, now=NOW)

    doc = inventory(mongo_db)
    assert [len(doc.get("takes") or []), len(doc.get("gives") or [])] == [1, 0]
    assert stock_journal(sku=sku) == StockJournal(in_flight=0, finished=1)
    assert stock_problems() == []


def test_a_refused_take_keeps_the_finished_entries_for_the_next_write(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=1, now=NOW)
    with pytest.raises(OutOfStock):
        stock_reserve(sku=sku, cart_id="cart-b", quantity=1000, now=NOW)
    stock_reserve(sku=sku, cart_id="cart-c", quantity=1, now=NOW)

    (entry,) = inventory(mongo_db)["takes"]
    assert entry["hold"] == "SKU-1|cart-c"


def test_the_reconciler_drops_finished_entries_without_fencing_their_holds(
    mongo_db, sku
):
    """An entry no process dropped (its writer stopped, or never wrote the
    SKU again): the hold proves the move, so the entry goes and the hold is
    left as it was (a fence would keep it after it ends)."""
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)
    stock_release(sku=sku, cart_id="cart-a")
    stock_reserve(sku=sku, cart_id="cart-b", quantity=1, now=NOW)
    # The release's give-back entry went with the last take; the take stays.
    assert stock_journal(sku=sku) == StockJournal(in_flight=0, finished=1)

    undone = stock_moves_recover(before=NOW + timedelta(minutes=5))

    assert undone == 0
    doc = inventory(mongo_db)
    assert (doc["takes"], doc.get("gives") or []) == ([], [])
    assert "void" not in mongo_db.stock_holds.find_one({"_id": "SKU-1|cart-b"})
    assert holds(mongo_db) == {"cart-b": 1}
    assert stock_problems() == []


def test_a_recovery_s_fence_outlives_a_write_that_drops_its_op(mongo_db, sku):
    """Only the cleanup's retention ends a recovery's fence: a write told to
    drop that op's finished entry keeps it."""
    fence = {"op": "x", "hold": "h", "at": NOW, "by": RECOVERY, "fence": False}
    mongo_db.inventories.update_one({"_id": sku}, {"$push": {"gives": fence}})
    _finished.add(sku, gives=["x"])

    stock_reserve(sku=sku, cart_id="cart-a", quantity=1, now=NOW)

    assert inventory(mongo_db)["gives"] == [fence]


def test_reserve_fails_when_stock_is_short_and_changes_nothing(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=99, now=NOW)

    with pytest.raises(OutOfStock) as refused:
        stock_reserve(sku=sku, cart_id="cart-b", quantity=2, now=NOW)

    assert refused.value.available == 1
    assert "only 1 left" in refused.value.message
    doc = inventory(mongo_db)
    assert doc["quantity"] == 1
    assert list(holds(mongo_db)) == ["cart-a"]


def test_a_second_reserve_by_the_same_cart_is_refused(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    with pytest.raises(AlreadyReserved):
        stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    assert inventory(mongo_db)["quantity"] == 98


def test_reserve_of_a_sku_without_online_stock_is_refused(mongo_db):
    with pytest.raises(NotStocked):
        stock_reserve(sku="NOPE", cart_id="cart-a", quantity=1, now=NOW)
    assert mongo_db.inventories.count_documents({}) == 0


@pytest.mark.parametrize("quantity", [0, -1, True, "2", 1.5, None])
def test_reserve_refuses_a_quantity_that_is_not_a_positive_int(mongo_db, sku, quantity):
    with pytest.raises(InvalidQuantity):
        stock_reserve(sku=sku, cart_id="cart-a", quantity=quantity, now=NOW)
    assert inventory(mongo_db)["quantity"] == 100


def test_adjust_moves_the_delta_between_stock_and_the_reservation(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    stock_adjust(sku=sku, cart_id="cart-a", delta=2, now=NOW)
    assert inventory(mongo_db)["quantity"] == 96
    assert stock_hold(sku=sku, cart_id="cart-a").quantity == 4

    stock_adjust(sku=sku, cart_id="cart-a", delta=-3, now=NOW)
    assert inventory(mongo_db)["quantity"] == 99
    assert stock_hold(sku=sku, cart_id="cart-a").quantity == 1


def test_adjust_beyond_free_stock_is_refused_and_changes_nothing(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    with pytest.raises(OutOfStock):
        stock_adjust(sku=sku, cart_id="cart-a", delta=99, now=NOW)

    assert inventory(mongo_db)["quantity"] == 98
    assert stock_hold(sku=sku, cart_id="cart-a").quantity == 2


def test_adjust_cannot_shrink_a_reservation_to_nothing(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    with pytest.raises(InvalidQuantity):
        stock_adjust(sku=sku, cart_id="cart-a", delta=-2, now=NOW)

    assert stock_hold(sku=sku, cart_id="cart-a").quantity == 2


def test_adjust_matches_cart_and_size_on_the_same_entry(mongo_db, sku):
    # Cart a holds 1, cart b holds 5. Without $elemMatch, "cart a" and
    # "at least 4 units" would be satisfied by two different entries.
    stock_reserve(sku=sku, cart_id="cart-a", quantity=1, now=NOW)
    stock_reserve(sku=sku, cart_id="cart-b", quantity=5, now=NOW)

    with pytest.raises(InvalidQuantity):
        stock_adjust(sku=sku, cart_id="cart-a", delta=-3, now=NOW)

    doc = inventory(mongo_db)
    assert doc["quantity"] == 94
    assert holds(mongo_db) == {
        "cart-a": 1,
        "cart-b": 5,
    }


def test_adjust_without_a_reservation_is_refused(mongo_db, sku):
    with pytest.raises(ReservationMissing):
        stock_adjust(sku=sku, cart_id="cart-a", delta=1, now=NOW)
    assert inventory(mongo_db)["quantity"] == 100


def test_release_gives_back_the_units_and_removes_the_entry_once(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=3, now=NOW)

    assert stock_release(sku=sku, cart_id="cart-a") == 3
    assert stock_release(sku=sku, cart_id="cart-a") == 0

    doc = inventory(mongo_db)
    assert doc["quantity"] == 100
    assert holds(mongo_db) == {}
    assert mongo_db.stock_holds.count_documents({}) == 0


def test_release_with_an_expected_size_leaves_a_changed_entry_alone(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=3, now=NOW)

    assert stock_release(sku=sku, cart_id="cart-a", expect_quantity=2) == 0

    assert stock_hold(sku=sku, cart_id="cart-a").quantity == 3


def test_commit_sells_the_units_and_returns_any_surplus(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=5, now=NOW)

    stock_commit(sku=sku, cart_id="cart-a", quantity=3)

    doc = inventory(mongo_db)
    assert (doc["quantity"], doc["sold"], holds(mongo_db)) == (97, 3, {})
    with pytest.raises(ReservationMissing):
        stock_commit(sku=sku, cart_id="cart-a", quantity=3)
    assert inventory(mongo_db)["sold"] == 3


def test_commit_of_more_than_is_held_is_refused(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    with pytest.raises(ReservationMissing):
        stock_commit(sku=sku, cart_id="cart-a", quantity=3)

    assert inventory(mongo_db)["sold"] == 0


@pytest.fixture
def three_skus():
    for name in ("SKU-1", "SKU-2", "SKU-3"):
        stock_restock(sku=name, quantity=10, note="initial")
    return ("SKU-1", "SKU-2", "SKU-3")


def test_commit_all_sells_every_line_with_each_hold_s_own_guard(mongo_db, three_skus):
    """A checkout's commit of several lines: each SKU sold as stock_commit
    would sell it, the surplus back, a missing hold left out."""
    one, two, three = three_skus
    stock_reserve(sku=one, cart_id="cart-a", quantity=2, now=NOW)
    stock_reserve(sku=two, cart_id="cart-a", quantity=4, now=NOW)

    done = stock_commit_all(cart_id="cart-a", quantities={one: 2, two: 3, three: 1})

    assert done == {one, two}
    levels = {s: stock_level(sku=s) for s in three_skus}
    assert [(lv.free, lv.held, lv.sold) for lv in levels.values()] == [
        (8, 0, 2),
        (7, 0, 3),
        (10, 0, 0),
    ]
    assert mongo_db.stock_holds.count_documents({}) == 0
    assert all(stock_journal(sku=s).in_flight == 0 for s in three_skus)
    assert stock_problems() == []


def test_commit_all_from_a_stale_snapshot_reads_again(mongo_db, three_skus):
    """The holds as read before the charge, changed since (one grew, one is
    new): their guards refuse the snapshot and the fresh read sells what
    the cart holds, once."""
    one, two, _ = three_skus
    stock_reserve(sku=one, cart_id="cart-a", quantity=1, now=NOW)
    known = {h.sku: h for h in stock_holds_of_cart(cart_id="cart-a")}
    stock_adjust(sku=one, cart_id="cart-a", delta=2, now=NOW)
    stock_reserve(sku=two, cart_id="cart-a", quantity=1, now=NOW)

    done = stock_commit_all(cart_id="cart-a", quantities={one: 3, two: 1}, known=known)

    assert done == {one, two}
    assert (stock_level(sku=one).sold, stock_level(sku=two).sold) == (3, 1)
    assert stock_commit_all(cart_id="cart-a", quantities={one: 3}) == set()
    assert stock_level(sku=one).sold == 3
    assert stock_problems() == []


def test_commit_all_moves_the_holds_as_read_and_leaves_a_changed_one_alone(
    mongo_db, three_skus
):
    """The holds' step of several lines is one statement: a hold changed
    since the snapshot (a concurrent add grew it) is left exactly as it is
    while the others move, then read again and sold with its surplus
    given back."""
    _, two, _ = three_skus
    for each in three_skus:
        stock_reserve(sku=each, cart_id="cart-a", quantity=1, now=NOW)
    known = {h.sku: h for h in stock_holds_of_cart(cart_id="cart-a")}
    stock_adjust(sku=two, cart_id="cart-a", delta=2, now=NOW + timedelta(seconds=1))
    grown = mongo_db.stock_holds.find_one({"sku": two})
    statements = []
    real = Collection.update_many

    def counted(self, *args, **kwargs):
        if self.name == "stock_holds":
            result = real(self, *args, **kwargs)
            statements.append(result.modified_count)
            if len(statements) == 1:
                # The changed hold is untouched by the first statement.
                assert mongo_db.stock_holds.find_one({"sku": two}) == grown
            return result
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Collection, "update_many", counted)
        done = stock_commit_all(
            cart_id="cart-a", quantities={s: 1 for s in three_skus}, known=known
        )

    assert done == set(three_skus)
    assert statements == [2]  # the changed hold went alone, read again
    levels = [stock_level(sku=s) for s in three_skus]
    assert [(lv.free, lv.held, lv.sold) for lv in levels] == [
        (9, 0, 1),
        (9, 0, 1),
        (9, 0, 1),
    ]
    assert mongo_db.stock_holds.count_documents({}) == 0
    assert stock_problems() == []


def test_commit_all_refuses_a_hold_that_is_another_of_the_same_size(
    mongo_db, three_skus
):
    """A snapshot's hold released and taken again with as many units (by
    another process, so this one never dropped its entries): only its stamp
    tells them apart. The statement must leave it to a fresh read, or the
    new take's entry outlives its hold and the reconciler gives its units
    back a second time."""
    one, two, _ = three_skus
    for each in (one, two):
        stock_reserve(sku=each, cart_id="cart-a", quantity=2, now=NOW)
    known = {h.sku: h for h in stock_holds_of_cart(cart_id="cart-a")}
    stock_release(sku=two, cart_id="cart-a")
    stock_reserve(sku=two, cart_id="cart-a", quantity=2, now=NOW + timedelta(seconds=1))
    for each in (one, two):
        _finished.pop(each)  # as if another process had done the above

    done = stock_commit_all(cart_id="cart-a", quantities={one: 2, two: 2}, known=known)

    assert done == {one, two}
    stock_moves_recover(before=NOW + timedelta(days=365))
    levels = [stock_level(sku=s) for s in (one, two)]
    assert [(lv.free, lv.held, lv.sold) for lv in levels] == [(8, 0, 2), (8, 0, 2)]
    assert stock_problems() == []


def test_transfer_hands_a_reservation_to_another_cart(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)

    assert stock_transfer(sku=sku, from_cart_id="cart-a", to_cart_id="cart-b")

    assert stock_hold(sku=sku, cart_id="cart-a") is None
    assert stock_hold(sku=sku, cart_id="cart-b").quantity == 2
    assert inventory(mongo_db)["quantity"] == 98


def test_transfer_refuses_when_the_target_already_holds_the_sku(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=2, now=NOW)
    stock_reserve(sku=sku, cart_id="cart-b", quantity=1, now=NOW)

    assert not stock_transfer(sku=sku, from_cart_id="cart-a", to_cart_id="cart-b")

    assert stock_hold(sku=sku, cart_id="cart-a").quantity == 2


def test_restock_is_recorded_in_the_ledger_and_conservation_holds(mongo_db, sku):
    stock_reserve(sku=sku, cart_id="cart-a", quantity=10, now=NOW)
    stock_commit(sku=sku, cart_id="cart-a", quantity=10)

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


@pytest.mark.parametrize("step", ["stock_holds", "inventories"])
def test_a_commit_whose_reply_is_lost_is_tried_again_and_counts_once(
    mongo_db, sku, monkeypatch, step
):
    """The holds' or the counters' statement of a two-line commit applies on
    the server and its reply is lost (a dropped connection, a failover): it
    is sent once more, and its filter (the moves' ops) lets nothing apply
    twice."""
    stock_restock(sku="SKU-2", quantity=10)
    for each in (sku, "SKU-2"):
        stock_reserve(sku=each, cart_id="cart-a", quantity=2, now=NOW)
    real, lost = Collection.update_many, []

    def reply_lost_once(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        if self.name == step and not lost:
            lost.append(result.modified_count)
            raise AutoReconnect("connection closed")
        return result

    monkeypatch.setattr(Collection, "update_many", reply_lost_once)
    done = stock_commit_all(cart_id="cart-a", quantities={sku: 2, "SKU-2": 2})

    assert done == {sku, "SKU-2"} and lost == [2]
    for each, free in ((sku, 98), ("SKU-2", 8)):
        level = stock_level(sku=each)
        assert (level.free, level.held, level.sold) == (free, 0, 2)
    assert mongo_db.stock_holds.count_documents({}) == 0
    assert stock_problems() == []
