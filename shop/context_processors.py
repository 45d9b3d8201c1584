"""Template context every page gets from the shop: the header's cart badge."""

from shop.identity import owner_of
from shop.selectors.carts import cart_units


def cart(request) -> dict:
    # A request that never went through the session middleware (a rendered
    # error page, a request built in a test) has no cart to count.
    if not hasattr(request, "session"):
        return {"cart_units": 0}
    # No owner yet (a first visit): no cart, and no query.
    return {"cart_units": cart_units(owner=owner_of(request))}
