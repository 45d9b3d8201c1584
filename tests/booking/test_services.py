"""The article's operations in its own terms, on a real server."""

from datetime import timedelta
from decimal import Decimal

import pytest
from bson import Decimal128, ObjectId
from django.utils import timezone

from booking import selectors, services
from booking.documents import FREE, GAP
from booking.errors import (
    NoAdjacentSeats,
    SeatsAlreadyHeld,
    SeatsNotHeld,
    SeatsTaken,
    SessionClosed,
)
from booking.selectors import session_invariant_violations
from tests.booking.factories import (
    SMALL_SEATS,
    ZONES,
    held_by,
    make_session,
    make_theater,
    move_to_the_past,
    seat,
    small_layout,
    sold_to,
    taken,
)


def test_session_create_copies_the_theater_map_with_gaps_and_its_seat_count(
    raw_session,
):
    doc = raw_session()

    assert doc["seatsAvailable"] == SMALL_SEATS
    assert doc["seats"][0] == [FREE, FREE, FREE, GAP, FREE, FREE, FREE]
    assert doc["seats"][1] == [GAP, FREE, FREE, FREE]  # a ragged row
    assert len(doc["seats"][2]) == 8
    assert (doc["held"], doc["sold"], doc["blocked"]) == (0, 0, 0)
    assert "layout" not in doc  # the hall's, not copied
    assert doc["prices"]["circle"].to_decimal() == Decimal("20.50")


def test_reserving_two_seats_takes_them_decrements_the_counter_and_records_the_cart(
    session_id, raw_session
):
    hold = services.seats_hold(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)]
    )

    doc = raw_session()
    assert taken(session_id) == {(0, 5), (0, 6)}
    assert doc["seatsAvailable"] == SMALL_SEATS - 2  # not +2 as in the article
    assert held_by(session_id, "cart-1") == {(0, 5), (0, 6)}
    assert hold.labels == ("Row A, seat 5", "Row A, seat 6")
    assert [s.price for s in hold.seats] == [Decimal("35.00"), Decimal("35.00")]
    assert hold.total == Decimal("70.00")
    assert hold.zone_names == ("Stalls",)
    assert (hold.show, hold.theater) == ("Hamlet", "Test Hall")


def test_a_conflicting_request_fails_and_changes_nothing(session_id, raw_session):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])
    before = raw_session()

    # One seat free, one taken: all or nothing, so nothing.
    with pytest.raises(SeatsTaken) as refused:
        services.seats_hold(
            session_id=session_id, cart_id="cart-2", seats=[(0, 4), (0, 5)]
        )

    assert (
        refused.value.message
        == "Row A, seat 5 was just taken. Please choose another seat."
    )
    assert refused.value.seats == ((0, 5),)
    assert raw_session() == before
    assert held_by(session_id, "cart-2") == set()


def test_holding_a_seat_the_cart_already_holds_says_so_and_changes_nothing(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(1, 1)])
    before = raw_session()

    with pytest.raises(SeatsAlreadyHeld) as refused:
        services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(1, 1)])

    assert refused.value.message == "You already hold Row B, seat 1."
    assert raw_session() == before


def test_release_restores_both_seats_and_the_counter(session_id, raw_session):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])

    released = services.seats_release(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)]
    )

    doc = raw_session()
    assert taken(session_id) == set()
    assert doc["seatsAvailable"] == SMALL_SEATS  # the article forgets this
    assert doc["held"] == 0
    assert released.positions == ((0, 5), (0, 6))
    assert released.total == Decimal("70.00")


def test_releasing_one_seat_of_a_multi_seat_hold_keeps_the_others(
    session_id, raw_session
):
    services.seats_hold(
        session_id=session_id, cart_id="cart-1", seats=[(2, 3), (2, 4), (2, 5)]
    )

    released = services.seats_release(
        session_id=session_id, cart_id="cart-1", seats=[(2, 4)]
    )

    doc = raw_session()
    assert released.labels == ("Row C, seat 5",)
    assert released.total == Decimal("20.50")
    assert taken(session_id) == {(2, 3), (2, 5)}
    assert held_by(session_id, "cart-1") == {(2, 3), (2, 5)}
    assert doc["seatsAvailable"] == SMALL_SEATS - 2


def test_release_without_seats_releases_everything_the_cart_holds_and_nothing_else(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(2, 6), (2, 7)])
    services.seats_hold(session_id=session_id, cart_id="cart-2", seats=[(0, 1)])

    released = services.seats_release(session_id=session_id, cart_id="cart-1")

    doc = raw_session()
    assert set(released.positions) == {(0, 0), (2, 6), (2, 7)}
    assert taken(session_id) == {(0, 1)}
    assert held_by(session_id, "cart-2") == {(0, 1)}
    assert doc["seatsAvailable"] == SMALL_SEATS - 1


def test_a_second_release_changes_nothing_and_releases_nothing(session_id, raw_session):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    services.seats_release(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    before = raw_session()

    again = services.seats_release(
        session_id=session_id, cart_id="cart-1", seats=[(0, 0)]
    )
    all_again = services.seats_release(session_id=session_id, cart_id="cart-1")

    assert again.seats == () and all_again.seats == ()
    assert raw_session() == before


def test_a_cart_cannot_release_seats_another_cart_holds(session_id, raw_session):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    before = raw_session()

    released = services.seats_release(
        session_id=session_id, cart_id="cart-2", seats=[(0, 0)]
    )

    assert released.seats == ()
    assert raw_session() == before


def test_checkout_commit_keeps_seats_taken_and_moves_the_reservation_to_sold(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])

    sold = services.seats_commit(session_id=session_id, cart_id="cart-1")

    doc = raw_session()
    assert taken(session_id) == {(0, 5), (0, 6)}
    assert doc["seatsAvailable"] == SMALL_SEATS - 2
    assert (doc["held"], doc["sold"]) == (0, 2)
    assert sold_to(session_id, "cart-1") == {(0, 5), (0, 6)}
    assert sold.total == Decimal("70.00")
    assert (
        selectors.session_invariant_violations(sold={session_id: [(0, 5), (0, 6)]})
        == []
    )


def test_committing_twice_answers_the_same_sale_and_changes_nothing(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])
    first = services.seats_commit(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)]
    )
    before = raw_session()

    again = services.seats_commit(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)]
    )
    all_again = services.seats_commit(session_id=session_id, cart_id="cart-1")

    assert again == first
    assert all_again.positions == first.positions
    assert raw_session() == before


def test_a_commit_from_the_holds_as_checked_before_the_charge(session_id, raw_session):
    """Checkout checks the seats (``seats_not_held``) and commits from the
    holds document it read; one read stale by then (the seat released and
    held again under a new tag) costs a second try, never a wrong sale."""
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])
    missing, doc = selectors.seats_not_held(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)]
    )
    assert missing == []
    services.seats_release(session_id=session_id, cart_id="cart-1", seats=[(0, 6)])
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 6)])

    sold = services.seats_commit(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)], holds_doc=doc
    )

    assert sold.positions == ((0, 5), (0, 6))
    assert sold_to(session_id, "cart-1") == {(0, 5), (0, 6)}
    assert (raw_session()["held"], raw_session()["sold"]) == (0, 2)
    assert selectors.session_invariant_violations() == []


def test_selling_is_a_commit_without_the_priced_answer(session_id, raw_session):
    """Checkout's ``seats_sell``: the same conditional update and refusals as
    ``seats_commit``, answering only the seats the cart now owns."""
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])

    sold = services.seats_sell(
        session_id=session_id, cart_id="cart-1", seats=[(0, 6), (0, 5)]
    )
    before = raw_session()
    again = services.seats_sell(
        session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)]
    )

    assert sold == again == ((0, 5), (0, 6))
    assert sold_to(session_id, "cart-1") == {(0, 5), (0, 6)}
    assert (before["held"], before["sold"]) == (0, 2)
    assert raw_session() == before
    with pytest.raises(SeatsNotHeld):
        services.seats_sell(session_id=session_id, cart_id="cart-2", seats=[(1, 1)])
    assert raw_session() == before
    assert selectors.session_invariant_violations() == []


def test_committing_part_of_a_hold_sells_that_part_and_keeps_the_rest_held(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])

    services.seats_commit(session_id=session_id, cart_id="cart-1", seats=[(0, 6)])

    assert raw_session()["held"] == 1
    assert held_by(session_id, "cart-1") == {(0, 5)}
    assert sold_to(session_id, "cart-1") == {(0, 6)}
    assert selectors.session_invariant_violations() == []


def test_an_expired_carts_released_seats_become_free_for_others(
    session_id, raw_session
):
    services.seats_hold(
        session_id=session_id, cart_id="idle-cart", seats=[(1, 1), (1, 2)]
    )
    with pytest.raises(SeatsTaken):
        services.seats_hold(session_id=session_id, cart_id="new-cart", seats=[(1, 2)])

    # The shop's expiry gives back everything the idle cart held.
    services.seats_release(session_id=session_id, cart_id="idle-cart")
    hold = services.seats_hold(
        session_id=session_id, cart_id="new-cart", seats=[(1, 2)]
    )

    assert raw_session()["held"] == 1
    assert hold.positions == ((1, 2),)
    assert held_by(session_id, "idle-cart") == set()
    assert taken(session_id) == {(1, 2)}
    # The idle cart cannot buy what it no longer holds.
    with pytest.raises(SeatsNotHeld) as refused:
        services.seats_commit(
            session_id=session_id, cart_id="idle-cart", seats=[(1, 1)]
        )
    assert "Row B, seat 1" in refused.value.message
    assert selectors.session_invariant_violations() == []


def test_sold_seats_cannot_be_held_or_released_by_anyone(session_id, raw_session):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    services.seats_commit(session_id=session_id, cart_id="cart-1")
    before = raw_session()

    with pytest.raises(SeatsTaken):
        services.seats_hold(session_id=session_id, cart_id="cart-2", seats=[(0, 0)])
    released = services.seats_release(session_id=session_id, cart_id="cart-1")

    assert released.seats == ()
    assert raw_session() == before


def test_each_seat_is_priced_by_its_zone_from_the_server(session_id):
    hold = services.seats_hold(
        session_id=session_id, cart_id="cart-1", seats=[(0, 0), (2, 4)]
    )

    assert [(s.zone, s.zone_name, s.price) for s in hold.seats] == [
        ("stalls", "Stalls", Decimal("35.00")),
        ("circle", "Circle", Decimal("20.50")),
    ]
    assert hold.total == Decimal("55.50")
    assert hold.zone_names == ("Stalls", "Circle")


# --- Best available ----------------------------------------------------------


def wide_hall() -> str:
    """Two zones; row 1 has an aisle at column 4; row 2 is the best row."""
    stalls = [
        [seat("A", n) for n in range(1, 10)],
        [
            *(seat("B", n) for n in range(1, 5)),
            None,
            *(seat("B", n) for n in range(5, 9)),
        ],
        [seat("C", n) for n in range(1, 10)],
        [seat("D", n, "circle") for n in range(1, 10)],
    ]
    return make_theater("Wide Hall", layout=stalls, zones=ZONES)


def test_best_available_holds_adjacent_seats_nearest_the_centre_of_the_zone(
    raw_session,
):
    session_id = make_session(wide_hall())

    hold = services.seats_best_available(
        session_id=session_id, cart_id="cart-1", count=3, zone="stalls"
    )

    # The stalls' centre is row 1 (B), column 4: the aisle. B cannot seat 3
    # around it, so A or C, centred; A is in front.
    assert hold.positions == ((0, 3), (0, 4), (0, 5))
    assert hold.total == Decimal("105.00")
    doc = selectors.seat_map(session_id=session_id, cart_id="cart-1")
    assert [s.seat for s in doc.mine] == [(0, 3), (0, 4), (0, 5)]


def test_best_available_never_spans_an_aisle_and_skips_taken_seats():
    session_id = make_session(wide_hall())
    services.seats_hold(session_id=session_id, cart_id="other", seats=[(0, 4), (2, 4)])

    hold = services.seats_best_available(
        session_id=session_id, cart_id="cart-1", count=4, zone="stalls"
    )

    assert hold.positions in {
        ((1, 0), (1, 1), (1, 2), (1, 3)),
        ((1, 5), (1, 6), (1, 7), (1, 8)),
    }


def test_best_available_leaves_wheelchair_and_companion_places_alone(session_id):
    hold = services.seats_best_available(
        session_id=session_id, cart_id="cart-1", count=5, zone="circle"
    )

    # C1 (wheelchair) and C2 (companion) are never handed out blindly; the
    # restricted-view C8 only when nothing else would do.
    assert hold.positions == ((2, 2), (2, 3), (2, 4), (2, 5), (2, 6))


def test_best_available_refuses_when_no_block_is_left_and_changes_nothing(
    session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="other", seats=[(2, 4)])
    before = raw_session()

    with pytest.raises(NoAdjacentSeats) as refused:
        services.seats_best_available(
            session_id=session_id, cart_id="cart-1", count=4, zone="circle"
        )

    assert refused.value.message == (
        "There are no 4 seats together in Circle any more."
        " Try fewer seats or another zone."
    )
    assert raw_session() == before


def test_best_available_without_a_zone_prefers_the_best_ranked_zone(session_id):
    hold = services.seats_best_available(
        session_id=session_id, cart_id="cart-1", count=2
    )

    assert {s.zone for s in hold.seats} == {"stalls"}


def test_a_session_as_stored_matches_its_document_schema(session_id):
    from booking.documents import SeatLayout, Session

    session = Session.objects.get(id=session_id)
    hall = SeatLayout.objects.get(id=session.layout_id)

    session.validate()
    hall.validate()
    assert session.seats_available == session.seat_count == SMALL_SEATS
    assert hall.layout[0][3].kind == "gap"
    assert hall.layout[2][0].flags == ["wheelchair"]


def test_a_refresh_after_a_release_never_writes_the_released_entry_back(session_id):
    """The reconciler's refresh reads a cart's stale entries, the shopper
    releases one of those holds, then the refresh writes its stamps: the
    released entry must not come back as a stamp without its seats."""
    from datetime import timedelta

    from django.utils import timezone

    from booking import checks
    from booking.selectors import session_invariant_violations
    from booking.services import holds
    from booking.services.seats import _stale, _stamp

    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 6)])
    later = timezone.now() + timedelta(minutes=5)
    oid = checks.session_oid(session_id)
    read = _stale(oid, ["cart-1"], before=later)  # the refresh reads ...
    services.seats_release(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    ((doc_id, stale),) = read

    assert _stamp(doc_id, stale, later) == 0  # ... and its write is refused

    doc = holds.holds_coll().find_one({"_id": doc_id})
    assert all("seats" in entry for entry in doc["holds"].values())
    assert held_by(session_id, "cart-1") == {(0, 6)}
    assert session_invariant_violations() == []
    # The next run stamps what is left.
    assert (
        services.seats_refresh(
            session_id=session_id, cart_ids=["cart-1"], before=later, now=later
        )
        == 1
    )


# --- A hold's header as this process last read it (seats._known_header) ----


def test_a_hold_after_the_header_changed_elsewhere_is_priced_from_the_new_one(
    mongo_db, session_id, raw_session
):
    """Another process changed the prices after this one read them: the
    hold's guard refuses the old copy, and the hold is priced afresh."""
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    mongo_db.sessions.update_one(
        {"_id": ObjectId(session_id)},
        {"$set": {"prices.stalls": Decimal128("40.00"), "name": "Hamlet (revival)"}},
    )

    hold = services.seats_hold(session_id=session_id, cart_id="cart-2", seats=[(0, 6)])

    assert [s.price for s in hold.seats] == [Decimal("40.00")]
    assert hold.show == "Hamlet (revival)"
    doc = raw_session()
    assert (doc["held"], doc["seatsAvailable"]) == (2, SMALL_SEATS - 2)
    assert held_by(session_id, "cart-2") == {(0, 6)}


def test_a_performance_started_since_this_process_read_it_is_closed(
    mongo_db, session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    move_to_the_past(mongo_db, session_id)

    with pytest.raises(SessionClosed):
        services.seats_hold(session_id=session_id, cart_id="cart-2", seats=[(0, 6)])

    assert taken(session_id) == {(0, 5)}
    assert held_by(session_id, "cart-2") == set()


def test_a_start_moved_later_since_this_process_read_it_opens_the_sale_again(
    mongo_db, session_id
):
    move_to_the_past(mongo_db, session_id)
    with pytest.raises(SessionClosed):
        services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    mongo_db.sessions.update_one(
        {"_id": ObjectId(session_id)},
        {"$set": {"start": timezone.now() + timedelta(days=1)}},
    )

    hold = services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])

    assert hold.labels == ("Row A, seat 5",)


def test_a_second_hold_of_a_session_reads_no_header(monkeypatch, session_id):
    """The header this process read for the first hold serves the next."""
    from booking.services import seats as seat_services

    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])

    def no_read(*args, **kwargs):
        raise AssertionError("the session's header was read again")

    monkeypatch.setattr(seat_services, "_header", no_read)
    hold = services.seats_hold(session_id=session_id, cart_id="cart-2", seats=[(0, 6)])

    assert hold.labels == ("Row A, seat 6",)


def test_a_seat_of_a_layout_the_session_moved_to_since_is_held(
    mongo_db, theater_id, session_id
):
    """A seat off the map as this process last read the session is asked of
    the session before it is refused."""
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    wider = small_layout()
    wider[1] = [*wider[1], seat("B", 4), seat("B", 5)]
    other = make_session(make_theater(name="Wider Hall", layout=wider))
    moved = mongo_db.sessions.find_one({"_id": ObjectId(other)})
    mongo_db.sessions.update_one(
        {"_id": ObjectId(session_id)},
        {"$set": {"layout_id": moved["layout_id"], "seats": moved["seats"]}},
    )

    hold = services.seats_hold(session_id=session_id, cart_id="cart-2", seats=[(1, 5)])

    assert hold.labels == ("Row B, seat 5",)


def late_with_settle_between(monkeypatch) -> None:
    """The next hold or hand-over is late: settling runs between its intent
    and its session update and prunes that intent (the one entry no seat
    carries yet), and every update counts as late (``LATE_HOLD`` 0)."""
    from booking.services import holds as hold_records
    from booking.services import seats as seat_services

    real_swap = seat_services.swap_states

    def settle_first(*args, **kwargs):
        now = timezone.now()
        pruned = hold_records.seat_holds_settle(
            before=now + timedelta(days=1), since=now - timedelta(days=1)
        )
        assert pruned == 1  # the new intent: no seat carries its tag yet
        return real_swap(*args, **kwargs)

    monkeypatch.setattr(seat_services, "swap_states", settle_first)
    monkeypatch.setattr(hold_records, "LATE_HOLD", timedelta(0))


def test_a_hold_whose_session_update_came_late_lists_its_tag_again(
    monkeypatch, mongo_db, session_id
):
    """Settling pruned the hold's intent while its session update was late
    (no seat carried the tag yet): once the seats carry it, the intent is
    written again, so the tag stays listed by its cart."""
    late_with_settle_between(monkeypatch)

    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])

    assert held_by(session_id, "cart-1") == {(0, 5), (0, 6)}
    assert session_invariant_violations() == []
    doc = mongo_db.seat_holds.find_one({"cart_id": "cart-1"})
    assert doc["n"] == 1 and len(doc["holds"]) == 1


def test_a_late_hold_whose_intent_stayed_writes_nothing_twice(
    monkeypatch, mongo_db, session_id
):
    from booking.services import holds as hold_records

    monkeypatch.setattr(hold_records, "LATE_HOLD", timedelta(0))
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5)])
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 6)])

    doc = mongo_db.seat_holds.find_one({"cart_id": "cart-1"})
    assert doc["n"] == 2 and len(doc["holds"]) == 2
    assert session_invariant_violations() == []


def test_a_hand_over_that_came_late_lists_its_new_tag_again(
    monkeypatch, mongo_db, session_id
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 5), (0, 6)])
    late_with_settle_between(monkeypatch)

    moved = services.seats_transfer(
        session_id=session_id, from_cart_id="cart-1", to_cart_id="cart-2"
    )

    assert moved.positions == ((0, 5), (0, 6))
    assert held_by(session_id, "cart-2") == {(0, 5), (0, 6)}
    assert session_invariant_violations() == []
    doc = mongo_db.seat_holds.find_one({"cart_id": "cart-2"})
    assert doc["n"] == 1 and len(doc["holds"]) == 1
