"""Seats held back by staff (house seats, a broken seat, a wheelchair
reserve): BLOCKED is one more state of the seat protocol.

Blocking is the same ONE conditional update as a hold, with BLOCKED for the
tag: each seat must be FREE, so a held or sold seat is refused and a
shopper's hold of a blocked seat is refused (its filter wants FREE). Then
the reason is noted on the session's ``SeatBlocks`` document; a crash in
between leaves a blocked seat without its note (shown as "no reason
recorded", harmless). Unblocking: BLOCKED -> FREE first, then the note goes;
a note whose seat is not BLOCKED is history. Staff who sell a blocked seat
hold it with ``seats_hold(..., from_blocked=True)`` (BLOCKED -> the cart's
tag, in one update: no shopper can take it in between); if that hold is
released instead of sold, the seat goes back BLOCKED (``holds.origin_of``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from booking import checks, faults
from booking.checks import MAX_SEATS_PER_REQUEST
from booking.documents import BLOCKED, FREE, SeatBlocks, is_held, is_sold
from booking.errors import (
    BoxOfficeBusy,
    InvalidRequest,
    SeatsAlreadyBlocked,
    SeatsNotBlockable,
    SeatsNotBlocked,
    SessionClosed,
)
from booking.halls import hall_of_session
from booking.seating import check_on_map, label_of
from booking.services.seats import RETRIES, read_state, swap_states
from booking.values import Seat, SeatBlock, seat_key

MAX_REASON = 200


def _text(value, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise InvalidRequest(f"Blocking seats needs {what} (up to {limit} letters).")
    return value.strip()


def _refusal(layout, state, positions, wanted_state: int) -> Exception | None:
    """Why a block (``wanted_state`` FREE) or unblock (BLOCKED) was refused;
    None when every seat is now as wanted (the caller tries again)."""
    wrong = [p for p in positions if state[p[0]][p[1]] != wanted_state]
    if not wrong:
        return None
    labels = [label_of(layout, p) for p in wrong]
    if wanted_state == BLOCKED:
        return SeatsNotBlocked(labels, wrong)
    values = [state[r][c] for r, c in wrong]
    if all(v == BLOCKED for v in values):
        return SeatsAlreadyBlocked(labels, wrong)
    why = "sold" if all(is_sold(v) for v in values) else "held or sold"
    if all(is_held(v) for v in values):
        why = "held in a shopper's cart"
    return SeatsNotBlockable(labels, wrong, why)


def _move(oid, positions, was: int, becomes: int, extra=None):
    """Block or unblock ``positions`` in one conditional update, retrying only
    while a refusal does not last; raises the refusal that does."""
    h = hall_of_session(oid)
    check_on_map(h.layout, positions)
    n = len(positions)
    sign = 1 if becomes == BLOCKED else -1
    for _ in range(RETRIES):
        now = timezone.now()
        guard = {"start": {"$gt": now}} if becomes == BLOCKED else None
        if swap_states(
            oid,
            [(s, was, becomes) for s in positions],
            {"seatsAvailable": -sign * n, "blocked": sign * n},
            guard,
        ):
            return h
        found = read_state(oid)
        if becomes == BLOCKED and found["start"] <= now:
            raise SessionClosed()
        refusal = _refusal(h.layout, found["seats"], positions, was)
        if refusal is not None:
            raise refusal
    raise BoxOfficeBusy()


def seats_block(
    *, session_id: str, seats: Sequence[Seat], reason: str, by: str
) -> SeatBlock:
    """Hold seats back for the house: each FREE seat becomes BLOCKED.

    ONE conditional update (every seat FREE, the performance not started):
    the seats become BLOCKED and n moves from ``seatsAvailable`` to
    ``blocked``; then ``reason`` and ``by`` (the staff member) are noted.
    All or nothing. Blocked seats cannot be held by shoppers and are never
    offered by best available.

    Raises InvalidSeats, InvalidRequest (no reason or no staff name),
    SessionNotFound, SessionClosed, SeatOffMap, SeatsAlreadyBlocked,
    SeatsNotBlockable (a seat is held or sold: release or refund it first).
    """
    positions = checks.positions(seats, limit=MAX_SEATS_PER_REQUEST)
    reason = _text(reason, "a reason", MAX_REASON)
    by = _text(by, "the name of who blocks them", 150)
    oid = checks.session_oid(session_id)
    h = _move(oid, positions, FREE, BLOCKED)
    faults.point("seats.after_block")
    at = timezone.now()
    note = {"reason": reason, "by": by, "at": at}
    SeatBlocks.coll().update_one(
        {"_id": oid},
        {"$set": {f"seats.{seat_key(p)}": note for p in positions}},
        upsert=True,
    )
    return _block(session_id, h.layout, positions, reason, by, at)


def seats_unblock(*, session_id: str, seats: Sequence[Seat], by: str) -> SeatBlock:
    """Put blocked seats back on sale: each BLOCKED seat becomes FREE.

    ONE conditional update (every seat BLOCKED): n moves from ``blocked`` to
    ``seatsAvailable``; then their notes go. All or nothing.

    Raises InvalidSeats, InvalidRequest, SessionNotFound, SeatOffMap,
    SeatsNotBlocked.
    """
    positions = checks.positions(seats, limit=MAX_SEATS_PER_REQUEST)
    by = _text(by, "the name of who unblocks them", 150)
    oid = checks.session_oid(session_id)
    h = _move(oid, positions, BLOCKED, FREE)
    faults.point("seats.after_unblock")
    SeatBlocks.coll().update_one(
        {"_id": oid},
        {"$unset": {f"seats.{seat_key(p)}": "" for p in positions}},
    )
    return _block(session_id, h.layout, positions, "", by, timezone.now())


def _block(session_id, layout, positions, reason, by, at: datetime) -> SeatBlock:
    return SeatBlock(
        session_id=session_id,
        seats=tuple(sorted(positions)),
        labels=tuple(label_of(layout, p) for p in sorted(positions)),
        reason=reason,
        by=by,
        at=at,
    )
