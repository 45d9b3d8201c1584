"""Staff accounts of each role, a shopper, and paid orders made through the
shop's own services at the real clock (the dashboard reads today)."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout
from shop.services.tickets import cart_hold_seats
from staff.roles import ADMINISTRATOR, BOX_OFFICE, SHOP_MANAGER, create_staff
from tests.shop.factories import SHIPPING, card, make_product, make_show

PASSWORD = "a-long-test-password"
ROLE_EMAILS = {
    BOX_OFFICE: "box@example.com",
    SHOP_MANAGER: "shop@example.com",
    ADMINISTRATOR: "admin@example.com",
}


@pytest.fixture
def staff_users(db):
    return {
        role: create_staff(email=email, role=role, password=PASSWORD)
        for role, email in ROLE_EMAILS.items()
    }


@pytest.fixture
def shopper(db):
    return get_user_model().objects.create_user(
        "shopper@example.com", "shopper@example.com", PASSWORD
    )


@pytest.fixture
def product():
    return make_product(sku="SNKR-42", title="JC Sneaker", price="100.00", stock=50)


@pytest.fixture
def show():
    return make_show()


def pay(owner: str, *, sku=None, quantity=1, session=None, seats=(), now=None):
    """A paid order for ``owner``: goods, seats, or both."""
    now = now or timezone.now()
    if sku:
        cart_add_item(owner=owner, sku=sku, quantity=quantity, now=now)
    if session:
        cart_hold_seats(owner=owner, session_id=session, seats=tuple(seats), now=now)
    from shop.documents import Cart

    cart = Cart.objects(live_owner=owner).first()
    return cart_checkout(
        owner=owner,
        cart_id=cart.cart_id,
        email=f"{owner.split(':')[1]}@example.com",
        shipping=SHIPPING,
        card=card(),
        now=now,
    )
