"""The cart page's stock warnings: a line of a SKU running low says how
many more units the shopper could still have, counting those held by carts
past their hold (they come back as soon as anyone meets those carts)."""

from datetime import timedelta

from shop.selectors.carts import cart_view
from shop.services.carts import cart_add_item, cart_extend_hold
from tests.shop.factories import make_product


def warning(owner, now):
    (line,) = cart_view(owner=owner, now=now).lines
    return line.warning


def test_a_low_line_counts_the_units_of_carts_past_their_hold(mongo_db, now):
    sku = make_product(sku="FEW-6", stock=8)
    gone = now - timedelta(hours=2)
    cart_add_item(owner="anon:gone", sku=sku, quantity=3, now=gone)
    # Unchanged for longer than a hold, but extended: still within it.
    kept = now - timedelta(minutes=40)
    cart_add_item(owner="anon:kept", sku=sku, quantity=1, now=kept)
    cart_extend_hold(owner="anon:kept", now=kept + timedelta(minutes=1))
    cart_add_item(owner="anon:here", sku=sku, quantity=1, now=now)

    # 3 free, and the 3 of the cart that ran out; not the extended cart's.
    assert warning("anon:here", now) == "Only 6 more available"


def test_a_line_with_stock_enough_has_no_warning(mongo_db, now):
    sku = make_product(sku="MANY", stock=100)
    cart_add_item(owner="anon:gone", sku=sku, quantity=3, now=now - timedelta(hours=2))
    cart_add_item(owner="anon:here", sku=sku, quantity=1, now=now)

    assert warning("anon:here", now) == ""
