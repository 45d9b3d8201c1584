"""The cart's states, its allowed moves, and whether a cart is live or stale.

Pure: no query, no clock. Every service and selector that asks "does this
cart still hold its lines?", "has its hold run out?" or "why did my guarded
update of this cart match nothing?" asks here (DESIGN §3.5, §3.6), so the
rule exists once. Functions take a raw cart (a dict from a query) or a
``Cart`` document alike.

The states and their moves, each one conditional update on ``state``::

    active   -> pending   (checkout locks the cart)
    pending  -> active    (payment failed, or a stuck checkout reopened)
    pending  -> complete  (paid)
    active   -> expiring  (its hold ran out: whoever meets it first)
    expiring -> expired   (every hold given back)
    active   -> canceled  (emptied by a merge into the account's cart)
"""

from collections.abc import Mapping
from datetime import datetime, timedelta

from config.errors import DomainError
from shop.errors import (
    CartChanged,
    CartExpired,
    CartInactive,
    CartNotFound,
    CartPending,
)

ACTIVE = "active"
PENDING = "pending"
COMPLETE = "complete"
EXPIRING = "expiring"
EXPIRED = "expired"
CANCELED = "canceled"
CART_STATES = (ACTIVE, PENDING, COMPLETE, EXPIRING, EXPIRED, CANCELED)

MOVES: dict[str, tuple[str, ...]] = {
    # active -> complete: a charge that went through after the recovery
    # reopened its cart (the lease ran out): paid means done.
    ACTIVE: (PENDING, EXPIRING, CANCELED, COMPLETE),
    PENDING: (ACTIVE, COMPLETE),
    EXPIRING: (EXPIRED,),
    COMPLETE: (),
    EXPIRED: (),
    CANCELED: (),
}

# States in which a cart may hold reservations (an expiring cart is still
# giving them back).
HOLDING_STATES = (ACTIVE, PENDING, EXPIRING)
# States in which a settled cart lists what it holds: every hold of a cart
# in another state is a leftover.
LISTING_STATES = (ACTIVE, PENDING)


def can_move(state: str, to: str) -> bool:
    """Whether ``state -> to`` is one of the cart's moves."""
    return to in MOVES.get(state, ())


def _field(cart, name: str):
    if isinstance(cart, Mapping):
        return cart.get(name)
    return getattr(cart, name, None)


def is_live(cart, now: datetime) -> bool:
    """The cart still holds its lines for the shopper: in checkout, or
    active within its hold."""
    state = _field(cart, "state")
    return state == PENDING or (state == ACTIVE and _field(cart, "expires_at") > now)


def is_stale(cart, now: datetime) -> bool:
    """The cart's hold ran out but its units are not all back yet: active
    past ``expires_at``, or half-way through its expiry. Whoever meets such
    a cart expires it."""
    state = _field(cart, "state")
    return state == EXPIRING or (state == ACTIVE and _field(cart, "expires_at") <= now)


def holds_anything(cart) -> bool:
    """The cart may hold reservations (a missing cart holds nothing)."""
    return cart is not None and _field(cart, "state") in HOLDING_STATES


def live_filter(owner: str) -> dict:
    """The filter finding the owner's one cart that is not over (the unique
    ``live_owner`` index allows one); ``is_live`` says if it still holds."""
    return {"live_owner": owner}


def lease_open(cart, now: datetime, lease: timedelta) -> bool:
    """A checkout is running on this pending cart: its lease (``lease_until``,
    renewed while the checkout runs) has not lapsed. A cart pending from
    before leases existed counts from ``checkout_at``."""
    if _field(cart, "state") != PENDING:
        return False
    until = _field(cart, "lease_until")
    if until is None:
        until = _field(cart, "checkout_at") + lease
    return until > now


def lapsed_filters(now: datetime, lease: timedelta) -> list[dict]:
    """Pending carts whose checkout lease lapsed (``not lease_open``), as
    filters to try in turn: the guard of a takeover, by a resubmit or the
    reconciler. Two filters, not one top-level ``$or`` (config/compat.py);
    the second finds carts pending from before leases existed."""
    return [
        {"state": PENDING, "lease_until": {"$lte": now}},
        {
            "state": PENDING,
            "lease_until": {"$exists": False},
            "checkout_at": {"$lte": now - lease},
        },
    ]


def open_filter(now: datetime) -> dict:
    """The guard of a change to a cart: active and within its hold."""
    return {"state": ACTIVE, "expires_at": {"$gt": now}}


def run_out_filter(now: datetime) -> dict:
    """Active carts whose hold ran out (the guard of ``active -> expiring``)."""
    return {"state": ACTIVE, "expires_at": {"$lte": now}}


def stale_ranges(now: datetime) -> tuple[dict, dict]:
    """``stale_filter``'s two branches, each one range of the expiry index
    (state, expires_at), to query one by one where a top-level ``$or`` would
    not be planned on that index."""
    return run_out_filter(now), {"state": EXPIRING}


def stale_filter(now: datetime) -> dict:
    """The filter of ``is_stale``: carts to expire."""
    return {"$or": list(stale_ranges(now))}


def refusal(
    raw,
    now: datetime,
    *,
    active: DomainError | None = None,
    pending: DomainError | None = None,
    closed: DomainError | None = None,
) -> DomainError:
    """Why a guarded update of this cart (read back as ``raw``) matched nothing.

    Missing: CartNotFound. In checkout: ``pending`` (CartPending). Past its
    hold or expired: CartExpired. Still active: the guard's own condition
    failed, ``active`` (CartChanged: another request changed it). Otherwise
    (complete, canceled): ``closed`` (CartInactive).
    """
    if raw is None:
        return CartNotFound()
    state = _field(raw, "state")
    if state == PENDING:
        return pending or CartPending()
    if state == EXPIRED or is_stale(raw, now):
        return CartExpired()
    if state == ACTIVE:
        return active or CartChanged()
    return closed or CartInactive()


def missing(latest, default: DomainError) -> DomainError:
    """Why the owner has no live cart, from their latest cart (``latest``,
    None if they never had one): it expired, or ``default``."""
    if latest is not None and _field(latest, "state") == EXPIRED:
        return CartExpired()
    return default
