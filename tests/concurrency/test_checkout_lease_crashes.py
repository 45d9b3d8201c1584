"""A checkout cut off at each of its fault points, then the shopper resubmits.

A real child process runs the real checkout and dies (``os._exit``) at the
point. Its lease is then set to have lapsed a second ago, which is where the
clock stands one lease (under a minute) after the crash: the shopper's
resubmit of the same form takes the checkout over and lands on the paid
order page, with exactly one charge at the provider, whatever the point.
"""

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from catalog.selectors.stock import stock_level
from shop import faults
from shop.selectors.invariants import invariant_problems
from shop.services.checkout import cart_checkout
from tests.concurrency.cart_processes import run_until_crash
from tests.shop.factories import SHIPPING, card, make_product
from tests.shop.test_views import checkout_data

# The shopper's resubmit is a page (its session lives in the Django
# database); the crashed checkout runs in a child process of its own.
pytestmark = [pytest.mark.concurrency, pytest.mark.django_db]

CHECKOUT_POINTS = (
    "checkout.after_pending",
    "checkout.before_charge",
    "checkout.after_charge",
    "checkout.after_paid_write",
    "checkout.after_paid",
    "checkout.after_commit",
    "release.after_cart",
)


def crashing_checkout(point, owner, cart_id):
    faults.arm(point, "exit")
    cart_checkout(
        owner=owner,
        cart_id=cart_id,
        email="ada@example.com",
        shipping=SHIPPING,
        card=card(),
    )


def test_the_lease_is_under_a_minute():
    assert 30 <= settings.SHOP_CHECKOUT_LEASE_SECONDS < 60


@pytest.mark.parametrize("point", CHECKOUT_POINTS)
def test_a_resubmit_after_the_lease_lands_on_the_paid_order_charged_once(
    point, mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    shopper = Client()
    shopper.post("/cart/add/", {"sku": "SHOE", "quantity": "2"})
    cart = mongo_db.carts.find_one()

    code = run_until_crash(
        crashing_checkout,
        (point, cart["owner"], cart["_id"]),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    # One lease later, still within the minute.
    mongo_db.carts.update_one(
        {"_id": cart["_id"], "lease_until": {"$exists": True}},
        {"$set": {"lease_until": timezone.now() - timezone.timedelta(seconds=1)}},
    )

    response = shopper.post("/checkout/", checkout_data(cart["_id"]))

    assert response.status_code == 302
    order = mongo_db.orders.find_one({"cart_id": cart["_id"]})
    assert order["state"] == "paid"
    assert response["Location"].startswith(f"/orders/{order['number']}/")
    page = shopper.get(response["Location"])
    assert page.status_code == 200
    assert "Paid" in page.content.decode()
    charges = list(mongo_db.test_gateway_charges.find())
    assert [c["outcome"] for c in charges] == ["paid"]
    assert mongo_db.carts.find_one({"_id": cart["_id"]})["state"] == "complete"
    level = stock_level(sku="SHOE")
    assert (level.sold, level.held, level.free) == (2, 0, 8)
    assert invariant_problems() == []
