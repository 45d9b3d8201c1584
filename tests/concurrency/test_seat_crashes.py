"""Crash injection inside booking's seat protocol (DESIGN §3.10).

A hold writes the cart's intent (its ``SeatHolds`` entry), then the session;
a release, return or transfer writes the session, then prunes the entries
that became history; a block writes the session, then its note. A real
child process is stopped (``os._exit``) at each point between those writes.
Then the shop's reconciler and expiry run: every invariant must hold, the
seats end free (or sold, or blocked, as the scenario says), and booking's
settling leaves no history behind.
"""

from datetime import timedelta

import pytest
from bson import ObjectId
from django.utils import timezone

from booking import faults
from booking import services as booking
from booking.documents import is_held, is_sold
from booking.selectors import session_invariant_violations, staff_seat_map
from booking.services.holds import seat_holds_settle
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_merge
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile
from shop.services.tickets import cart_hold_seats, cart_release_seats
from tests.booking.factories import SMALL_SEATS
from tests.concurrency.cart_processes import run_until_crash
from tests.concurrency.test_crash_recovery import ACCOUNT, ALICE, MUCH_LATER, SOON, T0
from tests.concurrency.test_ticket_crashes import crash_at
from tests.shop.factories import make_show

pytestmark = pytest.mark.concurrency


def nothing(show):
    return {"show": show}


def alice_holds_two(show):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=T0)
    return {"show": show}


def alice_and_account(show):
    cart_hold_seats(owner=ACCOUNT, session_id=show, seats=((2, 0),), now=T0)
    return alice_holds_two(show)


def house_seats(show):
    booking.seats_block(session_id=show, seats=[(1, 1), (1, 2)], reason="x", by="s")
    return {"show": show}


# name: (point, set-up, the crashing work, seats blocked in the end)
SCENARIOS = {
    "hold, after the intent": (
        "seats.after_intent",
        nothing,
        lambda a: cart_hold_seats(
            owner=ALICE, session_id=a["show"], seats=((0, 0), (0, 1)), now=T0
        ),
        0,
    ),
    "release, after the session": (
        "seats.after_release",
        alice_holds_two,
        lambda a: cart_release_seats(
            owner=ALICE, session_id=a["show"], seats=((0, 1),), now=T0
        ),
        0,
    ),
    "transfer, after the target's intent": (
        "seats.after_transfer_intent",
        alice_and_account,
        lambda a: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
    ),
    "transfer, after the session": (
        "seats.after_transfer",
        alice_and_account,
        lambda a: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
    ),
    "block, before its note": (
        "seats.after_block",
        nothing,
        lambda a: booking.seats_block(
            session_id=a["show"], seats=[(0, 4)], reason="broken", by="staff"
        ),
        1,
    ),
    "unblock, before the note went": (
        "seats.after_unblock",
        house_seats,
        lambda a: booking.seats_unblock(
            session_id=a["show"], seats=[(1, 1)], by="staff"
        ),
        1,
    ),
}


def history(mongo_db) -> list:
    """Entries of ``SeatHolds`` no seat carries (+tag or -tag)."""
    found = []
    for doc in mongo_db.seat_holds.find():
        state = mongo_db.sessions.find_one({"_id": doc["session_id"]})["seats"]
        for key, entry in doc["holds"].items():
            tag = int(key[1:])
            if not any(abs(state[r][c]) == tag for r, c in entry["seats"]):
                found.append((doc["cart_id"], entry["seats"]))
    return found


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_after_a_crash_inside_the_seat_protocol_every_invariant_is_restored(
    name, mongo_uri, mongo_db
):
    point, setup, work, blocked = SCENARIOS[name]
    show = make_show()
    arg = setup(show)

    code = run_until_crash(
        crash_at, (point, work, arg), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    assert session_invariant_violations() == []  # the session is never wrong
    for moment in (SOON, MUCH_LATER + timedelta(hours=1)):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)
        assert invariant_problems() == [], moment
    # Stamps mix the server's time and the reconciler's (the tests' future).
    later = MUCH_LATER + timedelta(hours=2)
    seat_holds_settle(before=later, since=timezone.now() - timedelta(days=1))
    assert history(mongo_db) == []
    doc = mongo_db.sessions.find_one({"_id": ObjectId(show)})
    assert (doc["held"], doc["sold"], doc["blocked"]) == (0, 0, blocked)
    assert doc["seatsAvailable"] == SMALL_SEATS - blocked
    assert not any(is_held(v) or is_sold(v) for row in doc["seats"] for v in row)
    assert mongo_db.seat_holds.count_documents({}) == 0


def test_a_blocked_seat_whose_note_was_lost_still_shows_blocked_to_staff(
    mongo_uri, mongo_db
):
    show = make_show()
    code = run_until_crash(
        crash_at,
        ("seats.after_block", SCENARIOS["block, before its note"][2], {"show": show}),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )

    assert code == faults.EXIT_CODE
    seat = staff_seat_map(session_id=show).rows[0][4]
    assert (seat.state, seat.reason) == ("blocked", "no reason recorded")
    booking.seats_unblock(session_id=show, seats=[(0, 4)], by="staff")
    assert session_invariant_violations() == []


def test_every_seat_point_has_a_scenario():
    seat_points = sorted(p for p in faults.POINTS if p.startswith("seats."))

    assert seat_points == sorted(point for point, *_ in SCENARIOS.values())
