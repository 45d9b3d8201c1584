"""Bad input gets a clear error and changes nothing."""

from datetime import timedelta
from decimal import Decimal

import pytest
from bson import ObjectId
from django.utils import timezone

from booking import selectors, services
from booking.errors import (
    InvalidLayout,
    InvalidRequest,
    InvalidSeats,
    SeatOffMap,
    SessionClosed,
    SessionNotFound,
    TheaterNotFound,
    UnknownZone,
)
from tests.booking.factories import PRICES, ZONES, make_theater, move_to_the_past, seat

BAD_SEATS = [
    pytest.param(
        [(3, 0)],
        SeatOffMap,
        "There is no seat at row 4, column 1 on this map.",
        id="row-off-the-map",
    ),
    pytest.param(
        [(0, 7)],
        SeatOffMap,
        "There is no seat at row 1, column 8 on this map.",
        id="column-off-the-map",
    ),
    pytest.param(
        [(1, 4)],
        SeatOffMap,
        "There is no seat at row 2, column 5 on this map.",
        id="past-a-ragged-row-end",
    ),
    pytest.param(
        [(0, 3)],
        SeatOffMap,
        "There is no seat at row 1, column 4 on this map.",
        id="on-an-aisle",
    ),
    pytest.param(
        [(0, 0), (1, 0)],
        SeatOffMap,
        "There is no seat at row 2, column 1 on this map.",
        id="one-good-one-on-a-gap",
    ),
    pytest.param(
        [(-1, 0)], InvalidSeats, "Seat positions cannot be negative.", id="negative-row"
    ),
    pytest.param(
        [(0, -2)],
        InvalidSeats,
        "Seat positions cannot be negative.",
        id="negative-column",
    ),
    pytest.param(
        [("0", "1")],
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="strings",
    ),
    pytest.param(
        "0-1",
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="a-string",
    ),
    pytest.param(
        [(0.0, 1)],
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="a-float",
    ),
    pytest.param(
        [(True, 1)],
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="a-bool",
    ),
    pytest.param(
        {"$gt": ""},
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="a-dict",
    ),
    pytest.param(
        [{"$ne": 1}],
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="a-dict-seat",
    ),
    pytest.param(
        [(0, 1, 2)],
        InvalidSeats,
        "Seats must be given as row and column numbers.",
        id="a-triple",
    ),
    pytest.param([], InvalidSeats, "Choose at least one seat.", id="zero-seats"),
    pytest.param(
        [(0, c) for c in range(500)],
        InvalidSeats,
        "Choose at most 10 seats at a time.",
        id="500-seats",
    ),
    pytest.param(
        [(0, 0), (0, 0)], InvalidSeats, "The same seat was chosen twice.", id="twice"
    ),
    pytest.param(
        None, InvalidSeats, "Seats must be given as row and column numbers.", id="none"
    ),
]


@pytest.mark.parametrize("seats, error, message", BAD_SEATS)
def test_holding_bad_seats_is_refused_clearly_and_changes_nothing(
    session_id, raw_session, seats, error, message
):
    before = raw_session()

    with pytest.raises(error) as refused:
        services.seats_hold(session_id=session_id, cart_id="cart-1", seats=seats)

    assert refused.value.message == message
    assert raw_session() == before


@pytest.mark.parametrize(
    "seats",
    [
        pytest.param([(3, 0)], id="off-the-map"),
        pytest.param([(0, 3)], id="on-an-aisle"),
        pytest.param([(-1, 0)], id="negative"),
        pytest.param({"$gt": ""}, id="a-dict"),
        pytest.param([], id="zero-seats"),
    ],
)
def test_releasing_or_committing_bad_seats_is_refused_and_changes_nothing(
    session_id, raw_session, seats
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    before = raw_session()

    with pytest.raises((SeatOffMap, InvalidSeats)):
        services.seats_release(session_id=session_id, cart_id="cart-1", seats=seats)
    with pytest.raises((SeatOffMap, InvalidSeats)):
        services.seats_commit(session_id=session_id, cart_id="cart-1", seats=seats)

    assert raw_session() == before


@pytest.mark.parametrize(
    "cart_id",
    [
        pytest.param({"$ne": ""}, id="operator-dict"),
        pytest.param("", id="empty"),
        pytest.param("x" * 65, id="too-long"),
        pytest.param("cart 1", id="a-space"),
        pytest.param("$where", id="a-dollar"),
        pytest.param(7, id="a-number"),
        pytest.param(None, id="none"),
    ],
)
def test_a_bad_cart_id_is_refused_by_every_seat_service(
    session_id, raw_session, cart_id
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    before = raw_session()

    calls = [
        lambda: services.seats_hold(
            session_id=session_id, cart_id=cart_id, seats=[(0, 1)]
        ),
        lambda: services.seats_release(session_id=session_id, cart_id=cart_id),
        lambda: services.seats_commit(session_id=session_id, cart_id=cart_id),
        lambda: services.seats_best_available(
            session_id=session_id, cart_id=cart_id, count=1
        ),
    ]
    for call in calls:
        with pytest.raises(InvalidRequest) as refused:
            call()
        assert refused.value.message == "A valid cart is needed to hold seats."
    assert raw_session() == before


@pytest.mark.parametrize(
    "session_id",
    [
        pytest.param(str(ObjectId()), id="unknown"),
        pytest.param("not-an-id", id="malformed"),
        pytest.param({"$ne": None}, id="operator-dict"),
        pytest.param(None, id="none"),
    ],
)
def test_an_unknown_session_is_refused_by_every_seat_service(mongo_db, session_id):
    calls = [
        lambda: services.seats_hold(session_id=session_id, cart_id="c", seats=[(0, 0)]),
        lambda: services.seats_release(session_id=session_id, cart_id="c"),
        lambda: services.seats_commit(session_id=session_id, cart_id="c"),
        lambda: services.seats_best_available(
            session_id=session_id, cart_id="c", count=2
        ),
    ]
    for call in calls:
        with pytest.raises(SessionNotFound) as refused:
            call()
        assert refused.value.message == "That performance does not exist."
        assert refused.value.status == 404


def test_a_session_in_the_past_refuses_holds_and_best_available(
    mongo_db, session_id, raw_session
):
    move_to_the_past(mongo_db, session_id)
    before = raw_session()

    with pytest.raises(SessionClosed) as refused:
        services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    with pytest.raises(SessionClosed):
        services.seats_best_available(session_id=session_id, cart_id="cart-1", count=2)

    assert "already started" in refused.value.message
    assert raw_session() == before


def test_seats_held_before_the_start_can_still_be_released_after_it(
    mongo_db, session_id, raw_session
):
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=[(0, 0)])
    move_to_the_past(mongo_db, session_id)

    released = services.seats_release(session_id=session_id, cart_id="cart-1")

    assert released.positions == ((0, 0),)
    assert raw_session()["held"] == 0
    assert selectors.cart_holds(cart_id="cart-1") == []


@pytest.mark.parametrize(
    "count",
    [0, -1, 11, 500, "2", 2.0, True, None, {"$gt": 0}],
)
def test_best_available_refuses_a_bad_count_and_changes_nothing(
    session_id, raw_session, count
):
    before = raw_session()

    with pytest.raises(InvalidSeats) as refused:
        services.seats_best_available(session_id=session_id, cart_id="c", count=count)

    assert refused.value.message == "Choose between 1 and 10 seats."
    assert raw_session() == before


@pytest.mark.parametrize("zone", ["balcony", {"$ne": ""}, 3])
def test_best_available_refuses_an_unknown_zone(session_id, raw_session, zone):
    before = raw_session()

    with pytest.raises(UnknownZone):
        services.seats_best_available(
            session_id=session_id, cart_id="c", count=2, zone=zone
        )

    assert raw_session() == before


# --- Creating theaters and sessions -------------------------------------------


def _start(days=3):
    return timezone.now() + timedelta(days=days)


@pytest.mark.parametrize(
    "changes, error",
    [
        pytest.param(
            {"theater_id": str(ObjectId())}, TheaterNotFound, id="unknown-theater"
        ),
        pytest.param(
            {"theater_id": {"$ne": None}}, TheaterNotFound, id="operator-theater"
        ),
        pytest.param({"show": ""}, InvalidRequest, id="no-show-name"),
        pytest.param(
            {"start": timezone.now() - timedelta(days=1)},
            InvalidRequest,
            id="in-the-past",
        ),
        pytest.param({"end": _start(2)}, InvalidRequest, id="ends-before-it-starts"),
        pytest.param(
            {"start": _start().replace(tzinfo=None)}, InvalidRequest, id="naive-time"
        ),
        pytest.param(
            {"prices": {"stalls": Decimal("35")}}, InvalidRequest, id="a-zone-unpriced"
        ),
        pytest.param(
            {"prices": {**PRICES, "balcony": Decimal("9")}},
            UnknownZone,
            id="unknown-zone",
        ),
        pytest.param(
            {"prices": {**PRICES, "stalls": 35.0}}, InvalidRequest, id="float-price"
        ),
        pytest.param(
            {"prices": {**PRICES, "stalls": Decimal("-1")}},
            InvalidRequest,
            id="negative-price",
        ),
        pytest.param(
            {"prices": {**PRICES, "stalls": Decimal("NaN")}},
            InvalidRequest,
            id="nan-price",
        ),
    ],
)
def test_session_create_refuses_bad_input_and_creates_nothing(
    mongo_db, theater_id, changes, error
):
    args = {
        "theater_id": theater_id,
        "show": "Hamlet",
        "start": _start(),
        "end": _start() + timedelta(hours=3),
        "prices": PRICES,
        **changes,
    }

    with pytest.raises(error):
        services.session_create(**args)

    assert mongo_db.sessions.count_documents({}) == 0


@pytest.mark.parametrize(
    "layout, message",
    [
        pytest.param(
            [[None, None]], "A theater needs at least one seat.", id="no-seats"
        ),
        pytest.param([], "A layout has between 1 and 200 rows.", id="no-rows"),
        pytest.param(
            [[seat("A", 1, "balcony")]],
            "Every seat must belong to one of the zones.",
            id="unknown-zone",
        ),
        pytest.param(
            [[seat("A", 1), seat("A", 1)]],
            "Row A, seat 1 appears twice.",
            id="duplicate-label",
        ),
        pytest.param(
            [[seat("A", 1, "stalls", "vip")]],
            "Seat flags are wheelchair, companion, restricted.",
            id="bad-flag",
        ),
        pytest.param(
            [["A1"]], "Every seat must belong to one of the zones.", id="not-a-seat"
        ),
    ],
)
def test_theater_create_refuses_bad_layouts(mongo_db, layout, message):
    with pytest.raises(InvalidLayout) as refused:
        services.theater_create(name="Bad Hall", zones=ZONES, layout=layout)

    assert refused.value.message == message
    assert mongo_db.theaters.count_documents({}) == 0


def test_theater_names_are_unique(mongo_db):
    make_theater("The Royal")

    with pytest.raises(InvalidLayout) as refused:
        make_theater("The Royal")

    assert refused.value.message == "A theater named The Royal already exists."
    assert mongo_db.theaters.count_documents({}) == 1
