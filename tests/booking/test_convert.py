"""Converting a database of the older session shape (a raw copy of what the
older services wrote) with ``manage.py convert_sessions``."""

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from bson import Decimal128, ObjectId
from django.core.management import call_command
from django.utils import timezone

from booking import selectors, services
from booking.documents import FREE, GAP
from booking.errors import SeatsTaken
from booking.halls import forget
from booking.services.convert import ConvertReport, session_convert
from tests.booking.factories import SMALL_SEATS, make_theater, seat_states


def _entry(cart, seat, at, price="35.00", zone="stalls"):
    return {
        "cart_id": cart,
        "seat": list(seat),
        "label": "a label",
        "zone": zone,
        "price": Decimal128(Decimal(price)),
        "at": at,
    }


def old_session(mongo_db, theater_id: str) -> ObjectId:
    """A session as the older session_create and seat services left it:
    cart-1 holds A1 and A2, cart-2 bought C3, and a theater with no
    layout version (the older theater_create)."""
    theater = mongo_db.theaters.find_one({"_id": ObjectId(theater_id)})
    mongo_db.theaters.update_one(
        {"_id": theater["_id"]}, {"$unset": {"layout_version": ""}}
    )
    mongo_db.seat_layouts.delete_many({})
    forget()
    state = [list(row) for row in theater["seats"]]
    for r, c in [(0, 0), (0, 1), (2, 2)]:
        state[r][c] = 1
    at = timezone.now().replace(microsecond=0)
    start = at + timedelta(days=3)
    return mongo_db.sessions.insert_one(
        {
            "theater_id": theater["_id"],
            "theater_name": theater["name"],
            "name": "Hamlet",
            "description": "",
            "start": start,
            "end": start + timedelta(hours=3),
            "zones": theater["zones"],
            "layout": theater["layout"],
            "prices": {
                "stalls": Decimal128(Decimal("35.00")),
                "circle": Decimal128(Decimal("20.50")),
            },
            "seats": state,
            "seatsAvailable": SMALL_SEATS - 3,
            "reservations": [
                _entry("cart-1", (0, 0), at),
                _entry("cart-1", (0, 1), at),
            ],
            "sold": [_entry("cart-2", (2, 2), at, "20.50", "circle")],
            "version": 7,
            "created_at": at,
        }
    ).inserted_id


def convert() -> str:
    out = StringIO()
    call_command("convert_sessions", stdout=out)
    return out.getvalue()


@pytest.fixture
def old(mongo_db):
    return str(old_session(mongo_db, make_theater()))


def test_converting_keeps_every_hold_and_sale_and_passes_every_check(mongo_db, old):
    output = convert()

    assert "1 sessions converted" in output and "2 carts' holds written" in output
    doc = mongo_db.sessions.find_one({"_id": ObjectId(old)})
    assert not {"layout", "zones", "reservations"} & set(doc)
    assert (doc["seatsAvailable"], doc["held"], doc["sold"]) == (SMALL_SEATS - 3, 2, 1)
    assert doc["seats"][0][3] == GAP and doc["seats"][0][4] == FREE
    assert doc["version"] == 7
    states = seat_states(old)
    assert states[(0, 0)] == states[(0, 1)] == ("held", "cart-1")
    assert states[(2, 2)] == ("sold", "cart-2")
    assert selectors.session_invariant_violations(sold={old: [(2, 2)]}) == []
    assert [h.positions for h in selectors.cart_holds(cart_id="cart-1")] == [
        ((0, 0), (0, 1))
    ]
    # The theater got its layout version, and the services work on the result.
    theater = mongo_db.theaters.find_one()
    assert theater["layout_version"] == 1 and doc["layout_id"].endswith(":1")
    with pytest.raises(SeatsTaken):
        services.seats_hold(session_id=old, cart_id="cart-3", seats=[(0, 0)])
    services.seats_release(session_id=old, cart_id="cart-1")
    services.seats_return(session_id=old, cart_id="cart-2")
    assert mongo_db.sessions.find_one({"_id": ObjectId(old)})["seatsAvailable"] == (
        SMALL_SEATS
    )
    assert selectors.session_invariant_violations() == []


def test_converting_twice_changes_nothing_the_second_time(mongo_db, old):
    convert()
    session = mongo_db.sessions.find_one({"_id": ObjectId(old)})
    holds = list(mongo_db.seat_holds.find().sort("_id"))

    assert "0 sessions converted, 1 already compact" in convert()
    assert mongo_db.sessions.find_one({"_id": ObjectId(old)}) == session
    assert list(mongo_db.seat_holds.find().sort("_id")) == holds


def test_a_conversion_stopped_before_the_session_update_is_finished_by_a_rerun(
    mongo_db, old, monkeypatch
):
    from booking.services import convert as module

    def stop(*args, **kwargs):
        raise RuntimeError("stopped")

    doc = mongo_db.sessions.find_one({"_id": ObjectId(old)})
    monkeypatch.setattr(module, "_states", stop)
    with pytest.raises(RuntimeError):
        session_convert(doc, mongo_db.theaters.find_one(), ConvertReport())
    monkeypatch.undo()

    assert "layout_id" not in mongo_db.sessions.find_one({"_id": ObjectId(old)})
    assert "1 sessions converted" in convert()
    assert selectors.session_invariant_violations(sold={old: [(2, 2)]}) == []


def test_a_session_sold_from_a_layout_its_hall_no_longer_has_keeps_its_own(
    mongo_db, old
):
    mongo_db.theaters.update_one({}, {"$set": {"layout.0.0.number": 99}})

    convert()

    doc = mongo_db.sessions.find_one({"_id": ObjectId(old)})
    assert ":s" in doc["layout_id"]
    assert seat_states(old)[(0, 0)] == ("held", "cart-1")
    assert selectors.seat_map(session_id=old).rows[0].cells[0].number == 1
