"""Forced races on stock and carts with real processes (DESIGN §3).

Every round starts N processes that each open their own connection, wait at
a Barrier, then all hit the same SKU or cart at once. Each scenario runs
ROUNDS times (MARQUEE_RACE_ROUNDS, 20 by default).
"""

import os
from datetime import UTC, datetime, timedelta

import pytest

from catalog.documents import Inventory, hold_id
from catalog.errors import OutOfStock
from catalog.selectors.stock import stock_level
from catalog.services import counters
from config.errors import DomainError
from shop.documents import COMPLETE, EXPIRED, PAID, Cart
from shop.kinds import PRODUCTS, line_stock
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout
from shop.services.common import cart_document, carts, touched
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile
from tests.concurrency.cart_processes import CTX
from tests.shop.factories import SHIPPING, card, make_product
from tests.stock import hold, stock_problems

pytestmark = pytest.mark.concurrency

ROUNDS = int(os.environ.get("MARQUEE_RACE_ROUNDS", "20"))
PROCESSES = 16
T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


# --- work done in the children (module level: inherited through fork) ---


def add_one(owner, sku):
    try:
        cart_add_item(owner=owner, sku=sku, quantity=1, now=T0)
        return True
    except OutOfStock:
        return False


def add_many(owner, sku, times):
    won = 0
    for _ in range(times):
        try:
            cart_add_item(owner=owner, sku=sku, quantity=1, now=T0)
            won += 1
        except OutOfStock:
            pass
    return won


def checkout_at(owner, cart_id, now):
    try:
        order = cart_checkout(
            owner=owner,
            cart_id=cart_id,
            email="race@example.com",
            shipping=SHIPPING,
            card=card(),
            now=now,
        )
        return order.state
    except DomainError as exc:
        return type(exc).__name__


def expire_at(now):
    return carts_expire(now=now)


_read_barrier = None


def check_then_write(cart_id, sku):
    """The seed's mistake on purpose: read, decide, then write unconditionally."""
    collection = Inventory.coll()
    free = collection.find_one({"_id": sku})["quantity"]
    _read_barrier.wait(timeout=60)  # everyone has read before anyone writes
    if free < 1:
        return False
    collection.update_one({"_id": sku}, {"$set": {"quantity": free - 1}})
    line = {"sku": sku, "item_id": sku, "name": sku, "quantity": 1, "unit_price": 0}
    _, son = cart_document(f"anon:{cart_id}", cart_id, T0, {"items": [line]})
    carts().insert_one(son)
    return True


def reserve_one(cart_id, sku):
    try:
        hold(sku, cart_id, 1, T0)
        return True
    except OutOfStock:
        return False


def release(cart_id, sku):
    """Take the cart's line of ``sku`` back, as this process read it."""
    cart = Cart._from_son(carts().find_one({"_id": cart_id}))
    line = next((x for x in cart.items if x.sku == sku), None)
    if line is None:
        return False  # given back already by another process
    return PRODUCTS.take_back(
        cart_id=cart_id, line=line, update=touched({}, T0), now=T0
    )


# --- the races ---------------------------------------------------------------
# Each test runs its rounds in one database (a fresh SKU and fresh shoppers per
# round), so the time goes to the races, not to setting up databases.


def test_sixteen_processes_on_the_last_unit_make_exactly_one_winner(race, mongo_db):
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"LAST-{round_}", stock=1)

        won = race(add_one, [(f"anon:r{round_}p{i}", sku) for i in range(PROCESSES)])

        assert won.count(True) == 1, f"round {round_}: {won.count(True)} winners"
        level = stock_level(sku=sku)
        assert (level.free, level.held) == (0, 1), round_
        assert mongo_db.carts.count_documents({"items.sku": sku}) == 1, round_
        assert invariant_problems() == [], round_


def test_sixteen_processes_adding_again_and_again_reserve_exactly_100(race, mongo_db):
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"HUNDRED-{round_}", stock=100)

        won = race(
            add_many, [(f"anon:r{round_}p{i}", sku, 7) for i in range(PROCESSES)]
        )

        assert sum(won) == 100, f"round {round_}: {sum(won)} reserved"  # of 112
        level = stock_level(sku=sku)
        assert (level.free, level.held) == (0, 100), round_
        listed = sum(
            item["quantity"]
            for cart in mongo_db.carts.find({"items.sku": sku})
            for item in cart["items"]
        )
        assert listed == 100, round_
        assert invariant_problems() == [], round_


def test_sixteen_holders_reserving_the_last_unit_directly_make_one_winner(
    race, mongo_db
):
    """The kind's take and record alone: the counter's filter decides, and
    the losers leave no line and nothing in flight."""
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"DIRECT-{round_}", stock=1)

        won = race(reserve_one, [(f"cart-{round_}-{i}", sku) for i in range(PROCESSES)])

        assert won.count(True) == 1, round_
        assert mongo_db.carts.count_documents({"items.sku": sku}) == 1, round_
        assert mongo_db.inventories.find_one({"_id": sku})["quantity"] == 0, round_
        assert line_stock.held_units()[sku] == 1, round_  # nothing in flight
        assert stock_problems() == [], round_


def test_a_hold_released_by_sixteen_processes_at_once_goes_back_once(race, mongo_db):
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"BACK-{round_}", stock=5)
        hold(sku, "holder", 3, T0)

        given = race(release, [("holder", sku)] * PROCESSES)

        assert given.count(True) == 1, round_
        level = stock_level(sku=sku)
        assert (level.free, level.held) == (5, 0), round_
        assert mongo_db.carts.count_documents({"items.sku": sku}) == 0, round_
        assert stock_problems() == [], round_


def test_one_shopper_adding_eight_products_at_once_gets_one_cart_of_all_eight(
    race, mongo_db
):
    skus = [make_product(sku=f"EIGHT-{i}", stock=ROUNDS) for i in range(8)]
    for round_ in range(ROUNDS):
        owner = f"anon:eight{round_}"

        won = race(add_one, [(owner, sku) for sku in skus])

        assert won == [True] * 8, round_
        (cart,) = mongo_db.carts.find({"owner": owner})
        assert sorted(item["sku"] for item in cart["items"]) == skus, round_
        assert invariant_problems() == [], round_


def test_expiry_twice_against_a_checkout_of_the_same_cart_has_one_outcome(
    race, mongo_db
):
    outcomes = []
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"RACE-{round_}", stock=100)
        owner = f"anon:racer{round_}"
        # The hold ends at T0: the checkout runs just before it, both jobs after.
        cart = cart_add_item(
            owner=owner, sku=sku, quantity=2, now=T0 - timedelta(minutes=30)
        )
        assert cart.expires_at == T0
        before, after = T0 - timedelta(seconds=1), T0 + timedelta(seconds=1)

        checkout, *expired = race(
            play,
            [
                ("checkout", owner, cart.cart_id, before),
                ("expire", after),
                ("expire", after),
            ],
        )

        outcomes.append(checkout)
        doc = mongo_db.carts.find_one({"_id": cart.cart_id})
        level = stock_level(sku=sku)
        order = mongo_db.orders.find_one({"cart_id": cart.cart_id})
        if checkout == PAID:
            assert doc["state"] == COMPLETE, round_
            assert order["state"] == PAID, round_
            assert (level.free, level.held, level.sold) == (98, 0, 2), round_
        else:
            assert checkout == "CartExpired", (round_, checkout)
            assert sum(expired) >= 1, round_  # both may help; it expires once
            assert doc["state"] == EXPIRED, round_
            assert order is None, round_
            assert (level.free, level.held, level.sold) == (100, 0, 0), round_
        assert invariant_problems() == [], round_
    print(f"checkout won {outcomes.count(PAID)} of {ROUNDS} rounds")


def play(role, *args):
    """One process's part in a mixed race."""
    return {"checkout": checkout_at, "expire": expire_at}[role](*args)


def test_two_reconcilers_at_once_return_each_stray_unit_exactly_once(race, mongo_db):
    for round_ in range(3):
        sku = make_product(sku=f"STRAY-{round_}", stock=100)
        for i in range(20):  # takes of crashed adds: no cart recorded them
            counters.take(sku, hold_id(sku, f"ghost-{round_}-{i}"), 2, T0)
        for i in range(10):  # live carts
            cart_add_item(owner=f"anon:r{round_}live{i}", sku=sku, quantity=1, now=T0)

        reports = race(reconcile_at, [(T0 + timedelta(minutes=5),)] * 2)

        assert sum(r["moves"] for r in reports) == 20, round_
        level = stock_level(sku=sku)
        assert (level.free, level.held) == (90, 10), round_
        assert invariant_problems() == [], round_


def reconcile_at(now):
    return reservations_reconcile(now=now).as_dict()


# --- the negative control --------------------------------------------------


def test_negative_control_check_then_write_oversells_under_the_same_harness(
    race, mongo_db
):
    """Proves the harness can see a race: the same 16 processes, with the
    availability rule checked before the write instead of in its filter."""
    global _read_barrier
    for round_ in range(3):
        sku = make_product(sku=f"NAIVE-{round_}", stock=1)
        _read_barrier = CTX.Barrier(PROCESSES)  # inherited by the forked children

        won = race(
            check_then_write, [(f"cart-{round_}-{i}", sku) for i in range(PROCESSES)]
        )

        assert won.count(True) > 1, round_  # oversold
        assert mongo_db.carts.count_documents({"items.sku": sku}) > 1, round_
        assert sku in [p.sku for p in stock_problems()], round_
