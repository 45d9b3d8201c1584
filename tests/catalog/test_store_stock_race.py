"""Store stock under real concurrent processes: never below zero, nothing lost."""

import multiprocessing as mp

import pytest

from catalog.errors import StockShort
from catalog.services.store_stock import store_stock_adjust, store_stock_set
from tests.catalog.conftest import sku_of
from tests.stock import stock_problems

pytestmark = pytest.mark.concurrency

SKU = sku_of("1", "6", "red")


def _adjust(uri, db_name, barrier, results, delta):
    # A client of the child's own, made after the fork, on the test database.
    from config import mongo

    mongo.connect(uri, db=db_name)
    barrier.wait(timeout=60)
    try:
        store_stock_adjust(store_id="leeds", sku=SKU, delta=delta)
        results.put((delta, "ok"))
    except StockShort:
        results.put((delta, "short"))


def _race(mongo_uri, mongo_db, deltas):
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(len(deltas)), ctx.Queue()
    procs = [
        ctx.Process(
            target=_adjust, args=(mongo_uri, mongo_db.name, barrier, results, delta)
        )
        for delta in deltas
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return outcomes


def _quantity(mongo_db):
    assert stock_problems() == []
    return mongo_db.inventories.find_one({"_id": f"{SKU}@leeds"})["quantity"]


def test_twelve_shoppers_racing_for_five_units_exactly_five_win(
    small_catalog, stores, mongo_uri
):
    store_stock_set(store_id="leeds", sku=SKU, quantity=5)

    outcomes = _race(mongo_uri, small_catalog, [-1] * 12)

    assert sorted(result for _delta, result in outcomes).count("ok") == 5
    assert _quantity(small_catalog) == 0


def test_concurrent_deliveries_and_sales_conserve_stock(
    small_catalog, stores, mongo_uri
):
    store_stock_set(store_id="leeds", sku=SKU, quantity=3)

    outcomes = _race(mongo_uri, small_catalog, [-1] * 10 + [2] * 4)

    sold = sum(1 for delta, result in outcomes if delta < 0 and result == "ok")
    assert all(result == "ok" for delta, result in outcomes if delta > 0)
    assert _quantity(small_catalog) == 3 + 2 * 4 - sold >= 0
