"""Sales counters under real concurrency: processes released together by a
Barrier (tests.concurrency.cart_processes) pay, double-submit, refund and
recount at the same moment; the counters must equal a recount every time."""

import os

import pytest
from bson import ObjectId
from django.utils import timezone

from config.errors import DomainError
from shop.documents import Cart
from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout
from shop.services.orders import order_cancel
from shop.services.tickets import cart_hold_seats
from staff.selectors.counters import counter_problems, hour_figures
from staff.services.counters import count_sale, counters
from tests.shop.factories import SHIPPING, card
from tests.staff.conftest import pay

pytestmark = pytest.mark.concurrency

ROUNDS = int(os.environ.get("MARQUEE_RACE_ROUNDS", "20")) // 4 or 1
PROCESSES = 8


# --- work done in the children ------------------------------------------------


def checkout(owner, cart_id, now):
    try:
        return cart_checkout(
            owner=owner,
            cart_id=cart_id,
            email="race@example.com",
            shipping=SHIPPING,
            card=card(),
            now=now,
        ).number
    except DomainError as exc:
        return type(exc).__name__


def cancel(number, now):
    return order_cancel(number=number, staff=True, now=now).state


def count_again(order):
    return count_sale(order)


# --- the races ----------------------------------------------------------------


def _cart(owner, sku, now, session=None, seat=None):
    cart_add_item(owner=owner, sku=sku, quantity=1, now=now)
    if session is not None:
        cart_hold_seats(owner=owner, session_id=session, seats=(seat,), now=now)
    return Cart.objects(live_owner=owner).first().cart_id


def test_concurrent_payments_are_each_counted_once(race, mongo_db, product, show):
    now = timezone.now()
    grid = mongo_db.sessions.find_one({"_id": ObjectId(show)})["seats"]
    free = [(r, c) for r, row in enumerate(grid) for c, v in enumerate(row) if v == 0]
    # The order-number sequence exists before the races: its very first
    # allocation is not what these tests are about.
    pay("anon:first", sku=product, now=now)
    paid = 1
    for round_ in range(ROUNDS):
        args = []
        for i in range(PROCESSES):
            owner = f"anon:r{round_}p{i}"
            # Two shoppers a round also buy a seat: tickets and goods together.
            seat = free.pop() if i < 2 and free else None
            session = show if seat else None
            args.append((owner, _cart(owner, product, now, session, seat), now))

        numbers = race(checkout, args)

        assert all(n.startswith("MQ-") for n in numbers), numbers
        paid += PROCESSES
        hour = hour_figures(now)
        assert hour["orders"] == paid, round_
        assert counter_problems() == [], round_


def test_a_double_submitted_checkout_counts_one_order(race, mongo_db, product):
    now = timezone.now()
    pay("anon:first", sku=product, now=now)  # the order-number sequence exists
    for round_ in range(ROUNDS):
        owner = f"anon:double{round_}"
        cart_id = _cart(owner, product, now)

        results = race(checkout, [(owner, cart_id, now)] * PROCESSES)

        numbers = {r for r in results if r.startswith("MQ-")}
        assert len(numbers) == 1, results
        hour = hour_figures(now)
        assert hour["orders"] == round_ + 2
        assert counter_problems() == [], round_


def test_racing_refunds_of_one_order_count_one_refund(race, mongo_db, product):
    now = timezone.now()
    for round_ in range(ROUNDS):
        order = pay(f"anon:refund{round_}", sku=product, now=now)

        states = race(cancel, [(order.number, now)] * PROCESSES)

        assert set(states) == {"refunded"}
        hour = hour_figures(now)
        assert hour["refunds"] == round_ + 1
        assert counter_problems() == [], round_


def test_the_first_counts_of_a_new_bucket_race_safely(race, mongo_db, product):
    """Every process counts the same order into buckets that do not exist yet
    (racing upserts): exactly one counts it."""
    for round_ in range(ROUNDS):
        order = pay(f"anon:first{round_}", sku=product)
        raw = mongo_db.orders.find_one({"_id": order.pk})
        counters().delete_many({})

        counted = race(count_again, [(raw,)] * PROCESSES)

        assert counted.count(True) == 1, counted
        hour = hour_figures(order.paid_at)
        assert hour["orders"] == 1
        assert hour["paid"] == [order.number]
        # The other orders' counts were dropped on purpose: only this one's.
        mongo_db.orders.delete_many({"_id": {"$ne": order.pk}})
        assert counter_problems() == [], round_
        mongo_db.orders.delete_many({})
