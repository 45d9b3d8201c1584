"""Every write that changes the booking app's state; one function per use case.

``layouts``: halls and performances (creating them, with the checks of what
the caller passes). ``seats``: the seat reservation protocol, every change
of a seat's state as one conditional update; ``holds``: the cart side of a
hold (``SeatHolds``); ``blocks``: seats staff hold back. ``convert``: a
database of the older session shape brought to this one. The pure seating
arithmetic (labels, the best-available pick) is ``booking.seating``.

The use cases are re-exported here, so ``booking.services.seats_hold`` reads
as the app's API whichever module holds it.
"""

from booking.services.blocks import seats_block, seats_unblock
from booking.services.layouts import session_create, theater_create
from booking.services.seats import (
    seats_best_available,
    seats_commit,
    seats_hold,
    seats_refresh,
    seats_release,
    seats_return,
    seats_sell,
    seats_transfer,
)

__all__ = [
    "seats_best_available",
    "seats_block",
    "seats_commit",
    "seats_hold",
    "seats_refresh",
    "seats_release",
    "seats_return",
    "seats_sell",
    "seats_transfer",
    "seats_unblock",
    "session_create",
    "theater_create",
]
