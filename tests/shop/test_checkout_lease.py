"""The checkout's lease: a run cut off is taken over by a resubmit once its
lease lapsed, or resolved by the reconciler; never charged twice.

Time is a parameter: the cut-off run starts at T0, the resubmit comes at a
chosen moment after it.
"""

from dataclasses import replace
from datetime import timedelta

import pytest

from catalog.selectors.stock import stock_level
from shop import faults
from shop.documents import ACTIVE, COMPLETE, PAID, PENDING
from shop.errors import CheckoutInProgress, PaymentFailed
from shop.selectors.invariants import checkout_problems, invariant_problems
from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout, checkout_recover, checkouts_recover
from shop.services.common import lease_time
from shop.tasks import recover_checkouts
from tests.shop.factories import DECLINED_CARD, SHIPPING, card

ALICE = "anon:alice"


def checkout(cart_id, *, now, number=None):
    return cart_checkout(
        owner=ALICE,
        cart_id=cart_id,
        email="ada@example.com",
        shipping=SHIPPING,
        card=card(number) if number else card(),
        now=now,
    )


def cut_off(point, cart_id, now):
    with faults.armed(point), pytest.raises(faults.InjectedFault):
        checkout(cart_id, now=now)


@pytest.fixture
def cart(product, now):
    return cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)


def charges(mongo_db):
    return [(c["_id"], c["outcome"]) for c in mongo_db.test_gateway_charges.find()]


def test_a_checkout_takes_a_lease_and_a_numbered_attempt(mongo_db, cart, now):
    cut_off("checkout.after_pending", cart.cart_id, now)

    raw = mongo_db.carts.find_one({"_id": cart.cart_id})
    assert raw["state"] == PENDING
    assert raw["lease_until"] == now + lease_time()
    assert raw["checkout_attempt"] == 1


def test_within_the_lease_an_uncharged_checkout_asks_to_wait(mongo_db, cart, now):
    cut_off("checkout.before_charge", cart.cart_id, now)

    with pytest.raises(CheckoutInProgress) as busy:
        checkout(cart.cart_id, now=now + timedelta(seconds=10))

    assert busy.value.seconds == lease_time().seconds - 10 + 1
    assert f"in {busy.value.seconds} seconds" in busy.value.message
    assert charges(mongo_db) == []


@pytest.mark.parametrize("point", ["checkout.after_charge", "checkout.after_paid"])
def test_within_the_lease_a_charged_checkout_is_finished(mongo_db, cart, now, point):
    cut_off(point, cart.cart_id, now)

    order = checkout(cart.cart_id, now=now + timedelta(seconds=5))

    assert order.state == PAID
    assert charges(mongo_db) == [(order.payment_reference, "paid")]
    assert order.payment_reference == f"{order.number}-{order.payment_tag}-1"
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == COMPLETE


def test_after_the_lease_a_resubmit_takes_over_the_same_attempt(
    mongo_db, cart, product, now
):
    cut_off("checkout.before_charge", cart.cart_id, now)

    order = checkout(cart.cart_id, now=now + lease_time() + timedelta(seconds=1))

    # The same reference the cut-off run would have charged: one charge.
    assert order.state == PAID
    assert order.payment_attempts == 1
    assert charges(mongo_db) == [(order.payment_reference, "paid")]
    assert order.payment_reference == f"{order.number}-{order.payment_tag}-1"
    assert stock_level(sku=product).sold == 2
    assert invariant_problems(now=now + timedelta(minutes=1)) == []


def test_a_declined_resubmit_reopens_and_the_next_pays_a_new_attempt(
    mongo_db, cart, now
):
    cut_off("checkout.before_charge", cart.cart_id, now)
    moment = now + lease_time() + timedelta(seconds=1)

    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, now=moment, number=DECLINED_CARD)
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
    order = checkout(cart.cart_id, now=moment)

    assert order.payment_attempts == 2
    # Each attempt has a reference of its own (a tag drawn with it).
    assert charges(mongo_db) == [(a.reference, a.outcome) for a in order.attempts]
    assert [a.outcome for a in order.attempts] == ["declined", "paid"]
    assert order.attempts[0].reference.endswith("-1")
    assert order.payment_reference == f"{order.number}-{order.payment_tag}-2"


@pytest.mark.parametrize(
    ("point", "outcome", "state"),
    [
        ("checkout.after_pending", "reopened", ACTIVE),
        ("checkout.before_charge", "reopened", ACTIVE),
        ("checkout.after_charge", "completed", COMPLETE),
        ("checkout.after_commit", "completed", COMPLETE),
    ],
)
def test_the_reconciler_resolves_a_lapsed_lease_not_an_open_one(
    mongo_db, cart, now, point, outcome, state
):
    cut_off(point, cart.cart_id, now)

    assert checkout_recover(cart_id=cart.cart_id, now=now + timedelta(seconds=5)) == (
        "nothing"
    )
    lapsed = now + lease_time() + timedelta(seconds=1)
    assert checkout_recover(cart_id=cart.cart_id, now=lapsed) == outcome

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == state
    assert len([c for c in charges(mongo_db) if c[1] == "paid"]) == (
        1 if state == COMPLETE else 0
    )
    assert invariant_problems(now=lapsed) == []


def test_the_scheduled_job_recovers_lapsed_checkouts(mongo_db, product):
    # The job reads the real clock: a lease of 0 seconds has lapsed at once.
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1)
    with faults.armed("checkout.after_charge"), pytest.raises(faults.InjectedFault):
        checkout(cart.cart_id, now=None)
    mongo_db.carts.update_one(
        {"_id": cart.cart_id}, {"$set": {"lease_until": cart.created_at}}
    )

    assert recover_checkouts() == 1
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == COMPLETE
    assert checkouts_recover() == 0


def test_a_paid_order_with_a_pending_cart_breaks_an_invariant_once_the_lease_lapsed(
    mongo_db, cart, now
):
    cut_off("checkout.after_paid", cart.cart_id, now)
    number = mongo_db.orders.find_one()["number"]

    assert checkout_problems(now=now + timedelta(seconds=5)) == []
    lapsed = checkout_problems(now=now + lease_time() + timedelta(seconds=1))
    assert [str(p) for p in lapsed] == [f"order {number}: paid but its cart is pending"]


def test_a_complete_cart_without_a_paid_order_breaks_an_invariant(mongo_db, cart, now):
    order = checkout(cart.cart_id, now=now)
    mongo_db.orders.update_one({"_id": order.pk}, {"$set": {"state": "canceled"}})

    assert [str(p) for p in checkout_problems(now=now)] == [
        f"cart {cart.cart_id}: complete without a paid order"
    ]


def test_a_slow_run_renews_its_lease_before_charging(mongo_db, cart, now):
    from shop.services import checkout as service

    # The lock at T0; the charge is reached 20 s later (more than a third
    # of the lease): the lease is pushed on from there.
    given = service._given("ada@example.com", SHIPPING, card())
    run = service._begin(ALICE, cart.cart_id, now, now + timedelta(seconds=20), given)
    run.renew(locked_at=now)
    assert (
        mongo_db.carts.find_one()["lease_until"]
        == now + timedelta(seconds=20) + lease_time()
    )
    # A quick run spends no command on it.
    run = replace(run, fixed_now=now + timedelta(seconds=5))
    run.renew(locked_at=now)
    assert (
        mongo_db.carts.find_one()["lease_until"]
        == now + timedelta(seconds=20) + lease_time()
    )


def test_a_run_taken_over_before_its_charge_stops_and_never_charges(mongo_db, product):
    """A run locks the cart and stalls past its lease before charging; the
    recovery takes the lease over and reopens the cart; the shopper pays
    again. When the stalled run resumes, its lease renewal (the last step
    before the charge) finds the cart no longer its own and stops it."""
    from django.utils import timezone

    from shop.errors import CheckoutTakenOver
    from shop.services.checkout import _given, _prepare, _start

    stalled_at = timezone.now() - timedelta(seconds=60)  # lease lapsed 15 s ago
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=stalled_at)
    given = _given("ada@example.com", SHIPPING, card())
    run = _start(ALICE, cart.cart_id, stalled_at, None, given)
    _prepare(run, now=stalled_at)
    assert checkout_recover(cart_id=cart.cart_id) == "reopened"
    paid = checkout(cart.cart_id, now=timezone.now())

    with pytest.raises(CheckoutTakenOver):
        run.renew(locked_at=stalled_at)

    # The recovery closed the stalled attempt's reference before reopening.
    assert sorted(charges(mongo_db), key=lambda c: c[1]) == [
        (paid.payment_reference, "paid"),
        (run.draft.reference, "void"),
    ]
    assert paid.payment_reference == f"{paid.number}-{paid.payment_tag}-2"
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == COMPLETE


def test_a_charge_that_lands_after_the_recovery_reopened_the_cart_is_refused(
    mongo_db, cart, product, now, monkeypatch
):
    """The provider answers a run's charge only after its lease lapsed: the
    recovery has taken the cart over, found no charge, reopened it, and the
    shopper took one unit out. The late charge must not pay for an order
    whose units the cart no longer holds: the recovery voided the attempt
    at the provider before reopening, so the charge is refused, nothing is
    charged, and the cart keeps exactly what the shopper left in it."""
    from shop.payments.test_gateway import TestGateway
    from shop.services.carts import cart_set_quantity

    late = now + lease_time() + timedelta(seconds=1)
    charge = TestGateway.charge

    def stalled_charge(self, **kwargs):
        assert checkout_recover(cart_id=cart.cart_id, now=late) == "reopened"
        cart_set_quantity(owner=ALICE, sku=product, quantity=1, now=late)
        return charge(self, **kwargs)

    monkeypatch.setattr(TestGateway, "charge", stalled_charge)
    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, now=now)
    monkeypatch.undo()

    assert [outcome for _, outcome in charges(mongo_db)] == ["void"]
    assert mongo_db.orders.count_documents({"state": PAID}) == 0
    raw = mongo_db.carts.find_one({"_id": cart.cart_id})
    assert raw["state"] == ACTIVE
    level = stock_level(sku=product)
    assert (level.free, level.held, level.sold) == (99, 1, 0)
    assert invariant_problems() == []

    # The shopper pays for what is left, under a new attempt.
    order = checkout(cart.cart_id, now=late)
    assert order.state == PAID
    level = stock_level(sku=product)
    assert (level.free, level.held, level.sold) == (99, 0, 1)


def test_a_taken_over_run_that_gives_up_closes_the_attempt_first(
    mongo_db, cart, product, now
):
    """A resubmit takes over a run that stalled before its charge, and its
    re-pricing finds a price changed: it reopens the cart, but only after
    voiding the attempt's reference, which the stalled run may still charge;
    that run's charge is then refused."""
    from shop.errors import PricesChanged
    from shop.services.checkout import _charge, _given, _start
    from tests.shop.factories import set_price

    given = _given("ada@example.com", SHIPPING, card())
    stalled = _start(ALICE, cart.cart_id, now, now, given)
    late = now + lease_time() + timedelta(seconds=1)
    set_price(product, "120.00")
    with pytest.raises(PricesChanged):
        checkout(cart.cart_id, now=late)

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
    assert charges(mongo_db) == [(stalled.draft.reference, "void")]
    son = stalled.draft.son(now)
    with pytest.raises(PaymentFailed):
        _charge(stalled, son, card(), now)
    assert mongo_db.orders.count_documents({"state": PAID}) == 0
    assert stock_level(sku=product).held == 2


def test_a_recovery_the_provider_cannot_answer_leaves_the_cart_pending(
    mongo_db, cart, product, now, monkeypatch
):
    """No void, no reopen: the charge of a stalled run might still land, so
    the cart keeps its checkout (and its holds) for the next recovery."""
    from shop.payments import PaymentError
    from shop.payments.test_gateway import TestGateway

    cut_off("checkout.before_charge", cart.cart_id, now)

    def unreachable(self, *, reference):
        raise PaymentError("The provider did not answer.")

    monkeypatch.setattr(TestGateway, "void", unreachable)
    late = now + lease_time() + timedelta(seconds=1)
    assert checkout_recover(cart_id=cart.cart_id, now=late) == "unsure"
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == PENDING
    assert stock_level(sku=product).held == 2
    monkeypatch.undo()

    later = late + lease_time() + timedelta(seconds=1)
    assert checkout_recover(cart_id=cart.cart_id, now=later) == "reopened"
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
