"""Performances as the box office sees them: occupancy, revenue, admissions,
and every seat's state. Reads only.

Seat counts and the seat map are booking's (``counts_of``, ``staff_seat_map``:
the one place that knows how a session stores its seats); tickets, revenue
and admissions are the shop's paid orders (``shop.selectors.tickets``).
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from bson import ObjectId
from django.utils import timezone

from booking import selectors as booking
from booking.documents import Session
from booking.values import StaffSeat
from booking.values import StaffSeatMap as SeatStates
from shop.documents import Cart
from shop.selectors.tickets import TicketFigures, session_tickets, ticket_figures

# What a performance row reads of a session: booking's seat counters.
COUNT_FIELDS = booking.COUNT_FIELDS


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
    counts = booking.counts_of(doc)
    return PerformanceRow(
        session_id=str(doc["_id"]),
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        end=doc["end"],
        seats=counts.seats,
        sold=counts.sold,
        held=counts.held,
        blocked=counts.blocked,
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


@dataclass
class HeldCart:
    cart_id: str
    until: datetime | None
    state: str
    seats: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SoldSeat:
    seat: StaffSeat
    order: str = ""
    code: str = ""
    admitted: bool = False


@dataclass
class StaffSeatMap:
    """Booking's staff seat map (``seats``: every seat's state, who holds or
    bought it, why it is blocked) with what the shop knows: each holding
    cart's state and expiry, each sold seat's order and admission."""

    seats: SeatStates
    colours: dict[str, str]
    words: dict[str, str]  # what a screen reader says of each seat, by key
    admitted: set[str]
    held: list[HeldCart]
    sold: list[SoldSeat]

    @property
    def session_id(self) -> str:
        return self.seats.session_id


def _held_carts(seats: list[StaffSeat]) -> list[HeldCart]:
    ids = list({s.cart_id for s in seats if s.cart_id})
    found = Cart.coll().find({"_id": {"$in": ids}}, {"expires_at": 1, "state": 1})
    carts = {c["_id"]: c for c in found}
    held: dict[str, HeldCart] = {}
    for seat in seats:
        cart = carts.get(seat.cart_id, {})
        held.setdefault(
            seat.cart_id,
            HeldCart(seat.cart_id, cart.get("expires_at"), cart.get("state", "?")),
        ).seats.append(seat.label)
    return sorted(held.values(), key=lambda h: (h.until is None, h.until))


def staff_seat_map(*, session_id: str) -> StaffSeatMap:
    """Every seat's state (booking's ``staff_seat_map``), the carts holding
    seats and the orders of sold ones. Raises SessionNotFound."""
    states = booking.staff_seat_map(session_id=session_id)
    seats = [s for row in states.rows for s in row]
    tickets = {(t.row, t.col): t for t in session_tickets(session_id=session_id)}
    sold = []
    for seat in (s for s in seats if s.state == "sold"):
        ticket = tickets.get((seat.row, seat.col))
        sold.append(
            SoldSeat(seat)
            if ticket is None
            else SoldSeat(seat, ticket.number, ticket.code, bool(ticket.admitted_at))
        )
    held = _held_carts([s for s in seats if s.state == "held"])
    return StaffSeatMap(
        seats=states,
        colours={z["code"]: z.get("colour", "") for z in states.zones},
        words=_words(seats, held, sold),
        admitted={s.seat.key for s in sold if s.admitted},
        held=held,
        sold=sold,
    )


def _words(seats: list[StaffSeat], held: list[HeldCart], sold: list[SoldSeat]):
    until = {h.cart_id: h.until for h in held}
    orders = {s.seat.key: s.order for s in sold}
    admitted = {s.seat.key for s in sold if s.admitted}
    words = {}
    for seat in (s for s in seats if s.state != "gap"):
        said = f"{seat.label}, {seat.state}"
        if seat.state == "held":
            ends = until.get(seat.cart_id)
            ends = timezone.localtime(ends).strftime("%H:%M") if ends else "?"
            said = f"{seat.label}, held by cart {seat.cart_id} until {ends}"
        elif seat.state == "sold" and orders.get(seat.key):
            said += f", order {orders[seat.key]}"
            if seat.key in admitted:
                # Said, not only shown green: staff who cannot tell the
                # colours apart, or hear the map, learn it too.
                said += ", admitted"
        elif seat.state == "blocked":
            said += f": {seat.reason}"
        words[seat.key] = said
    return words


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
