"""Plumbing shared by the shop's services (not called from outside shop)."""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone
from pymongo.collection import Collection

from config import compat
from shop.cart_state import ACTIVE
from shop.documents import Cart, Order


def carts() -> Collection:
    return Cart.coll()


def orders() -> Collection:
    return Order.coll()


def utcnow(now: datetime | None = None) -> datetime:
    """``now`` (tests pass one to control time) or the clock, aware, in UTC."""
    now = now or timezone.now()
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return now.astimezone(UTC)


def hold_time() -> timedelta:
    return timedelta(minutes=settings.CART_HOLD_MINUTES)


def fresh_hold(now: datetime) -> dict:
    """A new cart's ``modified_at`` and ``expires_at``: its hold starts now."""
    return {"modified_at": now, "expires_at": now + hold_time()}


def touched(update: dict, now: datetime) -> dict:
    """``update`` with what every change of a cart does besides: it sets
    ``modified_at``, and restarts the hold from now without ever shortening
    it (``$max``): a hold the shopper extended stands (``cart_extend_hold``)."""
    merged = dict(update)
    merged["$set"] = {**update.get("$set", {}), "modified_at": now}
    merged["$max"] = {**update.get("$max", {}), "expires_at": now + hold_time()}
    return merged


def touched_end(expires_at: datetime, now: datetime) -> datetime:
    """The ``expires_at`` a ``touched`` write leaves, for a cart held in
    memory that the write changed (the same rule, on this side)."""
    return max(expires_at, now + hold_time())


def cart_document(
    owner: str, cart_id: str, now: datetime, lines: dict | None = None
) -> tuple[Cart, dict]:
    """A new live cart of the owner (findable by ``live_owner``), with
    ``lines`` (a kind's field and its raw lines) if given: the ``Cart`` and
    the document to insert. Only the owner's claim makes it live
    (shop.services.owners), so only its claimant inserts it."""
    cart = Cart(
        cart_id=cart_id,
        owner=owner,
        live_owner=owner,
        state=ACTIVE,
        items=[],
        created_at=now,
        **fresh_hold(now),
    )
    son = cart.to_mongo().to_dict()
    son.update(lines or {})
    # No stock move in flight yet: the fields of the moves (shop.kinds.
    # line_stock) are written when there is one, not as empty lists on
    # every cart.
    for field in ("stock_back", "stock_void", "moved_in"):
        if not son.get(field):
            son.pop(field, None)
    return cart, son


def update_then_read(cart_id: str, guard: dict, update: dict) -> dict | None:
    """Apply ``update`` to the active cart if ``guard`` holds, and return the
    cart as it is after (None when the guard matched nothing).

    An update, then a read (``compat.update_then_read``): a findAndModify
    would cost time growing with the carts on the Rust server, and the
    Python server refuses one with a positional "$" (config/compat.py).
    """
    query = {"_id": cart_id, "state": ACTIVE, **guard}
    return compat.update_then_read(carts(), query, update)


def lease_time() -> timedelta:
    """How long a checkout holds its pending cart without renewing its lease."""
    return timedelta(seconds=settings.SHOP_CHECKOUT_LEASE_SECONDS)


def load_cart(raw: dict | None) -> Cart | None:
    return Cart._from_son(raw) if raw else None
