"""Turning what callers pass into typed values, before any query.

Shared by services and selectors: an id or seat list that is not exactly the
expected type never reaches a filter, where a dict would act as an operator.
"""

import re
from collections.abc import Sequence

from bson import ObjectId

from booking.errors import InvalidRequest, InvalidSeats, SessionNotFound
from booking.values import Seat

# At most this many seats in one hold or best-available request.
MAX_SEATS_PER_HOLD = 10
# A sanity bound on any seat list (release, commit) before it reaches a query.
MAX_SEATS_PER_REQUEST = 2000

_CART_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def session_oid(session_id: str) -> ObjectId:
    """The ObjectId of a session id string; SessionNotFound for anything else."""
    if not isinstance(session_id, str) or not ObjectId.is_valid(session_id):
        raise SessionNotFound()
    return ObjectId(session_id)


def cart_id(value: str) -> str:
    """A cart id: a short plain string (letters, digits, ``_.:-``)."""
    if not isinstance(value, str) or not _CART_ID.match(value):
        raise InvalidRequest("A valid cart is needed to hold seats.")
    return value


def is_index(value) -> bool:
    return type(value) is int  # not bool, not float, not "3"


def positions(seats: Sequence[Seat], *, limit: int) -> tuple[Seat, ...]:
    """Distinct (row, col) pairs of non-negative ints, 1..limit of them."""
    if not isinstance(seats, (list, tuple)):
        raise InvalidSeats()
    if not seats:
        raise InvalidSeats("Choose at least one seat.")
    if len(seats) > limit:
        raise InvalidSeats(f"Choose at most {limit} seats at a time.")
    found = []
    for pair in seats:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise InvalidSeats()
        row, col = pair
        if not (is_index(row) and is_index(col)):
            raise InvalidSeats()
        if row < 0 or col < 0:
            raise InvalidSeats("Seat positions cannot be negative.")
        found.append((row, col))
    if len(set(found)) != len(found):
        raise InvalidSeats("The same seat was chosen twice.")
    return tuple(found)


def seat_count(count: int) -> int:
    if not is_index(count) or not 1 <= count <= MAX_SEATS_PER_HOLD:
        raise InvalidSeats(f"Choose between 1 and {MAX_SEATS_PER_HOLD} seats.")
    return count
