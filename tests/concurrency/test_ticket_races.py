"""Seat races through the shop's services, between real processes.

Each child is forked, makes its own MongoClient on the test's database and
waits at a Barrier; released together, every child asks for the same seat
(or the best block of a small zone) for a cart of its own. Exactly one cart
line and one reservation entry per seat must come out, conservation holding
and check_invariants clean.
"""

from collections import Counter
from datetime import timedelta

import pytest
from bson import ObjectId
from django.utils import timezone

from booking.errors import BookingError
from booking.selectors import session_invariant_violations
from config.errors import DomainError
from shop.selectors.invariants import invariant_problems
from shop.services.expiry import carts_expire
from shop.services.tickets import cart_hold_best_available, cart_hold_seats
from tests.booking.factories import holders, seat
from tests.concurrency.cart_processes import run_together
from tests.shop.factories import make_show

pytestmark = pytest.mark.concurrency

PROCESSES = 16
# The 17 seats of booking's small test hall (aisles and the stage edge left out).
SMALL_HALL_SEATS = [
    *((0, c) for c in (0, 1, 2, 4, 5, 6)),
    *((1, c) for c in (1, 2, 3)),
    *((2, c) for c in range(8)),
]


def _hold(owner: str, session_id: str, seats) -> str:
    try:
        return "won:" + ",".join(
            f"{r}-{c}"
            for r, c in cart_hold_seats(
                owner=owner, session_id=session_id, seats=seats
            ).positions
        )
    except (BookingError, DomainError) as exc:
        return type(exc).__name__


def _best(owner: str, session_id: str, count: int, zone: str) -> str:
    try:
        held = cart_hold_best_available(
            owner=owner, session_id=session_id, count=count, zone=zone
        )
    except (BookingError, DomainError) as exc:
        return type(exc).__name__
    return "won:" + ",".join(f"{r}-{c}" for r, c in held.positions)


def assert_conserved(mongo_db, session_id) -> dict:
    """Taken == held + sold, the counter agrees, each seat in one entry and
    listed by exactly the cart that holds it. Returns seat -> cart."""
    doc = mongo_db.sessions.find_one({"_id": ObjectId(session_id)})
    held = holders(session_id)
    assert doc["held"] == len(held)
    assert doc["seatsAvailable"] + doc["held"] + doc["sold"] == doc["seat_count"]
    assert session_invariant_violations() == []
    listed = {
        (s["row"], s["col"]): cart["_id"]
        for cart in mongo_db.carts.find({"tickets.session_id": session_id})
        for line in cart["tickets"]
        if line["session_id"] == session_id
        for s in line["seats"]
    }
    lines = sum(
        len(line["seats"])
        for cart in mongo_db.carts.find()
        for line in cart.get("tickets", [])
        if line["session_id"] == session_id
    )
    assert lines == len(listed), "a seat listed twice"
    assert listed == held
    assert session_invariant_violations() == []
    assert invariant_problems() == []
    return held


@pytest.mark.parametrize("round_", range(3))
def test_sixteen_carts_clicking_the_same_seat_leave_one_line_and_one_entry(
    mongo_db, mongo_uri, round_
):
    session_id = make_show()

    outcomes = run_together(
        _hold,
        [(f"anon:racer-{i}", session_id, ((2, 4),)) for i in range(PROCESSES)],
        uri=mongo_uri,
        db_name=mongo_db.name,
    )

    counts = Counter(outcomes)
    assert counts["won:2-4"] == 1, counts
    assert counts["SeatsTaken"] == PROCESSES - 1, counts
    winner = f"anon:racer-{outcomes.index('won:2-4')}"
    (cart,) = mongo_db.carts.find()  # losers of a first hold got no cart
    assert cart["owner"] == winner
    assert [s["key"] for s in cart["tickets"][0]["seats"]] == ["2-4"]
    assert assert_conserved(mongo_db, session_id) == {(2, 4): cart["_id"]}


@pytest.mark.parametrize("round_", range(3))
def test_shoppers_with_carts_racing_for_overlapping_pairs_never_share_a_seat(
    mongo_db, mongo_uri, round_
):
    # One row of 17 seats: shopper i wants seats i and i+1.
    session_id = make_show(layout=[[seat("A", n) for n in range(1, 18)]])
    owners = [f"anon:racer-{i}" for i in range(PROCESSES)]
    # Every shopper already has a cart (one seat each at another show): the
    # race goes through the "add to the cart's lines" path this time.
    other = make_show(show="Other", hall="Other Hall")
    for owner, place in zip(owners, SMALL_HALL_SEATS, strict=False):
        cart_hold_seats(owner=owner, session_id=other, seats=(place,))
    outcomes = run_together(
        _hold,
        [(owner, session_id, ((0, i), (0, i + 1))) for i, owner in enumerate(owners)],
        uri=mongo_uri,
        db_name=mongo_db.name,
    )

    won = [i for i, o in enumerate(outcomes) if o.startswith("won:")]
    assert won, outcomes
    assert set(outcomes) - {o for o in outcomes if o.startswith("won:")} <= {
        "SeatsTaken"
    }
    held = assert_conserved(mongo_db, session_id)
    assert len(held) == 2 * len(won)


@pytest.mark.parametrize("round_", range(2))
def test_best_available_races_through_the_shop_hand_out_disjoint_blocks(
    mongo_db, mongo_uri, round_
):
    # A circle of two rows of six: at most four blocks of three.
    session_id = make_show(
        layout=[
            [seat("A", n, "circle") for n in range(1, 7)],
            [seat("B", n, "circle") for n in range(1, 7)],
            [seat("C", n) for n in range(1, 7)],
        ]
    )

    outcomes = run_together(
        _best,
        [(f"anon:racer-{i}", session_id, 3, "circle") for i in range(PROCESSES)],
        uri=mongo_uri,
        db_name=mongo_db.name,
    )

    won = [o for o in outcomes if o.startswith("won:")]
    assert 1 <= len(won) <= 4
    assert set(outcomes) - set(won) <= {"NoAdjacentSeats", "BoxOfficeBusy"}
    held = assert_conserved(mongo_db, session_id)
    assert len(held) == 3 * len(won)
    assert {r for r, _ in held} <= {0, 1}


def test_after_the_race_expiry_gives_every_seat_back(mongo_db, mongo_uri):
    session_id = make_show()
    run_together(
        _hold,
        [(f"anon:racer-{i}", session_id, ((0, i % 3),)) for i in range(8)],
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    carts_expire(now=timezone.now() + timedelta(hours=1))

    doc = mongo_db.sessions.find_one({"_id": ObjectId(session_id)})
    assert doc["held"] == 0 and doc["seatsAvailable"] == 17
    assert invariant_problems() == []
