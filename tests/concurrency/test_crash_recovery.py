"""Crash injection: a process dies between the two writes of a service.

For every fault point of shop.faults (the ticket ones in
test_ticket_crashes.py), a real child process runs the real service, armed
to ``os._exit`` at that point (no cleanup, no ``finally``).
Then reconcile_reservations and expire_carts run, and every invariant must
hold: first while the carts are still within their hold, then once every
hold has run out (every unit back on the shelf or sold).
"""

from datetime import UTC, datetime, timedelta

import pytest

from catalog.selectors.stock import stock_level
from shop import faults
from shop.documents import PAID
from shop.selectors.invariants import invariant_problems
from shop.services.carts import (
    cart_add_item,
    cart_clear,
    cart_set_quantity,
)
from shop.services.checkout import cart_checkout
from shop.services.expiry import cart_expire, carts_expire
from shop.services.reconcile import reservations_reconcile
from tests.concurrency.cart_processes import run_until_crash
from tests.shop.factories import SHIPPING, card, make_product

pytestmark = pytest.mark.concurrency

T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
ALICE, ACCOUNT = "anon:alice", "user:1"
# After the reconciler's and the checkout grace periods, within the hold.
SOON = T0 + timedelta(minutes=15)
# After every hold has run out.
MUCH_LATER = T0 + timedelta(days=1)


def _checkout(cart_id):
    cart_checkout(
        owner=ALICE,
        cart_id=cart_id,
        email="crash@example.com",
        shipping=SHIPPING,
        card=card(),
        now=T0,
    )


# Each point: (set-up in the test process returning args, the crashing work,
# units sold in the end).
def setup_cart():
    cart_add_item(owner=ALICE, sku="SHOE", quantity=2, now=T0)
    return cart_add_item(owner=ALICE, sku="HAT", quantity=1, now=T0).cart_id


def setup_anonymous_and_account():
    cart_add_item(owner=ACCOUNT, sku="SHOE", quantity=1, now=T0)
    return setup_cart()


SCENARIOS = {
    "add.after_reserve": (
        lambda: None,
        lambda _: cart_add_item(owner=ALICE, sku="SHOE", quantity=3, now=T0),
        0,
    ),
    "set_quantity.after_stock": (
        setup_cart,
        lambda _: cart_set_quantity(owner=ALICE, sku="SHOE", quantity=5, now=T0),
        0,
    ),
    "clear.after_cart": (setup_cart, lambda _: cart_clear(owner=ALICE, now=T0), 0),
    "expire.after_flip": (
        setup_cart,
        lambda cart_id: cart_expire(cart_id=cart_id, now=MUCH_LATER),
        0,
    ),
    "expire.after_release": (
        setup_cart,
        lambda cart_id: cart_expire(cart_id=cart_id, now=MUCH_LATER),
        0,
    ),
    "checkout.after_pending": (setup_cart, _checkout, 0),
    "checkout.before_charge": (setup_cart, _checkout, 0),
    # Charged before the crash: recovery must finish the sale.
    "checkout.after_charge": (setup_cart, _checkout, 3),
    "checkout.after_paid_write": (setup_cart, _checkout, 3),
    "checkout.after_paid": (setup_cart, _checkout, 3),
    "checkout.after_commit": (setup_cart, _checkout, 3),
    # The owner's claim (shop.services.owners): a first cart, then its end.
    "new_cart.after_claim": (
        lambda: None,
        lambda _: cart_add_item(owner=ALICE, sku="SHOE", quantity=3, now=T0),
        0,
    ),
    "release.after_cart": (
        setup_cart,
        lambda cart_id: cart_expire(cart_id=cart_id, now=MUCH_LATER),
        0,
    ),
}


def test_every_fault_point_has_a_crash_scenario():
    from tests.concurrency.test_ticket_crashes import TICKET_POINTS

    assert sorted([*SCENARIOS, *TICKET_POINTS]) == sorted(faults.POINTS)


def crash_at(point, work, arg):
    faults.arm(point, "exit")
    work(arg)


def sold():
    return stock_level(sku="SHOE").sold + stock_level(sku="HAT").sold


@pytest.mark.parametrize("point", sorted(SCENARIOS))
def test_after_a_crash_at_each_point_the_jobs_restore_every_invariant(
    point, mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    setup, work, sold_in_the_end = SCENARIOS[point]
    arg = setup()

    code = run_until_crash(
        crash_at, (point, work, arg), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    for moment in (SOON, MUCH_LATER):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)
        assert invariant_problems() == [], moment
    # In the end every unit is back on the shelf or sold, none held.
    for sku in ("SHOE", "HAT"):
        level = stock_level(sku=sku)
        assert level.held == 0
        assert level.free + level.sold == 10
    assert sold() == sold_in_the_end
    if sold_in_the_end:
        assert mongo_db.orders.find_one()["state"] == PAID
        assert mongo_db.carts.find_one({"_id": arg})["state"] == "complete"


def test_a_fault_point_armed_in_process_raises_and_changes_nothing_else(mongo_db):
    make_product(sku="SHOE", stock=10)

    with faults.armed("add.after_reserve"), pytest.raises(faults.InjectedFault):
        cart_add_item(owner=ALICE, sku="SHOE", quantity=3, now=T0)

    # The real code ran up to the point: reserved, not yet in a cart (a
    # first add makes its cart only once the units are held).
    assert stock_level(sku="SHOE").held == 3
    assert mongo_db.carts.count_documents({}) == 0
    # Disarmed again: the same call goes through.
    cart_add_item(owner=ALICE, sku="SHOE", quantity=1, now=T0)


def test_an_unknown_fault_point_cannot_be_armed():
    with pytest.raises(ValueError):
        faults.arm("checkout.after_lunch")


@pytest.mark.parametrize("point", ["new_cart.after_claim", "release.after_cart"])
def test_after_a_crash_in_the_owners_claim_the_owner_gets_exactly_one_live_cart(
    point, mongo_uri, mongo_db
):
    """Whatever a crash left of the claim protocol, the owner's next add
    lands on one live cart, later adds on the same one, and no claim locks
    the owner out. Units the crashed first add held for its cart (a first
    add holds them before it makes the cart) are a hold no cart lists: the
    reconciler gives them back."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    setup, work, _ = SCENARIOS[point]
    arg = setup()
    code = run_until_crash(
        crash_at, (point, work, arg), uri=mongo_uri, db_name=mongo_db.name
    )
    assert code == faults.EXIT_CODE
    later = MUCH_LATER if point == "release.after_cart" else T0

    first = cart_add_item(owner=ALICE, sku="HAT", quantity=1, now=later)
    again = cart_add_item(owner=ALICE, sku="HAT", quantity=1, now=later)

    assert again.cart_id == first.cart_id
    assert [line.quantity for line in again.items if line.sku == "HAT"] == [2]
    live = mongo_db.carts.count_documents(
        {"live_owner": ALICE, "state": {"$in": ["active", "pending"]}}
    )
    assert live == 1
    assert mongo_db.cart_owners.find_one({"_id": ALICE})["cart_id"] == first.cart_id
    reservations_reconcile(now=later + timedelta(minutes=5))
    assert invariant_problems() == []
    assert stock_level(sku="SHOE").held == 0


@pytest.mark.parametrize("point", ["checkout.after_paid_write", "checkout.after_paid"])
def test_a_checkout_finished_after_a_crash_is_counted_and_on_the_trail_once(
    point, mongo_uri, mongo_db
):
    """Stopped after the order was marked paid, before or after its
    receivers ran: once the reconciler has finished the checkout, the sale
    is in its hour's counter and the trail has one "order paid" entry."""
    from staff.selectors.counters import counter_problems

    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()
    code = run_until_crash(
        crash_at, (point, _checkout, cart_id), uri=mongo_uri, db_name=mongo_db.name
    )
    assert code == faults.EXIT_CODE

    reservations_reconcile(now=SOON)
    reservations_reconcile(now=SOON)

    number = mongo_db.orders.find_one({"cart_id": cart_id})["number"]
    entries = list(mongo_db.audit.find({"object_id": number, "action": "order paid"}))
    assert len(entries) == 1
    assert counter_problems() == []
    assert sum(c.get("orders", 0) for c in mongo_db.sales_counters.find()) == 1
