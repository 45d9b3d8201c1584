"""The seat reservation protocol: every write that changes a seat.

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

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from bson import Decimal128, ObjectId
from django.utils import timezone

from booking import checks
from booking.checks import MAX_SEATS_PER_HOLD, MAX_SEATS_PER_REQUEST
from booking.documents import FREE, TAKEN, Session
from booking.errors import (
    BoxOfficeBusy,
    InvalidRequest,
    NoAdjacentSeats,
    SeatsAlreadyHeld,
    SeatsNotHeld,
    SeatsTaken,
    SessionClosed,
    SessionNotFound,
    UnknownZone,
)
from booking.seating import best_block, cell_at, check_on_map, label_of, zone_names
from booking.values import Seat, SeatHold, seat_label

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
    return Session.coll()


def _now() -> datetime:
    # MongoDB keeps milliseconds: a hold answers with the time it stored.
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _result(doc: dict, cart_id: str, entries: Sequence[dict]) -> SeatHold:
    return SeatHold.of_entries(doc, cart_id, entries, zone_names(doc))


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
        cell = cell_at(layout, seat)
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
        raise SeatsTaken([label_of(layout, p) for p in others], others)
    raise SeatsAlreadyHeld([label_of(layout, p) for p in taken], taken)


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
        check_on_map(doc["layout"], positions)
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


def _entries_guard(
    field: str, cart_id: str, entries: list[dict], *, stamped: bool
) -> list[dict]:
    """The cart's entry for each of ``entries``' seats, still there (and, when
    ``stamped``, stamped as read): ``$elemMatch`` on the SAME entry."""
    return [
        {
            field: {
                "$elemMatch": {
                    "cart_id": cart_id,
                    "seat": e["seat"],
                    **({"at": e["at"]} if stamped else {}),
                }
            }
        }
        for e in entries
    ]


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
            check_on_map(doc["layout"], wanted)
        mine = _entries_of(doc, field, cart_id)
        targets = [mine[p] for p in (mine if wanted is None else wanted) if p in mine]
        if stamps is not None:
            # Only entries unchanged since the caller read them.
            targets = [e for e in targets if stamps.get(tuple(e["seat"])) == e["at"]]
        if not targets:
            return doc, []
        guard = _entries_guard(field, cart_id, targets, stamped=stamps is not None)
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


def _sell(oid: ObjectId, cart_id: str, held: list[dict]) -> list[dict] | None:
    """The one conditional update of a commit: the cart's entries for these
    seats move from ``reservations`` to ``sold``. Returns the sold entries,
    None when an entry was no longer there."""
    now = _now()
    entries = [{**entry, "at": now} for entry in held]
    positions = [tuple(entry["seat"]) for entry in held]
    result = _sessions().update_one(
        {"_id": oid, "$and": _entry_guard(cart_id, positions)},
        {
            "$pull": {"reservations": _pull_entries(cart_id, positions)},
            "$push": {"sold": {"$each": entries}},
            "$inc": {"version": 1},
        },
    )
    return entries if result.modified_count == 1 else None


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
            check_on_map(doc["layout"], wanted)
        held = _entries_of(doc, "reservations", cart_id)
        sold = _entries_of(doc, "sold", cart_id)
        positions = list(held) if wanted is None else list(wanted)
        missing = [p for p in positions if p not in held and p not in sold]
        if missing:
            raise SeatsNotHeld([label_of(doc["layout"], p) for p in missing], missing)
        to_sell = [p for p in positions if p in held]
        if wanted is None and not to_sell:
            positions = list(sold)  # a repeated commit-all answers the sale
        if to_sell:
            entries = _sell(oid, cart_id, [held[p] for p in to_sell])
            if entries is None:
                continue  # the cart's entries changed: read again
            sold.update({tuple(e["seat"]): e for e in entries})
        return _result(doc, cart_id, [sold[p] for p in positions])
    raise BoxOfficeBusy()


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
        names = zone_names(doc)
        if zone is not None and zone not in names:
            raise UnknownZone()
        block = best_block(doc, count, zone)
        if block is None:
            raise NoAdjacentSeats(count, names.get(zone))
        try:
            held = _hold(doc, cart_id, block, now)
        except SeatsTaken:
            continue  # lost the race for this block: look again
        if held is not None:
            return held
    raise BoxOfficeBusy()
