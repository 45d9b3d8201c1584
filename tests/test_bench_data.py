"""The services and HTTP levels' data: Marquee's own documents, nothing else.

The bench opens its products' stock in bulk with ``stock_open`` for speed
(bench/levels/marquee.py); these tests hold that to exactly what
``stock_restock`` writes, and the whole set-up to Marquee's invariant check.
"""

from datetime import UTC, datetime

from bench.harness import RunSpec
from bench.levels import marquee
from bench.scenarios import CartParams, all_scenarios
from catalog.selectors.pricing import sellable
from catalog.services.stock import stock_open, stock_restock
from shop.selectors.invariants import invariant_problems

NOW = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


def _without_ids(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("_id", "sku")}


def test_stock_open_writes_what_stock_restock_writes(mongo_db):
    stock_restock(sku="BY-SERVICE", quantity=250, note="initial", now=NOW)
    stock_open(quantities={"IN-BULK": 250}, note="initial", now=NOW)

    by_service = mongo_db.inventories.find_one({"_id": "BY-SERVICE"})
    in_bulk = mongo_db.inventories.find_one({"_id": "IN-BULK"})
    assert list(in_bulk) == list(by_service)  # same fields, same order
    assert _without_ids(in_bulk) == _without_ids(by_service)
    ledger = {e["sku"]: e for e in mongo_db.stock_ledger.find()}
    assert list(ledger["IN-BULK"]) == list(ledger["BY-SERVICE"])
    assert _without_ids(ledger["IN-BULK"]) == _without_ids(ledger["BY-SERVICE"])
    # Both can take another receipt the usual way.
    assert stock_restock(sku="IN-BULK", quantity=5, now=NOW) == 2
    assert invariant_problems() == []


def test_a_cart_scenario_set_up_passes_check_invariants(mongo_db):
    run = RunSpec(
        scenario=all_scenarios()["cart"],
        params=CartParams(products=20, stock=7),
        rate=1,
        duration=1,
    )

    marquee.cart_setup(mongo_db, run)

    assert invariant_problems() == []
    assert mongo_db.inventories.count_documents({}) == 20 + len(marquee.PROBE_SKUS)
    product = sellable(sku=marquee.sku(3))
    assert (product.name, product.unit_price) == ("Product 3", run.params.price(3))
    check = marquee.cart_check(mongo_db, run)
    assert check.ok and check.oversell == 0
    assert check.figures == {"sold": 0, "offered": 140, "reserved": 0}
