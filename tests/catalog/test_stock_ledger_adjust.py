"""Adjustments through the stock ledger, low-stock thresholds, the staff's
stock report."""

import pytest
from django.utils import timezone

from catalog.errors import (
    AlreadyRecorded,
    FreeStockShort,
    InvalidQuantity,
    NotStocked,
)
from catalog.selectors.stock import (
    stock_ledger,
    stock_level,
    stock_low,
)
from catalog.selectors.stock_report import sku_store_counts, stock_report
from catalog.services.stock import stock_correct, stock_restock
from catalog.services.store_stock import store_stock_set
from catalog.services.stores import store_save
from catalog.services.summaries import summary_rebuild
from catalog.services.thresholds import stock_threshold_set
from tests.shop.factories import make_product
from tests.stock import hold, stock_problems


def test_a_damaged_adjustment_is_a_negative_ledger_entry():
    sku = make_product(sku="MUG-1", title="Mug", stock=10)
    stock_correct(sku=sku, delta=-3, kind="damaged", note="dropped a box")
    level = stock_level(sku=sku)
    assert (level.free, level.received) == (7, 7)
    entry = stock_ledger(sku=sku)[0]
    assert (entry.quantity, entry.kind, entry.note, entry.voided) == (
        -3,
        "damaged",
        "dropped a box",
        False,
    )
    stock_correct(sku=sku, delta=2, kind="correction", note="found two")
    assert stock_level(sku=sku).free == 9
    assert stock_problems() == []


def test_an_adjustment_cannot_take_held_or_missing_units():
    sku = make_product(sku="MUG-2", stock=5)
    hold(sku, "cart-1", 4, timezone.now())

    with pytest.raises(FreeStockShort) as refused:
        stock_correct(sku=sku, delta=-2, kind="damaged", note="broken")

    assert "only 1 units are free" in refused.value.message
    level = stock_level(sku=sku)
    assert (level.free, level.held, level.received) == (1, 4, 5)  # nothing changed
    assert stock_ledger(sku=sku)[0].voided  # kept, marked refused
    assert stock_problems() == []
    # The ledger goes on after a refused entry.
    stock_restock(sku=sku, quantity=3)
    stock_correct(sku=sku, delta=-4, kind="damaged", note="water")
    assert stock_level(sku=sku).free == 0
    assert stock_problems() == []


@pytest.mark.parametrize(
    ("delta", "kind", "error"),
    [
        (0, "damaged", InvalidQuantity),
        (1.5, "damaged", InvalidQuantity),
        (-1, "stolen", InvalidQuantity),
    ],
)
def test_bad_adjustments_are_refused(delta, kind, error):
    sku = make_product(sku="MUG-3", stock=5)
    with pytest.raises(error):
        stock_correct(sku=sku, delta=delta, kind=kind)
    assert stock_level(sku=sku).free == 5


def test_an_unstocked_sku_cannot_be_adjusted():
    with pytest.raises(NotStocked):
        stock_correct(sku="NOPE", delta=-1, kind="damaged")


def test_low_stock_uses_each_skus_threshold_and_clears_on_receipt(settings):
    settings.LOW_STOCK_THRESHOLD = 5
    make_product(sku="A-1", stock=3)  # under the default
    make_product(sku="B-1", stock=8)  # over the default...
    make_product(sku="C-1", stock=2)  # under the default...
    stock_threshold_set(sku="B-1", threshold=10)  # ...but under its own
    stock_threshold_set(sku="C-1", threshold=1)  # ...but not under its own

    assert [(low.sku, low.free, low.threshold) for low in stock_low()] == [
        ("A-1", 3, 5),
        ("B-1", 8, 10),
    ]
    stock_restock(sku="A-1", quantity=10)
    assert [low.sku for low in stock_low()] == ["B-1"]
    stock_threshold_set(sku="B-1", threshold=None)  # back to the default
    assert stock_low() == []


def test_silenced_skus_never_hide_a_real_low(settings):
    settings.LOW_STOCK_THRESHOLD = 5
    for n in range(12):  # discontinued: the last unit, and no alert wanted
        make_product(sku=f"OLD-{n:02}", stock=1)
        stock_threshold_set(sku=f"OLD-{n:02}", threshold=0)
    make_product(sku="LIVE-1", stock=1)
    make_product(sku="OLD-LOW", stock=1)
    stock_threshold_set(sku="OLD-LOW", threshold=2)  # lowered, yet under it

    lows = stock_low(limit=3)

    assert [(low.sku, low.free, low.threshold) for low in lows] == [
        ("LIVE-1", 1, 5),
        ("OLD-LOW", 1, 2),
    ]


def test_the_stock_report_searches_by_sku_item_title_and_store():
    make_product(sku="SNK-42", title="Canvas Sneaker", stock=10)
    make_product(sku="SNK-43", title="Canvas Sneaker", stock=2)
    make_product(sku="HAT-1", title="Felt hat", stock=1)
    for item in ("item-SNK-42", "item-SNK-43", "item-HAT-1"):
        summary_rebuild(item_id=item)  # title words are searched in summaries
    store_save(store_id="s1", name="Soho", group="g", lng=-0.13, lat=51.51)
    store_stock_set(store_id="s1", sku="SNK-43", quantity=6)

    def skus(**search):
        return [r.sku for r in stock_report(**search).rows]

    assert skus(q="SNK") == ["SNK-42", "SNK-43"]
    assert skus(q="felt") == ["HAT-1"]
    assert skus(q="canvas sneaker") == ["SNK-42", "SNK-43"]
    assert skus(q="umbrella") == []
    assert skus(q="item-HAT-1") == ["HAT-1"]
    assert skus(q="SNK", store_id="s1") == ["SNK-43"]
    (row,) = stock_report(store_id="s1").rows
    assert (row.sku, row.store_quantity, row.stores_total, row.stores) == (
        "SNK-43",
        6,
        6,
        1,
    )
    assert row.online.free == 2 and row.low  # default threshold 5
    assert sku_store_counts(sku="SNK-43") == {"s1": 6}


def test_the_stock_report_pages_in_sku_order_missing_none():
    """Every SKU a search matches is on one page or the next, none twice:
    by SKU start, by title words, by a store's lines, and all of them."""
    for n in range(7):
        make_product(sku=f"TEE-{n}", title="Cotton tee", stock=3)
        summary_rebuild(item_id=f"item-TEE-{n}")
    make_product(sku="CAP-1", title="Cotton cap", stock=3)
    summary_rebuild(item_id="item-CAP-1")
    store_save(store_id="s1", name="Soho", group="g", lng=-0.13, lat=51.51)
    for n in (1, 2, 4, 6):
        store_stock_set(store_id="s1", sku=f"TEE-{n}", quantity=1)

    def pages(**search):
        seen, after = [], ""
        while True:
            page = stock_report(**search, after=after, limit=3)
            seen.append([r.sku for r in page.rows])
            if page.next_after is None:
                return seen
            after = page.next_after

    tees = [f"TEE-{n}" for n in range(7)]
    assert pages(q="TEE") == [tees[:3], tees[3:6], tees[6:]]
    assert pages(q="cotton") == [["CAP-1", *tees[:2]], tees[2:5], tees[5:]]
    assert pages(q="tee", store_id="s1") == [["TEE-1", "TEE-2", "TEE-4"], ["TEE-6"]]
    assert sum(pages(), []) == sorted(["CAP-1", *tees])


# --- A request sent twice (a staff form's key) ---------------------------------------


KEY = "5f0c2d0e9a8b4c6d8e7f6a5b4c3d2e1f"


def test_a_receipt_sent_twice_with_its_key_is_received_once(mongo_db):
    sku = make_product(sku="MUG-K1", stock=10)
    seq = stock_restock(sku=sku, quantity=5, note="delivery", key=KEY)

    with pytest.raises(AlreadyRecorded) as again:
        stock_restock(sku=sku, quantity=5, note="delivery", key=KEY)

    assert (again.value.seq, again.value.same) == (seq, True)
    assert "counted once" in again.value.message
    assert stock_level(sku=sku).received == 15
    assert mongo_db.stock_ledger.count_documents({"sku": sku}) == 2
    # Another key, or none, is another receipt.
    stock_restock(sku=sku, quantity=5, key=KEY.replace("5", "6"))
    stock_restock(sku=sku, quantity=5)
    assert stock_level(sku=sku).received == 25
    assert stock_problems() == []


def test_a_key_sent_again_for_another_movement_changes_nothing(mongo_db):
    sku = make_product(sku="MUG-K2", stock=10)
    seq = stock_restock(sku=sku, quantity=5, key=KEY)

    with pytest.raises(AlreadyRecorded) as other:
        stock_restock(sku=sku, quantity=3, key=KEY)
    with pytest.raises(AlreadyRecorded):
        stock_correct(sku=sku, delta=-1, kind="damaged", note="x", key=KEY)

    assert (other.value.seq, other.value.same) == (seq, False)
    assert "enter the movement again" in other.value.message
    level = stock_level(sku=sku)
    assert (level.free, level.received) == (15, 15)
    assert stock_problems() == []


def test_a_keyed_receipt_left_pending_by_a_crash_is_applied_once_by_its_repeat(
    mongo_db,
):
    sku = make_product(sku="MUG-K3", stock=10)
    # The first sending died after writing its entry, before applying it.
    mongo_db.stock_ledger.insert_one(
        {
            "_id": f"{sku}|{KEY}",
            "sku": sku,
            "seq": 2,
            "quantity": 4,
            "kind": "receipt",
            "note": "",
            "at": timezone.now(),
            "pending": True,
        }
    )

    with pytest.raises(AlreadyRecorded):
        stock_restock(sku=sku, quantity=4, key=KEY)

    assert stock_level(sku=sku).received == 14
    assert mongo_db.stock_ledger.count_documents({"sku": sku, "pending": True}) == 0
    assert stock_problems() == []


def test_a_refused_write_off_sent_again_says_it_was_refused_then():
    sku = make_product(sku="MUG-K4", stock=2)
    with pytest.raises(FreeStockShort):
        stock_correct(sku=sku, delta=-3, kind="damaged", note="x", key=KEY)
    stock_restock(sku=sku, quantity=5)  # enough now, but not for that form
    with pytest.raises(AlreadyRecorded) as again:
        stock_correct(sku=sku, delta=-3, kind="damaged", note="x", key=KEY)
    assert again.value.refused and "already refused as ledger entry 2" in str(
        again.value.message
    )
    assert len(stock_ledger(sku=sku)) == 3  # opening, the refused one, receipt
    assert stock_level(sku=sku).free == 7


def test_a_key_sent_again_with_another_note_is_another_movement(mongo_db):
    sku = make_product(sku="MUG-K6", stock=2)
    stock_restock(sku=sku, quantity=5, note="delivery 1", key=KEY)
    with pytest.raises(AlreadyRecorded) as other:
        stock_restock(sku=sku, quantity=5, note="delivery 2", key=KEY)
    assert other.value.same is False
    assert stock_level(sku=sku).received == 7


@pytest.mark.parametrize("key", ["short", "no spaces here", "a/b/c/d/e/f", 12345678])
def test_a_malformed_request_key_is_refused(key, mongo_db):
    sku = make_product(sku="MUG-K5", stock=2)
    with pytest.raises(InvalidQuantity):
        stock_restock(sku=sku, quantity=1, key=key)
    assert mongo_db.stock_ledger.count_documents({"sku": sku}) == 1
