"""Signal receivers of the shop app (connected in ShopConfig.ready)."""

import logging

from django.contrib import messages

from config.errors import DomainError
from shop.identity import anonymous_owner, forget_anonymous_owner, owner_of
from shop.services.carts import cart_merge_report
from shop.services.order_owners import orders_attach

log = logging.getLogger("marquee.shop")


def merge_cart_on_login(sender, request, user, **kwargs) -> None:
    """What a shopper put in their cart, and the orders they placed, before
    logging in stay theirs."""
    if request is None:
        return
    anonymous = anonymous_owner(request)
    if anonymous is None:
        return
    try:
        merged = cart_merge_report(from_owner=anonymous, to_owner=owner_of(request))
    except DomainError as exc:
        log.warning("cart merge on login failed: %s", exc.message)
    else:
        if merged.short:
            messages.warning(
                request,
                "Not all of what you chose before logging in could join your "
                "cart (sold out meanwhile, or over a limit): "
                f"{'; '.join(merged.short)}. Your cart shows what it holds now.",
                fail_silently=True,  # a login without a page (force_login)
            )
    # ... and so are the orders this browser placed before logging in.
    orders_attach(from_owner=anonymous, to_owner=owner_of(request))
    forget_anonymous_owner(request)
