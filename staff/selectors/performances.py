"""Performances as the box office sees them: occupancy, revenue, admissions,
and every seat's state. Reads only.

Seat counts come from the session documents (``seat_counts``, the one place
here that knows how a session stores its seats); tickets, revenue and
admissions from the shop's paid orders (``shop.selectors.tickets``); the seat
map from booking's ``seat_map`` and ``seat_holders``.
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from bson import ObjectId
from django.utils import timezone

from booking.documents import GAP, Session
from booking.selectors import seat_holders, seat_map
from shop.documents import Cart
from shop.selectors.tickets import TicketFigures, session_tickets, ticket_figures

# What seat_counts reads of a session.
COUNT_FIELDS = {"seats": 1, "sold.seat": 1, "reservations.seat": 1, "blocked": 1}


def seat_counts(doc: dict) -> tuple[int, int, int, int]:
    """(real seats, sold, held, blocked) of a session document.

    Blocked seats are counted once booking stores them (``blocked``: one
    entry per seat); until then there are none.
    """
    seats = sum(1 for row in doc.get("seats") or [] for cell in row if cell != GAP)
    return (
        seats,
        len(doc.get("sold") or []),
        len(doc.get("reservations") or []),
        len(doc.get("blocked") or []),
    )


@dataclass(frozen=True)
class PerformanceRow:
    session_id: str
    show: str
    theater: str
    start: datetime
    end: datetime
    seats: int
    sold: int
    held: int
    blocked: int
    figures: TicketFigures

    @property
    def free(self) -> int:
        return max(self.seats - self.sold - self.held - self.blocked, 0)

    @property
    def percent(self) -> int:
        """Sold or held, of all seats."""
        taken = self.sold + self.held
        return round(100 * taken / self.seats) if self.seats else 0


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = timezone.make_aware(datetime.combine(day, time.min))
    return start, timezone.make_aware(
        datetime.combine(day + timedelta(days=1), time.min)
    )


def performance_list(
    *,
    when: str = "upcoming",
    show: str = "",
    theater_id: str = "",
    day: date | None = None,
    now: datetime | None = None,
    limit: int = 100,
) -> list[PerformanceRow]:
    """Upcoming performances soonest first, or past ones latest first,
    filtered by show (its name, any case), theater and local day."""
    now = now or timezone.now()
    query: dict = {"start": {"$gt": now} if when == "upcoming" else {"$lte": now}}
    if day is not None:
        first, last = _day_bounds(day)
        query["start"] = {**query["start"], "$gte": first, "$lt": last}
    if show.strip():
        query["name"] = {"$regex": f"^{re.escape(show.strip())}$", "$options": "i"}
    if theater_id and ObjectId.is_valid(theater_id):
        query["theater_id"] = ObjectId(theater_id)
    order = 1 if when == "upcoming" else -1
    fields = {"name": 1, "theater_name": 1, "start": 1, "end": 1, **COUNT_FIELDS}
    docs = list(
        Session.coll()
        .find(query, fields)
        .sort([("start", order), ("_id", order)])
        .limit(limit)
    )
    figures = ticket_figures(session_ids=[str(d["_id"]) for d in docs])
    return [_row(doc, figures[str(doc["_id"])]) for doc in docs]


def _row(doc: dict, figures: TicketFigures) -> PerformanceRow:
    seats, sold, held, blocked = seat_counts(doc)
    return PerformanceRow(
        session_id=str(doc["_id"]),
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        end=doc["end"],
        seats=seats,
        sold=sold,
        held=held,
        blocked=blocked,
        figures=figures,
    )


def performance(*, session_id: str) -> PerformanceRow | None:
    if not ObjectId.is_valid(session_id):
        return None
    fields = {"name": 1, "theater_name": 1, "start": 1, "end": 1, **COUNT_FIELDS}
    doc = Session.coll().find_one({"_id": ObjectId(session_id)}, fields)
    if doc is None:
        return None
    return _row(doc, ticket_figures(session_ids=[session_id])[session_id])


# --- The staff seat map ---------------------------------------------------------


@dataclass(frozen=True)
class StaffSeat:
    """One cell as staff see it: ``state`` is gap, free, held, sold or
    blocked; a held seat names its cart and when the hold ends, a sold one
    its order and ticket."""

    row: int
    col: int
    state: str
    label: str = ""
    number: int = 0
    zone_name: str = ""
    colour: str = ""
    cart_id: str = ""
    until: datetime | None = None
    order: str = ""
    code: str = ""
    admitted: bool = False

    @property
    def key(self) -> str:
        return f"{self.row}-{self.col}"

    @property
    def words(self) -> str:
        """What a screen reader says of the seat."""
        if self.state == "held":
            until = (
                timezone.localtime(self.until).strftime("%H:%M") if self.until else "?"
            )
            return f"{self.label}, held by cart {self.cart_id} until {until}"
        if self.state == "sold":
            return f"{self.label}, sold{f', order {self.order}' if self.order else ''}"
        return f"{self.label}, {self.state}"


@dataclass
class HeldCart:
    cart_id: str
    until: datetime | None
    state: str
    seats: list[str] = field(default_factory=list)


@dataclass
class StaffSeatMap:
    session_id: str
    show: str
    theater: str
    start: datetime
    rows: list[list[StaffSeat]]
    counts: dict[str, int]
    held: list[HeldCart]
    sold: list[StaffSeat]


def _carts(cart_ids: list[str]) -> dict[str, dict]:
    found = Cart.coll().find({"_id": {"$in": cart_ids}}, {"expires_at": 1, "state": 1})
    return {c["_id"]: c for c in found}


def staff_seat_map(*, session_id: str) -> StaffSeatMap:
    """Every seat's state, with who holds or bought it. Raises SessionNotFound.

    Booking's shopper map says free or taken; ``seat_holders`` says which
    taken seats a cart holds; the others are sold (with their order from the
    shop's tickets). Blocked seats appear once booking's map reports them
    (a cell state "blocked").
    """
    drawn = seat_map(session_id=session_id)
    cells = [cell for row in drawn.rows for cell in row.cells if cell.is_seat]
    taken = [(c.row, c.col) for c in cells if c.state not in ("free", "blocked")]
    holders = seat_holders(session_id=session_id, seats=taken) if taken else {}
    carts = _carts(list(set(holders.values())))
    tickets = {(t.row, t.col): t for t in session_tickets(session_id=session_id)}
    rows, counts = [], {"free": 0, "held": 0, "sold": 0, "blocked": 0}
    held: dict[str, HeldCart] = {}
    for drawn_row in drawn.rows:
        row = []
        for cell in drawn_row.cells:
            seat = _seat(cell, holders, carts, tickets)
            row.append(seat)
            if seat.state in counts:
                counts[seat.state] += 1
            if seat.state == "held":
                cart = carts.get(seat.cart_id, {})
                held.setdefault(
                    seat.cart_id,
                    HeldCart(seat.cart_id, seat.until, cart.get("state", "?")),
                ).seats.append(seat.label)
        rows.append(row)
    return StaffSeatMap(
        session_id=drawn.session_id,
        show=drawn.show,
        theater=drawn.theater,
        start=drawn.start,
        rows=rows,
        counts=counts,
        held=sorted(held.values(), key=lambda h: (h.until is None, h.until)),
        sold=[s for row in rows for s in row if s.state == "sold"],
    )


def _seat(cell, holders, carts, tickets) -> StaffSeat:
    if not cell.is_seat:
        return StaffSeat(row=cell.row, col=cell.col, state="gap")
    base = {
        "row": cell.row,
        "col": cell.col,
        "label": cell.label,
        "number": cell.number,
        "zone_name": cell.zone_name,
        "colour": cell.colour,
    }
    position = (cell.row, cell.col)
    if cell.state in ("free", "blocked"):
        return StaffSeat(state=cell.state, **base)
    if position in holders:
        cart_id = holders[position]
        until = carts.get(cart_id, {}).get("expires_at")
        return StaffSeat(state="held", cart_id=cart_id, until=until, **base)
    ticket = tickets.get(position)
    if ticket is None:
        return StaffSeat(state="sold", **base)
    return StaffSeat(
        state="sold",
        order=ticket.number,
        code=ticket.code,
        admitted=ticket.admitted_at is not None,
        **base,
    )


def recent_scans(*, session_id: str, limit: int = 10) -> list[dict]:
    """The latest admissions and undos at this performance's door, newest first
    (from the audit trail; index on object_kind, object_id, at)."""
    from staff.documents import AuditEntry

    return list(
        AuditEntry.coll()
        .find(
            {
                "object_kind": "session",
                "object_id": session_id,
                "action": {"$in": ["ticket admitted", "admission undone"]},
            }
        )
        .sort([("at", -1), ("_id", -1)])
        .limit(limit)
    )
