"""Signal receivers of the shop app (connected in ShopConfig.ready)."""

import logging

from config.errors import DomainError
from shop.identity import anonymous_owner, forget_anonymous_owner, owner_of
from shop.services.carts import cart_merge

log = logging.getLogger("marquee.shop")


def merge_cart_on_login(sender, request, user, **kwargs) -> None:
    """What a shopper put in their cart before logging in stays theirs."""
    if request is None:
        return
    anonymous = anonymous_owner(request)
    if anonymous is None:
        return
    try:
        cart_merge(from_owner=anonymous, to_owner=owner_of(request))
    except DomainError as exc:
        log.warning("cart merge on login failed: %s", exc.message)
    forget_anonymous_owner(request)
