"""Crash injection for seats: a process dies between two writes of a service.

Each scenario runs the real service in a real child process armed to
``os._exit`` at one fault point: the ticket services' own points (hold vs
cart line, release, merge, order cancel) and the cart's kind-neutral points
met with seats in the cart (checkout commit, expiry release, clear). Then
reconcile_reservations and expire_carts run, and every invariant must hold:
first while the cart is still within its hold, then once every hold has run
out, when every seat is free or sold (and a canceled order refunded).
"""

from datetime import timedelta

import pytest
from bson import ObjectId

from shop import faults
from shop.documents import PAID, REFUNDED
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item, cart_clear, cart_merge
from shop.services.checkout import cart_checkout
from shop.services.expiry import cart_expire, carts_expire
from shop.services.orders import order_cancel
from shop.services.reconcile import reservations_reconcile
from shop.services.tickets import (
    cart_hold_best_available,
    cart_hold_seats,
    cart_release_seats,
)
from tests.booking.factories import SMALL_SEATS
from tests.concurrency.cart_processes import run_until_crash
from tests.concurrency.test_crash_recovery import (
    ACCOUNT,
    ALICE,
    MUCH_LATER,
    SOON,
    T0,
)
from tests.shop.factories import SHIPPING, card, make_product, make_show

pytestmark = pytest.mark.concurrency


def _cart_id(mongo_db, owner=ALICE):
    return mongo_db.carts.find_one({"owner": owner, "live_owner": owner})["_id"]


def _pay(owner=ALICE):
    from shop.documents import Cart

    cart = Cart.objects(owner=owner, live_owner=owner).first()
    return cart_checkout(
        owner=owner,
        cart_id=cart.cart_id,
        email="crash@example.com",
        shipping=SHIPPING,
        card=card(),
        now=T0,
    )


# Set-ups run in the test process: each returns {"show": ..., ...}.
def nothing(show):
    return {"show": show}


def seats_and_goods(show):
    make_product(sku="SHOE", stock=10)
    cart_add_item(owner=ALICE, sku="SHOE", quantity=2, now=T0)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=T0)
    return {"show": show}


def one_seat(show):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((2, 0),), now=T0)
    return {"show": show}


def anonymous_and_account(show):
    cart_hold_seats(owner=ACCOUNT, session_id=show, seats=((2, 0),), now=T0)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=T0)
    return {"show": show}


def paid(show):
    arg = seats_and_goods(show)
    arg["number"] = _pay().number
    return arg


def expire(arg):
    from shop.documents import Cart

    cart = Cart.objects(owner=ALICE).first()
    cart_expire(cart_id=cart.cart_id, now=MUCH_LATER)


# name: (fault point, set-up, the crashing work, seats sold in the end,
# order state in the end or None)
SCENARIOS = {
    "first hold, before its cart": (
        "tickets.after_hold",
        nothing,
        lambda a: cart_hold_seats(
            owner=ALICE, session_id=a["show"], seats=((0, 0), (0, 1)), now=T0
        ),
        0,
        None,
    ),
    "hold, before the cart line": (
        "tickets.after_hold",
        one_seat,
        lambda a: cart_hold_seats(
            owner=ALICE, session_id=a["show"], seats=((0, 0),), now=T0
        ),
        0,
        None,
    ),
    "best available, before the cart line": (
        "tickets.after_best",
        one_seat,
        lambda a: cart_hold_best_available(
            owner=ALICE, session_id=a["show"], count=3, zone="stalls", now=T0
        ),
        0,
        None,
    ),
    "release, after the cart line": (
        "tickets.after_unlist",
        seats_and_goods,
        lambda a: cart_release_seats(
            owner=ALICE, session_id=a["show"], seats=((0, 1),), now=T0
        ),
        0,
        None,
    ),
    "merge, after the anonymous line went": (
        "merge.after_ticket_source",
        anonymous_and_account,
        lambda a: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
        None,
    ),
    "merge, after the seats were handed over": (
        "merge.after_ticket_transfer",
        anonymous_and_account,
        lambda a: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
        None,
    ),
    "clear, after the cart emptied": (
        "clear.after_cart",
        seats_and_goods,
        lambda a: cart_clear(owner=ALICE, now=T0),
        0,
        None,
    ),
    "expiry, after the flip": ("expire.after_flip", seats_and_goods, expire, 0, None),
    "expiry, after a release": (
        "expire.after_release",
        seats_and_goods,
        expire,
        0,
        None,
    ),
    "checkout, after the charge": (
        "checkout.after_charge",
        seats_and_goods,
        lambda a: _pay(),
        2,
        PAID,
    ),
    "checkout, after the paid write": (
        "checkout.after_paid_write",
        seats_and_goods,
        lambda a: _pay(),
        2,
        PAID,
    ),
    "checkout, after paid": (
        "checkout.after_paid",
        seats_and_goods,
        lambda a: _pay(),
        2,
        PAID,
    ),
    "checkout, after a commit": (
        "checkout.after_commit",
        seats_and_goods,
        lambda a: _pay(),
        2,
        PAID,
    ),
    "cancel, after the flip": (
        "cancel.after_flip",
        paid,
        lambda a: order_cancel(number=a["number"], owner=ALICE, now=T0),
        0,
        REFUNDED,
    ),
    "cancel, after the refund": (
        "cancel.after_refund",
        paid,
        lambda a: order_cancel(number=a["number"], owner=ALICE, now=T0),
        0,
        REFUNDED,
    ),
    "cancel, after a return": (
        "cancel.after_return",
        paid,
        lambda a: order_cancel(number=a["number"], owner=ALICE, now=T0),
        0,
        REFUNDED,
    ),
}
TICKET_POINTS = sorted(
    {point for point, *_ in SCENARIOS.values()}
    - {
        "clear.after_cart",
        "expire.after_flip",
        "expire.after_release",
        "checkout.after_charge",
        "checkout.after_paid_write",
        "checkout.after_paid",
        "checkout.after_commit",
    }
)


def crash_at(point, work, arg):
    faults.arm(point, "exit")
    work(arg)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_after_a_crash_with_seats_in_the_cart_the_jobs_restore_every_invariant(
    name, mongo_uri, mongo_db
):
    point, setup, work, sold_in_the_end, order_state = SCENARIOS[name]
    show = make_show()
    arg = setup(show)

    code = run_until_crash(
        crash_at, (point, work, arg), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    for moment in (SOON, MUCH_LATER + timedelta(hours=1)):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)
        assert invariant_problems() == [], moment
    doc = mongo_db.sessions.find_one({"_id": ObjectId(show)})
    assert doc["held"] == 0
    assert doc["sold"] == sold_in_the_end
    assert doc["seatsAvailable"] == SMALL_SEATS - sold_in_the_end
    if order_state is not None:
        assert mongo_db.orders.find_one()["state"] == order_state
    if order_state == REFUNDED:
        assert mongo_db.test_gateway_refunds.count_documents({}) == 1
        assert mongo_db.inventories.find_one({"_id": "SHOE"})["sold"] == 0


def test_every_ticket_point_has_a_scenario():
    ticket_points = [
        p for p in faults.POINTS if p.split(".")[0] in {"tickets", "cancel"}
    ]
    ticket_points += [p for p in faults.POINTS if p.startswith("merge.after_ticket")]

    assert sorted(ticket_points) == TICKET_POINTS
