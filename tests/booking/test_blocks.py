"""Blocked seats (house seats, a broken seat): one more state of the seat
protocol, and the staff seat map that shows every seat's state."""

import pytest

from booking import selectors, services
from booking.errors import (
    InvalidRequest,
    NoAdjacentSeats,
    SeatOffMap,
    SeatsAlreadyBlocked,
    SeatsNotBlockable,
    SeatsNotBlocked,
    SeatsTaken,
    SessionClosed,
)
from tests.booking.factories import SMALL_SEATS, move_to_the_past, seat_states


def block(session_id, seats, reason="House seats", by="ann"):
    return services.seats_block(
        session_id=session_id, seats=seats, reason=reason, by=by
    )


def counts(session_id):
    return selectors.session_counts(session_id=session_id)


def test_blocking_free_seats_takes_them_off_sale_and_counts_them(session_id):
    done = block(session_id, [(0, 0), (0, 1)])

    assert done.labels == ("Row A, seat 1", "Row A, seat 2")
    c = counts(session_id)
    assert (c.free, c.held, c.sold, c.blocked) == (SMALL_SEATS - 2, 0, 0, 2)
    assert c.free + c.held + c.sold + c.blocked == c.seats == SMALL_SEATS
    staff = selectors.staff_seat_map(session_id=session_id)
    first = staff.rows[0][0]
    assert (first.state, first.reason, first.by) == ("blocked", "House seats", "ann")
    assert selectors.session_invariant_violations() == []


def test_shoppers_cannot_hold_blocked_seats_and_see_them_taken(session_id):
    block(session_id, [(0, 0)])

    with pytest.raises(SeatsTaken) as refused:
        services.seats_hold(session_id=session_id, cart_id="c1", seats=[(0, 0)])

    assert refused.value.seats == ((0, 0),)
    drawn = selectors.seat_map(session_id=session_id, cart_id="c1")
    assert drawn.rows[0].cells[0].state == "taken"
    assert drawn.seats_available == SMALL_SEATS - 1


def test_best_available_never_offers_a_blocked_seat(session_id):
    # The circle's only run of 5 without wheelchair/companion places is C3-C7.
    block(session_id, [(2, 4)])

    with pytest.raises(NoAdjacentSeats):
        services.seats_best_available(
            session_id=session_id, cart_id="c1", count=5, zone="circle"
        )
    hold = services.seats_best_available(
        session_id=session_id, cart_id="c1", count=2, zone="circle"
    )
    assert (2, 4) not in hold.positions


def test_blocking_a_held_or_sold_seat_is_refused_and_changes_nothing(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="c1", seats=[(0, 0)])
    services.seats_hold(session_id=session_id, cart_id="c2", seats=[(0, 1)])
    services.seats_commit(session_id=session_id, cart_id="c2")
    before = raw_session()

    with pytest.raises(SeatsNotBlockable) as held:
        block(session_id, [(0, 0), (0, 2)])
    with pytest.raises(SeatsNotBlockable) as sold:
        block(session_id, [(0, 1)])

    assert held.value.message == (
        "Row A, seat 1 cannot be blocked: held in a shopper's cart."
        " Release the hold or refund the order first."
    )
    assert "Row A, seat 2 cannot be blocked: sold." in sold.value.message
    assert raw_session() == before


def test_blocking_twice_or_unblocking_a_free_seat_says_so(session_id, raw_session):
    block(session_id, [(1, 1)])
    before = raw_session()

    with pytest.raises(SeatsAlreadyBlocked) as twice:
        block(session_id, [(1, 1)])
    with pytest.raises(SeatsNotBlocked) as free:
        services.seats_unblock(session_id=session_id, seats=[(1, 2)], by="ann")

    assert twice.value.message == "Row B, seat 1 is already blocked."
    assert free.value.message == "Row B, seat 2 is not blocked."
    assert raw_session() == before


def test_unblocking_puts_the_seats_back_on_sale(session_id):
    block(session_id, [(1, 1), (1, 2)])

    services.seats_unblock(session_id=session_id, seats=[(1, 1)], by="bob")

    assert seat_states(session_id)[(1, 1)] == ("free", None)
    assert seat_states(session_id)[(1, 2)] == ("blocked", None)
    assert counts(session_id).blocked == 1
    services.seats_hold(session_id=session_id, cart_id="c1", seats=[(1, 1)])
    assert selectors.session_invariant_violations() == []


def test_staff_sell_a_blocked_seat_by_holding_it_from_blocked(session_id):
    block(session_id, [(0, 4)])

    hold = services.seats_hold(
        session_id=session_id, cart_id="staff-cart", seats=[(0, 4)], from_blocked=True
    )

    assert hold.positions == ((0, 4),)
    c = counts(session_id)
    assert (c.blocked, c.held) == (0, 1)
    services.seats_commit(session_id=session_id, cart_id="staff-cart")
    assert seat_states(session_id)[(0, 4)] == ("sold", "staff-cart")
    with pytest.raises(SeatsNotBlocked):
        services.seats_hold(
            session_id=session_id,
            cart_id="staff-cart",
            seats=[(0, 5)],
            from_blocked=True,
        )
    assert selectors.session_invariant_violations() == []


def test_a_released_hold_of_blocked_seats_puts_them_back_blocked_never_free(
    session_id,
):
    block(session_id, [(0, 4), (0, 5)], reason="House seats")
    services.seats_hold(session_id=session_id, cart_id="shopper", seats=[(1, 1)])
    services.seats_hold(
        session_id=session_id, cart_id="staff", seats=[(0, 4)], from_blocked=True
    )

    one = services.seats_release(session_id=session_id, cart_id="staff")
    services.seats_release(session_id=session_id, cart_id="shopper")

    assert one.positions == ((0, 4),)
    assert seat_states(session_id)[(0, 4)] == ("blocked", None)
    assert seat_states(session_id)[(1, 1)] == ("free", None)
    c = counts(session_id)
    assert (c.free, c.held, c.blocked) == (SMALL_SEATS - 2, 0, 2)
    note = selectors.staff_seat_map(session_id=session_id).rows[0][4]
    assert note.reason == "House seats"  # the block's note survived the hold
    with pytest.raises(SeatsTaken):
        services.seats_hold(session_id=session_id, cart_id="shopper", seats=[(0, 4)])
    assert selectors.session_invariant_violations() == []


def test_a_transferred_hold_keeps_where_each_seat_goes_back(session_id):
    block(session_id, [(0, 4)])
    services.seats_hold(session_id=session_id, cart_id="a", seats=[(1, 1)])
    services.seats_hold(
        session_id=session_id, cart_id="a", seats=[(0, 4)], from_blocked=True
    )

    moved = services.seats_transfer(
        session_id=session_id, from_cart_id="a", to_cart_id="b"
    )
    services.seats_release(session_id=session_id, cart_id="b")

    assert moved.positions == ((0, 4), (1, 1))
    states = seat_states(session_id)
    assert (states[(0, 4)], states[(1, 1)]) == (("blocked", None), ("free", None))
    assert counts(session_id).blocked == 1
    assert selectors.session_invariant_violations() == []


def test_a_refund_of_seats_sold_from_blocked_puts_them_on_sale(session_id):
    block(session_id, [(0, 4)])
    services.seats_hold(
        session_id=session_id, cart_id="staff", seats=[(0, 4)], from_blocked=True
    )
    services.seats_commit(session_id=session_id, cart_id="staff")

    services.seats_return(session_id=session_id, cart_id="staff")

    assert seat_states(session_id)[(0, 4)] == ("free", None)
    assert counts(session_id).blocked == 0
    assert selectors.session_invariant_violations() == []


def test_the_staff_seat_map_names_each_seats_holder_buyer_and_blocker(session_id):
    held = services.seats_hold(session_id=session_id, cart_id="c1", seats=[(0, 0)])
    services.seats_hold(session_id=session_id, cart_id="c2", seats=[(0, 1)])
    services.seats_commit(session_id=session_id, cart_id="c2")
    block(session_id, [(0, 2)], reason="Broken seat", by="ann")

    staff = selectors.staff_seat_map(session_id=session_id)

    a1, a2, a3, gap = staff.rows[0][:4]
    assert (a1.state, a1.cart_id, a1.held_at) == ("held", "c1", held.seats[0].at)
    assert (a2.state, a2.cart_id) == ("sold", "c2")
    assert (a3.state, a3.reason, a3.by) == ("blocked", "Broken seat", "ann")
    assert a3.blocked_at is not None and a3.label == "Row A, seat 3"
    assert gap.state == "gap"
    assert (staff.counts.held, staff.counts.sold, staff.counts.blocked) == (1, 1, 1)
    assert [z["code"] for z in staff.zones] == ["stalls", "circle"]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"seats": [(0, 3)]}, SeatOffMap),
        ({"reason": "  "}, InvalidRequest),
        ({"by": ""}, InvalidRequest),
        ({"reason": {"$gt": ""}}, InvalidRequest),
    ],
)
def test_bad_block_requests_are_refused_clearly(session_id, raw_session, kwargs, error):
    before = raw_session()
    args = {"seats": [(0, 0)], "reason": "House", "by": "ann", **kwargs}

    with pytest.raises(error):
        services.seats_block(session_id=session_id, **args)

    assert raw_session() == before


def test_a_started_performance_cannot_have_seats_blocked(mongo_db, session_id):
    move_to_the_past(mongo_db, session_id)

    with pytest.raises(SessionClosed):
        block(session_id, [(0, 0)])
