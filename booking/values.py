"""Plain values the booking app hands to its callers (the shop, templates).

Services and selectors return these frozen dataclasses, never documents: a
cart can record them as they are, and templates read attributes only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from config.decimals import decimal_of

# A seat's position in a session's grid: (row index, column index), from 0.
Seat = tuple[int, int]


def seat_label(row: str, number: int) -> str:
    return f"Row {row}, seat {number}"


def seat_key(seat: Seat) -> str:
    """The "r-c" form of a position, as forms and DOM ids carry it."""
    return f"{seat[0]}-{seat[1]}"


# --- What services return -------------------------------------------------


@dataclass(frozen=True)
class ZoneSpec:
    """A price zone, as ``theater_create`` takes it; ``rank`` 0 is the best."""

    code: str
    name: str
    colour: str
    rank: int = 0


@dataclass(frozen=True)
class SeatSpec:
    """One seat of a layout, as ``theater_create`` takes it (None is a gap)."""

    row: str
    number: int
    zone: str
    flags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class HeldSeat:
    """One seat of a hold, priced when it was held."""

    row: int
    col: int
    label: str  # "Row F, seat 12"
    zone: str  # zone code
    zone_name: str  # "Stalls"
    price: Decimal
    at: datetime  # when it was held (or sold)
    # The tag the session's seat carries for this cart, where the service
    # knows it (a hold, a hand-over): what the cart records so that its
    # checkout can tell its seats on the session without reading its
    # ``SeatHolds`` (``seats_not_held``'s ``tags``).
    tag: int | None = None

    @classmethod
    def from_entry(cls, entry: dict, zone_names: Mapping[str, str]) -> HeldSeat:
        """A seat from its reservation (or sold) entry on the session."""
        row, col = entry["seat"]
        return cls(
            row=row,
            col=col,
            label=entry["label"],
            zone=entry["zone"],
            zone_name=zone_names.get(entry["zone"], entry["zone"]),
            price=decimal_of(entry["price"]),
            at=entry["at"],
            tag=entry.get("tag"),
        )

    @property
    def seat(self) -> Seat:
        return (self.row, self.col)

    @property
    def key(self) -> str:
        return seat_key(self.seat)


@dataclass(frozen=True)
class SeatHold:
    """The seats of one cart in one session that a service just changed.

    ``seats_hold`` returns the seats it held, ``seats_release`` those it
    released (possibly none: releasing twice is harmless), ``seats_commit``
    those now sold to the cart.
    """

    session_id: str
    cart_id: str
    show: str
    theater: str
    start: datetime
    seats: tuple[HeldSeat, ...]
    total: Decimal = field(init=False)

    def __post_init__(self):
        total = sum((s.price for s in self.seats), Decimal("0.00"))
        object.__setattr__(self, "total", total)

    @classmethod
    def of_entries(
        cls, doc: Mapping, cart_id: str, entries, names: Mapping[str, str]
    ) -> SeatHold:
        """The hold of ``entries`` (reservation or sale entries of one cart)
        in the session document ``doc``; ``names`` maps zone codes to names."""
        return cls(
            session_id=str(doc["_id"]),
            cart_id=cart_id,
            show=doc["name"],
            theater=doc["theater_name"],
            start=doc["start"],
            seats=tuple(HeldSeat.from_entry(e, names) for e in entries),
        )

    @property
    def positions(self) -> tuple[Seat, ...]:
        return tuple(s.seat for s in self.seats)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.seats)

    @property
    def zone_names(self) -> tuple[str, ...]:
        """The zones of the seats, each once, in seat order."""
        return tuple(dict.fromkeys(s.zone_name for s in self.seats))


# --- What selectors return ------------------------------------------------


INK, WHITE = "#1d1b22", "#ffffff"


def _luminance(colour: str) -> float:
    """WCAG relative luminance of a ``#rrggbb`` colour."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (
        c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def readable_ink(colour: str) -> str:
    """The text colour (white or the page's ink) with the higher contrast on
    ``colour``: a zone's colour is the theater's to choose, and a seat's
    number is drawn on it."""
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", colour or ""):
        return WHITE
    background = _luminance(colour)
    on_white = 1.05 / (background + 0.05)
    on_ink = (background + 0.05) / (_luminance(INK) + 0.05)
    return WHITE if on_white >= on_ink else INK


@dataclass(frozen=True)
class MapCell:
    """One cell of a drawn seat map."""

    row: int
    col: int
    state: str  # "free" | "taken" | "mine" | "gap"
    row_label: str = ""
    number: int | None = None
    zone: str = ""
    zone_name: str = ""
    colour: str = ""
    price: Decimal | None = None
    flags: tuple[str, ...] = ()

    @property
    def is_seat(self) -> bool:
        return self.state != "gap"

    @property
    def key(self) -> str:
        return seat_key((self.row, self.col))

    @property
    def dom_id(self) -> str:
        return f"seat-{self.row}-{self.col}"

    @property
    def ink(self) -> str:
        return readable_ink(self.colour)

    @property
    def label(self) -> str:
        return seat_label(self.row_label, self.number) if self.is_seat else ""


@dataclass(frozen=True)
class MapRow:
    index: int
    label: str  # the row label most of its seats carry ("" for an aisle row)
    cells: tuple[MapCell, ...]


@dataclass(frozen=True)
class ZoneLegend:
    code: str
    name: str
    colour: str
    rank: int
    price: Decimal
    available: int  # free seats in the zone


@dataclass(frozen=True)
class SeatMap:
    """Everything the seat map page draws, for one shopper (cart) or none."""

    session_id: str
    show: str
    description: str
    theater: str
    start: datetime
    end: datetime
    is_open: bool  # False once the performance has started
    version: int
    seats_available: int
    columns: int  # the longest row, in cells
    rows: tuple[MapRow, ...]
    zones: tuple[ZoneLegend, ...]
    mine: tuple[HeldSeat, ...]

    @property
    def mine_total(self) -> Decimal:
        return sum((s.price for s in self.mine), Decimal("0.00"))

    @property
    def free_cells(self) -> tuple[MapCell, ...]:
        return tuple(c for r in self.rows for c in r.cells if c.state == "free")

    def available_by_zone(self) -> list[tuple[ZoneLegend, list[MapCell]]]:
        """Free seats grouped by zone, best zone first (the list view)."""
        by_zone: dict[str, list[MapCell]] = {z.code: [] for z in self.zones}
        for cell in self.free_cells:
            by_zone.setdefault(cell.zone, []).append(cell)
        return [(z, by_zone[z.code]) for z in self.zones if by_zone[z.code]]


@dataclass(frozen=True)
class Performance:
    """One session in the what's-on listing."""

    session_id: str
    start: datetime
    end: datetime
    theater: str
    seats_left: int
    from_price: Decimal | None

    @property
    def sold_out(self) -> bool:
        return self.seats_left <= 0


@dataclass(frozen=True)
class ShowDate:
    day: date
    performances: tuple[Performance, ...]


@dataclass(frozen=True)
class ShowListing:
    """A show with its upcoming performances, grouped by (local) date."""

    show: str
    description: str
    theaters: tuple[str, ...]
    dates: tuple[ShowDate, ...]

    @property
    def seats_left(self) -> int:
        return sum(p.seats_left for d in self.dates for p in d.performances)


@dataclass(frozen=True)
class ReservationRef:
    """The seats one cart holds in one session (for the shop's reconciler)."""

    session_id: str
    cart_id: str
    seats: tuple[Seat, ...]
    oldest: datetime  # when the oldest of these seats was held
    # When each seat (in ``seats`` order) was held or last confirmed: a
    # release guarded on them leaves any seat held again since alone.
    stamps: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class SessionSale:
    """What the shop needs to sell a session's seats: prices and whether open."""

    session_id: str
    show: str
    theater: str
    start: datetime
    is_open: bool
    prices: dict[str, Decimal]  # zone code -> price now
    zone_names: dict[str, str]  # zone code -> name
    # The seat states as read with the prices (``session_sale(with_seats=
    # True)``), for a caller that checks its seats in the same read.
    seats: list | None = None


@dataclass(frozen=True)
class SessionProblem:
    """A broken invariant of one session: which (``session_id``, its show's
    name when the session exists) and what (``message``)."""

    session_id: str
    show: str | None
    message: str

    def __str__(self) -> str:
        where = f"session {self.session_id}"
        if self.show is not None:
            where += f" ({self.show})"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class SeatBlock:
    """Seats staff just blocked (or unblocked), with the reason and who."""

    session_id: str
    seats: tuple[Seat, ...]
    labels: tuple[str, ...]
    reason: str
    by: str
    at: datetime


@dataclass(frozen=True)
class StaffSeat:
    """One cell of the staff seat map (``booking.selectors.staff_seat_map``).

    ``state``: "free", "held", "sold", "blocked" or "gap". A held seat names
    its ``cart_id`` and ``held_at`` (when the hold was written or last
    confirmed; the cart's own ``expires_at`` says until when); a sold seat
    names the ``cart_id`` it was sold to (the order is unique on its cart
    id); a blocked seat its ``reason``, ``by`` and ``blocked_at`` when noted.
    """

    row: int
    col: int
    state: str
    label: str = ""
    number: int = 0
    zone: str = ""
    cart_id: str | None = None
    held_at: datetime | None = None
    reason: str = ""
    by: str = ""
    blocked_at: datetime | None = None

    @property
    def key(self) -> str:
        return seat_key((self.row, self.col))


@dataclass(frozen=True)
class SessionCounts:
    """A session's seats by state; free + held + sold + blocked == seats."""

    seats: int
    free: int
    held: int
    sold: int
    blocked: int


@dataclass(frozen=True)
class StaffSeatMap:
    """Every seat of a session with its state, for the box office."""

    session_id: str
    show: str
    theater: str
    start: datetime
    counts: SessionCounts
    rows: tuple[tuple[StaffSeat, ...], ...]
    zones: tuple[dict, ...]  # code, name, colour, rank
