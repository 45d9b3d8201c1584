"""What follows a payment, announced in batches (shop.services.settle).

The suite's other tests announce each payment at once
(``SHOP_SETTLE_SYNC``); these run the settler as ``serve`` does: a paid
order waits in the process's queue, marked to be announced by its paid
write, until a batch announces it, and the reconciler announces what no
settler did. Whoever announces, and however often, each paid order has one
audit entry, is counted once and gets one confirmation.
"""

from datetime import timedelta

import pytest
from bson import ObjectId
from django.core import mail
from django.utils import timezone

from accounts.documents import SentEmail
from shop import events
from shop.documents import Order
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


def checkout_stopped_at(point: str, *, owner: str, sku: str):
    """A cart of one unit whose checkout stops at fault ``point``; the cart."""
    from shop import faults
    from shop.services.carts import cart_add_item
    from shop.services.checkout import cart_checkout
    from tests.shop.factories import SHIPPING, card

    cart = cart_add_item(owner=owner, sku=sku, quantity=1)
    faults.arm(point)
    try:
        with pytest.raises(faults.InjectedFault):
            cart_checkout(
                owner=owner,
                cart_id=cart.cart_id,
                email=f"{owner.partition(':')[2]}@example.com",
                shipping=SHIPPING,
                card=card(),
            )
    finally:
        faults.disarm()
    return cart


def marked(mongo_db, order) -> bool:
    """The order is still marked to be announced (the outbox)."""
    doc = mongo_db.orders.find_one({"_id": order.pk})
    return "announce_at" in doc and "announce_context" in doc


def announced_once(mongo_db, orders) -> None:
    """Each order: one audit entry, counted once, one confirmation, and its
    mark taken off."""
    hour = hour_figures(orders[0].paid_at)
    assert sorted(hour["paid"]) == sorted(o.number for o in orders)
    assert hour["orders"] == len(orders)
    assert counter_problems() == []
    for order in orders:
        assert len(paid_entries(mongo_db, order)) == 1
        assert SentEmail.objects(key=f"{order.number}|paid").count() == 1
        assert not marked(mongo_db, order)


def test_paid_orders_wait_marked_until_one_batch_announces_them(
    settler, mongo_db, product
):
    orders = [pay(f"anon:{name}", sku=product) for name in ("ann", "bob", "cy")]

    # Paid, and nothing announced yet: the checkout's path wrote none of it.
    assert settler.stats().queued == 3
    for order in orders:
        assert order.state == "paid"
        assert marked(mongo_db, order)
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
    assert marked(mongo_db, order)

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


def test_the_reconciler_names_who_took_the_payment_too(settler, mongo_db, product):
    with acting_as("staff:bob", "walk-in"):
        order = pay("anon:ann", sku=product)
    settler.discard()  # the worker died with the order in its queue

    with acting_as("job:reservations_reconcile"):
        later = timezone.now() + timedelta(seconds=61)
        assert settle.orders_settle(now=later) == 1

    (entry,) = paid_entries(mongo_db, order)
    assert (entry["actor"], entry["reason"]) == ("staff:bob", "walk-in")


def test_a_stale_or_unpaid_copy_is_never_announced_and_holds_nothing_back(
    settler, mongo_db, product
):
    from shop.errors import PaymentFailed
    from shop.services.carts import cart_add_item
    from shop.services.checkout import cart_checkout
    from tests.shop.factories import DECLINED_CARD, SHIPPING, card

    ann = pay("anon:ann", sku=product)
    settler.discard()  # ann's own announcement is lost ...
    # ... and a late run announces the pending copy it charged.
    stale = mongo_db.orders.find_one({"_id": ann.pk})
    del stale["paid_at"]
    stale["state"] = "pending_payment"
    # An order never paid (its card was declined).
    cart = cart_add_item(owner="anon:dee", sku=product, quantity=1)
    with pytest.raises(PaymentFailed):
        cart_checkout(
            owner="anon:dee",
            cart_id=cart.cart_id,
            email="dee@example.com",
            shipping=SHIPPING,
            card=card(DECLINED_CARD),
        )
    never = mongo_db.orders.find_one({"cart_id": cart.cart_id})
    bob = pay("anon:bob", sku=product)
    now = timezone.now()
    settle.later(stale)
    settle.later(never)

    assert settle.flush() == 1  # bob's; neither copy is announced
    assert paid_entries(mongo_db, ann) == []

    # The reconciler reads each marked order afresh: ann's payment is
    # announced; the order never paid was never marked.
    assert "announce_at" not in mongo_db.orders.find_one({"_id": never["_id"]})
    assert settle.orders_settle(now=now + timedelta(seconds=61)) == 1
    announced_once(mongo_db, [ann, bob])
    assert mongo_db.orders.count_documents({"announce_at": {"$exists": True}}) == 0
    assert "dee@example.com" not in [m.to[0] for m in mail.outbox]
    assert mongo_db.audit.count_documents({"object_id": never["number"]}) == 0


def test_an_order_that_cannot_be_announced_holds_back_no_other(
    settler, mongo_db, product
):
    orders = [pay(f"anon:{name}", sku=product) for name in ("ann", "bob", "cy")]
    settler.discard()
    stuck = orders[1].number

    def refuses_one(sender, *, paid, **kwargs):
        if any(order["number"] == stuck for order, _ in paid):
            raise RuntimeError("this order's receiver fails")

    events.orders_paid.connect(refuses_one, dispatch_uid="test.refuses_one")
    try:
        later = timezone.now() + timedelta(seconds=61)
        assert settle.orders_settle(now=later) == 2
    finally:
        events.orders_paid.disconnect(dispatch_uid="test.refuses_one")
    assert marked(mongo_db, orders[1])
    assert settle.orders_settle(now=later) == 1  # the next run announces it
    announced_once(mongo_db, orders)


def test_a_run_resuming_after_a_recovery_paid_its_order_announces_it_as_it_is(
    settler, mongo_db, product
):
    """A checkout stalls after its charge past its lease; the reconciler
    finds the charge and finishes it (order written paid, announced); then
    the stalled run resumes with its draft of the order. What it announces
    must be the paid order as written, or the batch it joins would fail on
    a copy without ``paid_at``."""
    from shop.payments import provider
    from shop.services.checkout import _Draft, _fulfil, checkout_recover

    cart = checkout_stopped_at("checkout.after_charge", owner="anon:ann", sku=product)
    assert mongo_db.orders.count_documents({}) == 0  # written after the charge
    draft = _Draft.of(mongo_db.carts.find_one({"_id": cart.cart_id}))
    charge = provider().lookup(reference=draft.reference)
    lapsed = timezone.now() + timedelta(minutes=5)
    assert checkout_recover(cart_id=cart.cart_id, now=lapsed) == "completed"

    order = Order._from_son(
        _fulfil(cart_id=cart.cart_id, order=draft, charge=charge, now=lapsed)
    )
    bob = pay("anon:bob", sku=product, now=lapsed)  # paid in the same hour

    assert order.state == "paid"
    assert settle.flush() == 3  # the recovery's, the resumed run's and bob's
    announced_once(mongo_db, [order, bob])


def test_a_checkout_stopped_right_after_its_paid_write_is_announced_by_the_reconciler(
    settler, mongo_db, product
):
    """The paid write marks the order itself: no moment after it where a
    paid order could be left unannounced."""
    point = "checkout.after_paid_write"
    cart = checkout_stopped_at(point, owner="anon:ann", sku=product)
    assert settler.stats().queued == 0  # the run stopped before handing it over
    doc = mongo_db.orders.find_one({"cart_id": cart.cart_id})
    assert doc["state"] == "paid" and doc["announce_at"] == doc["paid_at"]

    later = timezone.now() + timedelta(seconds=61)
    assert settle.orders_settle(now=later) == 1
    order = Order.objects.get(pk=doc["_id"])
    announced_once(mongo_db, [order])


def test_an_earlier_versions_outbox_is_moved_onto_the_orders_once(
    settler, mongo_db, product
):
    """``convert_data``: each entry of the old ``payments_to_announce``
    marks its order if paid (with the context it kept), is deleted, and
    the collection goes; a second run finds nothing."""
    from django.core.management import call_command

    with acting_as("staff:bob", "walk-in"):
        order = pay("anon:ann", sku=product)
    settler.discard()
    doc = mongo_db.orders.find_one({"_id": order.pk})
    kept = doc["announce_context"]
    # The shape of before: no mark on the order, an entry of its own; and
    # an entry whose order was never paid.
    mongo_db.orders.update_one(
        {"_id": order.pk}, {"$unset": {"announce_at": "", "announce_context": ""}}
    )
    at = timezone.now() - timedelta(minutes=5)
    unpaid = ObjectId()
    mongo_db.payments_to_announce.insert_many(
        [{"_id": order.pk, "at": at, "context": kept}, {"_id": unpaid, "at": at}]
    )

    assert settle.outbox_convert() == 1
    assert settle.outbox_convert() == 0
    call_command("convert_data", verbosity=0)  # a current database: nothing
    assert "payments_to_announce" not in mongo_db.list_collection_names()
    assert marked(mongo_db, order)

    assert settle.orders_settle() == 1
    announced_once(mongo_db, [order])
    (entry,) = paid_entries(mongo_db, order)
    assert (entry["actor"], entry["reason"]) == ("staff:bob", "walk-in")
