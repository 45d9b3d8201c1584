"""Reads: the seat map, what's on, a cart's holds, the reconciler's index,
and the invariant check (which must catch a corrupted session)."""

from datetime import timedelta
from decimal import Decimal

import pytest
from bson import ObjectId
from django.utils import timezone

from booking import selectors, services
from booking.errors import SessionNotFound
from booking.templatetags.boxoffice import accessible_name
from config.templatetags.money import WHOLE, format_money
from tests.booking.factories import make_session, make_theater, move_to_the_past


def cell(seat_map, row, col):
    return seat_map.rows[row].cells[col]


def test_seat_map_shows_free_taken_mine_and_gap_cells(session_id):
    services.seats_hold(session_id=session_id, cart_id="me", seats=[(0, 0)])
    services.seats_hold(session_id=session_id, cart_id="someone", seats=[(0, 1)])

    seat_map = selectors.seat_map(session_id=session_id, cart_id="me")

    assert [c.state for c in seat_map.rows[0].cells] == [
        "mine", "taken", "free", "gap", "free", "free", "free",
    ]  # fmt: skip
    assert cell(seat_map, 1, 0).state == "gap"  # the stage edge
    assert len(seat_map.rows[1].cells) == 4  # ragged rows stay ragged
    assert seat_map.columns == 8
    assert [s.label for s in seat_map.mine] == ["Row A, seat 1"]
    assert seat_map.mine_total == Decimal("35.00")
    assert seat_map.seats_available == 15
    assert seat_map.is_open


def test_seat_map_without_a_cart_has_nothing_of_mine(session_id):
    services.seats_hold(session_id=session_id, cart_id="me", seats=[(0, 0)])

    seat_map = selectors.seat_map(session_id=session_id, cart_id=None)

    assert cell(seat_map, 0, 0).state == "taken"
    assert seat_map.mine == ()


def test_seat_map_cells_carry_accessible_names_with_zone_price_flags_and_state(
    session_id,
):
    services.seats_hold(session_id=session_id, cart_id="me", seats=[(2, 2)])
    seat_map = selectors.seat_map(session_id=session_id, cart_id="me")

    assert accessible_name(cell(seat_map, 0, 4)) == (
        "Row A, seat 4, Stalls, £35, available"
    )
    assert accessible_name(cell(seat_map, 2, 0)) == (
        "Row C, seat 1, Circle, £20.50, wheelchair space, available"
    )
    assert accessible_name(cell(seat_map, 2, 2)) == (
        "Row C, seat 3, Circle, £20.50, held by you"
    )
    assert accessible_name(cell(seat_map, 2, 7)) == (
        "Row C, seat 8, Circle, £20.50, restricted view, available"
    )
    assert accessible_name(cell(seat_map, 0, 3)) == ""
    assert [row.label for row in seat_map.rows] == ["A", "B", "C"]


def test_seat_map_legend_lists_zones_best_first_with_prices_and_seats_left(session_id):
    services.seats_hold(session_id=session_id, cart_id="x", seats=[(2, 3), (2, 4)])

    zones = selectors.seat_map(session_id=session_id).zones

    assert [(z.name, format_money(z.price, WHOLE), z.available) for z in zones] == [
        ("Stalls", "£35", 9),
        ("Circle", "£20.50", 6),
    ]


def test_seat_map_of_a_past_session_is_closed(mongo_db, session_id):
    move_to_the_past(mongo_db, session_id)

    assert not selectors.seat_map(session_id=session_id).is_open


def test_seat_map_version_moves_with_every_change_of_seats(session_id):
    first = selectors.seat_map_version(session_id=session_id)
    services.seats_hold(session_id=session_id, cart_id="x", seats=[(0, 0)])
    services.seats_release(session_id=session_id, cart_id="x")

    assert selectors.seat_map_version(session_id=session_id) == first + 2


@pytest.mark.parametrize(
    "bad", [pytest.param(str(ObjectId()), id="unknown"), "nope", {"$ne": None}]
)
def test_seat_map_of_an_unknown_session_raises_not_found(mongo_db, bad):
    with pytest.raises(SessionNotFound):
        selectors.seat_map(session_id=bad)


def test_whats_on_groups_upcoming_sessions_by_show_and_date_with_seats_left(mongo_db):
    hall = make_theater()
    # Anchored at tomorrow's local noon: "the same day" must not depend on
    # the hour the suite runs at.
    now = timezone.localtime()
    noon = now.replace(hour=12, minute=0, second=0, microsecond=0)
    tomorrow = noon + timedelta(days=1) - now
    soon = make_session(hall, show="Hamlet", starts_in=tomorrow)
    later_same_day = make_session(
        hall, show="Hamlet", starts_in=tomorrow + timedelta(hours=3)
    )
    other = make_session(
        hall, show="Uncle Vanya", starts_in=tomorrow + timedelta(days=1)
    )
    next_week = make_session(
        hall, show="Hamlet", starts_in=tomorrow + timedelta(days=7)
    )
    gone = make_session(hall, show="Yesterday's Show", starts_in=tomorrow)
    move_to_the_past(mongo_db, gone)
    services.seats_hold(session_id=soon, cart_id="x", seats=[(0, 0), (0, 1)])

    listings = selectors.upcoming_sessions()

    assert [listing.show for listing in listings] == ["Hamlet", "Uncle Vanya"]
    hamlet = listings[0]
    assert [len(d.performances) for d in hamlet.dates] == [2, 1]
    assert [p.session_id for d in hamlet.dates for p in d.performances] == [
        soon,
        later_same_day,
        next_week,
    ]
    assert (
        hamlet.dates[0].day
        == timezone.localtime(hamlet.dates[0].performances[0].start).date()
    )
    first = hamlet.dates[0].performances[0]
    assert (first.seats_left, first.from_price, first.theater) == (
        15,
        Decimal("20.50"),
        "Test Hall",
    )
    assert listings[1].dates[0].performances[0].session_id == other


def test_cart_holds_lists_a_carts_seats_per_session_with_totals(mongo_db):
    hall = make_theater()
    first = make_session(hall, starts_in=timedelta(days=1))
    second = make_session(hall, show="Uncle Vanya", starts_in=timedelta(days=2))
    services.seats_hold(session_id=second, cart_id="me", seats=[(2, 5)])
    services.seats_hold(session_id=first, cart_id="me", seats=[(0, 1), (0, 0)])
    services.seats_hold(session_id=first, cart_id="other", seats=[(0, 2)])

    holds = selectors.cart_holds(cart_id="me")

    assert [h.session_id for h in holds] == [first, second]
    assert holds[0].labels == ("Row A, seat 1", "Row A, seat 2")
    assert holds[0].total == Decimal("70.00")
    assert (holds[1].show, holds[1].total) == ("Uncle Vanya", Decimal("20.50"))
    assert selectors.cart_holds(cart_id="nobody") == []


def test_reservations_index_yields_each_carts_seats_per_session(session_id):
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(0, 0)])
    services.seats_hold(session_id=session_id, cart_id="b", seats=[(2, 3), (2, 4)])
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(1, 1)])

    index = sorted(selectors.reservations_index(), key=lambda ref: ref.cart_id)

    assert [(ref.session_id, ref.cart_id, ref.seats) for ref in index] == [
        (session_id, "a", ((0, 0), (1, 1))),
        (session_id, "b", ((2, 3), (2, 4))),
    ]
    assert index[0].oldest <= timezone.now()


def test_seat_holders_names_the_cart_behind_each_taken_seat(session_id):
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(0, 0)])

    holders = selectors.seat_holders(session_id=session_id, seats=[(0, 0), (0, 1)])

    assert holders == {(0, 0): "a"}


# --- Invariants ---------------------------------------------------------------


def test_invariants_hold_after_a_mix_of_operations(session_id):
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(0, 0), (0, 1)])
    services.seats_hold(session_id=session_id, cart_id="b", seats=[(2, 4)])
    services.seats_release(session_id=session_id, cart_id="a", seats=[(0, 1)])
    services.seats_commit(session_id=session_id, cart_id="a")
    services.seats_best_available(session_id=session_id, cart_id="c", count=3)

    assert selectors.session_invariant_violations() == []
    assert selectors.session_invariant_violations(sold={session_id: [(0, 0)]}) == []


def corrupt(mongo_db, session_id, update):
    mongo_db.sessions.update_one({"_id": ObjectId(session_id)}, update)


def a_second_cart_lists_the_tag(mongo_db, session_id):
    """Another cart's document claims the same tag (tags never repeat)."""
    real = mongo_db.seat_holds.find_one({"cart_id": "a"})
    mongo_db.seat_holds.insert_one(
        {**real, "_id": f"{session_id}|thief", "cart_id": "thief"}
    )


@pytest.mark.parametrize(
    "update, expected",
    [
        pytest.param(
            {"$set": {"seats.0.4": 2**40}, "$inc": {"seatsAvailable": -1, "held": 1}},
            "Row A, seat 4 carries a tag no cart's hold lists",
            id="held-without-a-cart",
        ),
        pytest.param(
            {
                "$set": {"seats.0.4": -(2**40)},
                "$inc": {"seatsAvailable": -1, "sold": 1},
            },
            "Row A, seat 4 carries a tag no cart's hold lists",
            id="sold-without-a-cart",
        ),
        pytest.param(
            {"$inc": {"held": 1}},
            "held is 2, but 1 seat is held",
            id="held-counter-off",
        ),
        pytest.param(
            {"$inc": {"seatsAvailable": 2}},
            "seatsAvailable is 18, but 16 seats are free",
            id="counter-off",
        ),
        pytest.param(
            {"$set": {"seats.0.5": -2}, "$inc": {"seatsAvailable": -1}},
            "blocked is 0, but 1 seat is blocked",
            id="blocked-uncounted",
        ),
        pytest.param(
            {"$set": {"seats.0.5": 7}},
            "Row A, seat 5 has state 7",
            id="no-such-state",
        ),
        pytest.param(
            a_second_cart_lists_the_tag,
            "is listed by carts",
            id="one-tag-two-carts",
        ),
        pytest.param(
            {"$set": {"seats.0.3": 0}},
            "gap at (0, 3) has state 0",
            id="a-gap-made-a-seat",
        ),
    ],
)
def test_invariant_check_catches_a_corrupted_session(
    mongo_db, session_id, update, expected
):
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(0, 0)])
    assert selectors.session_invariant_violations() == []

    if callable(update):
        update(mongo_db, session_id)
    else:
        corrupt(mongo_db, session_id, update)

    violations = selectors.session_invariant_violations()
    assert any(expected in line for line in violations), violations
    assert all(session_id in line for line in violations)


def test_invariant_check_compares_sold_seats_with_paid_orders(session_id):
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(0, 0), (0, 1)])
    services.seats_commit(session_id=session_id, cart_id="a")

    assert selectors.session_invariant_violations(sold={session_id: [(0, 0)]}) == [
        f"session {session_id} (Hamlet): Row A, seat 2 is sold here"
        " but in no paid order"
    ]
    missing = selectors.session_invariant_violations(
        sold={session_id: [(0, 0), (0, 1), (2, 2)]}
    )
    assert missing == [
        f"session {session_id} (Hamlet): Row C, seat 3 is in a paid order"
        " but not sold here"
    ]
    assert selectors.session_invariant_violations(sold={}) != []
