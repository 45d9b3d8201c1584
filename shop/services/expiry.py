"""Ending carts whose hold ran out, and giving their units back.

Expiry never depends on the job having run (DESIGN §3.5): a cart past its
``expires_at`` is expired by whoever meets it first: the expire_carts job,
a shopper's next change, a reservation short of stock, or the reconciler.
"""

from datetime import datetime

from shop import events, faults
from shop.cart_state import ACTIVE, EXPIRED, EXPIRING, run_out_filter, stale_ranges
from shop.documents import ORDER_CANCELED, PENDING_PAYMENT
from shop.kinds import KINDS, backs_of, line_stock
from shop.services import owners
from shop.services.common import carts, load_cart, orders, utcnow


def cart_expire(*, cart_id: str, now: datetime | None = None) -> bool:
    """Expire one cart past its hold: ``active -> expiring -> expired``.

    Flips the cart to ``expiring`` only if it is active and past
    ``expires_at`` (one conditional update), releases every hold the cart
    has on a resource (listed or not: seats), cancels an unpaid order of
    the cart, then flips to ``expired`` with the units its lines held
    (``LineKind.backs``) and frees the owner's live-cart slot. An ``expiring`` cart
    (a run that stopped half-way) is resumed, never skipped. Idempotent and safe to run
    concurrently: each release is itself conditional. Returns True if this
    call found the cart expiring or made it so.
    """
    now = utcnow(now)
    # An update, then a read: an expiring cart's lines no longer change, and
    # a findAndModify costs time growing with the carts (config/compat.py).
    carts().update_one(
        {"_id": cart_id, **run_out_filter(now)},
        {"$set": {"state": EXPIRING, "modified_at": now}},
    )
    raw = carts().find_one({"_id": cart_id, "state": EXPIRING})
    if raw is None:
        return False
    faults.point("expire.after_flip")
    cart = load_cart(raw)
    for kind in KINDS:
        # What the cart lists, and what it holds without listing it (left by
        # a crash between a reservation and its cart write).
        listed = [kind.key(line) for line in kind.lines(cart)]
        for key in dict.fromkeys(listed + kind.held_keys(cart_id=cart_id)):
            kind.release(cart_id=cart_id, key=key)
            faults.point("expire.after_release")
    _cancel_unpaid_order(cart_id, now)
    # The lines held in their cart leave with the write that ends it (an
    # expiring cart's lines no longer change, so they are as read).
    entries = backs_of(cart, sold=False, now=now)

    def end(push: dict) -> bool:
        change = line_stock.merged(
            {"$set": {"state": EXPIRED, "ended_at": now}, "$unset": {"live_owner": ""}},
            push,
        )
        query = {"_id": cart_id, "state": EXPIRING}
        return bool(carts().update_one(query, change).modified_count)

    if line_stock.give(cart_id=cart_id, entries=entries, write=end):
        events.cart_moved.send(
            sender=None, cart_id=cart_id, before=ACTIVE, after=EXPIRED, at=now
        )
    faults.point("release.after_cart")
    owners.release(owner=raw["owner"], cart_id=cart_id)
    return True


def _cancel_unpaid_order(cart_id: str, now: datetime) -> None:
    """An order of the expiring cart still waiting for payment is canceled
    (one conditional update: a paid order is never touched)."""
    canceled = orders().update_one(
        {"cart_id": cart_id, "state": PENDING_PAYMENT},
        {"$set": {"state": ORDER_CANCELED, "canceled_at": now}},
    )
    if canceled.modified_count:
        events.cart_order_moved.send(
            sender=None,
            cart_id=cart_id,
            before=PENDING_PAYMENT,
            after=ORDER_CANCELED,
            at=now,
        )


def cart_release(*, cart_id: str, now: datetime | None = None) -> bool:
    """End an active cart's hold now and expire it (staff's "release now"):
    its units and seats go back exactly as when a hold runs out.

    The hold's end moves to now only on an active cart (one conditional
    update): a cart at checkout is never released under its payer. Returns
    False if the cart was not active.
    """
    now = utcnow(now)
    moved = carts().update_one(
        {"_id": cart_id, "state": ACTIVE}, {"$set": {"expires_at": now}}
    )
    if not moved.matched_count:
        return False
    return cart_expire(cart_id=cart_id, now=now)


def carts_expire(*, now: datetime | None = None, limit: int = 5000) -> int:
    """Expire every cart past its hold and resume every ``expiring`` one.

    The scheduled job; an optimisation, since each cart is also expired when
    met. Returns how many carts it expired.
    """
    now = utcnow(now)
    # Two index-served queries rather than one top-level $or (stale_filter),
    # which the Rust server answers with a collection scan.
    due = [
        raw["_id"]
        for query in stale_ranges(now)
        for raw in carts().find(query, {"_id": 1}, limit=limit)
    ]
    return sum(cart_expire(cart_id=cart_id, now=now) for cart_id in due)


def carts_expire_holding(*, kind, key: str, now: datetime | None = None) -> int:
    """Expire the stale carts that list resource ``key``; return how many.

    Called when a reservation fails for lack of units, before retrying once:
    units held by carts past their hold are not really taken.
    """
    now = utcnow(now)
    return sum(
        cart_expire(cart_id=cart_id, now=now)
        for cart_id in _stale_listing(kind, key, now)
    )


def _stale_listing(kind, key: str, now: datetime) -> list[str]:
    """The carts past their hold that list resource ``key``.

    The shop's stale carts, each branch of ``stale_filter`` one range of the
    expiry index (state, expires_at), are few (the expiry job runs every
    minute); the resource is checked here, on their lines. Named in the
    filter, it led the planner to an index on the line's resource and state
    (since retired), which read every live holder of a sold-out resource (a
    flash sale's thousand) on each refused add; a ``hint`` of the expiry
    index costs the Rust server time growing with the carts
    (bench/RESULTS.md, "A sold-out add").
    """
    listed = f"{kind.field}.{kind.key_field}"
    return [
        raw["_id"]
        for query in stale_ranges(now)
        for raw in carts().find(query, {listed: 1})
        if any(line.get(kind.key_field) == key for line in raw.get(kind.field, ()))
    ]
