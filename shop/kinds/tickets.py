"""Ticket lines: seats of one session, held on the session document (booking).

A cart has at most one ticket line per session (see ``TicketLine``); its
amount is the sorted tuple of its seats, which is what booking's reservation
index reports per (session, cart), so the shop's kind-neutral reconciler and
invariant check compare the two sides as they do for products.
"""

import logging
import secrets
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from bson import ObjectId
from bson.decimal128 import Decimal128
from django.utils import timezone

from booking.errors import (
    BookingError,
    SeatsNotHeld,
    SessionClosed,
    SessionNotFound,
)
from booking.selectors import (
    cart_holds,
    reservations_index,
    seats_not_held,
    session_problems,
    session_sale,
)
from booking.services.holds import seat_holds_settle
from booking.services.seats import (
    seats_hold,
    seats_refresh,
    seats_release,
    seats_return,
    seats_sell,
    seats_transfer,
)
from booking.values import Seat, SeatHold
from config.errors import DomainError
from shop.cart_state import ACTIVE, HOLDING_STATES
from shop.documents import PAID, REFUNDING, Cart, Order, TicketLine, TicketSeat
from shop.kinds.base import Hold, LineKind, Problem, money
from shop.services import caps
from shop.services.common import carts, touched, update_then_read

log = logging.getLogger("marquee.shop.tickets")

# Reads and guarded writes of a cart line retry this often when another
# request of the same shopper changed the line in between.
_ATTEMPTS = 4

# Ticket codes: 12 characters of an alphabet without look-alikes (0/O, 1/I),
# 60 random bits, shown as XXXX-XXXX-XXXX at the door.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 12
_CODE_BITS = 5  # 32 letters: each is 5 of the code's random bits


def ticket_code() -> str:
    """12 letters from 60 random bits drawn at once (one read of the system's
    randomness per ticket, not one per letter), each letter uniform."""
    bits = secrets.randbits(_CODE_BITS * CODE_LENGTH)
    raw = "".join(
        CODE_ALPHABET[(bits >> (_CODE_BITS * i)) & 31] for i in range(CODE_LENGTH)
    )
    return "-".join(raw[i : i + 4] for i in range(0, CODE_LENGTH, 4))


@dataclass(frozen=True)
class SeatsHold(Hold):
    """A cart's held seats in one session, with each seat's stamp as read.

    ``amount`` is the sorted tuple of seats; ``stamps`` follow it. Releasing
    it is guarded on the stamps: a seat held again since is left alone.
    """

    stamps: tuple[datetime, ...] = ()


def positions(line) -> tuple[Seat, ...]:
    return tuple(sorted((seat.row, seat.col) for seat in line.seats))


def start_text(start: datetime) -> str:
    return timezone.localtime(start).strftime("%a %-d %b %Y, %H:%M")


class TicketKind(LineKind):
    name = "ticket"
    field = "tickets"
    key_field = "session_id"

    def amount(self, line) -> tuple[Seat, ...]:
        return positions(line)

    def units(self, line) -> int:
        return len(line.seats)

    def title(self, line) -> str:
        return f"{line.show}, {start_text(line.start)}"

    def unit_price(self, line) -> Decimal | None:
        prices = {money(seat.price) for seat in line.seats}
        return prices.pop() if len(prices) == 1 else None

    def subtotal(self, line) -> Decimal:
        return sum((money(seat.price) for seat in line.seats), Decimal("0.00"))

    # --- the line pipeline's steps ---------------------------------------------

    def guard(self, line) -> dict:
        return {"session_id": line.session_id, "rev": line.rev}

    def line_of(self, held: SeatHold, now: datetime) -> TicketLine:
        """The cart line listing seats just held (labels, zones and prices
        from the session, never from the request)."""
        return TicketLine(
            session_id=held.session_id,
            show=held.show,
            theater=held.theater,
            start=held.start,
            seats=[
                TicketSeat(
                    row=seat.row,
                    col=seat.col,
                    key=seat.key,
                    label=seat.label,
                    zone=seat.zone,
                    zone_name=seat.zone_name,
                    price=Decimal128(seat.price),
                    tag=seat.tag,
                )
                for seat in held.seats
            ],
            rev=0,
            added_at=now,
        )

    def raw_line(self, raw: dict, session_id: str) -> dict | None:
        """The cart's line for ``session_id`` in a cart as read raw."""
        return next(
            (t for t in raw.get(self.field) or [] if t["session_id"] == session_id),
            None,
        )

    def take(self, *, cart_id: str, line, now: datetime) -> TicketLine:
        held = seats_hold(
            session_id=line.session_id, cart_id=cart_id, seats=positions(line)
        )
        return self.line_of(held, now)

    def record(self, *, cart_id: str, line, now: datetime) -> dict | None:
        """Guarded on the cart being active and, for an existing line of the
        session, on its ``rev`` (a concurrent change reads again); the seat
        cap is checked on the line as read, so the guarded write keeps it."""
        sid = line.session_id
        new = [seat.to_mongo().to_dict() for seat in line.seats]
        for _ in range(_ATTEMPTS):
            raw = carts().find_one({"_id": cart_id}, {"state": 1, "tickets": 1})
            if raw is None or raw["state"] != ACTIVE:
                return None
            listed = self.raw_line(raw, sid)
            if listed is None:
                caps.seats_fit(0, len(new))
                guard = {"tickets.session_id": {"$ne": sid}}
                update = touched({"$push": {"tickets": line.to_mongo().to_dict()}}, now)
            else:
                keys = {seat["key"] for seat in listed["seats"]}
                seats = listed["seats"] + [s for s in new if s["key"] not in keys]
                seats.sort(key=lambda s: (s["row"], s["col"]))
                caps.seats_fit(0, len(seats))
                rev = listed["rev"]
                guard = {"tickets": {"$elemMatch": {"session_id": sid, "rev": rev}}}
                update = touched(
                    {"$set": {"tickets.$.seats": seats, "tickets.$.rev": rev + 1}}, now
                )
            raw = update_then_read(cart_id, guard, update)
            if raw is not None:
                return raw
        return None

    def transfer(self, *, from_cart_id: str, to_cart_id: str, line, now: datetime):
        """One update of the session hands every seat the source holds there
        to the target (no seat is FREE in between)."""
        moved = seats_transfer(
            session_id=line.session_id, from_cart_id=from_cart_id, to_cart_id=to_cart_id
        )
        return self.line_of(moved, now) if moved.seats else None

    # --- prices --------------------------------------------------------------

    def _sale(self, line, sale=None):
        sale = sale or session_sale(session_id=line.session_id)
        if not sale.is_open:
            raise SessionClosed()
        return sale

    def current_price(self, *, line) -> Decimal:
        """The price of all the line's seats now (seats differ by zone)."""
        sale = self._sale(line)
        return sum(
            (money(sale.prices[seat.zone]) for seat in line.seats), Decimal("0.00")
        )

    def current_prices(self, lines: list, seen: dict | None = None) -> list:
        """Each line's session sale (its prices by zone), read with the
        session's seat states, which ``ensure_held_lines`` then checks
        without reading the session again."""
        sales = []
        for line in lines:
            try:
                sale = session_sale(session_id=line.session_id, with_seats=True)
            except DomainError as exc:
                sales.append(exc)
                continue
            if seen is not None:
                seen[("sale", line.session_id)] = sale
            sales.append(sale)
        return sales

    def repriced(self, *, line, price=None) -> tuple[dict, list[str]]:
        # ``price``: the line's session sale, as ``current_prices`` read it.
        sale = self._sale(line, price)
        seats, changes = [], []
        for seat in line.seats:
            son = seat.to_mongo().to_dict()
            price, was = money(sale.prices[seat.zone]), money(seat.price)
            if price != was:
                son["price"] = Decimal128(price)
                changes.append(
                    f"{seat.label} for {line.show} now £{price} (was £{was})"
                )
            seats.append(son)
        if not changes:
            return {}, []
        return {"seats": seats, "rev": line.rev + 1}, changes

    def order_lines(self, *, line) -> list[dict]:
        """One order line per seat: each is an admission with its own code."""
        lines = []
        for seat in sorted(line.seats, key=lambda s: (s.row, s.col)):
            price = Decimal128(money(seat.price))
            lines.append(
                {
                    "kind": self.name,
                    "key": line.session_id,
                    "name": f"{line.show}, {seat.label}",
                    "quantity": 1,
                    "unit_price": price,
                    "line_total": price,
                    "code": ticket_code(),
                    "ticket": {
                        "show": line.show,
                        "theater": line.theater,
                        "start": line.start,
                        "row": seat.row,
                        "col": seat.col,
                        "label": seat.label,
                        "zone": seat.zone,
                        "zone_name": seat.zone_name,
                    },
                }
            )
        return lines

    # --- the resource side ---------------------------------------------------

    def give_back(self, *, cart_id: str, line, now: datetime | None = None) -> None:
        try:
            seats_release(
                session_id=line.session_id, cart_id=cart_id, seats=positions(line)
            )
        except SessionNotFound:
            pass  # nothing left to give back

    def release(self, *, cart_id: str, key: str) -> None:
        try:
            seats_release(session_id=key, cart_id=cart_id)
        except SessionNotFound:
            pass

    def held_keys(self, *, cart_id: str) -> list[str]:
        # The index on reservations.cart_id answers this.
        return [hold.session_id for hold in cart_holds(cart_id=cart_id)]

    def ensure_held(self, *, cart_id: str, line, now: datetime) -> None:
        self.ensure_held_lines(cart_id=cart_id, lines=[line], now=now)

    def ensure_held_lines(
        self, *, cart_id: str, lines: list, now: datetime, seen: dict | None = None
    ) -> None:
        seen = {} if seen is None else seen
        for line in lines:
            sale = seen.get(("sale", line.session_id))
            missing, holds_doc = seats_not_held(
                session_id=line.session_id,
                cart_id=cart_id,
                seats=positions(line),
                states=sale.seats if sale is not None else None,
                tags={(s.row, s.col): s.tag for s in line.seats if s.tag},
            )
            if missing:
                # Raises SeatsTaken (someone else has one) or SessionClosed.
                seats_hold(session_id=line.session_id, cart_id=cart_id, seats=missing)
            else:
                # What commit_lines starts from (a re-hold changed it).
                seen[("holds", line.session_id)] = holds_doc

    def commit_lines(
        self, *, cart_id: str, lines: list, seen: dict | None = None
    ) -> list[bool]:
        seen = seen or {}
        return [
            self.commit(
                cart_id=cart_id,
                line=line,
                holds_doc=seen.get(("holds", line.session_id)),
            )
            for line in lines
        ]

    def commit(self, *, cart_id: str, line, holds_doc: dict | None = None) -> bool:
        # Idempotent in booking: seats already sold to the cart count as sold.
        try:
            seats_sell(
                session_id=line.session_id,
                cart_id=cart_id,
                seats=positions(line),
                holds_doc=holds_doc,
            )
        except SeatsNotHeld as exc:
            # ensure_held checked every seat before the charge and a pending
            # cart's holds are released by nobody: this is a bug, shown by
            # check_invariants as a paid seat the session has not sold.
            log.error("cart %s paid for seats it does not hold: %s", cart_id, exc)
            return False
        return True

    def return_sold(
        self, *, cart_id: str, key: str, lines: list, reference: str
    ) -> None:
        # Idempotent in booking: seats no longer sold to the cart are skipped.
        seats = [(line.ticket.row, line.ticket.col) for line in lines]
        seats_return(session_id=key, cart_id=cart_id, seats=seats)

    # --- reconciliation and invariants ------------------------------------

    def holds(self, *, before: datetime | None) -> Iterator[Hold]:
        for ref in reservations_index(before=before):
            yield SeatsHold(
                kind=self.name,
                key=ref.session_id,
                cart_id=ref.cart_id,
                amount=ref.seats,
                at=ref.oldest,
                stamps=ref.stamps,
            )

    def _release_seats(self, hold: Hold, seats) -> int:
        stamps = dict(zip(hold.amount, getattr(hold, "stamps", ()), strict=False))
        seats = [seat for seat in seats if seat in stamps]
        if not seats:
            return 0
        released = seats_release(
            session_id=hold.key,
            cart_id=hold.cart_id,
            seats=seats,
            expect_at={seat: stamps[seat] for seat in seats},
        )
        return len(released.seats)

    def release_hold(self, *, hold: Hold) -> bool:
        try:
            return bool(self._release_seats(hold, hold.amount))
        except SessionNotFound:
            return False

    def refresh_holds(
        self, *, key: str, cart_ids: list[str], before: datetime, now: datetime
    ) -> None:
        seats_refresh(session_id=key, cart_ids=cart_ids, before=before, now=now)

    def fit_hold(self, *, hold: Hold, line, now: datetime) -> None:
        listed = set(positions(line))
        held = set(hold.amount)
        try:
            # Held but no longer listed (a release that stopped half-way).
            self._release_seats(hold, sorted(held - listed))
            # Listed but not held: take them again if they are still free;
            # a seat someone else has is refused at checkout (ensure_held).
            for seat in sorted(listed - held):
                try:
                    seats_hold(session_id=hold.key, cart_id=hold.cart_id, seats=[seat])
                except BookingError:
                    pass
        except SessionNotFound:
            pass

    def settle(self) -> None:
        """Prune hold entries no seat carries (a crash's history)."""
        seat_holds_settle()

    def resource_problems(self) -> list[Problem]:
        """Per session: seats marked taken == held + sold, ``seatsAvailable``
        == real seats - taken, no seat held by two carts or sold twice (booking
        checks its documents), sold seats == the seats of paid orders, no seat
        in two paid orders and no seat listed by two live carts."""
        problems = []
        sold, owners = _paid_seats()
        for seat_key, numbers in owners.items():
            if len(numbers) > 1:
                problems.append(
                    Problem(
                        self.name,
                        seat_key[0],
                        f"seat {seat_key[1]} is in orders {', '.join(numbers)}",
                    )
                )
        for problem in session_problems(sold=sold):
            problems.append(Problem(self.name, problem.session_id, str(problem)))
        problems.extend(self._cart_side_problems())
        return problems

    def _cart_side_problems(self) -> list[Problem]:
        """No seat listed by two live carts, and every seat a live cart lists
        held for it by the session (a line never outlives its seats)."""
        listed: dict[tuple[str, Seat], list[str]] = defaultdict(list)
        cursor = Cart.coll().find(
            {"state": {"$in": list(HOLDING_STATES)}, "tickets.0": {"$exists": True}},
            {"tickets.session_id": 1, "tickets.seats.row": 1, "tickets.seats.col": 1},
        )
        for raw in cursor:
            for line in raw["tickets"]:
                for seat in line.get("seats", []):
                    where = (line["session_id"], (seat["row"], seat["col"]))
                    listed[where].append(raw["_id"])
        problems = [
            Problem(
                self.name,
                session_id,
                f"seat {seat} is in carts {', '.join(sorted(cart_ids))}",
            )
            for (session_id, seat), cart_ids in listed.items()
            if len(cart_ids) > 1
        ]
        sessions = sorted(
            {
                sid
                for sid, _ in listed
                if isinstance(sid, str) and ObjectId.is_valid(sid)
            }
        )
        held = {
            (ref.session_id, seat): ref.cart_id
            for ref in reservations_index(session_ids=sessions)
            for seat in ref.seats
        }
        for (session_id, seat), cart_ids in sorted(listed.items()):
            for cart_id in cart_ids:
                if held.get((session_id, seat)) != cart_id:
                    problems.append(
                        Problem(
                            self.name,
                            session_id,
                            f"cart {cart_id} lists seat {seat} but does not hold it",
                        )
                    )
        return problems


def _paid_seats() -> tuple[dict[str, list[Seat]], dict[tuple[str, Seat], list[str]]]:
    """Seats sold per session by paid orders (and by canceled ones whose
    seats are not back on sale yet), and which orders list each seat."""
    sold: dict[str, list[Seat]] = defaultdict(list)
    owners: dict[tuple[str, Seat], list[str]] = defaultdict(list)
    cursor = Order.coll().find(
        {"state": {"$in": [PAID, REFUNDING]}, "lines.kind": TicketKind.name},
        {"number": 1, "lines": 1},
    )
    for raw in cursor:
        for line in raw["lines"]:
            if line["kind"] != TicketKind.name or line.get("returned_at"):
                continue
            seat = (line["ticket"]["row"], line["ticket"]["col"])
            sold[line["key"]].append(seat)
            owners[(line["key"], seat)].append(raw["number"])
    return sold, owners
