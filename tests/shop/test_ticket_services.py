"""Seats as cart lines: hold, best available, release, expiry, clear, merge.

The article's operations in its own terms: holding seats takes them on the
session and lists them in the cart; an expired cart's seats become free
(through the cart's expiry now); the stale holder of a wanted seat is expired
first and the hold tried again.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from bson import ObjectId

from booking import services as booking
from booking.errors import (
    InvalidSeats,
    NoAdjacentSeats,
    SeatOffMap,
    SeatsAlreadyHeld,
    SeatsTaken,
    SessionClosed,
    SessionNotFound,
    UnknownZone,
)
from booking.selectors import session_invariant_violations
from shop import faults
from shop.documents import ACTIVE, EXPIRED
from shop.errors import CartExpired, CartNotFound, CartPending, SeatsNotInCart
from shop.selectors.carts import cart_units, cart_view
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item, cart_clear, cart_merge
from shop.services.expiry import cart_expire, carts_expire
from shop.services.tickets import (
    cart_hold_best_available,
    cart_hold_seats,
    cart_release_seats,
)
from tests.booking.factories import SMALL_SEATS, holders, move_to_the_past
from tests.shop.factories import make_show

ALICE, BOB, ACCOUNT = "anon:alice", "anon:bob", "user:7"


@pytest.fixture
def show():
    return make_show()


def session(mongo_db, session_id):
    return mongo_db.sessions.find_one({"_id": ObjectId(session_id)})


def held_by(mongo_db, session_id) -> dict[tuple, str]:
    return holders(session_id)


def cart_of(mongo_db, owner):
    return mongo_db.carts.find_one({"owner": owner}, sort=[("modified_at", -1)])


def listed(mongo_db, owner, session_id) -> list[tuple]:
    raw = cart_of(mongo_db, owner) or {}
    for line in raw.get("tickets", []):
        if line["session_id"] == session_id:
            return [(s["row"], s["col"]) for s in line["seats"]]
    return []


def assert_clean():
    assert invariant_problems() == []
    assert session_invariant_violations() == []


# --- holding ------------------------------------------------------------------


def test_holding_seats_takes_them_on_the_session_and_lists_them_in_the_cart(
    mongo_db, show, now
):
    held = cart_hold_seats(
        owner=ALICE, session_id=show, seats=((0, 1), (2, 3)), now=now
    )

    assert held.labels == ("Row A, seat 2", "Row C, seat 4")
    assert held.total == Decimal("55.50")
    raw = cart_of(mongo_db, ALICE)
    (line,) = raw["tickets"]
    assert line["show"] == "Hamlet" and line["theater"] == "Test Hall"
    assert [
        (s["label"], s["zone_name"], s["price"].to_decimal()) for s in line["seats"]
    ] == [
        ("Row A, seat 2", "Stalls", Decimal("35.00")),
        ("Row C, seat 4", "Circle", Decimal("20.50")),
    ]
    assert held_by(mongo_db, show) == {(0, 1): raw["_id"], (2, 3): raw["_id"]}
    assert session(mongo_db, show)["seatsAvailable"] == SMALL_SEATS - 2
    assert raw["expires_at"] == now + timedelta(minutes=30)
    assert cart_units(owner=ALICE, now=now) == 2
    assert_clean()


@pytest.mark.parametrize("owner", [None, ""])
def test_a_hold_without_a_shopper_identity_takes_no_seat(mongo_db, show, now, owner):
    with pytest.raises(CartNotFound):
        cart_hold_seats(owner=owner, session_id=show, seats=((0, 1),), now=now)

    assert held_by(mongo_db, show) == {}
    assert session(mongo_db, show)["seatsAvailable"] == SMALL_SEATS
    assert mongo_db.seat_holds.count_documents({}) == 0
    assert mongo_db.carts.count_documents({}) == 0
    assert_clean()


def test_more_seats_of_the_same_session_join_its_one_line_in_seat_order(
    mongo_db, show, now
):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 5),), now=now)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=now)

    assert len(cart_of(mongo_db, ALICE)["tickets"]) == 1
    assert listed(mongo_db, ALICE, show) == [(0, 0), (0, 1), (0, 5)]
    view = cart_view(owner=ALICE, now=now)
    (line,) = view.ticket_lines
    assert line.units == 3 and line.subtotal == Decimal("105.00")
    assert line.unit_price == Decimal("35.00")
    assert view.total == Decimal("105.00")
    assert_clean()


def test_a_first_hold_whose_cart_another_request_made_lands_on_that_cart(
    mongo_db, show, now, monkeypatch
):
    """Two first holds of one shopper: the second meets the first's claim
    before its insert and makes the cart; the first's seats, held for the
    same cart id, end listed on it. One cart, every seat held and listed."""
    point = faults.point

    def second_request_meanwhile(name):
        if name == "new_cart.after_claim":
            monkeypatch.setattr(faults, "point", point)
            cart_hold_seats(owner=ALICE, session_id=show, seats=((2, 0),), now=now)
        point(name)

    monkeypatch.setattr(faults, "point", second_request_meanwhile)

    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=now)

    assert mongo_db.carts.count_documents({"owner": ALICE}) == 1
    assert listed(mongo_db, ALICE, show) == [(0, 0), (0, 1), (2, 0)]
    cart_id = cart_of(mongo_db, ALICE)["_id"]
    assert held_by(mongo_db, show) == {
        (0, 0): cart_id,
        (0, 1): cart_id,
        (2, 0): cart_id,
    }
    assert_clean()


def test_tickets_and_goods_share_one_cart_and_one_total(mongo_db, show, product, now):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (2, 2)), now=now)

    view = cart_view(owner=ALICE, now=now)
    assert mongo_db.carts.count_documents({}) == 1
    assert [v.is_ticket for v in view.lines] == [False, True]
    assert view.ticket_lines[0].unit_price is None  # two zones, two prices
    assert view.total == Decimal("155.50")
    assert view.units == 3


def test_a_seat_another_cart_holds_is_refused_and_nothing_changes(mongo_db, show, now):
    cart_hold_seats(owner=BOB, session_id=show, seats=((0, 1),), now=now)
    before = session(mongo_db, show)

    with pytest.raises(SeatsTaken, match="Row A, seat 2 was just taken"):
        cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=now)

    assert session(mongo_db, show) == before
    assert cart_of(mongo_db, ALICE) is None  # a refused first hold: no cart
    assert_clean()


def test_holding_a_seat_twice_says_it_is_already_yours(mongo_db, show, now):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)

    with pytest.raises(SeatsAlreadyHeld, match="You already hold Row A, seat 2"):
        cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)

    assert listed(mongo_db, ALICE, show) == [(0, 1)]
    assert_clean()


def test_a_seat_held_by_a_cart_past_its_hold_is_freed_and_taken(mongo_db, show, now):
    cart_hold_seats(owner=BOB, session_id=show, seats=((0, 1), (0, 2)), now=now)
    bob = cart_of(mongo_db, BOB)["_id"]
    later = now + timedelta(minutes=31)  # Bob's hold ran out; no job has run

    held = cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=later)

    assert held.positions == ((0, 1),)
    alice = cart_of(mongo_db, ALICE)["_id"]
    # Bob's cart expired through the cart's expiry: all his seats came back.
    assert mongo_db.carts.find_one({"_id": bob})["state"] == EXPIRED
    assert held_by(mongo_db, show) == {(0, 1): alice}
    assert session(mongo_db, show)["seatsAvailable"] == SMALL_SEATS - 1
    assert_clean()


def test_a_seat_left_held_by_a_cart_that_is_over_is_freed_and_taken(
    mongo_db, show, now, later
):
    cart_hold_seats(owner=BOB, session_id=show, seats=((0, 0),), now=now)
    carts_expire(now=later)
    bob = cart_of(mongo_db, BOB)["_id"]
    # A crash's leftover: a seat still held for Bob's expired cart.
    booking.seats_hold(session_id=show, cart_id=bob, seats=[(0, 1)])

    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=later)

    assert held_by(mongo_db, show) == {(0, 1): cart_of(mongo_db, ALICE)["_id"]}
    assert_clean()


def test_a_seat_held_for_a_cart_not_yet_written_is_not_taken_from_it(
    mongo_db, show, now
):
    # A first hold: the seat is held for a new cart id, its cart comes next.
    booking.seats_hold(session_id=show, cart_id="a" * 32, seats=[(0, 1)])

    with pytest.raises(SeatsTaken):
        cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)

    assert held_by(mongo_db, show) == {(0, 1): "a" * 32}
    assert mongo_db.carts.count_documents({}) == 0  # a refused first hold


def test_a_live_holder_within_its_hold_keeps_the_seat(mongo_db, show, now):
    cart_hold_seats(owner=BOB, session_id=show, seats=((0, 1),), now=now)

    with pytest.raises(SeatsTaken):
        cart_hold_seats(
            owner=ALICE,
            session_id=show,
            seats=((0, 1),),
            now=now + timedelta(minutes=5),
        )

    assert cart_of(mongo_db, BOB)["state"] == ACTIVE


@pytest.mark.parametrize(
    ("seats", "error"),
    [
        (((0, 3),), SeatOffMap),  # the aisle
        (((1, 0),), SeatOffMap),  # the stage edge
        (((9, 9),), SeatOffMap),  # off the map
        (((-1, 2),), InvalidSeats),
        ((("0", "1"),), InvalidSeats),
        (({"$ne": 1},), InvalidSeats),
        ((), InvalidSeats),
        (tuple((0, c) for c in range(11)), InvalidSeats),
        (tuple((r, c) for r in range(25) for c in range(20)), InvalidSeats),
        ("0-1", InvalidSeats),
    ],
)
def test_bad_seats_are_refused_and_leave_no_cart_and_no_hold(
    mongo_db, show, now, seats, error
):
    with pytest.raises(error):
        cart_hold_seats(owner=ALICE, session_id=show, seats=seats, now=now)

    assert mongo_db.carts.count_documents({}) == 0
    doc = session(mongo_db, show)
    assert doc["held"] == 0 and doc["seatsAvailable"] == SMALL_SEATS


@pytest.mark.parametrize(
    "session_id",
    [pytest.param(str(ObjectId()), id="unknown"), "nope", {"$ne": None}, 7],
)
def test_an_unknown_session_is_refused_and_leaves_no_cart(mongo_db, now, session_id):
    with pytest.raises(SessionNotFound):
        cart_hold_seats(owner=ALICE, session_id=session_id, seats=((0, 1),), now=now)

    assert mongo_db.carts.count_documents({}) == 0


def test_a_past_session_is_refused_and_leaves_no_cart(mongo_db, show, now):
    move_to_the_past(mongo_db, show)

    with pytest.raises(SessionClosed):
        cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)
    with pytest.raises(SessionClosed):
        cart_hold_best_available(owner=ALICE, session_id=show, count=2, now=now)

    assert mongo_db.carts.count_documents({}) == 0
    assert session(mongo_db, show)["held"] == 0


def test_when_the_cart_refuses_the_line_the_seats_go_straight_back(
    mongo_db, show, now, monkeypatch
):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=now)
    cart_id = cart_of(mongo_db, ALICE)["_id"]
    real_point = faults.point

    def checkout_starts_meanwhile(name):
        if name == "tickets.after_hold":
            mongo_db.carts.update_one({"_id": cart_id}, {"$set": {"state": "pending"}})
        real_point(name)

    monkeypatch.setattr(faults, "point", checkout_starts_meanwhile)

    with pytest.raises(CartPending):
        cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)

    assert held_by(mongo_db, show) == {(0, 0): cart_id}  # (0, 1) went back
    assert listed(mongo_db, ALICE, show) == [(0, 0)]


# --- best available -------------------------------------------------------------


def test_best_available_holds_a_block_and_lists_it(mongo_db, show, now):
    held = cart_hold_best_available(
        owner=ALICE, session_id=show, count=3, zone="circle", now=now
    )

    assert len(held.seats) == 3
    assert {s.zone for s in held.seats} == {"circle"}
    rows = {s.row for s in held.seats}
    assert len(rows) == 1
    assert listed(mongo_db, ALICE, show) == sorted(held.positions)
    assert_clean()


def test_best_available_expires_stale_holders_before_giving_up(mongo_db, show, now):
    # Stalls blocks of three: A1-3, A4-6 and B1-3. Bob holds row B; twenty
    # minutes later Carol breaks both blocks of row A.
    cart_hold_seats(owner=BOB, session_id=show, seats=((1, 1), (1, 2), (1, 3)), now=now)
    carol_time = now + timedelta(minutes=20)
    cart_hold_seats(
        owner="anon:carol", session_id=show, seats=((0, 0), (0, 4)), now=carol_time
    )
    with pytest.raises(NoAdjacentSeats):
        cart_hold_best_available(
            owner=ALICE, session_id=show, count=3, zone="stalls", now=carol_time
        )

    # Bob's hold has run out (Carol's has not): his block is found.
    later = now + timedelta(minutes=31)
    held = cart_hold_best_available(
        owner=ALICE, session_id=show, count=3, zone="stalls", now=later
    )

    assert held.positions == ((1, 1), (1, 2), (1, 3))
    assert cart_of(mongo_db, BOB)["state"] == EXPIRED
    assert cart_of(mongo_db, "anon:carol")["state"] == ACTIVE
    assert_clean()


@pytest.mark.parametrize(
    ("count", "zone", "error"),
    [
        (0, None, InvalidSeats),
        (11, None, InvalidSeats),
        (500, None, InvalidSeats),
        (-2, None, InvalidSeats),
        ("2", None, InvalidSeats),
        (True, None, InvalidSeats),
        (2, "balcony", UnknownZone),
        (2, {"$ne": ""}, UnknownZone),
    ],
)
def test_best_available_refuses_bad_counts_and_zones_and_changes_nothing(
    mongo_db, show, now, count, zone, error
):
    with pytest.raises(error):
        cart_hold_best_available(
            owner=ALICE, session_id=show, count=count, zone=zone, now=now
        )

    assert session(mongo_db, show)["held"] == 0
    assert mongo_db.carts.count_documents({}) == 0


# --- releasing ----------------------------------------------------------------------


def test_releasing_one_seat_keeps_the_others(mongo_db, show, now):
    cart_hold_seats(
        owner=ALICE, session_id=show, seats=((0, 0), (0, 1), (0, 2)), now=now
    )

    freed = cart_release_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)

    assert freed.positions == ((0, 1),)
    assert listed(mongo_db, ALICE, show) == [(0, 0), (0, 2)]
    assert set(held_by(mongo_db, show)) == {(0, 0), (0, 2)}
    assert session(mongo_db, show)["seats"][0][1] == 0
    assert_clean()


def test_releasing_the_last_seat_removes_the_line(mongo_db, show, now):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=now)

    cart_release_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=now)

    assert cart_of(mongo_db, ALICE)["tickets"] == []
    assert held_by(mongo_db, show) == {}
    assert session(mongo_db, show)["seatsAvailable"] == SMALL_SEATS
    assert_clean()


def test_releasing_without_seats_gives_back_the_whole_session(mongo_db, show, now):
    other = make_show(show="Uncle Vanya", hall="Other Hall")
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (2, 5)), now=now)
    cart_hold_seats(owner=ALICE, session_id=other, seats=((0, 0),), now=now)

    freed = cart_release_seats(owner=ALICE, session_id=show, now=now)

    assert freed.positions == ((0, 0), (2, 5))
    assert [t["session_id"] for t in cart_of(mongo_db, ALICE)["tickets"]] == [other]
    assert held_by(mongo_db, show) == {}
    assert len(held_by(mongo_db, other)) == 1
    assert_clean()


def test_someone_elses_seat_cannot_be_released_and_nothing_changes(mongo_db, show, now):
    cart_hold_seats(owner=BOB, session_id=show, seats=((0, 1),), now=now)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=now)
    before = session(mongo_db, show)

    with pytest.raises(SeatsNotInCart):
        cart_release_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)
    with pytest.raises(SeatsNotInCart):
        cart_release_seats(
            owner="anon:nobody", session_id=show, seats=((0, 1),), now=now
        )

    assert session(mongo_db, show) == before
    assert listed(mongo_db, BOB, show) == [(0, 1)]


def test_a_seat_held_but_not_listed_can_be_released_from_the_map(mongo_db, show, now):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=now)
    cart_id = cart_of(mongo_db, ALICE)["_id"]
    # A crash between the two writes of a hold left (0, 1) unlisted.
    booking.seats_hold(session_id=show, cart_id=cart_id, seats=[(0, 1)])

    freed = cart_release_seats(owner=ALICE, session_id=show, seats=((0, 1),), now=now)

    assert freed.positions == ((0, 1),)
    assert held_by(mongo_db, show) == {(0, 0): cart_id}
    assert_clean()


def test_an_expired_cart_cannot_release_and_says_so(mongo_db, show, now, later):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=now)

    with pytest.raises(CartExpired):
        cart_release_seats(owner=ALICE, session_id=show, seats=((0, 0),), now=later)

    # Meeting the expired cart expired it: its seat is free again.
    assert held_by(mongo_db, show) == {}


# --- expiry, clearing, merging ------------------------------------------------------


def test_an_expired_carts_seats_become_free_through_the_carts_expiry(
    mongo_db, show, now, later
):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (2, 4)), now=now)
    cart_id = cart_of(mongo_db, ALICE)["_id"]

    assert carts_expire(now=later) == 1

    doc = session(mongo_db, show)
    assert doc["held"] == 0
    assert doc["seats"][0][0] == 0 and doc["seats"][2][4] == 0
    assert doc["seatsAvailable"] == SMALL_SEATS
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == EXPIRED
    assert cart_expire(cart_id=cart_id, now=later) is False  # twice: harmless
    assert_clean()


def test_clearing_the_cart_gives_seats_and_goods_back(mongo_db, show, product, now):
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 0), (0, 1)), now=now)

    cart_clear(owner=ALICE, now=now)

    raw = cart_of(mongo_db, ALICE)
    assert raw["tickets"] == [] and raw["items"] == []
    assert held_by(mongo_db, show) == {}
    assert_clean()


def test_logging_in_moves_the_anonymous_carts_seats_into_the_account_cart(
    mongo_db, show, now
):
    cart_hold_seats(owner=ACCOUNT, session_id=show, seats=((0, 0),), now=now)
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 5), (0, 6)), now=now)
    anonymous = cart_of(mongo_db, ALICE)["_id"]

    merged = cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=now)

    assert listed(mongo_db, ACCOUNT, show) == [(0, 0), (0, 5), (0, 6)]
    assert set(held_by(mongo_db, show).values()) == {merged.cart_id}
    assert mongo_db.carts.find_one({"_id": anonymous})["state"] == "canceled"
    assert_clean()


def test_logging_in_without_an_account_cart_keeps_the_seats_in_place(
    mongo_db, show, now
):
    cart_hold_seats(owner=ALICE, session_id=show, seats=((0, 5),), now=now)

    merged = cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=now)

    assert merged.owner == ACCOUNT
    assert held_by(mongo_db, show) == {(0, 5): merged.cart_id}
    assert_clean()
