"""The one line pipeline: how any kind of line gets onto a cart and off it.

Order of the two writes (DESIGN §3.2), the same for every kind. When units
are TAKEN: the resource first (``take``), then the cart (``record``, guarded
on ``state == "active"`` and on the line as read), and if the cart refuses,
the units go straight back (``give_back``). When units are GIVEN BACK: the
cart first (``unlist``), then the resource. Either way the resource never
holds less than the cart lists: a crash between the two writes leaves a
surplus hold, which the reconciler returns; never a line without its units.

Here too: the owner's live cart (found, expired on the spot, or created:
one ``new_cart`` for every kind), and the one cart write that must read the
cart back after a positional update (``update_then_read``). Every change
pushes ``expires_at`` to now + CART_HOLD_MINUTES (``touch``).
"""

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from config import compat
from config.errors import DomainError
from shop import faults
from shop.cart_state import (
    ACTIVE,
    PENDING,
    is_live,
    live_filter,
    missing,
    refusal,
)
from shop.documents import Cart
from shop.errors import CartChanged, CartNotFound, CartPending
from shop.services import owners
from shop.services.common import carts, hold_time, load_cart
from shop.services.expiry import cart_expire

# Read-then-write loops on the cart retry this often when another request of
# the same shopper got in between.
ATTEMPTS = 4

Held = TypeVar("Held")
Listed = TypeVar("Listed")


def touch(now: datetime) -> dict:
    """The fields every cart change sets: the hold restarts from now."""
    return {"modified_at": now, "expires_at": now + hold_time()}


def reload(cart_id: str) -> Cart:
    return load_cart(carts().find_one({"_id": cart_id}))


def refusal_of(cart_id: str, now: datetime) -> DomainError:
    """Why a guarded update of this cart matched nothing (``cart_state``)."""
    raw = carts().find_one({"_id": cart_id}, {"state": 1, "expires_at": 1})
    return refusal(raw, now)


def missing_cart(owner: str, now: datetime, default: DomainError) -> DomainError:
    """The owner has no live cart: say so, or that it expired."""
    latest = carts().find_one(
        {"owner": owner}, {"state": 1}, sort=[("modified_at", -1)]
    )
    return missing(latest, default)


def live_cart(owner: str, now: datetime, *, create: bool) -> Cart | None:
    """The owner's active cart within its hold (created if asked).

    A live cart found past its hold is expired on the spot (its units go
    back) and a new one started: expiry never waits for the job.
    Raises CartPending while a checkout of the owner's cart runs.
    """
    if not isinstance(owner, str) or not owner:
        # No shopper identity yet (a first visit): no cart to find.
        if create:
            raise CartNotFound()
        return None
    for _ in range(ATTEMPTS):
        raw = carts().find_one(live_filter(owner))
        if raw is not None:
            if raw["state"] == PENDING:
                raise CartPending()
            if is_live(raw, now):
                return load_cart(raw)
            cart_expire(cart_id=raw["_id"], now=now)
            continue
        if not create:
            return None
        cart = new_cart(owner, now)
        if cart is not None:
            return cart
    raise CartChanged()


def new_cart(
    owner: str, now: datetime, *, cart_id: str | None = None, lines: dict | None = None
) -> Cart | None:
    """A new live cart for the owner, born with ``lines`` (a kind's field and
    its raw lines) if given; None when the owner has a live cart already.

    Inserted unclaimed, then claimed (shop.services.owners: the claim is
    what allows one live cart per owner), then findable by ``live_owner``.
    A cart that loses the claim never was: only this call knew its id, so
    it is deleted, and the caller gives back whatever it took for it.
    """
    if not isinstance(owner, str) or not owner:
        raise CartNotFound()
    cart = Cart(
        cart_id=cart_id or uuid.uuid4().hex,
        owner=owner,
        state=ACTIVE,
        items=[],
        created_at=now,
        **touch(now),
    )
    son = cart.to_mongo().to_dict()
    son.update(lines or {})
    carts().insert_one(son)
    faults.point("new_cart.after_insert")
    if not owners.claim(owner=owner, cart_id=cart.cart_id, now=now):
        carts().delete_one({"_id": cart.cart_id, "state": ACTIVE})
        return None
    faults.point("new_cart.after_claim")
    carts().update_one(
        {"_id": cart.cart_id, "state": ACTIVE}, {"$set": {"live_owner": owner}}
    )
    cart.live_owner = owner
    return cart


def update_then_read(cart_id: str, guard: dict, update: dict) -> dict | None:
    """Apply ``update`` to the active cart if ``guard`` holds, and return the
    cart as it is after (None when the guard matched nothing).

    An update, then a read (``compat.update_then_read``): a findAndModify
    would cost time growing with the carts on the Rust server, and the
    Python server refuses one with a positional "$" (config/compat.py).
    """
    query = {"_id": cart_id, "state": ACTIVE, **guard}
    return compat.update_then_read(carts(), query, update)


def take_and_record(
    *,
    cart_id: str,
    take: Callable[[], Held],
    record: Callable[[Held], dict | None],
    give_back: Callable[[Held], None],
    now: datetime,
    point: str,
) -> tuple[Held, dict]:
    """Take on the resource, then record on the cart; if the cart refuses,
    give back what was taken and raise the cart's refusal.

    Returns what was taken and the cart as recorded.
    """
    held = take()
    faults.point(point)
    raw = record(held)
    if raw is None:
        give_back(held)
        raise refusal_of(cart_id, now)
    return held, raw


def unlist_and_give_back(
    *,
    cart_id: str,
    unlist: Callable[[], Listed | None],
    give_back: Callable[[], None],
    now: datetime,
    point: str,
) -> Listed:
    """The reverse: the cart first (``unlist``, guarded; nothing matched
    raises the cart's refusal), then the resource. Returns what ``unlist``
    did (the cart after, or a count)."""
    unlisted = unlist()
    if not unlisted:
        raise refusal_of(cart_id, now)
    faults.point(point)
    give_back()
    return unlisted
