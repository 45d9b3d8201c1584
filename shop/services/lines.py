"""The one line pipeline: how any kind of line gets onto a cart and off it.

Order of the two writes (DESIGN §3.2), the same for every kind; each step is
the kind's own (``LineKind.take``, ``record``, ``unlist``, ``give_back``,
``transfer``: ``shop/kinds/``). When units are TAKEN: the resource first
(``take``), then the cart (``record``, guarded on ``state == "active"`` and
on the line as read), and if the cart refuses, the units go straight back
(``give_back``). When units are GIVEN BACK: the cart first (``unlist``),
then the resource. A login MOVES a line: off the anonymous cart, handed
over on the resource, onto the account's cart (``move_line``). Either way
the resource never holds less than the cart lists: a crash between two
writes leaves a surplus hold, which the reconciler returns; never a line
without its units.

Here too: the owner's live cart (found, expired on the spot, or created:
one ``new_cart`` for every kind), and the first line of an owner without
one (``first_line``: taken for a new cart id, then the cart is made with
it). Every change pushes ``expires_at`` to now + CART_HOLD_MINUTES, never
back from a later end the shopper asked for (``shop.services.common.touched``).
"""

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from pymongo.errors import DuplicateKeyError

from config.errors import DomainError
from shop import faults
from shop.cart_state import (
    PENDING,
    is_live,
    live_filter,
    missing,
    refusal,
)
from shop.documents import Cart
from shop.errors import CartChanged, CartNotFound, CartPending
from shop.services import owners
from shop.services.common import cart_document, carts, load_cart
from shop.services.expiry import cart_expire

# Read-then-write loops on the cart retry this often when another request of
# the same shopper got in between.
ATTEMPTS = 4

Held = TypeVar("Held")
Listed = TypeVar("Listed")


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


def _anonymous(owner) -> bool:
    """No shopper identity yet (a first visit): no cart to find or make."""
    return not isinstance(owner, str) or not owner


def live_cart(owner: str, now: datetime, *, create: bool) -> Cart | None:
    """The owner's active cart within its hold (created if asked).

    A live cart found past its hold is expired on the spot (its units go
    back) and a new one started: expiry never waits for the job.
    Raises CartPending while a checkout of the owner's cart runs.
    """
    raw = live_son(owner, now)
    if raw is not None:
        return load_cart(raw)
    if not create:
        return None
    for _ in range(ATTEMPTS):
        cart = new_cart(owner, now)
        if cart is not None:
            return cart
        raw = live_son(owner, now)
        if raw is not None:
            return load_cart(raw)
    raise CartChanged()


def live_son(owner: str, now: datetime) -> dict | None:
    """``live_cart``'s cart as stored (never made here), for a caller whose
    guard is the cart as read."""
    if _anonymous(owner):
        return None
    for _ in range(ATTEMPTS):
        raw = carts().find_one(live_filter(owner))
        if raw is None:
            return None
        if raw["state"] == PENDING:
            raise CartPending()
        if is_live(raw, now):
            return raw
        cart_expire(cart_id=raw["_id"], now=now)
    raise CartChanged()


def new_cart(
    owner: str, now: datetime, *, cart_id: str | None = None, lines: dict | None = None
) -> Cart | None:
    """A new live cart for the owner, born with ``lines`` (a kind's field and
    its raw lines) if given; None when the owner has a live cart already.

    Claimed first (shop.services.owners: the claim is what allows one live
    cart per owner), then inserted with its ``live_owner``: two writes. A
    claim lost leaves nothing behind, and the caller gives back whatever it
    took for the cart. Should another request of the owner meet the claim
    before the insert, it makes the claimed cart itself (``owners.claim``),
    this insert finds it there, and the caller uses that cart instead.
    """
    if _anonymous(owner):
        raise CartNotFound()
    cart, son = cart_document(owner, cart_id or uuid.uuid4().hex, now, lines)
    if not owners.claim(owner=owner, cart_id=cart.cart_id, now=now):
        return None
    faults.point("new_cart.after_claim")
    try:
        carts().insert_one(son)
    except DuplicateKeyError:
        return None  # made empty by another request meanwhile: the owner's cart
    return cart


def first_line(
    owner: str,
    now: datetime,
    *,
    field: str,
    take: Callable[[str], Held],
    son: Callable[[Held], dict],
    give_back: Callable[[str, Held], None],
    point: str,
) -> tuple[Held, Cart] | None:
    """The pipeline for an owner without a live cart: take on the resource
    for a new cart id (``take(cart_id)``), then make the cart born with its
    line (``son(held)`` in the kind's ``field``): the owner's claim, then
    the insert. A refused take makes no cart and no claim, and the cart
    costs no write of its own. None when another request of the owner made
    a live cart meanwhile: what was taken went back (``give_back``), and
    the caller takes again on that cart. A crash between the take and the
    cart leaves a hold no cart lists, which the reconciler returns. Raises
    CartNotFound for an owner without an identity, before taking anything.
    """
    if _anonymous(owner):
        raise CartNotFound()
    cart_id = uuid.uuid4().hex
    held = take(cart_id)
    faults.point(point)
    cart = new_cart(owner, now, cart_id=cart_id, lines={field: [son(held)]})
    if cart is None:
        give_back(cart_id, held)
        return None
    return held, cart


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


def move_line(kind, *, source_id: str, target_id: str, line, now: datetime):
    """Login: one line leaves the anonymous cart for the account's.

    The source first (``unlist``, guarded on the line as read: a line that
    changed meanwhile stays where it is), then the resource hands the
    source's hold to the target (``transfer``: nothing is free in between),
    then the target lists it (``record``); if the target refuses (closed,
    or over a cap), what moved goes back. A crash between any two steps
    leaves only a hold no cart lists, which the reconciler returns.

    When the hold cannot move (the target holds the resource already), the
    source's hold goes back, and what the target may take again of it is
    returned (``LineKind.refill``) for the caller to add; else None.
    """
    if kind.moves_whole:
        moved = kind.move(source_id=source_id, target_id=target_id, line=line, now=now)
        if moved is False:  # the target refused: it may take some again
            return kind.refill(line=line, target=reload(target_id))
        return None
    if not kind.unlist(
        cart_id=source_id, line=line, update={"$set": {"modified_at": now}}
    ):
        return None
    faults.point(f"merge.after_{kind.name}_source")
    moved = kind.transfer(
        from_cart_id=source_id, to_cart_id=target_id, line=line, now=now
    )
    if moved is None:
        kind.give_back(cart_id=source_id, line=line, now=now)
        return kind.refill(line=line, target=reload(target_id))
    faults.point(f"merge.after_{kind.name}_transfer")
    try:
        recorded = kind.record(cart_id=target_id, line=moved, now=now)
    except DomainError:
        recorded = None  # over a cap of the account's cart
    if recorded is None:
        kind.give_back(cart_id=target_id, line=moved, now=now)
    return None
