"""Small halls and sessions for booking tests, made through the services."""

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from booking import services
from booking.values import SeatSpec, ZoneSpec

ZONES = [
    ZoneSpec(code="stalls", name="Stalls", colour="#2f6db5", rank=0),
    ZoneSpec(code="circle", name="Circle", colour="#b5542f", rank=1),
]
PRICES = {"stalls": Decimal("35"), "circle": Decimal("20.50")}


def seat(row: str, number: int, zone: str = "stalls", *flags: str) -> SeatSpec:
    return SeatSpec(row=row, number=number, zone=zone, flags=frozenset(flags))


def small_layout() -> list[list[SeatSpec | None]]:
    """A ragged hall of 17 seats with an aisle and flagged seats.

    (0, 3) is an aisle; (1, 0) is the edge of the stage; row 1 is shorter.
    """
    return [
        [seat("A", 1), seat("A", 2), seat("A", 3), None]
        + [seat("A", 4), seat("A", 5), seat("A", 6)],
        [None, seat("B", 1), seat("B", 2), seat("B", 3)],
        [
            seat("C", 1, "circle", "wheelchair"),
            seat("C", 2, "circle", "companion"),
            *(seat("C", n, "circle") for n in range(3, 8)),
            seat("C", 8, "circle", "restricted"),
        ],
    ]


SMALL_SEATS = 17


def wide_layout(rows: int = 6) -> list[list[SeatSpec | None]]:
    """A hall as wide as the demo's largest: 30 seats a row, aisles after
    seats 8 and 22 (32 cells), Circle behind the Stalls; restricted view at
    the front row's ends, wheelchair spaces and companions at the back."""
    layout = []
    for r in range(rows):
        label, last = chr(ord("A") + r), r == rows - 1
        cells: list[SeatSpec | None] = []
        for number in range(1, 31):
            flags = []
            if r == 0 and (number <= 3 or number >= 28):
                flags.append("restricted")
            if last and number in (1, 30):
                flags.append("wheelchair")
            if last and number in (2, 29):
                flags.append("companion")
            zone = "stalls" if r < rows // 2 else "circle"
            cells.append(seat(label, number, zone, *flags))
            if number in (8, 22):
                cells.append(None)
        layout.append(cells)
    return layout


def make_theater(name: str = "Test Hall", layout=None, zones=None) -> str:
    return services.theater_create(
        name=name, zones=zones or ZONES, layout=layout or small_layout()
    )


def make_session(
    theater_id: str,
    *,
    show: str = "Hamlet",
    starts_in: timedelta = timedelta(days=2),
    prices=None,
) -> str:
    start = timezone.now() + starts_in
    return services.session_create(
        theater_id=theater_id,
        show=show,
        description="The Prince of Denmark",
        start=start,
        end=start + timedelta(hours=3),
        prices=prices or PRICES,
    )


def move_to_the_past(mongo_db, session_id: str) -> None:
    """Time passes: the performance started an hour ago (a raw write)."""
    from bson import ObjectId

    start = timezone.now() - timedelta(hours=1)
    mongo_db.sessions.update_one(
        {"_id": ObjectId(session_id)},
        {"$set": {"start": start, "end": start + timedelta(hours=3)}},
    )


def seat_states(session_id: str) -> dict[tuple[int, int], tuple[str, str | None]]:
    """Every seat's state and cart, as booking's staff seat map reads them."""
    from booking.selectors import staff_seat_map

    found = staff_seat_map(session_id=session_id)
    return {
        (cell.row, cell.col): (cell.state, cell.cart_id)
        for row in found.rows
        for cell in row
        if cell.state != "gap"
    }


def taken(session_id: str) -> set[tuple[int, int]]:
    """Seats held or sold (by any cart)."""
    return {
        seat
        for seat, (state, _) in seat_states(session_id).items()
        if state in ("held", "sold")
    }


def held_by(session_id: str, cart_id: str) -> set[tuple[int, int]]:
    return {
        seat
        for seat, (state, cart) in seat_states(session_id).items()
        if state == "held" and cart == cart_id
    }


def sold_to(session_id: str, cart_id: str | None = None) -> set[tuple[int, int]]:
    return {
        seat
        for seat, (state, cart) in seat_states(session_id).items()
        if state == "sold" and cart_id in (None, cart)
    }


def holders(session_id: str) -> dict[tuple[int, int], str]:
    """Every held seat and the cart holding it."""
    return {
        seat: cart
        for seat, (state, cart) in seat_states(session_id).items()
        if state == "held"
    }
