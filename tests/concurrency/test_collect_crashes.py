"""Crash injection in the moves of a collect line (a store's stock location).

The same fault points as online stock (catalog.faults) and the shop's add:
a real child process runs the real service on a line to collect at Leeds
and ``os._exit``s there. Right after the crash the store's stock conserves
its units; after the reconciler and the expiry job every invariant holds,
nothing is in flight, and every unit is back on Leeds' shelf or sold.
"""

import pytest

from catalog.selectors.stock import stock_level
from shop import faults
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item, cart_remove_item, cart_set_quantity
from shop.services.checkout import cart_checkout
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile
from tests.concurrency.cart_processes import run_until_crash
from tests.concurrency.test_crash_recovery import ALICE, MUCH_LATER, SOON, T0, crash_at
from tests.shop.factories import card, make_product, make_store, stock_store
from tests.stock import stock_problems

pytestmark = pytest.mark.concurrency

LEEDS = "SHOE@leeds"


def collect(quantity):
    return cart_add_item(
        owner=ALICE, sku="SHOE", store_id="leeds", quantity=quantity, now=T0
    )


def setup_cart():
    return collect(2).cart_id


def pay(cart_id):
    cart_checkout(
        owner=ALICE,
        cart_id=cart_id,
        email="crash@example.com",
        shipping=None,
        card=card(),
        now=T0,
    )


# point: (set-up returning an argument, the crashing work, units sold in the end)
SCENARIOS = {
    "add.after_reserve": (lambda: None, lambda _: collect(3), 0),
    "stock.take.after_counter": (lambda: None, lambda _: collect(3), 0),
    "stock.take.after_hold": (
        setup_cart,
        lambda _: cart_set_quantity(owner=ALICE, sku=LEEDS, quantity=4, now=T0),
        0,
    ),
    "stock.give.after_hold": (
        setup_cart,
        lambda _: cart_remove_item(owner=ALICE, sku=LEEDS, now=T0),
        0,
    ),
    "stock.give.after_counter": (
        setup_cart,
        lambda _: cart_set_quantity(owner=ALICE, sku=LEEDS, quantity=1, now=T0),
        0,
    ),
    # The commit of a paid collect-only checkout: recovery finishes the sale.
    "stock.give.after_finish": (setup_cart, pay, 2),
}


@pytest.mark.parametrize("point", sorted(SCENARIOS))
def test_a_crash_in_a_collect_lines_move_is_repaired_per_store(
    point, mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    make_store("leeds", "Leeds Briggate", lng=-1.5437, lat=53.7997)
    stock_store("SHOE", "leeds", quantity=5)
    setup, work, sold_in_the_end = SCENARIOS[point]
    arg = setup()

    code = run_until_crash(
        crash_at, (point, work, arg), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    assert stock_problems() == []
    for moment in (SOON, MUCH_LATER):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)
        assert invariant_problems() == [], moment
    assert not any(doc.get("takes") for doc in mongo_db.inventories.find())
    assert mongo_db.carts.count_documents({"stock_back.0": {"$exists": True}}) == 0
    level = stock_level(sku=LEEDS)
    assert (level.held, level.free + level.sold) == (0, 5)
    assert level.sold == sold_in_the_end
    # Online stock was never touched.
    assert stock_level(sku="SHOE").free == 10
