"""The seat reservation protocol: every write that changes a seat.

Seats follow the reservation protocol of DESIGN §3 (§3.10 for this
shape). A session holds one integer per cell (``seats[r][c]``): FREE, GAP,
BLOCKED, or the tag of the hold that has the seat (+tag held, -tag sold),
and the counters ``seatsAvailable``, ``held``, ``sold``, ``blocked``. Every
change of seat state is ONE conditional update of the session whose filter
carries the rule (each seat FREE to hold or block it; each seat carrying the
cart's tag to release, commit, return or hand it over; each BLOCKED to
unblock it, or for staff to hold it) and whose update moves states and
counters together. A modified count of 0 means the rule said no: nothing
changed. A released hold puts its seats back in the state they were held
from (FREE, or BLOCKED: ``holds.origin_of``, the one place of that rule).

The cart's side of a hold is its ``SeatHolds`` document (see
``booking.services.holds``). The order of writes of a hold: the intent
(entry "t<tag>" -> seats) first, then the session; a crash in between leaves
only an entry no seat carries, pruned by ``seat_holds_settle``. Giving back:
the session first, then the entries that became history are pruned; a crash
in between leaves history too. The session is the truth; an entry only says
which cart a tag belongs to. Neither document grows with other holders.

The invariants every service keeps, per session:

* ``seatsAvailable`` + ``held`` + ``sold`` + ``blocked`` == real seats, each
  counter equal to the number of seats in that state;
* every tag on a seat is listed (with that seat) by exactly one cart's entry;
* a seat has one state, so it is never held or sold twice.

Callers pass an opaque ``cart_id``: the booking app never learns what a cart
is (the shop owns carts and records what these services return).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from bson import Decimal128, ObjectId
from django.utils import timezone

from booking import checks, faults
from booking.checks import MAX_SEATS_PER_HOLD, MAX_SEATS_PER_REQUEST
from booking.documents import BLOCKED, FREE, Session, is_sold
from booking.errors import (
    BoxOfficeBusy,
    InvalidRequest,
    NoAdjacentSeats,
    SeatOffMap,
    SeatsAlreadyHeld,
    SeatsNotBlocked,
    SeatsNotHeld,
    SeatsTaken,
    SessionClosed,
    SessionNotFound,
    UnknownZone,
)
from booking.halls import Hall, hall, hall_of_session
from booking.seating import best_block, cell_at, check_on_map, label_of
from booking.services import holds
from booking.values import Seat, SeatHold
from config.decimals import decimal_of

CENT = Decimal("0.01")

# A release or commit that loses to a concurrent change of the same cart's
# seats reads again; two tries in a row are already unusual.
RETRIES = 5
# Best available retries after every lost race. Each loss means another cart
# won seats, so the contest always progresses; the bound covers a crowd.
BEST_AVAILABLE_ATTEMPTS = 25

# What a seat service reads back of the session: never the seat states.
_HEADER = {"name": 1, "theater_name": 1, "start": 1, "prices": 1, "layout_id": 1}


def _sessions():
    return Session.coll()


def _now() -> datetime:
    # MongoDB keeps milliseconds: a hold answers with the time it stored.
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _path(seat: Seat) -> str:
    return f"seats.{seat[0]}.{seat[1]}"


def swap_states(
    oid: ObjectId,
    moves: Sequence[tuple[Seat, int, int]],
    inc: Mapping[str, int],
    extra: Mapping | None = None,
) -> bool:
    """THE conditional update: each (seat, was, becomes) of ``moves`` only if
    every seat is in its ``was`` state (and ``extra`` holds), counters moved
    by ``inc`` and the map's version bumped. False when the filter matched
    nothing (nothing changed).

    An update, not a find-and-modify: the caller prices its answer from a
    header it read (a hold guards on it: ``_as_read``).
    Returning the document after would make the server rebuild the whole
    seat grid for each change, twice the CPU of the update itself
    (bench/RESULTS.md, "The session's update without its document")."""
    done = _sessions().update_one(
        {"_id": oid, **(extra or {}), "$and": [{_path(s): was} for s, was, _ in moves]},
        {
            "$set": {_path(s): becomes for s, _, becomes in moves},
            "$inc": {**inc, "version": 1},
        },
    )
    return done.modified_count == 1


def _header(oid: ObjectId, extra: Mapping | None = None) -> dict:
    doc = _sessions().find_one({"_id": oid}, {**_HEADER, **(extra or {})})
    if doc is None:
        raise SessionNotFound()
    return doc


# A session's header as this process last read it, for holds (bounded:
# emptied when full). A hold is priced from it and its update requires the
# session to have exactly these values (``_as_read``), so an old copy can
# only make the hold refused, and the refusal reads the header afresh: a
# hold is never priced, named or dated from a header the session no longer
# has. No service edits a header today (a performance is scheduled with its
# prices); the guard keeps holds right if one ever does. Saves a read per
# hold (bench/RESULTS.md, "Three reads and a delete fewer per theater
# flow").
_headers: dict[ObjectId, dict] = {}
_HEADERS_KEPT = 4096


def _known_header(oid: ObjectId) -> dict:
    found = _headers.get(oid)
    return found if found is not None else _fresh_header(oid)


def _fresh_header(oid: ObjectId) -> dict:
    return _keep_header(_header(oid))


def _keep_header(doc: dict) -> dict:
    if len(_headers) >= _HEADERS_KEPT:
        _headers.clear()
    _headers[doc["_id"]] = doc
    return doc


def sessions_warm(session_ids: Sequence[str]) -> int:
    """Read the headers of these sessions (one query) and their halls into
    this process's caches, as a process has them after its first holds: one
    about to sell them (a performance going on sale) then reads neither
    hold by hold. Returns how many sessions were found."""
    oids = [checks.session_oid(s) for s in session_ids]
    found = 0
    for doc in _sessions().find({"_id": {"$in": oids}}, _HEADER):
        _keep_header(doc)
        hall_of_session(doc["_id"])
        found += 1
    return found


def _as_read(header: dict, now: datetime) -> dict:
    """The filter that the session is not started and its header is still
    ``header``, field for field (``prices`` as the whole sub-document)."""
    guard = {f: header.get(f) for f in _HEADER if f != "start"}
    return {**guard, "start": {"$gt": now, "$eq": header["start"]}}


def read_state(oid: ObjectId) -> dict:
    return _header(oid, {"seats": 1})


def _result(
    doc: dict,
    h: Hall,
    cart_id: str,
    seats: Sequence[tuple[Seat, datetime]],
    tags: Mapping[Seat, int] | None = None,
) -> SeatHold:
    """The SeatHold of ``seats`` (with their stamps, and their tags where
    known), priced from ``doc``."""
    entries = []
    for seat, at in sorted(seats):
        cell = cell_at(h.layout, seat)
        price = decimal_of(doc["prices"][cell["zone"]]).quantize(CENT)
        entries.append(
            {
                "seat": list(seat),
                "label": label_of(h.layout, seat),
                "zone": cell["zone"],
                "price": Decimal128(price),
                "at": at,
                "tag": (tags or {}).get(seat),
            }
        )
    return SeatHold.of_entries(doc, cart_id, entries, h.zone_names)


def _hold(
    header: dict,
    h: Hall,
    cart_id: str,
    positions: Sequence[Seat],
    now: datetime,
    was: int = FREE,
) -> SeatHold | None:
    """One hold: the intent, then the session's conditional update (every
    seat ``was``, the performance not started, the header as read), priced
    from ``header``. Returns None when refused but no seat turned out taken
    on a second look: the caller tries again."""
    oid = header["_id"]
    if header["start"] <= now:
        raise SessionClosed()  # no intent to write and take back
    tag = holds.new_tag()
    created = holds.write_intent(oid, cart_id, tag, positions, now, origin=was)
    faults.point("seats.after_intent")
    n = len(positions)
    counter = "blocked" if was == BLOCKED else "seatsAvailable"
    if swap_states(
        oid,
        [(s, was, tag) for s in positions],
        {counter: -n, "held": n},
        _as_read(header, now),
    ):
        if _now() - now >= holds.LATE_HOLD:
            holds.restore_intent(oid, cart_id, tag, positions, now, origin=was)
        return _result(
            header,
            h,
            cart_id,
            [(s, now) for s in positions],
            {s: tag for s in positions},
        )
    holds.retract(oid, cart_id, tag, created)
    _explain_refused_hold(oid, h, cart_id, positions, now, was)
    return None


def _explain_refused_hold(oid, h: Hall, cart_id, positions, now, was) -> None:
    """Raise the error that made a hold's filter match nothing (if it lasts)."""
    doc = read_state(oid)
    if doc["start"] <= now:
        raise SessionClosed()
    state = doc["seats"]
    taken = [p for p in positions if state[p[0]][p[1]] != was]
    if not taken:
        return
    labels = [label_of(h.layout, p) for p in taken]
    if was == BLOCKED:
        raise SeatsNotBlocked(labels, taken, _states_in_words(state, taken))
    mine = holds.candidates(holds.read(oid, cart_id))
    others = [
        p for p in taken if state[p[0]][p[1]] not in {t for t, _ in mine.get(p, ())}
    ]
    if others:
        raise SeatsTaken([label_of(h.layout, p) for p in others], others)
    raise SeatsAlreadyHeld(labels, taken)


def _states_in_words(state, positions) -> str:
    """What ``positions`` are, in words: "free", "held in a cart", "sold"
    (several, joined with "or")."""
    words: list[str] = []
    for r, c in positions:
        value = state[r][c]
        if value == FREE:
            word = "free"
        elif is_sold(value):
            word = "sold"
        else:
            word = "held in a cart"
        if word not in words:
            words.append(word)
    return " or ".join(words)


def seats_hold(
    *,
    session_id: str,
    cart_id: str,
    seats: Sequence[Seat],
    from_blocked: bool = False,
) -> SeatHold:
    """Hold every seat of ``seats`` for the cart, all or nothing.

    The cart's intent (tag t -> these seats) is recorded, then ONE
    conditional update of the session: the filter requires each seat FREE
    (BLOCKED with ``from_blocked``: staff selling seats held back), the
    performance not started and the session's header as this process last
    read it (what the answer is priced from: ``_as_read``); the update puts
    t on them and moves n from
    ``seatsAvailable`` (or ``blocked``) to ``held``. A refused hold takes its
    intent back. The intent records where the seats came from: a hold of
    blocked seats that is released (run out, reconciled) puts them back
    BLOCKED, never FREE (``holds.origin_of``). Invariants: see the module.

    Raises InvalidSeats (not 1..10 distinct (row, col) pairs of non-negative
    ints), InvalidRequest (bad cart id), SessionNotFound, SessionClosed,
    SeatOffMap (off the grid or on a gap), SeatsTaken (another cart holds or
    bought one of them, or staff blocked it), SeatsAlreadyHeld (this cart
    already holds them), SeatsNotBlocked (``from_blocked``: one is not).
    """
    positions = checks.positions(seats, limit=MAX_SEATS_PER_HOLD)
    cart_id = checks.cart_id(cart_id)
    oid = checks.session_oid(session_id)
    header = _known_header(oid)
    # Started, or a seat off the map, as this process last read the
    # session: ask the session itself.
    try:
        check_on_map(hall(header["layout_id"]).layout, positions)
        stale = header["start"] <= _now()
    except SeatOffMap:
        stale = True
    if stale:
        header = _fresh_header(oid)
    was = BLOCKED if from_blocked else FREE
    for _ in range(RETRIES):
        h = hall(header["layout_id"])
        check_on_map(h.layout, positions)
        held = _hold(header, h, cart_id, positions, _now(), was)
        if held is not None:
            return held
        # Refused, and no seat turned out taken: another cart's change came
        # in between, or the header is no longer as this process read it.
        header = _fresh_header(oid)
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


def _targets(
    doc: dict | None,
    wanted: Sequence[Seat] | None,
    stamps: Mapping[Seat, datetime] | None,
    state: list | None,
    sign: int,
) -> dict[Seat, tuple[int, datetime]]:
    """The cart's seats to act on: seat -> (tag, stamp). With the session's
    ``state``, only seats carrying ``sign`` * tag; without it (a first,
    optimistic try), each seat's newest entry."""
    found = {}
    for seat, pairs in holds.candidates(doc).items():
        if wanted is not None and seat not in wanted:
            continue
        if stamps is not None:
            pairs = [p for p in pairs if stamps.get(seat) == p[1]]
        if state is not None:
            value = state[seat[0]][seat[1]]
            pairs = [p for p in pairs if value == sign * p[0]]
        if pairs:
            found[seat] = pairs[0]
    return found


def _back_counts(moves: Sequence[tuple[Seat, int, int]], sign: int) -> dict:
    """The counters of seats leaving ``held`` (``sign`` +1) or ``sold`` (-1)
    for the states ``moves`` give them (FREE or BLOCKED)."""
    blocked = sum(1 for _, _, becomes in moves if becomes == BLOCKED)
    inc = {"held" if sign > 0 else "sold": -len(moves)}
    inc["seatsAvailable"] = len(moves) - blocked
    if blocked:
        inc["blocked"] = blocked
    return inc


def _free_seats(
    oid: ObjectId,
    cart_id: str,
    wanted: Sequence[Seat] | None,
    stamps: Mapping[Seat, datetime] | None,
    sign: int,
) -> list[tuple[Seat, datetime]]:
    """Move the cart's held (``sign`` +1) seats back to the state they were
    taken from (``holds.origin_of``: FREE, or BLOCKED for house seats staff
    held), or its sold (-1) seats back to FREE.

    The one conditional update behind ``seats_release`` and ``seats_return``:
    the filter requires each seat to carry the cart's tag; the update sets
    each seat's new state and moves n from ``held`` (or ``sold``) to
    ``seatsAvailable`` and ``blocked``. Seats the cart does not have are
    skipped. Returns the seats freed with their stamps.
    """
    state = None
    for _ in range(RETRIES):
        doc = holds.read(oid, cart_id)
        targets = _targets(doc, wanted, stamps, state, sign)
        if not targets:
            return []
        origins = holds.origins(doc) if sign > 0 else {}
        moves = [
            (s, sign * tag, origins.get(tag, FREE)) for s, (tag, _) in targets.items()
        ]
        if not swap_states(oid, moves, _back_counts(moves, sign)):
            state = read_state(oid)["seats"]  # ask the session which are the cart's
            continue
        faults.point("seats.after_release")
        holds.forget(oid, cart_id, {s: t for s, (t, _) in targets.items()}, doc)
        return [(s, at) for s, (_, at) in targets.items()]
    raise BoxOfficeBusy()


def _wanted(seats) -> tuple[Seat, ...] | None:
    if seats is None:
        return None
    return checks.positions(seats, limit=MAX_SEATS_PER_REQUEST)


def _cart_seats(session_id, cart_id, seats) -> tuple:
    """The checked arguments of a service on one cart's seats: the seats
    wanted (None: all the cart's), the cart id, the session's id and hall.
    Raises InvalidSeats, InvalidRequest, SessionNotFound, SeatOffMap."""
    wanted = _wanted(seats)
    cart_id = checks.cart_id(cart_id)
    oid = checks.session_oid(session_id)
    h = hall_of_session(oid)
    if wanted is not None:
        check_on_map(h.layout, wanted)
    return wanted, cart_id, oid, h


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
    call released. One conditional update: each seat still carries the
    cart's tag; it goes back to the state it was held from (FREE, or BLOCKED
    for house seats staff held: ``holds.origin_of``) and ``held`` gives n
    back to ``seatsAvailable`` and ``blocked``; then the entries that became
    history are pruned.
    Releasing one seat of a multi-seat hold leaves the others held. With
    ``expect_at`` (seat -> stamp, as the shop's reconciler read it) only
    seats of entries still carrying that stamp are released: a seat held
    again or handed to another cart since has a new tag and is left alone.

    Raises InvalidSeats, InvalidRequest (bad cart id or stamps),
    SessionNotFound, SeatOffMap, BoxOfficeBusy (the cart's own seats kept
    changing).
    """
    stamps = _stamps(expect_at)
    wanted, cart_id, oid, h = _cart_seats(session_id, cart_id, seats)
    freed = _free_seats(oid, cart_id, wanted, stamps, +1)
    return _result(_header(oid), h, cart_id, freed)


def seats_return(
    *, session_id: str, cart_id: str, seats: Sequence[Seat] | None = None
) -> SeatHold:
    """Put seats sold to the cart back on sale (its order was canceled).

    ONE conditional update: each seat carries the cart's sold tag (-t); they
    become FREE and n moves from ``sold`` to ``seatsAvailable``. Seats not
    sold to the cart (returned already) are skipped, so a repeat is
    harmless; the result lists the seats this call returned. A performance
    that has started may have seats returned (a refund after the curtain):
    they cannot be held any more anyway. Same invariants as ``seats_hold``.

    Raises InvalidSeats, InvalidRequest (bad cart id), SessionNotFound,
    SeatOffMap, BoxOfficeBusy.
    """
    wanted, cart_id, oid, h = _cart_seats(session_id, cart_id, seats)
    freed = _free_seats(oid, cart_id, wanted, None, -1)
    return _result(_header(oid), h, cart_id, freed)


def seats_refresh(
    *,
    session_id: str,
    cart_ids: Sequence[str],
    before: datetime,
    now: datetime | None = None,
) -> int:
    """Stamp ``at = now`` on the entries of these carts stamped before ``before``.

    The shop's reconciler confirmed those carts still list the seats. Only
    the stamps change (one update per cart's document), never a seat state,
    so the map's version stays. Returns how many documents were stamped.

    Raises InvalidRequest (bad cart id or times), SessionNotFound.
    """
    ids = [checks.cart_id(c) for c in cart_ids]
    for moment in (before, now or before):
        if not isinstance(moment, datetime):
            raise InvalidRequest("Stamps are times.")
    oid = checks.session_oid(session_id)
    now = now or _now()
    return sum(_stamp(doc_id, stale, now) for doc_id, stale in _stale(oid, ids, before))


def _stale(oid, cart_ids: list[str], before: datetime) -> list[tuple[str, dict]]:
    """Per holds document of these carts, its entries stamped before
    ``before``: (document id, {tag: at as read})."""
    found = holds.holds_coll().find(
        {"_id": {"$in": [holds.holds_id(oid, c) for c in cart_ids]}}
    )
    stale = []
    for doc in found:
        entries = doc.get("holds", {})
        old = {k: e["at"] for k, e in entries.items() if e["at"] < before}
        if old:
            stale.append((doc["_id"], old))
    return stale


def _stamp(doc_id: str, stale: dict, now: datetime) -> int:
    """Stamp ``now`` on the entries ``stale`` (tag -> at as read), guarded
    on each being as read: an entry released since is gone, and a stamp
    alone must not write it back (an entry without its seats breaks every
    reader of the document). 0 when one changed: the reconciler's next run
    stamps what is left."""
    guard = {f"holds.{k}.at": at for k, at in stale.items()}
    update = {"$set": {"at": now, **{f"holds.{k}.at": now for k in stale}}}
    return (
        holds.holds_coll().update_one({"_id": doc_id, **guard}, update).modified_count
    )


def _transfer_intents(oid, target: str, doc: dict, held: Mapping, now: datetime):
    """The target's intents for the seats ``held`` (seat -> (old tag, at)):
    one new tag per origin, so the seats keep where they go back to
    (``holds.origin_of``). Returns (old tag -> new tag, the intents as
    [(new tag, origin, seats, created)])."""
    origins = holds.origins(doc)
    by_origin: dict[int, list[Seat]] = {}
    for seat, (old, _) in held.items():
        by_origin.setdefault(origins.get(old, FREE), []).append(seat)
    tags = {origin: holds.new_tag() for origin in by_origin}
    intents = []
    for o, seats in by_origin.items():
        seats = sorted(seats)
        created = holds.write_intent(oid, target, tags[o], seats, now, o)
        intents.append((tags[o], o, seats, created))
    return {old: tags[origins.get(old, FREE)] for old, _ in held.values()}, intents


def seats_transfer(*, session_id: str, from_cart_id: str, to_cart_id: str) -> SeatHold:
    """Hand every seat ``from_cart_id`` holds in the session to ``to_cart_id``.

    For the shop's cart merge at login. The target's intent (a new tag ->
    the seats) first; then ONE conditional update: each seat still carries
    the source's tag and gets the target's (one new tag per origin, so the
    seats keep where they go back to), so no seat is FREE in between and
    nobody else can take it; counters stay. Then the source's entries go.
    Returns the seats handed over (none if it held none).

    Raises InvalidRequest (bad cart ids, or both the same), SessionNotFound,
    BoxOfficeBusy.
    """
    source = checks.cart_id(from_cart_id)
    target = checks.cart_id(to_cart_id)
    if source == target:
        raise InvalidRequest("A cart cannot hand seats to itself.")
    oid = checks.session_oid(session_id)
    h = hall_of_session(oid)
    for _ in range(RETRIES):
        doc = holds.read(oid, source)
        if doc is None:
            return _result(_header(oid), h, target, [])
        found = read_state(oid)
        held = _targets(doc, None, None, found["seats"], +1)
        if not held:
            return _result(found, h, target, [])
        now = _now()
        new_tags, intents = _transfer_intents(oid, target, doc, held, now)
        faults.point("seats.after_transfer_intent")
        moves = [(s, old, new_tags[old]) for s, (old, _) in held.items()]
        if not swap_states(oid, moves, {}):
            for tag, _, _, created in intents:
                holds.retract(oid, target, tag, created)
            continue
        if _now() - now >= holds.LATE_HOLD:
            # Landed late: settling may have pruned the intents meanwhile.
            for tag, origin, seats, _ in intents:
                holds.restore_intent(oid, target, tag, seats, now, origin)
        faults.point("seats.after_transfer")
        holds.forget(oid, source, {s: t for s, (t, _) in held.items()}, doc)
        return _result(
            found,
            h,
            target,
            [(s, now) for s in held],
            {s: new_tags[old] for s, (old, _) in held.items()},
        )
    raise BoxOfficeBusy()


def _sell(
    oid, cart_id, wanted, state, doc: dict | None = None
) -> tuple[bool, dict, dict, list]:
    """One try of a commit: (sold or not, held before, sold before,
    missing). With ``state`` unknown, optimistically every wanted seat is
    taken to be held under its newest entry. ``doc``: the cart's holds
    document if the caller has just read it."""
    doc = doc if doc is not None else holds.read(oid, cart_id)
    held = _targets(doc, wanted, None, state, +1)
    sold = {} if state is None else _targets(doc, wanted, None, state, -1)
    seats = list(wanted) if wanted is not None else sorted({*held, *sold})
    missing = [p for p in seats if p not in held and p not in sold]
    if missing or not held:
        return False, held, sold, missing
    n = len(held)
    moves = [(s, tag, -tag) for s, (tag, _) in held.items()]
    return swap_states(oid, moves, {"held": -n, "sold": n}), held, sold, []


def seats_commit(
    *,
    session_id: str,
    cart_id: str,
    seats: Sequence[Seat] | None = None,
    holds_doc: dict | None = None,
) -> SeatHold:
    """Sell the cart's held seats (``seats``, or all it holds when None).

    ONE conditional update: each seat carries the cart's tag t; it becomes
    -t (sold, under the same tag) and n moves from ``held`` to ``sold``.
    Who bought it is on the order (the shop's). Idempotent: seats already
    sold to this cart count as committed, so a repeated checkout gets the
    same answer.

    ``holds_doc``: the cart's holds document as the caller just read it
    (``booking.selectors.seats_not_held``), spared a read on the first try.

    Raises InvalidSeats, InvalidRequest (bad cart id), SessionNotFound,
    SeatOffMap, SeatsNotHeld (a seat neither held by nor sold to the cart:
    its hold expired), BoxOfficeBusy.
    """
    wanted, cart_id, oid, h = _cart_seats(session_id, cart_id, seats)
    if holds_doc is not None and not holds.stamped(holds_doc):
        # The entries a line's tags prove carry no stamps, and this answer
        # gives each seat its hold's: read the document.
        holds_doc = None
    found, done = _commit(oid, h, cart_id, wanted, holds_doc)
    return _result(found or _header(oid), h, cart_id, done)


def seats_sell(
    *,
    session_id: str,
    cart_id: str,
    seats: Sequence[Seat],
    holds_doc: dict | None = None,
) -> tuple[Seat, ...]:
    """``seats_commit`` of these seats for a caller that needs no priced
    answer (checkout priced them before the charge): the same update, the
    same guarantees and errors, without reading the session's names and
    prices again. Returns the seats the cart now owns, in order."""
    wanted, cart_id, oid, h = _cart_seats(session_id, cart_id, seats)
    _, done = _commit(oid, h, cart_id, wanted, holds_doc)
    return tuple(sorted(s for s, _ in done))


def _commit(
    oid: ObjectId, h: Hall, cart_id: str, wanted, holds_doc: dict | None
) -> tuple[dict | None, list[tuple[Seat, datetime]]]:
    """The commit with its retries: (the session as last read, None if never;
    the seats sold to the cart with the stamps of their holds)."""
    # Committing all: ask the session first (old entries are history).
    found = None if wanted is not None else read_state(oid)
    for _ in range(RETRIES):
        state = None if found is None else found["seats"]
        sold_now, held, sold, missing = _sell(oid, cart_id, wanted, state, holds_doc)
        holds_doc = None  # a second try reads it again
        if sold_now:
            # Stamped when held: a repeated commit answers the same.
            return found, [(s, at) for s, (_, at) in {**held, **sold}.items()]
        if found is not None and missing:
            labels = [label_of(h.layout, p) for p in missing]
            raise SeatsNotHeld(labels, missing)
        if found is not None and not held:  # a repeated commit: answer the sale
            return found, [(s, at) for s, (_, at) in sold.items()]
        found = read_state(oid)
    raise BoxOfficeBusy()


def seats_best_available(
    *, session_id: str, cart_id: str, count: int, zone: str | None = None
) -> SeatHold:
    """Find and hold the best ``count`` adjacent seats in ``zone`` (any if None).

    Picks the block from a fresh read (see ``booking.seating.best_block``;
    blocked seats are not FREE, so never offered), then holds it with the
    same intent and single conditional update as ``seats_hold``. When
    another cart takes one of those seats first, the update matches nothing,
    and the search starts again from a fresh read: a seat held by another
    cart is never returned. Same invariants as ``seats_hold``.

    Raises InvalidSeats (count not 1..10), InvalidRequest (bad cart id),
    UnknownZone, SessionNotFound, SessionClosed, NoAdjacentSeats,
    BoxOfficeBusy (lost the race more than BEST_AVAILABLE_ATTEMPTS times).
    """
    count = checks.seat_count(count)
    cart_id = checks.cart_id(cart_id)
    if zone is not None and not isinstance(zone, str):
        raise UnknownZone()
    oid = checks.session_oid(session_id)
    for _ in range(BEST_AVAILABLE_ATTEMPTS):
        now = _now()
        doc = read_state(oid)
        if doc["start"] <= now:
            raise SessionClosed()
        h = hall(doc["layout_id"])
        names = h.zone_names
        if zone is not None and zone not in names:
            raise UnknownZone()
        block = best_block(h.layout, h.zones, doc["seats"], count, zone)
        if block is None:
            raise NoAdjacentSeats(count, names.get(zone))
        try:
            held = _hold(doc, h, cart_id, block, now)
        except SeatsTaken:
            continue  # lost the race for this block: look again
        if held is not None:
            return held
    raise BoxOfficeBusy()
