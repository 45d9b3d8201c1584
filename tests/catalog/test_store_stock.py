"""Stock per store: its stock locations, totals, and changes that never go negative."""

import pytest

from catalog.errors import (
    InvalidProduct,
    StockShort,
    UnknownItem,
    UnknownSku,
    UnknownStore,
)
from catalog.selectors.stock import stock_level, stock_low
from catalog.selectors.store_stock import item_stock_totals, store_stock_totals
from catalog.services.store_stock import store_stock_adjust, store_stock_set
from catalog.services.stores import store_save
from tests.catalog.conftest import sku_of
from tests.stock import hold, stock_problems

SIX_RED, SEVEN_RED, SEVEN_BLACK = (
    sku_of("1", "6", "red"),
    sku_of("1", "7", "red"),
    sku_of("1", "7", "black"),
)
BOOTS_6 = sku_of("2", "6", "black")


@pytest.fixture
def stocked(small_catalog, stores):
    for store_id, sku, qty in [
        ("leeds", SIX_RED, 4),
        ("leeds", SEVEN_RED, 1),
        ("york", SIX_RED, 6),
        ("york", SEVEN_RED, 0),
        ("london", SIX_RED, 10),
        ("leeds", BOOTS_6, 7),
    ]:
        store_stock_set(store_id=store_id, sku=sku, quantity=qty)
    return small_catalog


def totals(rows):
    return {r.sku: (r.quantity, r.stores) for r in rows}


def test_item_totals_sum_every_variant_over_all_stores(stocked):
    assert totals(item_stock_totals(item_id="1")) == {
        SIX_RED: (20, 3),
        SEVEN_RED: (1, 2),
        SEVEN_BLACK: (0, 0),  # no store holds it
    }


def test_store_totals_list_every_variant_the_store_holds(stocked):
    assert totals(store_stock_totals(store_id="leeds")) == {
        SIX_RED: (4, 1),
        SEVEN_RED: (1, 1),
        BOOTS_6: (7, 1),
    }
    assert totals(store_stock_totals(store_id="bradford")) == {}


def test_each_store_and_sku_is_a_stock_location_of_its_own(stocked):
    doc = stocked.inventories.find_one({"_id": f"{SIX_RED}@leeds"})

    assert (doc["of_sku"], doc["item_id"], doc["store_id"]) == (SIX_RED, "1", "leeds")
    assert (doc["quantity"], doc["received"], doc["sold"]) == (4, 4, 0)
    # One location per store and SKU, a zero count included; no old shape.
    assert stocked.inventories.count_documents({"store_id": {"$ne": None}}) == 6
    assert stocked.store_stock.count_documents({}) == 0
    # Online stock is another location: the store's count is not in it.
    assert stocked.inventories.count_documents({"_id": SIX_RED}) == 0


def test_counts_are_ledger_entries_and_conserve(stocked):
    store_stock_set(store_id="leeds", sku=SIX_RED, quantity=9)
    store_stock_set(store_id="leeds", sku=SIX_RED, quantity=2)

    entries = [
        e["quantity"]
        for e in stocked.stock_ledger.find({"sku": f"{SIX_RED}@leeds"}).sort("seq")
    ]
    assert entries == [4, 5, -7]
    assert stock_problems() == []


def test_a_count_never_takes_units_a_cart_holds(stocked):
    hold(f"{SIX_RED}@leeds", "c1", 3)

    # The count is the units free to sell: the 3 held stay the cart's.
    assert store_stock_set(store_id="leeds", sku=SIX_RED, quantity=0) == 0
    with pytest.raises(StockShort):
        store_stock_adjust(store_id="leeds", sku=SIX_RED, delta=-1)

    level = stock_level(sku=f"{SIX_RED}@leeds")
    assert (level.free, level.held, level.received) == (0, 3, 3)
    assert stock_problems() == []


def test_adjust_increments_one_line_in_one_store(stocked):
    assert store_stock_adjust(store_id="york", sku=SIX_RED, delta=5) == 11
    assert store_stock_adjust(store_id="york", sku=SIX_RED, delta=-11) == 0

    assert totals(item_stock_totals(item_id="1"))[SIX_RED] == (14, 3)
    # The other line of the same document is untouched.
    assert totals(store_stock_totals(store_id="york"))[SEVEN_RED] == (0, 1)


def test_adjust_below_zero_is_refused_and_changes_nothing(stocked):
    with pytest.raises(StockShort):
        store_stock_adjust(store_id="leeds", sku=SEVEN_RED, delta=-2)

    assert totals(store_stock_totals(store_id="leeds"))[SEVEN_RED] == (1, 1)


def test_adjust_of_a_line_the_store_lacks_is_unknown(stocked):
    with pytest.raises(UnknownSku):
        store_stock_adjust(store_id="bradford", sku=SIX_RED, delta=1)
    with pytest.raises(UnknownSku):
        store_stock_adjust(store_id="leeds", sku="no-such-sku", delta=1)
    with pytest.raises(UnknownStore):
        store_stock_adjust(store_id="atlantis", sku=SIX_RED, delta=1)


@pytest.mark.parametrize("delta", [0, 10**9, -(10**9), 1.5, "3", True, None])
def test_absurd_changes_are_refused(stocked, delta):
    with pytest.raises(InvalidProduct):
        store_stock_adjust(store_id="leeds", sku=SIX_RED, delta=delta)

    assert totals(store_stock_totals(store_id="leeds"))[SIX_RED] == (4, 1)


@pytest.mark.parametrize("quantity", [-1, 10**9, 2.5, "4", None])
def test_absurd_stock_takes_are_refused(stocked, quantity):
    with pytest.raises(InvalidProduct):
        store_stock_set(store_id="leeds", sku=SIX_RED, quantity=quantity)


def test_set_replaces_a_count_without_duplicating_it(stocked):
    store_stock_set(store_id="leeds", sku=SIX_RED, quantity=9)

    found = list(stocked.inventories.find({"of_sku": SIX_RED, "store_id": "leeds"}))
    assert [doc["quantity"] for doc in found] == [9]


def test_a_moved_store_keeps_its_stock(stocked):
    store_save(store_id="leeds", name="Leeds", group="sg-north", lng=-1.6, lat=53.8)

    assert totals(store_stock_totals(store_id="leeds"))[SIX_RED] == (4, 1)


def test_reports_of_unknown_item_or_store_are_refused(stocked):
    with pytest.raises(UnknownItem):
        item_stock_totals(item_id="nope")
    with pytest.raises(UnknownStore):
        store_stock_totals(store_id="nope")


def test_low_stock_alerts_are_about_online_stock_only(stocked):
    # Leeds' one unit of the 7 red is a store's stock, not a low online SKU.
    assert store_stock_set(store_id="leeds", sku=SEVEN_RED, quantity=1) == 1

    assert stock_low(default=5) == []
