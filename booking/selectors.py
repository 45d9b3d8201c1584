"""Reads and queries over the booking app's collections; never writes.

Session documents are read through pymongo with projections: the seat map of
a hall is a few hundred cells, redrawn every few seconds by every open map,
and the listing needs none of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from booking import checks
from booking.documents import FREE, GAP, TAKEN, Session, Theater
from booking.errors import SessionNotFound
from booking.values import (
    HeldSeat,
    MapCell,
    MapRow,
    Performance,
    ReservationRef,
    Seat,
    SeatHold,
    SeatMap,
    SessionProblem,
    SessionSale,
    ShowDate,
    ShowListing,
    ZoneLegend,
    seat_label,
)


def _sessions():
    return Session.coll()


# What the seat map reads of a session.
_MAP_FIELDS = dict.fromkeys(
    (
        "name",
        "description",
        "theater_name",
        "start",
        "end",
        "zones",
        "layout",
        "prices",
        "seats",
        "seatsAvailable",
        "version",
        "reservations",
    ),
    1,
)


def seat_map(*, session_id: str, cart_id: str | None = None) -> SeatMap:
    """The seat map of a session as one shopper sees it.

    Every cell is a gap or a seat that is free, taken, or "mine" (held by
    ``cart_id``; with None nothing is mine). Raises SessionNotFound.
    """
    oid = checks.session_oid(session_id)
    cart = None if cart_id is None else checks.cart_id(cart_id)
    doc = _sessions().find_one({"_id": oid}, _MAP_FIELDS)
    if doc is None:
        raise SessionNotFound()
    prices = {code: p.to_decimal() for code, p in doc["prices"].items()}
    names = {z["code"]: z["name"] for z in doc["zones"]}
    mine_entries = [e for e in doc["reservations"] if e["cart_id"] == cart]
    free_by_zone: Counter[str] = Counter()
    rows = _map_rows(
        doc, prices, {tuple(e["seat"]) for e in mine_entries}, free_by_zone
    )
    return SeatMap(
        session_id=str(doc["_id"]),
        show=doc["name"],
        description=doc.get("description", ""),
        theater=doc["theater_name"],
        start=doc["start"],
        end=doc["end"],
        is_open=doc["start"] > timezone.now(),
        version=doc.get("version", 0),
        seats_available=doc["seatsAvailable"],
        columns=max((len(row.cells) for row in rows), default=0),
        rows=tuple(rows),
        zones=_legend(doc, prices, free_by_zone),
        mine=tuple(
            HeldSeat.from_entry(e, names)
            for e in sorted(mine_entries, key=lambda e: e["seat"])
        ),
    )


def _map_rows(
    doc: dict, prices: dict, mine: set[Seat], free_by_zone: Counter[str]
) -> list[MapRow]:
    """The grid's rows, counting the free seats of each zone on the way."""
    zones = {z["code"]: z for z in doc["zones"]}
    rows = []
    for r, (layout_row, state_row) in enumerate(
        zip(doc["layout"], doc["seats"], strict=True)
    ):
        cells = []
        for c, (cell, value) in enumerate(zip(layout_row, state_row, strict=True)):
            if cell.get("kind") != "seat":
                cells.append(MapCell(row=r, col=c, state="gap"))
                continue
            if (r, c) in mine:
                state = "mine"
            elif value == FREE:
                state = "free"
                free_by_zone[cell["zone"]] += 1
            else:
                state = "taken"
            cells.append(_map_seat(r, c, cell, state, zones, prices))
        labels = Counter(cell.row_label for cell in cells if cell.is_seat)
        label = labels.most_common(1)[0][0] if labels else ""
        rows.append(MapRow(index=r, label=label, cells=tuple(cells)))
    return rows


def _map_seat(r: int, c: int, cell: dict, state: str, zones, prices) -> MapCell:
    zone = zones.get(cell["zone"], {})
    return MapCell(
        row=r,
        col=c,
        state=state,
        row_label=cell["row"],
        number=cell["number"],
        zone=cell["zone"],
        zone_name=zone.get("name", cell["zone"]),
        colour=zone.get("colour", "#888888"),
        price=prices.get(cell["zone"]),
        flags=tuple(cell.get("flags", ())),
    )


def _legend(doc: dict, prices: dict, free_by_zone: Counter[str]) -> tuple:
    """The zones, best first, with their prices and free seats."""
    return tuple(
        ZoneLegend(
            code=z["code"],
            name=z["name"],
            colour=z["colour"],
            rank=z["rank"],
            price=prices.get(z["code"], Decimal("0.00")),
            available=free_by_zone[z["code"]],
        )
        for z in sorted(doc["zones"], key=lambda z: (z["rank"], z["name"]))
    )


def seat_map_version(*, session_id: str) -> int:
    """How many times the session's seats changed; SessionNotFound if none."""
    doc = _sessions().find_one({"_id": checks.session_oid(session_id)}, {"version": 1})
    if doc is None:
        raise SessionNotFound()
    return doc.get("version", 0)


def upcoming_sessions(
    *, now: datetime | None = None, limit: int = 500
) -> list[ShowListing]:
    """What's on: performances not yet started, by show then local date.

    Shows come in the order of their next performance; each performance
    carries its seats left and its cheapest price.
    """
    now = now or timezone.now()
    fields = ("name", "description", "theater_name", "start", "end")
    projection = dict.fromkeys((*fields, "seatsAvailable", "prices"), 1)
    cursor = (
        _sessions()
        .find({"start": {"$gt": now}}, projection)
        .sort([("start", 1), ("_id", 1)])
        .limit(limit)
    )
    shows: dict[str, dict] = {}
    for doc in cursor:
        show = shows.setdefault(
            doc["name"],
            {"description": doc.get("description", ""), "theaters": {}, "dates": {}},
        )
        show["theaters"][doc["theater_name"]] = None
        day = timezone.localtime(doc["start"]).date()
        show["dates"].setdefault(day, []).append(_performance(doc))
    return [
        ShowListing(
            show=name,
            description=show["description"],
            theaters=tuple(show["theaters"]),
            dates=tuple(
                ShowDate(day=day, performances=tuple(performances))
                for day, performances in show["dates"].items()
            ),
        )
        for name, show in shows.items()
    ]


@dataclass(frozen=True)
class TheaterChoice:
    """A hall as the box office picks it: its zones (code, name), best first."""

    theater_id: str
    name: str
    zones: tuple[tuple[str, str], ...]


def theaters_list() -> list[TheaterChoice]:
    """Every theater by name, with the zones a performance needs prices for."""
    found = Theater.coll().find({}, {"name": 1, "zones": 1, "layout.zone": 1})
    theaters = []
    for doc in found:
        used = {c.get("zone") for row in doc.get("layout") or [] for c in row}
        zones = sorted(
            (z for z in doc["zones"] if z["code"] in used),
            key=lambda z: (z["rank"], z["name"]),
        )
        theaters.append(
            TheaterChoice(
                theater_id=str(doc["_id"]),
                name=doc["name"],
                zones=tuple((z["code"], z["name"]) for z in zones),
            )
        )
    return sorted(theaters, key=lambda t: t.name)


def _performance(doc: dict) -> Performance:
    """One performance of What's on: its seats left and cheapest price."""
    prices = [p.to_decimal() for p in doc.get("prices", {}).values()]
    return Performance(
        session_id=str(doc["_id"]),
        start=doc["start"],
        end=doc["end"],
        theater=doc["theater_name"],
        seats_left=doc["seatsAvailable"],
        from_price=min(prices) if prices else None,
    )


def cart_holds(*, cart_id: str) -> list[SeatHold]:
    """Every seat a cart holds, one SeatHold per session, soonest first."""
    cart = checks.cart_id(cart_id)
    cursor = (
        _sessions()
        .find(
            {"reservations.cart_id": cart},
            {"name": 1, "theater_name": 1, "start": 1, "zones": 1, "reservations": 1},
        )
        .sort([("start", 1), ("_id", 1)])
    )
    holds = []
    for doc in cursor:
        names = {z["code"]: z["name"] for z in doc["zones"]}
        entries = sorted(
            (e for e in doc["reservations"] if e["cart_id"] == cart),
            key=lambda e: e["seat"],
        )
        holds.append(SeatHold.of_entries(doc, cart, entries, names))
    return holds


def seat_holders(*, session_id: str, seats: Sequence[Seat]) -> dict[Seat, str]:
    """Which cart holds each of ``seats`` (seats no cart holds are left out).

    For the shop: when a hold fails, it expires the stale carts holding the
    wanted seats and tries once more (DESIGN §3 rule 5).
    """
    oid = checks.session_oid(session_id)
    wanted = set(checks.positions(seats, limit=checks.MAX_SEATS_PER_REQUEST))
    doc = _sessions().find_one({"_id": oid}, {"reservations": 1})
    if doc is None:
        raise SessionNotFound()
    return {
        tuple(e["seat"]): e["cart_id"]
        for e in doc["reservations"]
        if tuple(e["seat"]) in wanted
    }


def reservations_index(
    *, session_ids: Sequence[str] | None = None, before: datetime | None = None
) -> Iterator[ReservationRef]:
    """Every (session, cart) pair with held seats, for the shop's reconciler.

    Streams session by session; ``session_ids`` narrows it to some sessions,
    ``before`` to the entries stamped before that moment (newer ones may
    belong to a shop service between its two writes right now).
    """
    query: dict = {"reservations.0": {"$exists": True}}
    if before is not None:
        query["reservations.at"] = {"$lt": before}
    if session_ids is not None:
        query["_id"] = {"$in": [checks.session_oid(s) for s in session_ids]}
    cursor = _sessions().find(query, {"reservations": 1}).sort("_id", 1)
    for doc in cursor:
        by_cart: dict[str, list[dict]] = {}
        for entry in doc["reservations"]:
            if before is None or entry["at"] < before:
                by_cart.setdefault(entry["cart_id"], []).append(entry)
        for cart, entries in by_cart.items():
            entries.sort(key=lambda e: tuple(e["seat"]))
            yield ReservationRef(
                session_id=str(doc["_id"]),
                cart_id=cart,
                seats=tuple(tuple(e["seat"]) for e in entries),
                oldest=min(e["at"] for e in entries),
                stamps=tuple(e["at"] for e in entries),
            )


def session_sale(*, session_id: str, now: datetime | None = None) -> SessionSale:
    """A session's prices now and whether it is still on sale (checkout
    re-prices held seats from this). Raises SessionNotFound."""
    doc = _sessions().find_one(
        {"_id": checks.session_oid(session_id)},
        {"name": 1, "theater_name": 1, "start": 1, "zones": 1, "prices": 1},
    )
    if doc is None:
        raise SessionNotFound()
    return SessionSale(
        session_id=str(doc["_id"]),
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        is_open=doc["start"] > (now or timezone.now()),
        prices={code: p.to_decimal() for code, p in doc["prices"].items()},
        zone_names={z["code"]: z["name"] for z in doc["zones"]},
    )


def _violations(doc: dict, sold_elsewhere: set[Seat] | None) -> list[SessionProblem]:
    """What is wrong with one session document (empty when all is well)."""
    session_id, show = str(doc["_id"]), doc.get("name", "?")
    layout, state = doc.get("layout", []), doc.get("seats", [])
    found: list[SessionProblem] = []

    def problem(message: str) -> None:
        found.append(SessionProblem(session_id, show, message))

    def label(seat: Seat) -> str:
        r, c = seat
        try:
            cell = layout[r][c]
            return seat_label(cell["row"], cell["number"])
        except (IndexError, KeyError, TypeError):
            return f"position {seat}"

    if [len(row) for row in layout] != [len(row) for row in state]:
        problem("the seat states do not match the shape of the layout")
        return found
    real, taken = _marked(layout, state, problem, label)
    held, sold = _entries(doc, problem, label)
    accounted = set(held) | sold
    for seat in sorted(taken - accounted):
        problem(f"{label(seat)} is taken but neither held nor sold")
    for seat in sorted(accounted - taken):
        problem(f"{label(seat)} is held or sold but marked free")
    expected = real - len(taken)
    if doc.get("seatsAvailable") != expected:
        problem(
            f"seatsAvailable is {doc.get('seatsAvailable')!r},"
            f" but {real} seats - {len(taken)} taken = {expected}"
        )
    if sold_elsewhere is not None and sold_elsewhere != sold:
        for seat in sorted(sold - sold_elsewhere):
            problem(f"{label(seat)} is sold here but in no paid order")
        for seat in sorted(sold_elsewhere - sold):
            problem(f"{label(seat)} is in a paid order but not sold here")
    return found


def _marked(layout, state, problem, label) -> tuple[int, set[Seat]]:
    """How many real seats the layout has, and which are marked TAKEN
    (reporting gaps not marked GAP and seats in no known state)."""
    real, taken = 0, set()
    for r, (layout_row, state_row) in enumerate(zip(layout, state, strict=True)):
        for c, (cell, value) in enumerate(zip(layout_row, state_row, strict=True)):
            if cell.get("kind") != "seat":
                if value != GAP:
                    problem(f"gap at {(r, c)} has state {value!r}")
                continue
            real += 1
            if value == TAKEN:
                taken.add((r, c))
            elif value != FREE:
                problem(f"{label((r, c))} has state {value!r}")
    return real, taken


def _entries(doc: dict, problem, label) -> tuple[dict[Seat, str], set[Seat]]:
    """The held seats (with their carts) and the sold ones (reporting a seat
    held twice, sold twice, or both held and sold)."""
    held: dict[Seat, str] = {}
    for entry in doc.get("reservations", []):
        seat = tuple(entry["seat"])
        if seat in held:
            problem(
                f"{label(seat)} is held by two carts"
                f" ({held[seat]} and {entry['cart_id']})"
            )
        held.setdefault(seat, entry["cart_id"])
    sold: set[Seat] = set()
    for entry in doc.get("sold", []):
        seat = tuple(entry["seat"])
        if seat in sold:
            problem(f"{label(seat)} is sold twice")
        if seat in held:
            problem(f"{label(seat)} is sold and also held by {held[seat]}")
        sold.add(seat)
    return held, sold


def session_invariant_violations(
    *, sold: Mapping[str, Sequence[Seat]] | None = None
) -> list[str]:
    """``session_problems`` as readable lines ("session <id> (<show>): ...")."""
    return [str(problem) for problem in session_problems(sold=sold)]


def session_problems(
    *, sold: Mapping[str, Sequence[Seat]] | None = None
) -> list[SessionProblem]:
    """Check every session; one SessionProblem per broken invariant.

    Per session: taken seats == held + sold seats; ``seatsAvailable`` == real
    seats - taken; no seat held by two carts, sold twice, or both; gaps stay
    gaps. ``sold`` maps a session id to the seats its paid orders contain
    (from the shop); when given, it must equal the session's own ``sold``
    list (a session missing from the mapping has sold nothing). With None,
    the documents are checked on their own.
    """
    expected = None
    if sold is not None:
        expected = {
            str(session_id): {(int(r), int(c)) for r, c in seats}
            for session_id, seats in sold.items()
        }
    found: list[SessionProblem] = []
    seen: set[str] = set()
    cursor = _sessions().find(
        {},
        {
            "name": 1,
            "layout": 1,
            "seats": 1,
            "seatsAvailable": 1,
            "reservations.cart_id": 1,
            "reservations.seat": 1,
            "sold.seat": 1,
        },
    )
    for doc in cursor:
        seen.add(str(doc["_id"]))
        sold_elsewhere = None
        if expected is not None:
            sold_elsewhere = expected.get(str(doc["_id"]), set())
        found.extend(_violations(doc, sold_elsewhere))
    if expected is not None:
        for session_id in sorted(set(expected) - seen):
            if expected[session_id]:
                found.append(
                    SessionProblem(
                        session_id, None, "paid orders for a missing session"
                    )
                )
    return found
