"""What follows a payment, announced in batches (shop.services.settle).

The suite's other tests announce each payment at once
(``SHOP_SETTLE_SYNC``); these run the settler as ``serve`` does: a paid
order waits in the process's queue, its outbox entry written, until a batch
announces it, and the reconciler announces what no settler did. Whoever announces, and
however often, each paid order has one audit entry, is counted once and
gets one confirmation.
"""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts.documents import SentEmail
from shop import events
from shop.services import settle
from shop.services.reconcile import reservations_reconcile
from staff.selectors.counters import counter_problems, hour_figures
from staff.services.audit import acting_as
from tests.staff.conftest import pay


@pytest.fixture
def settler(settings):
    """This process's settler as ``serve`` runs it, flushed only when a
    test says so (an hour's interval, a batch larger than any test's)."""
    settings.SHOP_SETTLE_SYNC = False
    settings.SHOP_SETTLE_SECONDS = 3600
    settings.SHOP_SETTLE_BATCH = 1000
    settings.MAIL_SYNC = True  # the email task runs where the batch is announced
    settle.reset()
    yield settle.settler()
    settle.settler().discard()
    settle.reset()


@pytest.fixture
def product():
    from tests.shop.factories import make_product

    return make_product(sku="SNKR-42", title="JC Sneaker", price="100.00", stock=50)


def paid_entries(mongo_db, order) -> list[dict]:
    return list(
        mongo_db.audit.find({"object_id": order.number, "action": "order paid"})
    )


def announced_once(mongo_db, orders) -> None:
    """Each order: one audit entry, counted once, one confirmation, and its
    outbox entry gone."""
    hour = hour_figures(orders[0].paid_at)
    assert sorted(hour["paid"]) == sorted(o.number for o in orders)
    assert hour["orders"] == len(orders)
    assert counter_problems() == []
    for order in orders:
        assert len(paid_entries(mongo_db, order)) == 1
        assert SentEmail.objects(key=f"{order.number}|paid").count() == 1
        assert mongo_db.payments_to_announce.find_one({"_id": order.pk}) is None


def test_payments_wait_in_the_outbox_until_one_batch_announces_them(
    settler, mongo_db, product
):
    orders = [pay(f"anon:{name}", sku=product) for name in ("ann", "bob", "cy")]

    # Paid, and nothing announced yet: the checkout's path wrote none of it.
    assert settler.stats().queued == 3
    for order in orders:
        assert order.state == "paid"
        assert mongo_db.payments_to_announce.find_one({"_id": order.pk})
        assert paid_entries(mongo_db, order) == []
    assert mongo_db.sales_counters.count_documents({}) == 0
    assert mail.outbox == []

    assert settle.flush() == 3

    announced_once(mongo_db, orders)
    assert sorted(m.to[0] for m in mail.outbox) == [
        "ann@example.com",
        "bob@example.com",
        "cy@example.com",
    ]
    assert all(
        e["actor"] == "shopper" for o in orders for e in paid_entries(mongo_db, o)
    )


def test_an_order_announced_again_is_recorded_counted_and_mailed_once(
    settler, mongo_db, product
):
    orders = [pay(f"anon:{name}", sku=product) for name in ("ann", "bob")]
    raw = [mongo_db.orders.find_one({"_id": o.pk}) for o in orders]

    # The reconciler's announcement, then the settler's batch, then the
    # first order alone again (a crash between announcing and unmarking).
    assert settle.settle([(doc, None) for doc in raw]) == 2
    assert settle.flush() == 2
    assert settle.settle([(raw[0], None)]) == 1

    announced_once(mongo_db, orders)
    assert len(mail.outbox) == 2


def test_a_payment_no_settler_announced_is_announced_by_the_reconciler(
    settler, mongo_db, product
):
    order = pay("anon:ann", sku=product)
    # The process stops with the order in its queue.
    assert settler.discard() == 1
    now = timezone.now()

    # Within the grace a settler may still be at it: left alone.
    assert settle.orders_settle(now=now) == 0
    assert paid_entries(mongo_db, order) == []

    later = now + timedelta(seconds=61)
    assert reservations_reconcile(now=later).announced == 1
    announced_once(mongo_db, [order])
    assert reservations_reconcile(now=later).announced == 0


def test_a_receiver_that_fails_leaves_the_orders_to_the_reconciler(
    settler, mongo_db, product
):
    order = pay("anon:ann", sku=product)

    def refuses(sender, **kwargs):
        raise RuntimeError("mail queue down")

    events.orders_paid.connect(refuses, dispatch_uid="test.refuses")
    try:
        assert settle.flush() == 0
    finally:
        events.orders_paid.disconnect(dispatch_uid="test.refuses")
    # The other receivers ran; the payment is still to announce.
    assert mongo_db.payments_to_announce.find_one({"_id": order.pk})

    later = timezone.now() + timedelta(seconds=61)
    assert settle.orders_settle(now=later) == 1
    announced_once(mongo_db, [order])


def test_the_trail_names_who_took_the_payment_not_who_announced_it(
    settler, mongo_db, product
):
    with acting_as("staff:bob", "walk-in"):
        order = pay("anon:ann", sku=product)

    with acting_as("job:reconcile"):
        settle.flush()

    (entry,) = paid_entries(mongo_db, order)
    assert (entry["actor"], entry["reason"]) == ("staff:bob", "walk-in")


def test_a_settler_and_a_reconciler_racing_announce_each_payment_once(
    settler, race, mongo_db, product
):
    orders = [pay(f"anon:{name}", sku=product) for name in ("ann", "bob", "cy")]
    ids = [o.pk for o in orders]
    settler.discard()

    results = race(_announce, [(ids,)] * 4)

    assert results == [3, 3, 3, 3]  # every announcement went through
    announced_once(mongo_db, orders)


def _announce(ids) -> int:
    from shop.documents import Order

    docs = list(Order.coll().find({"_id": {"$in": ids}}))
    return settle.settle([(doc, None) for doc in docs])
