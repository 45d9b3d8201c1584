"""The per-order seat cap between real processes: one shopper's requests,
released together, each holding two more seats of one performance. The
cart lists at most the cap; every seat a refused request took went back
(conservation and check_invariants clean)."""

from collections import Counter

import pytest

from booking.errors import BookingError
from config.errors import DomainError
from shop.services.tickets import cart_hold_seats
from tests.concurrency.cart_processes import run_together
from tests.concurrency.test_ticket_races import SMALL_HALL_SEATS, assert_conserved
from tests.shop.factories import make_show

pytestmark = pytest.mark.concurrency

OWNER = "anon:one-shopper"
PROCESSES = 8
CAP = 10


def _hold(session_id: str, seats) -> str:
    try:
        cart_hold_seats(owner=OWNER, session_id=session_id, seats=seats)
    except (BookingError, DomainError) as exc:
        return type(exc).__name__
    return "won"


@pytest.mark.parametrize("round_", range(3))
def test_one_shoppers_concurrent_holds_never_pass_the_seat_cap(
    mongo_db, mongo_uri, round_
):
    session_id = make_show()
    first, *rest = SMALL_HALL_SEATS
    cart_hold_seats(owner=OWNER, session_id=session_id, seats=(first,))
    pairs = [tuple(rest[2 * i : 2 * i + 2]) for i in range(PROCESSES)]

    outcomes = run_together(
        _hold,
        [(session_id, pair) for pair in pairs],
        uri=mongo_uri,
        db_name=mongo_db.name,
    )

    counts = Counter(outcomes)
    assert set(counts) <= {"won", "TooManySeats", "CartChanged"}, counts
    held = assert_conserved(mongo_db, session_id)
    (cart,) = mongo_db.carts.find()
    assert len(held) == 1 + 2 * counts["won"] <= CAP, counts
    assert all(cart_id == cart["_id"] for cart_id in held.values())

    # The race need not reach the cap: a request that keeps losing the
    # cart's rev to the others gives up (CartChanged). The refused pairs,
    # now free again, asked for one at a time: each is held while it fits
    # and the first that would pass the cap is refused by it (17 wanted).
    total = len(held)
    for pair, outcome in zip(pairs, outcomes, strict=True):
        if outcome == "won":
            continue
        if total + 2 > CAP:
            assert _hold(session_id, pair) == "TooManySeats", (total, counts)
            break
        assert _hold(session_id, pair) == "won", (total, counts)
        total += 2
    else:
        pytest.fail(f"no request was refused by the cap: {counts}")
    assert len(assert_conserved(mongo_db, session_id)) == total == CAP - 1
