"""The limit on declined card payments (card testing).

A bot with stolen card numbers tries them one after another at checkout:
each decline reopens the cart with its holds, so one cart, or fresh carts,
would take any number of tries. The shopper's declined cards are counted,
per session and per client address (``throttle.client_ip``), in fixed
windows of ``DECLINES_WINDOW_SECONDS``; once either window has
``DECLINES_PER_SESSION`` / ``DECLINES_PER_ADDRESS`` declines, a checkout
POST is answered 429 before the view runs (nothing is charged, locked or
released; ``Retry-After`` is what is left of the window), until the window
ends.

The counts are the throttle's (``throttle.hit``, documents of
``ThrottleCount`` named ``declines:<who>|<window start>``, reaped by its TTL
index). Counting is the decline's: the checkout view announces a declined
card (``shop.events.card_declined``, a provider's own failure is not the
card's and is not counted), the receiver counts it. The check is one read
of both windows by ``_id`` on every checkout POST. A check then a count,
not the throttle's count-first: counting every attempt before its charge
would cost two synced writes on every checkout, and a successful payment
would have to give its count back. The price: checkouts of one address
declined at the same moment may each pass the check, so a window can see as
many more declines as checkouts run at once (its count stops at the limit).

Only the shop's checkout page is limited; the box office's sales (staff,
``shop.services.box_office``) do not go through it.
"""

from datetime import UTC, datetime

from django.conf import settings
from django.shortcuts import render

from accounts.documents import ThrottleCount
from accounts.throttle import client_ip, hit, when_again, window_id
from shop.identity import owner_of
from shop.selectors.carts import live_cart

# The page whose POST charges a card (url name).
CHECKOUT = "shop:checkout"


def _windows(request) -> list[tuple[str, int]]:
    """(key, limit) of each window the request is counted in: its address's,
    and its session's when it has one."""
    windows = [(f"declines:ip:{client_ip(request)}", settings.DECLINES_PER_ADDRESS)]
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        windows.append(
            (f"declines:session:{session.session_key}", settings.DECLINES_PER_SESSION)
        )
    return windows


def count_decline(request, *, now: datetime | None = None) -> None:
    """Count one declined card against the request's session and address."""
    now = now or datetime.now(UTC)
    window = settings.DECLINES_WINDOW_SECONDS
    for key, limit in _windows(request):
        hit(key, limit=limit, window=window, now=now)


def declines_exhausted(request, *, now: datetime | None = None) -> bool:
    """Whether the session's or the address's window is at its limit: one
    read of both counts by ``_id``."""
    now = now or datetime.now(UTC)
    window = settings.DECLINES_WINDOW_SECONDS
    limits = {window_id(key, window, now): limit for key, limit in _windows(request)}
    found = ThrottleCount.coll().find({"_id": {"$in": list(limits)}}, {"n": 1})
    return any(doc["n"] >= limits[doc["_id"]] for doc in found)


def declines_refused(request, *, now: datetime | None = None):
    """The 429 page: the card was not charged, the items stay held until
    their hold ends, and when to try again."""
    now = now or datetime.now(UTC)
    context = {
        **when_again(settings.DECLINES_WINDOW_SECONDS, now),
        "cart": live_cart(owner=owner_of(request)),
    }
    response = render(request, "accounts/declines_429.html", context, status=429)
    response["Retry-After"] = str(context["seconds"])
    return response


def card_declined(sender, *, request, **kwargs) -> None:
    """``shop.events.card_declined``'s receiver: the decline counts against
    the request's session and client address."""
    count_decline(request)


def declines_refusal(request):
    """The 429 for a checkout once the shopper's declined cards reached a
    limit, or None."""
    now = datetime.now(UTC)
    if not declines_exhausted(request, now=now):
        return None
    return declines_refused(request, now=now)
