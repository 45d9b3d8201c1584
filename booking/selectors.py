"""Reads and queries over the booking app's collections; never writes.

Session documents are read through pymongo with projections: the seat map of
a hall is a few hundred cells, redrawn every few seconds by every open map,
and the listing needs none of them. A hall's layout comes from
``booking.halls`` (immutable, cached per process); which cart has a seat
comes from the tag on the seat and the ``SeatHolds`` entry listing it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from booking import checks
from booking.documents import (
    BLOCKED,
    FREE,
    GAP,
    SeatBlocks,
    SeatHolds,
    Session,
    Theater,
    holds_id,
    is_held,
    is_sold,
)
from booking.errors import SessionNotFound
from booking.halls import Hall, hall
from booking.seating import cell_at
from booking.values import (
    HeldSeat,
    MapCell,
    MapRow,
    Performance,
    ReservationRef,
    Seat,
    SeatHold,
    SeatMap,
    SessionCounts,
    SessionProblem,
    SessionSale,
    ShowDate,
    ShowListing,
    StaffSeat,
    StaffSeatMap,
    ZoneLegend,
    seat_label,
)
from config.decimals import decimal_of


def _sessions():
    return Session.coll()


# What the seat map reads of a session (the layout is the hall's, cached).
_MAP_FIELDS = dict.fromkeys(
    (
        "name",
        "description",
        "theater_name",
        "start",
        "end",
        "layout_id",
        "prices",
        "seats",
        "seatsAvailable",
        "version",
    ),
    1,
)


def _holds():
    return SeatHolds.coll()


def _cart_seats(doc: dict | None, state: list, sign: int = 1) -> dict[Seat, datetime]:
    """The seats a cart's ``SeatHolds`` document ``doc`` has in ``state``:
    carrying +tag (``sign`` 1, held) or -tag (-1, sold), with their stamps."""
    found: dict[Seat, datetime] = {}
    for key, entry in (doc or {}).get("holds", {}).items():
        tag = sign * int(key[1:])
        for r, c in entry["seats"]:
            if r < len(state) and c < len(state[r]) and state[r][c] == tag:
                found[(r, c)] = entry["at"]
    return found


def _held_seat(h: Hall, prices: dict, seat: Seat, at: datetime) -> HeldSeat:
    cell = h.layout[seat[0]][seat[1]]
    zone = cell["zone"]
    return HeldSeat(
        row=seat[0],
        col=seat[1],
        label=seat_label(cell["row"], cell["number"]),
        zone=zone,
        zone_name=h.zone_names.get(zone, zone),
        price=prices.get(zone, Decimal("0.00")),
        at=at,
    )


def seat_map(*, session_id: str, cart_id: str | None = None) -> SeatMap:
    """The seat map of a session as one shopper sees it.

    Every cell is a gap or a seat that is free, taken (held by another cart,
    sold, or blocked by staff: a shopper is not told which), or "mine" (held
    by ``cart_id``; with None nothing is mine). One read of the session and,
    for a shopper, one of their cart's holds. Raises SessionNotFound.
    """
    oid = checks.session_oid(session_id)
    cart = None if cart_id is None else checks.cart_id(cart_id)
    doc = _sessions().find_one({"_id": oid}, _MAP_FIELDS)
    if doc is None:
        raise SessionNotFound()
    h = hall(doc["layout_id"])
    prices = {code: decimal_of(p) for code, p in doc["prices"].items()}
    mine: dict[Seat, datetime] = {}
    if cart is not None:
        mine = _cart_seats(_holds().find_one({"_id": f"{oid}|{cart}"}), doc["seats"])
    free_by_zone: Counter[str] = Counter()
    rows = _map_rows(h, doc["seats"], prices, set(mine), free_by_zone)
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
        zones=_legend(h, prices, free_by_zone),
        mine=tuple(_held_seat(h, prices, s, at) for s, at in sorted(mine.items())),
    )


def _map_rows(
    h: Hall, state: list, prices: dict, mine: set[Seat], free_by_zone: Counter[str]
) -> list[MapRow]:
    """The grid's rows, counting the free seats of each zone on the way."""
    zones = {z["code"]: z for z in h.zones}
    rows = []
    for r, (layout_row, state_row) in enumerate(zip(h.layout, state, strict=True)):
        cells = []
        for c, (cell, value) in enumerate(zip(layout_row, state_row, strict=True)):
            if cell.get("kind") != "seat":
                cells.append(MapCell(row=r, col=c, state="gap"))
                continue
            if (r, c) in mine:
                state_ = "mine"
            elif value == FREE:
                state_ = "free"
                free_by_zone[cell["zone"]] += 1
            else:
                state_ = "taken"
            cells.append(_map_seat(r, c, cell, state_, zones, prices))
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
        colour=zone.get("colour", "#6b6675"),
        price=prices.get(cell["zone"]),
        flags=tuple(cell.get("flags", ())),
    )


def _legend(h: Hall, prices: dict, free_by_zone: Counter[str]) -> tuple:
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
        for z in sorted(h.zones, key=lambda z: (z["rank"], z["name"]))
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
    prices = [decimal_of(p) for p in doc.get("prices", {}).values()]
    return Performance(
        session_id=str(doc["_id"]),
        start=doc["start"],
        end=doc["end"],
        theater=doc["theater_name"],
        seats_left=doc["seatsAvailable"],
        from_price=min(prices) if prices else None,
    )


def cart_holds(*, cart_id: str) -> list[SeatHold]:
    """Every seat a cart holds, one SeatHold per session, soonest first.

    The cart's ``SeatHolds`` documents (index on ``cart_id``), each checked
    against its session: only seats carrying the cart's tag are held.
    """
    cart = checks.cart_id(cart_id)
    found = []
    for raw in _holds().find({"cart_id": cart}):
        doc = _sessions().find_one({"_id": raw["session_id"]}, _HOLD_FIELDS)
        if doc is None:
            continue
        held = _cart_seats(raw, doc["seats"])
        if held:
            found.append((doc, held))
    found.sort(key=lambda pair: (pair[0]["start"], pair[0]["_id"]))
    return [_hold_of(doc, cart, held) for doc, held in found]


_HOLD_FIELDS = dict.fromkeys(
    ("name", "theater_name", "start", "prices", "layout_id", "seats"), 1
)


def _hold_of(doc: dict, cart: str, held: Mapping[Seat, datetime]) -> SeatHold:
    h = hall(doc["layout_id"])
    prices = {code: decimal_of(p) for code, p in doc["prices"].items()}
    return SeatHold(
        session_id=str(doc["_id"]),
        cart_id=cart,
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        seats=tuple(_held_seat(h, prices, s, at) for s, at in sorted(held.items())),
    )


def _tag_owners(oid, tags: set[int]) -> dict[int, tuple[str, dict]]:
    """Which cart's document lists each tag: tag -> (cart id, its entry)."""
    if not tags:
        return {}
    # The session's documents, the tags picked here: a top-level $or on the
    # tags costs the Rust server time growing with the whole collection
    # (config/compat.py), which keeps every sold seat's entry, while one
    # session's documents are bounded by its seats.
    owners = {}
    for raw in _holds().find({"session_id": oid}, {"cart_id": 1, "holds": 1}):
        for key, entry in raw.get("holds", {}).items():
            if int(key[1:]) in tags:
                owners[int(key[1:])] = (raw["cart_id"], entry)
    return owners


def seat_holders(*, session_id: str, seats: Sequence[Seat]) -> dict[Seat, str]:
    """Which cart holds each of ``seats`` (seats no cart holds are left out).

    For the shop: when a hold fails, it expires the stale carts holding the
    wanted seats and tries once more (DESIGN §3 rule 5).
    """
    oid = checks.session_oid(session_id)
    wanted = checks.positions(seats, limit=checks.MAX_SEATS_PER_REQUEST)
    doc = _sessions().find_one({"_id": oid}, {"seats": 1})
    if doc is None:
        raise SessionNotFound()
    state = doc["seats"]
    tags = {
        (r, c): state[r][c]
        for r, c in wanted
        if r < len(state) and c < len(state[r]) and is_held(state[r][c])
    }
    owners = _tag_owners(oid, set(tags.values()))
    return {seat: owners[tag][0] for seat, tag in tags.items() if tag in owners}


def seats_not_held(
    *,
    session_id: str,
    cart_id: str,
    seats: Sequence[Seat],
    states: list | None = None,
    tags: Mapping[Seat, int] | None = None,
) -> tuple[list[Seat], dict | None]:
    """Those of ``seats`` the session does not hold for the cart, and the
    cart's ``SeatHolds`` document as read (for ``seats_sell``).

    Reads by ``_id`` only: the session's seat states (unless the caller
    read them with its prices: ``states``) and the cart's ``SeatHolds``
    document (never the other carts': see ``seat_holders`` for who has a
    seat). Checkout asks this before it charges. Raises SessionNotFound.

    ``tags``: each seat's tag as the cart recorded it from the hold's
    answer (``HeldSeat.tag``). When every seat carries its +tag, they are
    the cart's and nothing more is read: the document returned is the
    cart's entries for these tags (without stamps: for ``seats_sell``,
    which needs none). A seat that does not (released, or held again under
    a newer tag) is asked of the ``SeatHolds`` document, as without tags.
    """
    oid = checks.session_oid(session_id)
    wanted = checks.positions(seats, limit=checks.MAX_SEATS_PER_REQUEST)
    if states is None:
        doc = _sessions().find_one({"_id": oid}, {"seats": 1})
        if doc is None:
            raise SessionNotFound()
        states = doc["seats"]
    cart_id = checks.cart_id(cart_id)
    if tags and all(_carries(states, seat, tags.get(seat)) for seat in wanted):
        by_tag: dict[int, list[list[int]]] = {}
        for r, c in wanted:
            by_tag.setdefault(tags[(r, c)], []).append([r, c])
        entries = {f"t{tag}": {"seats": s, "at": None} for tag, s in by_tag.items()}
        return [], {"_id": holds_id(oid, cart_id), "holds": entries}
    holds = _holds().find_one({"_id": holds_id(oid, cart_id)})
    held = _cart_seats(holds, states)
    return [seat for seat in wanted if seat not in held], holds


def _carries(states: list, seat: Seat, tag: int | None) -> bool:
    """Whether the seat carries ``tag`` as held (+tag)."""
    r, c = seat
    return (
        isinstance(tag, int)
        and r < len(states)
        and c < len(states[r])
        and states[r][c] == tag
        and is_held(tag)
    )


def reservations_index(
    *, session_ids: Sequence[str] | None = None, before: datetime | None = None
) -> Iterator[ReservationRef]:
    """Every (session, cart) pair with held seats, for the shop's reconciler.

    Streams session by session (those with ``held`` > 0); ``session_ids``
    narrows it to some sessions, ``before`` to the seats whose hold was
    stamped before that moment (newer ones may belong to a shop service
    between its two writes right now).
    """
    query: dict = {"held": {"$gt": 0}}
    if session_ids is not None:
        query["_id"] = {"$in": [checks.session_oid(s) for s in session_ids]}
    for doc in _sessions().find(query, {"seats": 1}).sort("_id", 1):
        state = doc["seats"]
        tags = {v for row in state for v in row if is_held(v)}
        by_cart: dict[str, list[tuple[Seat, datetime]]] = {}
        for tag, (cart, entry) in _tag_owners(doc["_id"], tags).items():
            if before is not None and entry["at"] >= before:
                continue
            for r, c in entry["seats"]:
                if state[r][c] == tag:
                    by_cart.setdefault(cart, []).append(((r, c), entry["at"]))
        for cart, seats in sorted(by_cart.items()):
            seats.sort()
            yield ReservationRef(
                session_id=str(doc["_id"]),
                cart_id=cart,
                seats=tuple(seat for seat, _ in seats),
                oldest=min(at for _, at in seats),
                stamps=tuple(at for _, at in seats),
            )


def session_sale(
    *, session_id: str, now: datetime | None = None, with_seats: bool = False
) -> SessionSale:
    """A session's prices now and whether it is still on sale (checkout
    re-prices held seats from this); ``with_seats``: its seat states too,
    from the same read. Raises SessionNotFound."""
    fields = {"name": 1, "theater_name": 1, "start": 1, "layout_id": 1, "prices": 1}
    if with_seats:
        fields["seats"] = 1
    doc = _sessions().find_one({"_id": checks.session_oid(session_id)}, fields)
    if doc is None:
        raise SessionNotFound()
    return SessionSale(
        session_id=str(doc["_id"]),
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        is_open=doc["start"] > (now or timezone.now()),
        prices={code: decimal_of(p) for code, p in doc["prices"].items()},
        zone_names=hall(doc["layout_id"]).zone_names,
        seats=doc.get("seats"),
    )


_COUNTERS = ("seatsAvailable", "held", "sold", "blocked", "seat_count")


def _counts(doc: dict) -> SessionCounts:
    return SessionCounts(
        seats=doc.get("seat_count", 0),
        free=doc.get("seatsAvailable", 0),
        held=doc.get("held", 0),
        sold=doc.get("sold", 0),
        blocked=doc.get("blocked", 0),
    )


# What ``counts_of`` reads of a session (lists of sessions project it).
COUNT_FIELDS = dict.fromkeys(_COUNTERS, 1)


def counts_of(doc: dict) -> SessionCounts:
    """A session's seats by state, from a document read with COUNT_FIELDS."""
    return _counts(doc)


def session_counts(*, session_id: str) -> SessionCounts:
    """A session's seats by state, from its counters. Raises SessionNotFound."""
    doc = _sessions().find_one(
        {"_id": checks.session_oid(session_id)}, dict.fromkeys(_COUNTERS, 1)
    )
    if doc is None:
        raise SessionNotFound()
    return _counts(doc)


_STAFF_FIELDS = dict.fromkeys(
    ("name", "theater_name", "start", "layout_id", "seats", *_COUNTERS), 1
)


def staff_seat_map(*, session_id: str) -> StaffSeatMap:
    """Every seat of a session and its state, for the box office.

    Free, held (by which cart, stamped when), sold (to which cart: the order
    is unique on its cart id), blocked (why, by whom, when) or gap. Three
    reads: the session, the holds listing its tags, its block notes.
    Raises SessionNotFound.
    """
    oid = checks.session_oid(session_id)
    doc = _sessions().find_one({"_id": oid}, _STAFF_FIELDS)
    if doc is None:
        raise SessionNotFound()
    h, state = hall(doc["layout_id"]), doc["seats"]
    tags = {abs(v) for row in state for v in row if is_held(v) or is_sold(v)}
    owners = _tag_owners(oid, tags)
    notes = (SeatBlocks.coll().find_one({"_id": oid}) or {}).get("seats", {})
    rows = tuple(
        tuple(
            _staff_seat((r, c), cell, state[r][c], owners, notes)
            for c, cell in enumerate(layout_row)
        )
        for r, layout_row in enumerate(h.layout)
    )
    return StaffSeatMap(
        session_id=str(oid),
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        counts=_counts(doc),
        rows=rows,
        zones=tuple(h.zones),
    )


def _staff_seat(seat: Seat, cell: dict, value: int, owners, notes) -> StaffSeat:
    r, c = seat
    if cell.get("kind") != "seat":
        return StaffSeat(row=r, col=c, state="gap")
    where = {
        "row": r,
        "col": c,
        "label": seat_label(cell["row"], cell["number"]),
        "number": cell["number"],
        "zone": cell["zone"],
    }
    if value == FREE:
        return StaffSeat(state="free", **where)
    if value == BLOCKED:
        note = notes.get(f"{r}-{c}", {})
        return StaffSeat(
            state="blocked",
            reason=note.get("reason", "no reason recorded"),
            by=note.get("by", ""),
            blocked_at=note.get("at"),
            **where,
        )
    cart, entry = owners.get(abs(value), (None, {}))
    if is_held(value):
        return StaffSeat(state="held", cart_id=cart, held_at=entry.get("at"), **where)
    return StaffSeat(state="sold", cart_id=cart, **where)


def _violations(
    doc: dict, owners: dict, sold_elsewhere: set[Seat] | None
) -> list[SessionProblem]:
    """What is wrong with one session (empty when all is well); ``owners``
    maps each tag its carts' documents list to (cart, entry)."""
    session_id, show = str(doc["_id"]), doc.get("name", "?")
    found: list[SessionProblem] = []

    def problem(message: str) -> None:
        found.append(SessionProblem(session_id, show, message))

    try:
        layout = hall(doc.get("layout_id", "")).layout
    except LookupError:
        problem("its seat layout is missing")
        return found
    state = doc.get("seats", [])

    def label(seat: Seat) -> str:
        cell = cell_at(layout, seat)
        return seat_label(cell["row"], cell["number"]) if cell else f"{seat}"

    if [len(row) for row in layout] != [len(row) for row in state]:
        problem("the seat states do not match the shape of the layout")
        return found
    counts = _marked(layout, state, owners, problem, label)
    for name, field in _COUNTED:
        if doc.get(field) != len(counts[name]):
            n = len(counts[name])
            problem(
                f"{field} is {doc.get(field)!r}, but {n}"
                f" {'seat is' if n == 1 else 'seats are'} {name}"
            )
    real = sum(len(seats) for seats in counts.values())
    if doc.get("seat_count") != real:
        problem(f"seat_count is {doc.get('seat_count')!r}, but the hall has {real}")
    sold = counts["sold"]
    if sold_elsewhere is not None and sold_elsewhere != sold:
        for seat in sorted(sold - sold_elsewhere):
            problem(f"{label(seat)} is sold here but in no paid order")
        for seat in sorted(sold_elsewhere - sold):
            problem(f"{label(seat)} is in a paid order but not sold here")
    return found


_COUNTED = (
    ("free", "seatsAvailable"),
    ("held", "held"),
    ("sold", "sold"),
    ("blocked", "blocked"),
)


def _marked(layout, state, owners, problem, label) -> dict[str, set[Seat]]:
    """The seats in each state (reporting gaps not marked GAP, values that
    are no state, and tags no cart's entry lists with that seat)."""
    counts: dict[str, set[Seat]] = {name: set() for name, _ in _COUNTED}
    for r, (layout_row, state_row) in enumerate(zip(layout, state, strict=True)):
        for c, (cell, value) in enumerate(zip(layout_row, state_row, strict=True)):
            if cell.get("kind") != "seat":
                if value != GAP:
                    problem(f"gap at {(r, c)} has state {value!r}")
                continue
            if value == FREE:
                counts["free"].add((r, c))
            elif value == BLOCKED:
                counts["blocked"].add((r, c))
            elif is_held(value) or is_sold(value):
                counts["held" if value > 0 else "sold"].add((r, c))
                _, entry = owners.get(abs(value), (None, {"seats": []}))
                if [r, c] not in entry["seats"]:
                    problem(f"{label((r, c))} carries a tag no cart's hold lists")
            else:
                problem(f"{label((r, c))} has state {value!r}")
    return counts


def _all_owners(oid, found: list, show: str) -> dict[int, tuple[str, dict]]:
    """Every tag the session's ``SeatHolds`` list; a tag listed by two carts
    is a problem (tags are drawn at random from 2**62: it never happens)."""
    owners: dict[int, tuple[str, dict]] = {}
    for raw in _holds().find({"session_id": oid}, {"cart_id": 1, "holds": 1}):
        for key, entry in raw.get("holds", {}).items():
            tag = int(key[1:])
            if tag in owners:
                message = f"tag {tag} is listed by carts {owners[tag][0]}"
                found.append(
                    SessionProblem(str(oid), show, f"{message} and {raw['cart_id']}")
                )
            owners[tag] = (raw["cart_id"], entry)
    return owners


def session_invariant_violations(
    *, sold: Mapping[str, Sequence[Seat]] | None = None
) -> list[str]:
    """``session_problems`` as readable lines ("session <id> (<show>): ...")."""
    return [str(problem) for problem in session_problems(sold=sold)]


def session_problems(
    *, sold: Mapping[str, Sequence[Seat]] | None = None
) -> list[SessionProblem]:
    """Check every session; one SessionProblem per broken invariant.

    Per session: each counter (``seatsAvailable``, ``held``, ``sold``,
    ``blocked``) equals the seats in that state, and they add up to the
    hall's seats; every held or sold seat's tag is listed with that seat by
    one cart's ``SeatHolds`` (a seat has one state, so it is never held or
    sold twice); gaps stay gaps. ``sold`` maps a session id to the seats its
    paid orders contain (from the shop); when given, it must equal the seats
    the session has sold (a session missing from the mapping has sold
    nothing). With None, the documents are checked on their own.
    """
    expected = None
    if sold is not None:
        expected = {
            str(session_id): {(int(r), int(c)) for r, c in seats}
            for session_id, seats in sold.items()
        }
    found: list[SessionProblem] = []
    seen: set[str] = set()
    fields = dict.fromkeys(("name", "layout_id", "seats", *_COUNTERS), 1)
    for doc in _sessions().find({}, fields):
        seen.add(str(doc["_id"]))
        sold_elsewhere = None
        if expected is not None:
            sold_elsewhere = expected.get(str(doc["_id"]), set())
        owners = _all_owners(doc["_id"], found, doc.get("name", "?"))
        found.extend(_violations(doc, owners, sold_elsewhere))
    if expected is not None:
        for session_id in sorted(set(expected) - seen):
            if expected[session_id]:
                found.append(
                    SessionProblem(
                        session_id, None, "paid orders for a missing session"
                    )
                )
    return found
