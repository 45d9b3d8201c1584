"""Every write that changes the booking app's state; one function per use case.

Seats follow the reservation protocol of DESIGN §3. A session document holds
the state of every seat (``seats[r][c]``: FREE, TAKEN or GAP), the counter
``seatsAvailable``, and one entry per held seat in ``reservations``. Every
change of seat state is ONE conditional update of that document whose filter
carries the rule (each seat FREE to hold it; each entry present to release or
commit it) and whose update moves state, counter and entries together. A
modified count of 0 means the rule said no: the error is raised, nothing
changed. Reading first is only ever for the layout (which never changes), the
prices and the labels, or to learn which seats a cart holds before a release
guarded entry by entry.

The invariants every service keeps, per session:

* seats marked TAKEN == seats in ``reservations`` + seats in ``sold``;
* ``seatsAvailable`` == real seats - seats marked TAKEN;
* no seat appears in two entries (two carts, or held and sold).

Callers pass an opaque ``cart_id``: the booking app never learns what a cart
is (the shop owns carts and records what these services return).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation

from bson import Decimal128, ObjectId
from django.utils import timezone
from mongoengine import NotUniqueError, ValidationError

from booking import checks
from booking.checks import MAX_SEATS_PER_HOLD, MAX_SEATS_PER_REQUEST
from booking.documents import FLAGS, FREE, GAP, TAKEN, Cell, Session, Theater, Zone
from booking.errors import (
    BoxOfficeBusy,
    InvalidLayout,
    InvalidRequest,
    NoAdjacentSeats,
    SeatOffMap,
    SeatsAlreadyHeld,
    SeatsNotHeld,
    SeatsTaken,
    SessionClosed,
    SessionNotFound,
    TheaterNotFound,
    UnknownZone,
)
from booking.values import HeldSeat, Seat, SeatHold, SeatSpec, ZoneSpec, seat_label

MAX_GRID = 200  # rows, and cells per row
MAX_PRICE = Decimal("100000")
CENT = Decimal("0.01")
# A release or commit that loses to a concurrent change of the same cart's
# entries reads again; two tries in a row are already unusual.
RETRIES = 5
# Best available retries after every lost race. Each loss means another cart
# won seats, so the contest always progresses; the bound covers a crowd.
BEST_AVAILABLE_ATTEMPTS = 25

# Fields a seat service reads: never the arrays it does not need.
_HEADER = {"name": 1, "theater_name": 1, "start": 1, "zones": 1}


def _sessions():
    return Session._get_collection()


def _now() -> datetime:
    # MongoDB keeps milliseconds: a hold answers with the time it stored.
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


# --- Parsing what callers pass (before any query) -------------------------


def _price(value) -> Decimal:
    # Money is Decimal only: a float has already lost the pennies.
    if not isinstance(value, Decimal) or not value.is_finite():
        raise InvalidRequest("Prices must be decimal amounts.")
    if not Decimal(0) <= value <= MAX_PRICE:
        raise InvalidRequest(f"Prices must be between £0 and £{MAX_PRICE}.")
    try:
        return value.quantize(CENT)
    except InvalidOperation as exc:
        raise InvalidRequest("Prices must be decimal amounts.") from exc


# --- Reading the parts of a session a write needs --------------------------


def _cell(layout: list, seat: Seat) -> dict | None:
    """The layout cell of a seat, or None when off the map or on a gap."""
    row, col = seat
    if row >= len(layout) or col >= len(layout[row]):
        return None
    cell = layout[row][col]
    return cell if cell.get("kind") == "seat" else None


def _check_on_map(layout: list, positions: Sequence[Seat]) -> None:
    off = [p for p in positions if _cell(layout, p) is None]
    if off:
        raise SeatOffMap(off)


def _zone_names(doc: dict) -> dict[str, str]:
    return {z["code"]: z["name"] for z in doc.get("zones", [])}


def _held_seat(entry: dict, zone_names: Mapping[str, str]) -> HeldSeat:
    row, col = entry["seat"]
    return HeldSeat(
        row=row,
        col=col,
        label=entry["label"],
        zone=entry["zone"],
        zone_name=zone_names.get(entry["zone"], entry["zone"]),
        price=entry["price"].to_decimal(),
        at=entry["at"],
    )


def _result(doc: dict, cart_id: str, entries: Sequence[dict]) -> SeatHold:
    names = _zone_names(doc)
    return SeatHold(
        session_id=str(doc["_id"]),
        cart_id=cart_id,
        show=doc["name"],
        theater=doc["theater_name"],
        start=doc["start"],
        seats=tuple(_held_seat(e, names) for e in entries),
    )


def _label(layout: list, seat: Seat) -> str:
    cell = _cell(layout, seat)
    return seat_label(cell["row"], cell["number"]) if cell else str(seat)


def _entries_of(doc: dict, field: str, cart_id: str) -> dict[Seat, dict]:
    return {tuple(e["seat"]): e for e in doc.get(field, []) if e["cart_id"] == cart_id}


def _seat_path(seat: Seat) -> str:
    return f"seats.{seat[0]}.{seat[1]}"


def _entry_guard(cart_id: str, positions: Sequence[Seat]) -> list[dict]:
    # $elemMatch: cart_id and seat must be true of the SAME entry.
    return [
        {"reservations": {"$elemMatch": {"cart_id": cart_id, "seat": [r, c]}}}
        for r, c in positions
    ]


def _pull_entries(cart_id: str, positions: Sequence[Seat]) -> dict:
    return {"cart_id": cart_id, "seat": {"$in": [[r, c] for r, c in positions]}}


# --- Theaters and sessions -------------------------------------------------


def theater_create(
    *,
    name: str,
    zones: Sequence[ZoneSpec],
    layout: Sequence[Sequence[SeatSpec | None]],
) -> str:
    """Create a theater from a layout of any shape; returns its id.

    ``layout`` is a list of grid rows (they may differ in length); each cell
    is a ``SeatSpec`` or None for a gap (an aisle, the stage edge). Every seat
    names a zone of ``zones`` and has a row label and number unique in the
    hall. Invariant: ``seatsAvailable`` == the number of real seats, and the
    state map ``seats`` is FREE exactly where the layout has a seat.

    Raises InvalidLayout (shape, labels, zones, duplicate name).
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidLayout("A theater needs a name.")
    if not zones or not all(isinstance(z, ZoneSpec) for z in zones):
        raise InvalidLayout("A theater needs at least one price zone.")
    codes = [z.code for z in zones]
    if len(set(codes)) != len(codes):
        raise InvalidLayout("Zone codes must be unique.")
    if not isinstance(layout, (list, tuple)) or not 0 < len(layout) <= MAX_GRID:
        raise InvalidLayout(f"A layout has between 1 and {MAX_GRID} rows.")
    cells: list[list[Cell]] = []
    state: list[list[int]] = []
    labels: set[tuple[str, int]] = set()
    for row in layout:
        if not isinstance(row, (list, tuple)) or len(row) > MAX_GRID:
            raise InvalidLayout(f"A row has at most {MAX_GRID} cells.")
        cells.append([])
        state.append([])
        for spec in row:
            if spec is None:
                cells[-1].append(Cell(kind="gap"))
                state[-1].append(GAP)
                continue
            if not isinstance(spec, SeatSpec) or spec.zone not in codes:
                raise InvalidLayout("Every seat must belong to one of the zones.")
            if not set(spec.flags) <= set(FLAGS):
                raise InvalidLayout(f"Seat flags are {', '.join(FLAGS)}.")
            if (spec.row, spec.number) in labels:
                raise InvalidLayout(
                    f"{seat_label(spec.row, spec.number)} appears twice."
                )
            labels.add((spec.row, spec.number))
            cells[-1].append(
                Cell(
                    kind="seat",
                    row=spec.row,
                    number=spec.number,
                    zone=spec.zone,
                    flags=[f for f in FLAGS if f in spec.flags],
                )
            )
            state[-1].append(FREE)
    if not labels:
        raise InvalidLayout("A theater needs at least one seat.")
    theater = Theater(
        name=name.strip(),
        zones=[
            Zone(code=z.code, name=z.name, colour=z.colour, rank=z.rank) for z in zones
        ],
        layout=cells,
        seats=state,
        seats_available=len(labels),
        created_at=timezone.now(),
    )
    try:
        theater.save()
    except NotUniqueError as exc:
        raise InvalidLayout(f"A theater named {name.strip()} already exists.") from exc
    except ValidationError as exc:
        raise InvalidLayout(f"That seat layout is not valid: {exc.message}") from exc
    return str(theater.id)


def session_create(
    *,
    theater_id: str,
    show: str,
    start: datetime,
    end: datetime,
    prices: Mapping[str, Decimal],
    description: str = "",
) -> str:
    """Put a performance on sale in a theater; returns the session id.

    The session copies the theater's layout and state map (all seats FREE,
    gaps stay gaps) and its seat count, as the article does, so the session
    stays self-contained even if the hall is later re-arranged. Invariant at
    birth: ``seatsAvailable`` == real seats, no reservations, nothing sold.

    Raises TheaterNotFound, UnknownZone (a price for a zone the hall lacks),
    InvalidRequest (no show name, times not timezone-aware, start in the past
    or not before end, a price missing or not a Decimal).
    """
    if not isinstance(theater_id, str) or not ObjectId.is_valid(theater_id):
        raise TheaterNotFound()
    if not isinstance(show, str) or not show.strip() or len(show) > 160:
        raise InvalidRequest("A performance needs a show name (up to 160 letters).")
    if not isinstance(description, str):
        raise InvalidRequest("The description must be text.")
    for moment in (start, end):
        if not isinstance(moment, datetime) or timezone.is_naive(moment):
            raise InvalidRequest("Start and end must be timezone-aware times.")
    if start >= end:
        raise InvalidRequest("A performance must end after it starts.")
    if start <= timezone.now():
        raise InvalidRequest("A performance cannot start in the past.")
    if not isinstance(prices, Mapping):
        raise InvalidRequest("Prices are given per zone.")
    theater = Theater._get_collection().find_one({"_id": ObjectId(theater_id)})
    if theater is None:
        raise TheaterNotFound()
    codes = {z["code"] for z in theater["zones"]}
    unknown = set(prices) - codes
    if unknown:
        raise UnknownZone(f"{', '.join(sorted(map(str, unknown)))}: no such zone.")
    used = {
        cell["zone"] for row in theater["layout"] for cell in row if cell.get("zone")
    }
    missing = used - set(prices)
    if missing:
        raise InvalidRequest(
            f"Every zone needs a price (missing: {', '.join(sorted(missing))})."
        )
    # The theater's arrays were validated when it was created; copying the
    # stored documents verbatim (rather than through MongoEngine objects, a
    # few hundred per hall) keeps creating a season of sessions quick.
    result = _sessions().insert_one(
        {
            "theater_id": theater["_id"],
            "theater_name": theater["name"],
            "name": show.strip(),
            "description": description.strip(),
            "start": start,
            "end": end,
            "zones": theater["zones"],
            "layout": theater["layout"],
            "prices": {code: Decimal128(_price(p)) for code, p in prices.items()},
            "seats": theater["seats"],
            "seatsAvailable": theater["seatsAvailable"],
            "reservations": [],
            "sold": [],
            "version": 0,
            "created_at": timezone.now(),
        }
    )
    return str(result.inserted_id)


# --- Seats ------------------------------------------------------------------


def _hold(
    doc: dict, cart_id: str, positions: Sequence[Seat], now: datetime
) -> SeatHold | None:
    """The one conditional update that holds ``positions`` for ``cart_id``.

    Returns None when the filter matched nothing but no seat turned out taken
    on a second look (it was freed in between): the caller may try again.
    """
    layout, prices = doc["layout"], doc["prices"]
    entries = []
    for seat in positions:
        cell = _cell(layout, seat)
        entries.append(
            {
                "cart_id": cart_id,
                "seat": list(seat),
                "label": seat_label(cell["row"], cell["number"]),
                "zone": cell["zone"],
                "price": Decimal128(prices[cell["zone"]].to_decimal().quantize(CENT)),
                "at": now,
            }
        )
    result = _sessions().update_one(
        {
            "_id": doc["_id"],
            # The performance must not have started by the time of the write.
            "start": {"$gt": now},
            "$and": [{_seat_path(s): FREE} for s in positions],
        },
        {
            "$set": {_seat_path(s): TAKEN for s in positions},
            # The article increments by +n here; holding n seats takes n away.
            "$inc": {"seatsAvailable": -len(positions), "version": 1},
            "$push": {"reservations": {"$each": entries}},
        },
    )
    if result.modified_count == 1:
        return _result(doc, cart_id, entries)
    _explain_refused_hold(doc["_id"], cart_id, positions, layout, now)
    return None


def _explain_refused_hold(
    oid: ObjectId, cart_id: str, positions: Sequence[Seat], layout: list, now
) -> None:
    """Raise the error that made a hold's filter match nothing (if it lasts)."""
    doc = _sessions().find_one(
        {"_id": oid},
        {"start": 1, "seats": 1, "reservations.cart_id": 1, "reservations.seat": 1},
    )
    if doc is None:
        raise SessionNotFound()
    if doc["start"] <= now:
        raise SessionClosed()
    taken = [p for p in positions if doc["seats"][p[0]][p[1]] != FREE]
    if not taken:
        return
    mine = set(_entries_of(doc, "reservations", cart_id))
    others = [p for p in taken if p not in mine]
    if others:
        raise SeatsTaken([_label(layout, p) for p in others], others)
    raise SeatsAlreadyHeld([_label(layout, p) for p in taken], taken)


def _open_session(oid: ObjectId, projection: dict, now: datetime) -> dict:
    doc = _sessions().find_one({"_id": oid}, projection)
    if doc is None:
        raise SessionNotFound()
    if doc["start"] <= now:
        raise SessionClosed()
    return doc


def seats_hold(*, session_id: str, cart_id: str, seats: Sequence[Seat]) -> SeatHold:
    """Hold every seat of ``seats`` for the cart, all or nothing.

    One conditional update: the filter requires each ``seats.<r>.<c>`` to be
    FREE and the performance not started; the update marks them TAKEN,
    decrements ``seatsAvailable`` by n and pushes one reservation entry per
    seat with the price of its zone. Invariants kept: taken == held + sold,
    ``seatsAvailable`` == real seats - taken, no seat in two carts.

    Raises InvalidSeats (not 1..10 distinct (row, col) pairs of non-negative
    ints), InvalidRequest (bad cart id), SessionNotFound, SessionClosed,
    SeatOffMap (off the grid or on a gap), SeatsTaken (another cart holds or
    bought one of them), SeatsAlreadyHeld (this cart already holds them).
    """
    positions = checks.positions(seats, limit=MAX_SEATS_PER_HOLD)
    cart_id = checks.cart_id(cart_id)
    oid = checks.session_oid(session_id)
    for _ in range(RETRIES):
        now = _now()
        doc = _open_session(oid, {**_HEADER, "layout": 1, "prices": 1}, now)
        _check_on_map(doc["layout"], positions)
        held = _hold(doc, cart_id, positions, now)
        if held is not None:
            return held
    raise BoxOfficeBusy()


def _stamps(expect_at) -> dict[Seat, datetime] | None:
    if expect_at is None:
        return None
    if not isinstance(expect_at, Mapping):
        raise InvalidRequest("Expected stamps are given per seat.")
    positions = checks.positions(list(expect_at), limit=MAX_SEATS_PER_REQUEST)
    stamps = dict(zip(positions, expect_at.values(), strict=True))
    if not all(isinstance(at, datetime) for at in stamps.values()):
        raise InvalidRequest("Expected stamps must be times.")
    return stamps


def _free_entries(
    *,
    field: str,
    oid: ObjectId,
    cart_id: str,
    wanted: Sequence[Seat] | None,
    stamps: Mapping[Seat, datetime] | None = None,
) -> tuple[dict, list[dict]]:
    """Move the cart's entries of ``field`` for ``wanted`` seats back to FREE.

    The one conditional update behind ``seats_release`` (field
    ``reservations``) and ``seats_return`` (field ``sold``): the filter
    requires the cart's entry for every seat (``$elemMatch`` on cart and
    seat, and on the stamp when ``stamps`` names one); the update sets the
    seats FREE, gives n back to ``seatsAvailable`` and pulls the entries.
    Seats without such an entry are skipped. Returns the document read and
    the entries freed.
    """
    for _ in range(RETRIES):
        doc = _sessions().find_one({"_id": oid}, {**_HEADER, "layout": 1, field: 1})
        if doc is None:
            raise SessionNotFound()
        if wanted is not None:
            _check_on_map(doc["layout"], wanted)
        mine = _entries_of(doc, field, cart_id)
        targets = [mine[p] for p in (mine if wanted is None else wanted) if p in mine]
        if stamps is not None:
            # Only entries unchanged since the caller read them.
            targets = [e for e in targets if stamps.get(tuple(e["seat"])) == e["at"]]
        if not targets:
            return doc, []
        guard = [
            {
                field: {
                    "$elemMatch": {
                        "cart_id": cart_id,
                        "seat": e["seat"],
                        **({"at": e["at"]} if stamps is not None else {}),
                    }
                }
            }
            for e in targets
        ]
        positions = [tuple(e["seat"]) for e in targets]
        result = _sessions().update_one(
            {"_id": oid, "$and": guard},
            {
                "$set": {_seat_path(s): FREE for s in positions},
                "$inc": {"seatsAvailable": len(positions), "version": 1},
                "$pull": {field: _pull_entries(cart_id, positions)},
            },
        )
        if result.modified_count == 1:
            return doc, targets
    raise BoxOfficeBusy()


def seats_release(
    *,
    session_id: str,
    cart_id: str,
    seats: Sequence[Seat] | None = None,
    expect_at: Mapping[Seat, datetime] | None = None,
) -> SeatHold:
    """Give back the cart's seats in a session: ``seats``, or all when None.

    Seats the cart does not hold (already released, expired, never held) are
    skipped, so releasing twice is harmless; the result lists the seats this
    call released. One conditional update per attempt: the filter requires an
    entry ``{cart_id, seat}`` (``$elemMatch``) for every seat; the update sets
    them FREE, gives n back to ``seatsAvailable`` (the article forgets) and
    pulls the entries. Releasing one seat of a multi-seat hold leaves the
    others held. With ``expect_at`` (seat -> stamp, as the shop's reconciler
    read it) only entries still carrying that stamp are released: a seat
    held again or handed to another cart since is left alone. Same
    invariants as ``seats_hold``.

    Raises InvalidSeats, InvalidRequest (bad cart id or stamps),
    SessionNotFound, SeatOffMap, BoxOfficeBusy (the cart's own entries kept
    changing).
    """
    wanted = (
        None if seats is None else checks.positions(seats, limit=MAX_SEATS_PER_REQUEST)
    )
    stamps = _stamps(expect_at)
    cart_id = checks.cart_id(cart_id)
    oid = checks.session_oid(session_id)
    doc, freed = _free_entries(
        field="reservations", oid=oid, cart_id=cart_id, wanted=wanted, stamps=stamps
    )
    return _result(doc, cart_id, freed)


def seats_return(
    *, session_id: str, cart_id: str, seats: Sequence[Seat] | None = None
) -> SeatHold:
    """Put seats sold to the cart back on sale (its order was canceled).

    The reverse of ``seats_commit`` + ``seats_release`` in ONE conditional
    update: the filter requires the cart's ``sold`` entry for every seat
    (``$elemMatch`` on cart and seat); the update sets the seats FREE, adds
    n to ``seatsAvailable`` and pulls the entries from ``sold``. Seats not
    sold to the cart (returned already) are skipped, so a repeat is
    harmless; the result lists the seats this call returned. A performance
    that has started may have seats returned (a refund after the curtain):
    they cannot be held any more anyway. Same invariants as ``seats_hold``.

    Raises InvalidSeats, InvalidRequest (bad cart id), SessionNotFound,
    SeatOffMap, BoxOfficeBusy.
    """
    wanted = (
        None if seats is None else checks.positions(seats, limit=MAX_SEATS_PER_REQUEST)
    )
    cart_id = checks.cart_id(cart_id)
    oid = checks.session_oid(session_id)
    doc, freed = _free_entries(field="sold", oid=oid, cart_id=cart_id, wanted=wanted)
    return _result(doc, cart_id, freed)


def seats_refresh(
    *,
    session_id: str,
    cart_ids: Sequence[str],
    before: datetime,
    now: datetime | None = None,
) -> int:
    """Stamp ``at = now`` on the entries of these carts stamped before ``before``.

    The shop's reconciler confirmed those carts still list the seats. Only
    the stamps change (one update, array filters), never a seat state, so
    the map's version stays. Returns 1 if anything was stamped, else 0.

    Raises InvalidRequest (bad cart id or times), SessionNotFound.
    """
    ids = [checks.cart_id(c) for c in cart_ids]
    if not ids:
        return 0
    for moment in (before, now or before):
        if not isinstance(moment, datetime):
            raise InvalidRequest("Stamps are times.")
    oid = checks.session_oid(session_id)
    result = _sessions().update_one(
        {"_id": oid},
        {"$set": {"reservations.$[held].at": now or _now()}},
        array_filters=[{"held.cart_id": {"$in": ids}, "held.at": {"$lt": before}}],
    )
    return result.modified_count


def seats_transfer(*, session_id: str, from_cart_id: str, to_cart_id: str) -> SeatHold:
    """Hand every seat ``from_cart_id`` holds in the session to ``to_cart_id``.

    For the shop's cart merge at login. One update rewrites the cart id (and
    the stamp) of the source cart's entries: no seat is FREE in between, so
    nobody else can take it. The filter requires the source to hold at least
    the seats just read (``$elemMatch`` each); seats, counter and version
    stay as they are. Returns the seats handed over (none if it held none).

    Raises InvalidRequest (bad cart ids, or both the same), SessionNotFound,
    BoxOfficeBusy.
    """
    source = checks.cart_id(from_cart_id)
    target = checks.cart_id(to_cart_id)
    if source == target:
        raise InvalidRequest("A cart cannot hand seats to itself.")
    oid = checks.session_oid(session_id)
    for _ in range(RETRIES):
        doc = _sessions().find_one({"_id": oid}, {**_HEADER, "reservations": 1})
        if doc is None:
            raise SessionNotFound()
        held = _entries_of(doc, "reservations", source)
        if not held:
            return _result(doc, target, [])
        now = _now()
        result = _sessions().update_one(
            {"_id": oid, "$and": _entry_guard(source, list(held))},
            {
                "$set": {
                    "reservations.$[held].cart_id": target,
                    "reservations.$[held].at": now,
                }
            },
            array_filters=[{"held.cart_id": source}],
        )
        if result.modified_count == 1:
            moved = [{**e, "cart_id": target, "at": now} for e in held.values()]
            return _result(doc, target, moved)
    raise BoxOfficeBusy()


def seats_commit(
    *, session_id: str, cart_id: str, seats: Sequence[Seat] | None = None
) -> SeatHold:
    """Sell the cart's held seats (``seats``, or all it holds when None).

    One conditional update: the filter requires the cart's entry for every
    seat (``$elemMatch``); the update pulls the entries from
    ``reservations`` and pushes them to ``sold``. The seats stay TAKEN and
    the counter stays as it is. Idempotent: seats already sold to this cart
    count as committed, so a repeated checkout gets the same answer.

    Raises InvalidSeats, InvalidRequest (bad cart id), SessionNotFound,
    SeatOffMap, SeatsNotHeld (a seat neither held by nor sold to the cart:
    its hold expired), BoxOfficeBusy.
    """
    wanted = (
        None if seats is None else checks.positions(seats, limit=MAX_SEATS_PER_REQUEST)
    )
    cart_id = checks.cart_id(cart_id)
    oid = checks.session_oid(session_id)
    for _ in range(RETRIES):
        doc = _sessions().find_one(
            {"_id": oid}, {**_HEADER, "layout": 1, "reservations": 1, "sold": 1}
        )
        if doc is None:
            raise SessionNotFound()
        if wanted is not None:
            _check_on_map(doc["layout"], wanted)
        held = _entries_of(doc, "reservations", cart_id)
        sold = _entries_of(doc, "sold", cart_id)
        positions = list(held) if wanted is None else list(wanted)
        missing = [p for p in positions if p not in held and p not in sold]
        if missing:
            raise SeatsNotHeld([_label(doc["layout"], p) for p in missing], missing)
        to_sell = [p for p in positions if p in held]
        if wanted is None and not to_sell:
            positions = list(sold)  # a repeated commit-all answers the sale
        if to_sell:
            now = _now()
            entries = [{**held[p], "at": now} for p in to_sell]
            result = _sessions().update_one(
                {"_id": oid, "$and": _entry_guard(cart_id, to_sell)},
                {
                    "$pull": {"reservations": _pull_entries(cart_id, to_sell)},
                    "$push": {"sold": {"$each": entries}},
                    "$inc": {"version": 1},
                },
            )
            if result.modified_count != 1:
                continue
            sold.update({tuple(e["seat"]): e for e in entries})
        return _result(doc, cart_id, [sold[p] for p in positions])
    raise BoxOfficeBusy()


def _best_block(doc: dict, count: int, zone: str | None) -> list[Seat] | None:
    """The best ``count`` adjacent FREE seats of one row, or None.

    Adjacent means neighbouring cells of one grid row: an aisle (a gap)
    breaks a block, and so does a change of zone. Wheelchair spaces and
    companion seats are never allocated blindly (they are chosen on the map).
    The best block has no restricted-view seat if any block has none, then
    lies in the best-ranked zone, then nearest the centre of its zone (the
    mean position of the zone's seats), then front-most, then left-most.
    """
    layout, state = doc["layout"], doc["seats"]
    ranks = {z["code"]: z["rank"] for z in doc["zones"]}
    sums: dict[str, list[float]] = {}
    for r, row in enumerate(layout):
        for c, cell in enumerate(row):
            if cell.get("kind") == "seat":
                acc = sums.setdefault(cell["zone"], [0.0, 0.0, 0])
                acc[0] += r
                acc[1] += c
                acc[2] += 1
    centres = {code: (a[0] / a[2], a[1] / a[2]) for code, a in sums.items()}
    best = None
    for r, row in enumerate(layout):
        run: list[int] = []
        for c, cell in enumerate(row):
            usable = (
                cell.get("kind") == "seat"
                and state[r][c] == FREE
                and (zone is None or cell["zone"] == zone)
                and not {"wheelchair", "companion"} & set(cell.get("flags", ()))
            )
            if not usable or (run and row[run[-1]]["zone"] != cell["zone"]):
                run = []
            if not usable:
                continue
            run.append(c)
            if len(run) < count:
                continue
            cols = run[-count:]
            code = cell["zone"]
            centre_r, centre_c = centres[code]
            middle = (cols[0] + cols[-1]) / 2
            restricted = sum("restricted" in row[k].get("flags", ()) for k in cols)
            key = (
                restricted,
                ranks.get(code, math.inf),
                (r - centre_r) ** 2 + (middle - centre_c) ** 2,
                r,
                cols[0],
            )
            if best is None or key < best[0]:
                best = (key, [(r, k) for k in cols])
    return best[1] if best else None


def seats_best_available(
    *, session_id: str, cart_id: str, count: int, zone: str | None = None
) -> SeatHold:
    """Find and hold the best ``count`` adjacent seats in ``zone`` (any if None).

    Picks the block from a fresh read (see ``_best_block``), then holds it
    with the same single conditional update as ``seats_hold``. When another
    cart takes one of those seats first, the update matches nothing, and the
    search starts again from a fresh read: a seat held by another cart is
    never returned. Same invariants as ``seats_hold``.

    Raises InvalidSeats (count not 1..10), InvalidRequest (bad cart id),
    UnknownZone, SessionNotFound, SessionClosed, NoAdjacentSeats,
    BoxOfficeBusy (lost the race more than BEST_AVAILABLE_ATTEMPTS times).
    """
    count = checks.seat_count(count)
    cart_id = checks.cart_id(cart_id)
    if zone is not None and not isinstance(zone, str):
        raise UnknownZone()
    oid = checks.session_oid(session_id)
    projection = {**_HEADER, "layout": 1, "prices": 1, "seats": 1}
    for _ in range(BEST_AVAILABLE_ATTEMPTS):
        now = _now()
        doc = _open_session(oid, projection, now)
        names = _zone_names(doc)
        if zone is not None and zone not in names:
            raise UnknownZone()
        block = _best_block(doc, count, zone)
        if block is None:
            raise NoAdjacentSeats(count, names.get(zone))
        try:
            held = _hold(doc, cart_id, block, now)
        except SeatsTaken:
            continue  # lost the race for this block: look again
        if held is not None:
            return held
    raise BoxOfficeBusy()
