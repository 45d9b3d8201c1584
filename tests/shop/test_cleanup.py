"""purge_carts: ended carts go after the retention; nothing live ever does."""

from datetime import timedelta

import pytest
from django_q.tasks import async_task, result

from catalog.selectors.stock import stock_level
from shop.documents import PAID, PENDING_PAYMENT
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout
from shop.services.cleanup import carts_purge
from shop.services.expiry import cart_expire
from tests.shop.factories import SHIPPING, card

DAY = timedelta(days=1)


def shopper(i: int) -> str:
    return f"anon:clean{i}"


def add(i, sku, now):
    return cart_add_item(owner=shopper(i), sku=sku, quantity=1, now=now).cart_id


def paid(i, sku, now):
    cart_id = add(i, sku, now)
    cart_checkout(
        owner=shopper(i),
        cart_id=cart_id,
        email="a@example.com",
        shipping=SHIPPING,
        card=card(),
        now=now,
    )
    return cart_id


def test_ended_carts_past_the_retention_go_and_live_ones_stay(
    mongo_db, product, now, settings
):
    settings.CART_RETENTION_DAYS = 7
    expired = add(1, product, now)
    cart_expire(cart_id=expired, now=now + timedelta(hours=1))
    complete = paid(2, product, now)
    recent = add(3, product, now + 6 * DAY)
    cart_expire(cart_id=recent, now=now + 6 * DAY + timedelta(hours=1))
    active = add(4, product, now + 7 * DAY + timedelta(hours=23))
    ids = {expired, complete, recent, active}

    purged = carts_purge(now=now + 8 * DAY)

    assert purged == 2
    left = {raw["_id"] for raw in mongo_db.carts.find()}
    assert left == ids - {expired, complete}
    # The paid order keeps everything it needs without its cart.
    order = mongo_db.orders.find_one({"cart_id": complete})
    assert order["state"] == PAID and order["lines"][0]["quantity"] == 1
    assert stock_level(sku=product).sold == 1
    assert invariant_problems() == []
    assert carts_purge(now=now + 8 * DAY) == 0  # safe to run again


def test_never_a_cart_whose_order_is_still_in_payment_nor_one_in_checkout(
    mongo_db, product, now
):
    waiting = add(1, product, now)
    mongo_db.carts.update_one(
        {"_id": waiting}, {"$set": {"state": "expired", "ended_at": now}}
    )
    mongo_db.orders.insert_one(
        {"cart_id": waiting, "state": PENDING_PAYMENT, "number": "MQ-1"}
    )
    pending = add(2, product, now)
    mongo_db.carts.update_one(
        {"_id": pending}, {"$set": {"state": "pending", "ended_at": now}}
    )
    old = add(3, product, now)
    cart_expire(cart_id=old, now=now + timedelta(hours=1))

    assert carts_purge(now=now + 30 * DAY) == 1

    assert {raw["_id"] for raw in mongo_db.carts.find()} == {waiting, pending}


@pytest.mark.django_db
def test_the_purge_runs_through_django_q(mongo_db, product, settings):
    settings.CART_RETENTION_DAYS = 0
    settings.CART_HOLD_MINUTES = 0
    cart_id = cart_add_item(owner=shopper(1), sku=product, quantity=1).cart_id
    cart_expire(cart_id=cart_id)

    purged = async_task("shop.tasks.purge_carts", sync=True)

    assert result(purged) == 1
    assert mongo_db.carts.count_documents({}) == 0
