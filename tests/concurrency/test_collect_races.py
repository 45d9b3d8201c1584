"""Forced races on a store's stock (click & collect) with real processes.

A store's stock of a SKU is a stock location on the online protocol: the
same counter guard decides, and conservation holds per store. Each scenario
runs ROUNDS times (MARQUEE_RACE_ROUNDS, 20 by default).
"""

import os
from datetime import UTC, datetime

import pytest

from catalog.errors import OutOfStock
from catalog.selectors.stock import stock_level
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item
from tests.shop.factories import make_product, make_store, stock_store
from tests.stock import stock_problems

pytestmark = pytest.mark.concurrency

ROUNDS = int(os.environ.get("MARQUEE_RACE_ROUNDS", "20"))
PROCESSES = 16
T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


@pytest.fixture
def shops(mongo_db):
    make_store("leeds", "Leeds Briggate", lng=-1.5437, lat=53.7997)
    make_store("york", "York Coney Street", lng=-1.0843, lat=53.959)


# --- work done in the children (module level: inherited through fork) ---


def collect_one(owner, sku, store_id):
    try:
        cart_add_item(owner=owner, sku=sku, store_id=store_id, quantity=1, now=T0)
        return store_id or "online"
    except OutOfStock:
        return None


# --- the races ---------------------------------------------------------------


def test_sixteen_collect_adds_on_a_stores_last_unit_make_one_winner(
    race, mongo_db, shops
):
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"STORE-LAST-{round_}", stock=5)
        leeds = stock_store(sku, "leeds", quantity=1, price="8.00")
        stock_store(sku, "york", quantity=5)

        won = race(
            collect_one,
            [(f"anon:r{round_}p{i}", sku, "leeds") for i in range(PROCESSES)],
        )

        assert won.count("leeds") == 1, f"round {round_}: {won} "
        level = stock_level(sku=leeds)
        assert (level.free, level.held) == (0, 1), round_
        # The other store and online stock are other locations: untouched.
        assert stock_level(sku=f"{sku}@york").free == 5, round_
        assert stock_level(sku=sku).free == 5, round_
        assert mongo_db.carts.count_documents({"items.sku": leeds}) == 1, round_
        assert stock_problems() == [], round_
        assert invariant_problems() == [], round_


def test_delivery_and_collect_racing_on_their_last_units_each_have_one_winner(
    race, mongo_db, shops
):
    """Half the shoppers want the online last unit, half the store's: one
    winner each, and no unit crosses from one location to the other."""
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"BOTH-LAST-{round_}", stock=1)
        leeds = stock_store(sku, "leeds", quantity=1)

        won = race(
            collect_one,
            [
                (f"anon:b{round_}p{i}", sku, "leeds" if i % 2 else None)
                for i in range(PROCESSES)
            ],
        )

        assert sorted(w for w in won if w) == ["leeds", "online"], round_
        for key in (sku, leeds):
            level = stock_level(sku=key)
            assert (level.free, level.held) == (0, 1), (round_, key)
        assert stock_problems() == [], round_
        assert invariant_problems() == [], round_
