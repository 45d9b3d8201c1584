"""Checkout: pending lock, re-price, one order per cart, charge, commit."""

from datetime import timedelta
from decimal import Decimal

import pytest
from pymongo import monitoring

from catalog.selectors.stock import stock_level
from shop import faults
from shop.documents import ACTIVE, COMPLETE, EXPIRED, PAID, PENDING_PAYMENT, Order
from shop.errors import (
    CartEmpty,
    CartExpired,
    CartNotFound,
    LineUnavailable,
    PaymentFailed,
    PricesChanged,
)
from shop.selectors.invariants import invariant_problems
from shop.services import numbers
from shop.services.carts import cart_add_item, cart_remove_item
from shop.services.checkout import cart_checkout, cart_pay
from shop.services.common import lease_time
from shop.services.expiry import carts_expire
from tests.shop.factories import (
    DECLINED_CARD,
    ERROR_CARD,
    SHIPPING,
    card,
    make_product,
    set_price,
)
from tests.stock import held_by

ALICE = "anon:alice"


def given(cart_id, *, owner=ALICE, number=None, now) -> dict:
    """What a shopper's checkout form gives (``number``: another card)."""
    return {
        "owner": owner,
        "cart_id": cart_id,
        "email": "ada@example.com",
        "shipping": SHIPPING,
        "card": card(number) if number else card(),
        "now": now,
    }


def checkout(cart_id, **kwargs):
    return cart_checkout(**given(cart_id, **kwargs))


@pytest.fixture
def cart(product, now):
    make_product(sku="HAT-1", title="Hat", price="15.50")
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    return cart_add_item(owner=ALICE, sku="HAT-1", quantity=1, now=now)


def test_checkout_leaves_stock_sold_no_reservation_and_the_cart_complete(
    mongo_db, cart, product, now
):
    order = checkout(cart.cart_id, now=now)

    assert order.state == PAID
    assert order.total == Decimal("215.50")
    assert [(x.key, x.quantity, x.line_total) for x in order.lines] == [
        (product, 2, Decimal("200.00")),
        ("HAT-1", 1, Decimal("15.50")),
    ]
    assert order.number.startswith("MQ-")
    assert len(order.token) >= 32
    assert len(order.payment_tag) == 8
    assert order.payment_reference == f"{order.number}-{order.payment_tag}-1"
    level = stock_level(sku=product)
    assert (level.free, level.held, level.sold) == (98, 0, 2)
    assert stock_level(sku="HAT-1").sold == 1
    doc = mongo_db.carts.find_one({"_id": cart.cart_id})
    assert doc["state"] == COMPLETE
    assert "live_owner" not in doc
    assert invariant_problems() == []


def test_a_double_submit_returns_the_same_order_and_charges_once(mongo_db, cart, now):
    first = checkout(cart.cart_id, now=now)
    second = checkout(cart.cart_id, now=now)

    assert second.number == first.number
    assert mongo_db.orders.count_documents({}) == 1
    assert mongo_db.test_gateway_charges.count_documents({}) == 1
    assert stock_level(sku="HAT-1").sold == 1


def test_the_paid_answer_is_the_order_as_stored_built_only_when_asked(
    mongo_db, cart, now, builds
):
    """``cart_pay`` answers with the paid order as stored (the checkout
    page shows its number and link), first run or repeat, and builds the
    ``Order`` only when asked: MongoEngine's building of an order with its
    lines was 3 % of a cart flow's CPU (bench/RESULTS.md)."""
    built = builds(Order)

    submitted = given(cart.cart_id, now=now)
    first, repeat = cart_pay(**submitted), cart_pay(**submitted)

    assert built == []
    stored = mongo_db.orders.find_one({"cart_id": cart.cart_id})
    for paid in (first, repeat):
        assert (paid.number, paid.token, paid.state) == (
            stored["number"],
            stored["token"],
            PAID,
        )
        # As paid: its announcement's mark may be gone since (settle).
        built_son = paid.order.to_mongo().to_dict()
        kept = ("_id", "number", "state", "lines", "total", "paid_at")
        assert {k: built_son[k] for k in kept} == {k: stored[k] for k in kept}
    assert len(built) == 2


def test_order_numbers_are_sequential_and_unique(mongo_db, product, now):
    made = []
    for owner in ("anon:a", "anon:b", "anon:c"):
        cart = cart_add_item(owner=owner, sku=product, quantity=1, now=now)
        made.append(checkout(cart.cart_id, owner=owner, now=now).number)

    assert made == ["MQ-100001", "MQ-100002", "MQ-100003"]


def test_order_numbers_are_reserved_a_block_at_a_time(mongo_db, product, now, settings):
    """One write reserves a process's next block; a process that starts
    afresh (its block forgotten) takes the next block, skipping what the
    last one left: a gap, never a repeat."""
    settings.ORDER_NUMBER_BLOCK = 3
    made = []
    for n in range(5):
        if n == 2:
            numbers.forget()  # the process restarted after two orders
        owner = f"anon:{n}"
        cart = cart_add_item(owner=owner, sku=product, quantity=1, now=now)
        made.append(checkout(cart.cart_id, owner=owner, now=now).number)

    assert made == ["MQ-100001", "MQ-100002", "MQ-100004", "MQ-100005", "MQ-100006"]
    assert mongo_db.sequences.find_one({"_id": "order_number"})["value"] == 6


def test_processes_racing_for_order_numbers_never_share_one(race):
    handed = race(_numbers, [(5,)] * 4)

    every = [number for batch in handed for number in batch]
    assert len(set(every)) == len(every) == 20
    # Each process's numbers rise, a block of two at a time.
    assert all(batch == sorted(batch) for batch in handed)


def _numbers(count: int) -> list[str]:
    """In a process of its own: ``count`` numbers, from blocks of two."""
    from django.conf import settings

    settings.ORDER_NUMBER_BLOCK = 2
    return [numbers.next_order_number() for _ in range(count)]


def test_a_number_handed_out_again_after_a_restore_is_charged_afresh(
    mongo_db, product, now
):
    # A backup taken before any order, then restored: the order made after
    # it, and the sequence's block reserved for it, are gone, and the shop's
    # processes start afresh; the payment provider (outside the database)
    # still has its charge, which the test gateway's collection stands for.
    cart = cart_add_item(owner="anon:a", sku=product, quantity=1, now=now)
    lost = checkout(cart.cart_id, owner="anon:a", now=now)
    mongo_db.orders.delete_one({"_id": lost.pk})
    mongo_db.sequences.delete_one({"_id": "order_number"})
    numbers.forget()

    cart = cart_add_item(owner="anon:b", sku=product, quantity=1, now=now)
    order = checkout(cart.cart_id, owner="anon:b", now=now)

    assert order.number == lost.number
    assert order.payment_reference != lost.payment_reference
    charged = {c["_id"] for c in mongo_db.test_gateway_charges.find()}
    assert charged == {lost.payment_reference, order.payment_reference}


def test_a_declined_card_keeps_a_hold_the_shopper_extended(mongo_db, product, now):
    from shop.services.carts import cart_extend_hold

    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    extended = cart_extend_hold(owner=ALICE, now=now).expires_at

    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, number=DECLINED_CARD, now=now + timedelta(minutes=2))

    reopened = mongo_db.carts.find_one({"_id": cart.cart_id})
    assert reopened["state"] == ACTIVE
    assert reopened["expires_at"] == extended  # not 30 minutes from the decline


def test_an_attempt_restored_by_a_backup_is_charged_afresh(mongo_db, product, now):
    # Declined once; the backup is taken; declined again; the backup is
    # restored (cart and order as they were: the attempt number goes back).
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, number=DECLINED_CARD, now=now)
    backup = mongo_db.carts.find_one({"_id": cart.cart_id}), mongo_db.orders.find_one()
    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, number=DECLINED_CARD, now=now)
    mongo_db.carts.replace_one({"_id": cart.cart_id}, backup[0])
    mongo_db.orders.replace_one({"_id": backup[1]["_id"]}, backup[1])

    order = checkout(cart.cart_id, now=now)

    assert order.state == PAID
    assert order.payment_attempts == 2
    outcomes = sorted(c["outcome"] for c in mongo_db.test_gateway_charges.find())
    assert outcomes == ["declined", "declined", "paid"]


def test_an_attempt_made_before_references_had_a_tag_keeps_its_reference(
    mongo_db, product, now
):
    # Cut off before its charge, by a Marquee whose references were the
    # bare number: the charge is looked up, and taken, as then.
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    with faults.armed("checkout.before_charge"), pytest.raises(faults.InjectedFault):
        checkout(cart.cart_id, now=now)
    mongo_db.carts.update_one({}, {"$unset": {"checkout_tag": ""}})

    order = checkout(cart.cart_id, now=now + lease_time() + timedelta(seconds=1))

    assert order.state == PAID
    assert order.payment_reference == f"{order.number}-1"


class OrderWrites(monitoring.CommandListener):
    """The write commands sent to the orders collection; "unmark" for the
    settler's, which takes announced orders' outbox marks off."""

    def __init__(self):
        self.names: list[str] = []

    def started(self, event):
        name, command = event.command_name, event.command
        if command.get(name) != "orders" or name not in {"insert", "update"}:
            return
        if name == "update" and "announce_at" in command["updates"][0]["u"].get(
            "$unset", {}
        ):
            name = "unmark"
        self.names.append(name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


@pytest.fixture
def order_writes(listen):
    """The order writes of the test's checkouts."""
    return listen(OrderWrites()).names


def test_a_paid_checkout_writes_its_order_once_and_paid(
    mongo_db, cart, now, order_writes
):
    order = checkout(cart.cart_id, now=now)

    assert order_writes == ["insert", "unmark"]
    assert order.state == PAID
    assert [a.outcome for a in order.attempts] == ["paid"]
    assert order.payment_reference == f"{order.number}-{order.payment_tag}-1"


def test_a_declined_attempt_writes_the_order_pending_and_the_next_pays_it(
    mongo_db, cart, now, order_writes
):
    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, number=DECLINED_CARD, now=now)
    assert order_writes == ["insert"]

    order = checkout(cart.cart_id, now=now)

    assert order_writes == ["insert", "update", "unmark"]
    assert mongo_db.orders.count_documents({}) == 1
    assert [a.outcome for a in order.attempts] == ["declined", "paid"]


def test_a_cart_keeps_its_order_number_and_a_refused_lock_spends_none(
    mongo_db, product, now
):
    empty = cart_add_item(owner="anon:e", sku=product, quantity=1, now=now)
    cart_remove_item(owner="anon:e", sku=product, now=now)
    with pytest.raises(CartEmpty):
        checkout(empty.cart_id, owner="anon:e", now=now)  # locked, then unlocked
    with pytest.raises(CartNotFound):
        checkout(empty.cart_id, owner="anon:mallory", now=now)  # refused
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, number=DECLINED_CARD, now=now)

    order = checkout(cart.cart_id, now=now)
    other = cart_add_item(owner="anon:b", sku=product, quantity=1, now=now)
    next_one = checkout(other.cart_id, owner="anon:b", now=now)

    # The empty cart drew MQ-100001 at its lock and keeps it for its first
    # real checkout; the refused lock handed its number back.
    assert mongo_db.carts.find_one({"_id": empty.cart_id})["order_number"] == (
        "MQ-100001"
    )
    assert order.number == "MQ-100002"  # drawn by the declined attempt, kept
    assert next_one.number == "MQ-100003"


def _as_an_earlier_version_left_it(mongo_db, cart_id, now) -> dict:
    """A cart locked by a Marquee that wrote its order before the charge:
    the order pending with the attempt's tag, nothing on the cart but the
    attempt. Returns the order."""
    from shop.services.checkout import _Draft

    raw = mongo_db.carts.find_one({"_id": cart_id})
    order = _Draft.of(raw).son(now) | {"number": "MQ-900001"}
    mongo_db.orders.insert_one(order)
    mongo_db.carts.update_one(
        {"_id": cart_id},
        {
            "$unset": {
                "order_number": "",
                "checkout_email": "",
                "checkout_shipping": "",
                "checkout_payment": "",
            }
        },
    )
    return order


def test_a_checkout_an_earlier_version_charged_is_finished_by_its_reference(
    mongo_db, product, now
):
    from shop.payments import charge_reference, provider
    from shop.services.checkout import checkout_recover

    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    with faults.armed("checkout.before_charge"), pytest.raises(faults.InjectedFault):
        checkout(cart.cart_id, now=now)
    pending = _as_an_earlier_version_left_it(mongo_db, cart.cart_id, now)
    provider().charge(  # the earlier run charged, then stopped
        reference=charge_reference(pending),
        amount=Decimal("200.00"),
        currency="GBP",
        card=card(),
        description="Marquee order MQ-900001",
    )

    lapsed = now + lease_time() + timedelta(seconds=1)
    assert checkout_recover(cart_id=cart.cart_id, now=lapsed) == "completed"

    order = mongo_db.orders.find_one({"cart_id": cart.cart_id})
    assert order["state"] == PAID
    assert order["number"] == "MQ-900001"
    assert order["payment_reference"] == charge_reference(pending)
    # One charge; the cart's own attempt was never charged, and is closed.
    assert mongo_db.test_gateway_charges.count_documents({"outcome": "paid"}) == 1
    assert stock_level(sku=product).sold == 2
    assert invariant_problems(now=lapsed) == []


def test_a_checkout_an_earlier_version_left_uncharged_is_taken_over_once(
    mongo_db, product, now
):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    with faults.armed("checkout.before_charge"), pytest.raises(faults.InjectedFault):
        checkout(cart.cart_id, now=now)
    _as_an_earlier_version_left_it(mongo_db, cart.cart_id, now)

    lapsed = now + lease_time() + timedelta(seconds=1)
    order = checkout(cart.cart_id, now=lapsed)

    assert order.state == PAID
    assert mongo_db.orders.count_documents({}) == 1
    charged = [c["_id"] for c in mongo_db.test_gateway_charges.find()]
    assert charged == [order.payment_reference]
    assert stock_level(sku=product).sold == 2
    assert invariant_problems(now=lapsed) == []


def test_a_declined_card_returns_the_cart_to_active_with_its_holds(
    mongo_db, cart, product, now
):
    with pytest.raises(PaymentFailed) as refused:
        checkout(cart.cart_id, number=DECLINED_CARD, now=now)

    assert "declined" in refused.value.message
    doc = mongo_db.carts.find_one({"_id": cart.cart_id})
    assert doc["state"] == ACTIVE
    assert held_by(cart.cart_id, product) == 2
    order = mongo_db.orders.find_one({"cart_id": cart.cart_id})
    assert order["state"] == PENDING_PAYMENT
    assert [a["outcome"] for a in order["attempts"]] == ["declined"]
    assert invariant_problems() == []

    paid = checkout(cart.cart_id, now=now)

    assert paid.number == order["number"]
    assert paid.state == PAID
    assert [a.outcome for a in paid.attempts] == ["declined", "paid"]
    assert stock_level(sku=product).sold == 2


def test_a_provider_error_charges_nothing_and_keeps_the_holds(
    mongo_db, cart, product, now
):
    with pytest.raises(PaymentFailed) as refused:
        checkout(cart.cart_id, number=ERROR_CARD, now=now)

    assert "nothing was charged" in refused.value.message
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
    assert stock_level(sku=product).held == 2
    assert mongo_db.test_gateway_charges.count_documents({}) == 0


def test_a_changed_price_is_shown_before_paying_not_silently_charged(
    mongo_db, cart, product, now
):
    set_price(product, "120.00")

    with pytest.raises(PricesChanged) as refused:
        checkout(cart.cart_id, now=now)

    assert "£120.00 (was £100.00)" in refused.value.message
    doc = mongo_db.carts.find_one({"_id": cart.cart_id})
    assert doc["state"] == ACTIVE
    line = next(i for i in doc["items"] if i["sku"] == product)
    assert line["unit_price"].to_decimal() == Decimal("120.00")
    assert mongo_db.test_gateway_charges.count_documents({}) == 0
    assert stock_level(sku=product).held == 2

    order = checkout(cart.cart_id, now=now)

    assert order.total == Decimal("255.50")


def test_a_product_withdrawn_from_sale_stops_the_checkout(mongo_db, cart, product, now):
    mongo_db.prices.delete_one({"_id": f"{product}_online"})

    with pytest.raises(LineUnavailable):
        checkout(cart.cart_id, now=now)

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_checkout_of_an_expired_cart_is_refused_and_its_units_go_back(
    mongo_db, cart, product, later
):
    with pytest.raises(CartExpired):
        checkout(cart.cart_id, now=later)

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == EXPIRED
    assert stock_level(sku=product).free == 100
    assert mongo_db.orders.count_documents({}) == 0


def test_checkout_of_an_empty_cart_is_refused(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart_remove_item(owner=ALICE, sku=product, now=now)

    with pytest.raises(CartEmpty):
        checkout(cart.cart_id, now=now)

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_checkout_of_someone_elses_cart_is_not_found(mongo_db, cart, now):
    with pytest.raises(CartNotFound):
        checkout(cart.cart_id, owner="anon:mallory", now=now)
    with pytest.raises(CartNotFound):
        checkout("0" * 32, now=now)

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_an_unpaid_order_is_canceled_when_its_cart_expires(
    mongo_db, cart, product, now, later
):
    with pytest.raises(PaymentFailed):
        checkout(cart.cart_id, number=DECLINED_CARD, now=now)

    assert carts_expire(now=later) == 1

    assert mongo_db.orders.find_one({"cart_id": cart.cart_id})["state"] == "canceled"
    assert stock_level(sku=product).free == 100
    assert invariant_problems() == []
