"""Template context every page gets from the shop: the header's cart badge."""

from shop.identity import owner_of
from shop.selectors.carts import cart_units


def cart(request) -> dict:
    # No owner yet (a first visit): no cart, and no query.
    return {"cart_units": cart_units(owner=owner_of(request))}
