"""A shopper's seats: hold, best available, release, and their cart lines.

Seats run the line pipeline of ``shop.services.lines`` (DESIGN §3.2).
Holding: the seats are taken on the session first (booking's one
conditional update), then listed on the active cart (a conditional update
guarded on ``state == "active"`` and, for an existing line, on its
``rev``); if the cart refuses, the seats are released at once. A
shopper's first hold creates the cart only after the seats are held (the
cart is born with its line), so a refused hold leaves nothing behind.
Releasing: the cart first, then the session. A crash between the two
writes only ever leaves seats held that the cart does not list, which the
reconciler (or the cart's expiry) returns.

Lost races follow DESIGN §3.5: a hold refused because another cart has the
seat first expires that cart if its hold has run out (or releases the seat
if the cart is already over), then tries once more.
"""

from datetime import datetime

from booking.checks import MAX_SEATS_PER_HOLD, MAX_SEATS_PER_REQUEST, seat_count
from booking.checks import positions as seat_positions
from booking.errors import (
    NoAdjacentSeats,
    SeatsAlreadyHeld,
    SeatsTaken,
    UnknownZone,
)
from booking.selectors import seat_holders
from booking.services.seats import (
    seats_best_available,
    seats_hold,
    seats_release,
)
from booking.values import Seat, SeatHold
from shop import faults
from shop.cart_state import ACTIVE, holds_anything, is_stale
from shop.errors import CartChanged, SeatsNotInCart, TooManySeats
from shop.kinds import TICKETS
from shop.services import caps
from shop.services.common import carts, touched, utcnow
from shop.services.expiry import cart_expire, carts_expire_holding
from shop.services.lines import (
    ATTEMPTS,
    first_line,
    live_cart,
    missing_cart,
    refusal_of,
    take_and_record,
)


def _free_stale_holders(
    session_id: str, seats: tuple[Seat, ...], cart_id: str, now: datetime
) -> int:
    """Expire the carts holding ``seats`` whose hold has run out, and release
    seats of carts already over (a crash's leftovers). Returns how many.

    A holder with no cart document is left alone: a first hold creates its
    cart right after the seats, and the reconciler (with its grace period)
    returns the seats if that cart never comes.
    """
    holders = set(seat_holders(session_id=session_id, seats=seats).values())
    holders.discard(cart_id)
    freed = 0
    for holder in holders:
        raw = carts().find_one({"_id": holder}, {"state": 1, "expires_at": 1})
        if raw is None:
            continue
        if not holds_anything(raw):
            # No live cart can list these seats again: they are orphans.
            freed += bool(seats_release(session_id=session_id, cart_id=holder).seats)
        elif is_stale(raw, now):
            freed += cart_expire(cart_id=holder, now=now)
    return freed


def _take_seats(
    cart_id: str,
    session_id: str,
    wanted: tuple[Seat, ...],
    now: datetime,
    from_blocked: bool = False,
) -> SeatHold:
    for attempt in (1, 2):
        try:
            return seats_hold(
                session_id=session_id,
                cart_id=cart_id,
                seats=wanted,
                from_blocked=from_blocked,
            )
        except SeatsAlreadyHeld:
            raise  # this cart's own seats: nobody to expire
        except SeatsTaken as exc:
            if attempt == 2 or not _free_stale_holders(
                session_id, exc.seats or wanted, cart_id, now
            ):
                raise
    raise AssertionError("unreachable")


def _hold_on(cart_id: str, take, now: datetime, point: str) -> SeatHold:
    """The line pipeline on the owner's live cart: seats, then the line
    (over the cap, the seats just taken go straight back)."""

    def record(held: SeatHold):
        try:
            return TICKETS.record(
                cart_id=cart_id, line=TICKETS.line_of(held, now), now=now
            )
        except TooManySeats:
            _give_back(cart_id, held)
            raise

    held, _ = take_and_record(
        cart_id=cart_id,
        take=lambda: take(cart_id),
        record=record,
        give_back=lambda held: _give_back(cart_id, held),
        now=now,
        point=point,
    )
    return held


def _hold_for(
    owner: str, now: datetime, take, point: str, *, session_id: str, count: int
) -> SeatHold:
    """Hold seats with ``take(cart_id)``, then list them on the owner's cart.

    An owner without a live cart gets one only once the seats are held (a
    refused hold leaves nothing behind): the seats are held for a new cart
    id, then the cart is created with its line. If the cart refuses, the
    seats go straight back. ``count`` seats of ``session_id`` must fit the
    caps (``shop/services/caps.py``) before any is taken.
    """
    for _ in range(ATTEMPTS):
        cart = live_cart(owner, now, create=False)
        caps.hold_fits(cart, session_id, count)
        if cart is not None:
            return _hold_on(cart.cart_id, take, now, point)
        made = first_line(
            owner,
            now,
            field=TICKETS.field,
            take=take,
            son=lambda held: TICKETS.line_of(held, now).to_mongo().to_dict(),
            give_back=_give_back,
            point=point,
        )
        if made is not None:
            return made[0]
    raise CartChanged()


def _give_back(cart_id: str, held: SeatHold) -> None:
    seats_release(session_id=held.session_id, cart_id=cart_id, seats=held.positions)


def cart_hold_seats(
    *,
    owner: str,
    session_id: str,
    seats: tuple[Seat, ...],
    now: datetime | None = None,
    from_blocked: bool = False,
) -> SeatHold:
    """Hold ``seats`` of a session for the owner's cart and list them on it.

    All or nothing: the seats are held on the session first (one
    conditional update, every seat FREE), then added to the cart's line for
    the session. Prices and labels come from the session, never the request.
    A seat another cart has whose hold ran out is freed first and the hold
    tried once more. Invariants: no seat in two carts; a cart lists only
    seats the session holds for it (outside the instant between the writes).
    Returns the seats held. ``from_blocked`` (a box-office sale): every
    seat must be BLOCKED instead of FREE, and goes back BLOCKED if the hold
    is released (booking's ``seats_hold``).

    Raises InvalidSeats (not 1..10 distinct (row, col) pairs), TooManySeats
    and TooManyLines (the caps), SessionNotFound, SessionClosed, SeatOffMap,
    SeatsTaken, SeatsAlreadyHeld, SeatsNotBlocked (``from_blocked``),
    CartPending, CartExpired, CartChanged.
    """
    wanted = seat_positions(seats, limit=MAX_SEATS_PER_HOLD)
    now = utcnow(now)
    return _hold_for(
        owner,
        now,
        lambda cart_id: _take_seats(cart_id, session_id, wanted, now, from_blocked),
        "tickets.after_hold",
        session_id=session_id,
        count=len(wanted),
    )


def cart_hold_best_available(
    *,
    owner: str,
    session_id: str,
    count: int,
    zone: str | None = None,
    now: datetime | None = None,
) -> SeatHold:
    """Hold the best ``count`` adjacent seats (in ``zone``, any if None) and
    list them on the owner's cart.

    Booking picks and holds the block in one conditional update (looking
    again after each lost race); then the seats are listed as by
    ``cart_hold_seats``. When no block is left, the stale carts listing the
    session are expired and the search runs once more. Same invariants as
    ``cart_hold_seats``.

    Raises InvalidSeats (count not 1..10), UnknownZone, SessionNotFound,
    SessionClosed, NoAdjacentSeats, BoxOfficeBusy, CartPending, CartExpired,
    CartChanged.
    """
    count = seat_count(count)
    if zone is not None and not isinstance(zone, str):
        raise UnknownZone()
    now = utcnow(now)

    def take(cart_id: str) -> SeatHold:
        for attempt in (1, 2):
            try:
                return seats_best_available(
                    session_id=session_id, cart_id=cart_id, count=count, zone=zone
                )
            except NoAdjacentSeats:
                if attempt == 2 or not carts_expire_holding(
                    kind=TICKETS, key=session_id, now=now
                ):
                    raise
        raise AssertionError("unreachable")

    return _hold_for(
        owner, now, take, "tickets.after_best", session_id=session_id, count=count
    )


def _unlist(cart_id: str, session_id: str, wanted, now: datetime) -> bool:
    """First write of a release: take ``wanted`` (all if None) off the cart's
    line, or the whole line when none would be left. Returns whether the
    line listed any of them. Raises the cart's refusal."""
    for _ in range(ATTEMPTS):
        raw = carts().find_one({"_id": cart_id}, {"state": 1, "tickets": 1})
        if raw is None or raw["state"] != ACTIVE:
            raise refusal_of(cart_id, now)
        line = TICKETS.raw_line(raw, session_id)
        if line is None:
            return False
        keep = (
            []
            if wanted is None
            else [s for s in line["seats"] if (s["row"], s["col"]) not in wanted]
        )
        if len(keep) == len(line["seats"]):
            return False
        guard = {"session_id": session_id, "rev": line["rev"]}
        if keep:
            update = touched(
                {"$set": {"tickets.$.seats": keep, "tickets.$.rev": line["rev"] + 1}},
                now,
            )
        else:
            update = touched({"$pull": {"tickets": guard}}, now)
        query = {"_id": cart_id, "state": ACTIVE, "tickets": {"$elemMatch": guard}}
        if carts().update_one(query, update).modified_count:
            return True
    raise refusal_of(cart_id, now)


def cart_release_seats(
    *,
    owner: str,
    session_id: str,
    seats: tuple[Seat, ...] | None = None,
    now: datetime | None = None,
) -> SeatHold:
    """Give back ``seats`` of a session (all the cart's seats there if None).

    The cart first: the seats leave the session's line (the line goes when
    none is left); then the session frees them (one conditional update
    guarded on this cart's entries). A seat the session holds for the cart
    without the cart listing it (left by a crash) is released too: the map
    shows it as the shopper's. Seats of other carts are never touched.
    Returns the seats released.

    Raises InvalidSeats, SessionNotFound, SeatOffMap, SeatsNotInCart (none
    of them held by this cart: nothing changed), CartPending, CartExpired,
    CartChanged.
    """
    wanted = (
        None if seats is None else seat_positions(seats, limit=MAX_SEATS_PER_REQUEST)
    )
    now = utcnow(now)
    cart = live_cart(owner, now, create=False)
    if cart is None:
        raise missing_cart(owner, now, SeatsNotInCart())
    listed = _unlist(cart.cart_id, session_id, wanted, now)
    faults.point("tickets.after_unlist")
    released = seats_release(session_id=session_id, cart_id=cart.cart_id, seats=wanted)
    if not listed and not released.seats:
        raise SeatsNotInCart()
    return released
