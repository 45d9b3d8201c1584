"""Template context every page gets from the shop: the header's cart badge."""

from functools import cache

from shop.identity import owner_of, owns_nothing_yet
from shop.selectors.carts import cart_units


def cart(request) -> dict:
    # A request that never went through the session middleware (a rendered
    # error page, a request built in a test) has no cart to count.
    if not hasattr(request, "session"):
        return {"cart_units": 0}

    # Counted only if a template shows it and the view did not pass it
    # (views that hold the cart already do): the template engine calls a
    # callable; cached, so the badge's three uses make one query. No owner
    # yet (a first visit), or a token this page made: no cart, no query.
    @cache
    def units() -> int:
        if owns_nothing_yet(request):
            return 0
        return cart_units(owner=owner_of(request))

    return {"cart_units": units}
