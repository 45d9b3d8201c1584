"""Halls and performances: creating a theater from its layout and putting a
session on sale, with the checks of what the caller passes.

A theater's layout is validated once, here, and written as version 1 of the
hall's immutable ``SeatLayout``; a session names that version and copies only
the state map (all seats FREE) and its prices. Seat changes are the
protocol's (``booking.services.seats``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from bson import Decimal128, ObjectId
from django.utils import timezone
from mongoengine import NotUniqueError, ValidationError
from pymongo.errors import DuplicateKeyError

from booking.documents import (
    FLAGS,
    FREE,
    GAP,
    Cell,
    SeatLayout,
    Session,
    Theater,
    Zone,
)
from booking.errors import (
    InvalidLayout,
    InvalidRequest,
    PerformanceOverlaps,
    SchedulingBusy,
    TheaterNotFound,
    UnknownZone,
)
from booking.values import SeatSpec, ZoneSpec, seat_label

MAX_GRID = 200  # rows, and cells per row
MAX_PRICE = Decimal("100000")
# A performance longer than this is a typing slip (a year for an hour), not
# a show: it would take the hall off everyone's schedule.
MAX_PERFORMANCE = timedelta(hours=24)
# A scheduling's turn at its theater: far longer than its read and insert
# take. A process that dies in its turn holds the hall's scheduling this
# long, nothing more; another waits at most TURN_WAIT for the turn.
TURN_LEASE = timedelta(seconds=10)
TURN_WAIT = 5.0
TURN_POLL = 0.05
CENT = Decimal("0.01")


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


def _grid(
    layout: Sequence[Sequence[SeatSpec | None]], codes: list[str]
) -> tuple[list[list[Cell]], list[list[int]], set[tuple[str, int]]]:
    """The layout's cells, its state map (FREE on seats, GAP elsewhere) and
    its seat labels; InvalidLayout when a row, a seat or a label is wrong."""
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
    return cells, state, labels


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
    cells, state, labels = _grid(layout, codes)
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
        layout_version=1,
        created_at=timezone.now(),
    )
    try:
        theater.save()
    except NotUniqueError as exc:
        raise InvalidLayout(f"A theater named {name.strip()} already exists.") from exc
    except ValidationError as exc:
        raise InvalidLayout(f"That seat layout is not valid: {exc.message}") from exc
    # Its layout version 1 (session_create writes it too if this is lost).
    layout_write(theater_id=theater.pk, theater=theater)
    return str(theater.id)


def layout_id_of(theater_id: ObjectId, version) -> str:
    return f"{theater_id}:{version}"


def layout_write(*, theater_id: ObjectId, theater, version="1") -> str:
    """Write a hall's layout version (idempotent: the same id, the same
    content). ``theater`` is a ``Theater`` or its raw document."""
    raw = theater.to_mongo().to_dict() if isinstance(theater, Theater) else theater
    layout_id = layout_id_of(theater_id, version)
    SeatLayout.coll().update_one(
        {"_id": layout_id},
        {
            "$setOnInsert": {
                "theater_id": theater_id,
                "version": str(version),
                "zones": raw["zones"],
                "layout": raw["layout"],
                "seats": raw["seats"],
                "seat_count": raw["seatsAvailable"],
                "created_at": timezone.now(),
            }
        },
        upsert=True,
    )
    return layout_id


def _check_performance(show, description, start, end, prices) -> None:
    """InvalidRequest unless the performance's own fields are usable."""
    if not isinstance(show, str) or not show.strip() or len(show) > 160:
        raise InvalidRequest("A performance needs a show name (up to 160 letters).")
    if not isinstance(description, str):
        raise InvalidRequest("The description must be text.")
    for moment in (start, end):
        if not isinstance(moment, datetime) or timezone.is_naive(moment):
            raise InvalidRequest("Start and end must be timezone-aware times.")
    if start >= end:
        raise InvalidRequest("A performance must end after it starts.")
    if end - start > MAX_PERFORMANCE:
        hours = int(MAX_PERFORMANCE.total_seconds() // 3600)
        raise InvalidRequest(f"A performance lasts at most {hours} hours.")
    if start <= timezone.now():
        raise InvalidRequest("A performance cannot start in the past.")
    if not isinstance(prices, Mapping):
        raise InvalidRequest("Prices are given per zone.")


def _check_prices(theater: dict, prices: Mapping) -> None:
    """A price for every zone the hall seats people in, and for no other."""
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


def _refuse_overlap(theater_id: ObjectId, start: datetime, end: datetime) -> None:
    """PerformanceOverlaps if a performance of this theater meets [start, end).

    A read, then the caller's insert: only within the theater's turn
    (``_theater_turn``), so no other scheduling of the hall comes between.
    """
    clash = _clash(theater_id, start, end)
    if clash is not None:
        raise PerformanceOverlaps(clash["name"], clash["start"], clash["end"])


def _clash(
    theater_id: ObjectId, start: datetime, end: datetime, besides: str | None = None
) -> dict | None:
    """A performance of this theater (other than ``besides``) that meets
    [start, end), if any."""
    other = {"_id": {"$ne": ObjectId(besides)}} if besides else {}
    return Session.coll().find_one(
        {"theater_id": theater_id, "start": {"$lt": end}, "end": {"$gt": start}}
        | other,
        {"name": 1, "start": 1, "end": 1},
    )


def session_create(
    *,
    theater_id: str,
    show: str,
    start: datetime,
    end: datetime,
    prices: Mapping[str, Decimal],
    description: str = "",
    key: str | None = None,
) -> str:
    """Put a performance on sale in a theater; returns the session id.
    ``key``: the scheduling form's (``session_schedule``), recorded on the
    session, unique.

    The session names the theater's current layout version (immutable, so
    a later re-arrangement of the hall leaves it alone) and copies only its
    state map (all seats FREE, gaps stay gaps) and seat count. Invariant at
    birth: ``seatsAvailable`` == real seats; nothing held, sold or blocked.

    Raises TheaterNotFound, UnknownZone (a price for a zone the hall lacks),
    InvalidRequest (no show name, times not timezone-aware, start in the past
    or not before end, a price missing or not a Decimal).
    """
    if not isinstance(theater_id, str) or not ObjectId.is_valid(theater_id):
        raise TheaterNotFound()
    _check_performance(show, description, start, end, prices)
    theater = Theater.coll().find_one({"_id": ObjectId(theater_id)})
    if theater is None:
        raise TheaterNotFound()
    _check_prices(theater, prices)
    version = theater.get("layout_version", 1)
    # Written by theater_create; a theater of an older database gets it here.
    layout_id = layout_write(
        theater_id=theater["_id"], theater=theater, version=version
    )
    session = _new_session(theater, layout_id, show, description, start, end, prices)
    if key is not None:
        session["schedule_key"] = key
    return str(Session.coll().insert_one(session).inserted_id)


def _new_session(theater, layout_id, show, description, start, end, prices) -> dict:
    """A session document at birth: every seat free, no hold, sale or block."""
    return {
        "theater_id": theater["_id"],
        "theater_name": theater["name"],
        "layout_id": layout_id,
        "name": show.strip(),
        "description": description.strip(),
        "start": start,
        "end": end,
        "prices": {code: Decimal128(_price(p)) for code, p in prices.items()},
        "seats": theater["seats"],
        "seatsAvailable": theater["seatsAvailable"],
        "held": 0,
        "sold": 0,
        "blocked": 0,
        "seat_count": theater["seatsAvailable"],
        "version": 0,
        "created_at": timezone.now(),
    }


def session_schedule(
    *,
    theater_id: str,
    show: str,
    start: datetime,
    end: datetime,
    prices: Mapping[str, Decimal],
    description: str = "",
    key: str | None = None,
) -> str:
    """Schedule a performance as the box office does: ``session_create``
    (which refuses a start in the past), in a theater free at that time.

    Invariant: no two performances scheduled here meet in one theater. The
    overlap read and the insert happen in the theater's turn, so two
    schedulings of one hall (two clerks, or one double click) take turns
    and the second sees the first's performance. A turn whose lease ran out
    before it was given back (a stall) looks at the calendar again and
    takes its performance back on a clash (``_withdraw_if_overlapping``).
    ``key`` is the form's (drawn with the page): a form sent twice
    schedules once, and the repeat answers the session the first one made.

    Loaders (the demo, benchmarks, tests) call ``session_create`` directly
    and may stack sessions in one hall; a person scheduling may not.

    Raises what session_create raises, PerformanceOverlaps, and
    SchedulingBusy (the turn not had within TURN_WAIT).
    """
    if not isinstance(theater_id, str) or not ObjectId.is_valid(theater_id):
        raise TheaterNotFound()
    _check_performance(show, description, start, end, prices)
    wanted = (ObjectId(theater_id), show.strip(), start, end)
    with _theater_turn(ObjectId(theater_id)) as turn:
        if key is not None and (made := _scheduled_by(key, wanted)):
            return made  # the same form, sent again
        _refuse_overlap(ObjectId(theater_id), start, end)
        try:
            made = session_create(
                theater_id=theater_id,
                show=show,
                start=start,
                end=end,
                prices=prices,
                description=description,
                key=key,
            )
        except DuplicateKeyError:
            # Only after a turn lost to its lease: the first is the session.
            if key is not None and (made := _scheduled_by(key, wanted)):
                return made
            raise
    if not turn.kept:
        _withdraw_if_overlapping(made, ObjectId(theater_id), start, end)
    return made


def _withdraw_if_overlapping(
    session_id: str, theater_id: ObjectId, start: datetime, end: datetime
) -> None:
    """The turn's lease ran out before this scheduling gave it back (a
    stall longer than TURN_LEASE), so another may have read the calendar
    without this performance: look again. On a clash this one is taken
    back, if nothing is held, sold or blocked in it yet (at worst both are
    refused), and PerformanceOverlaps raised; one already selling seats is
    kept, beside the other, for staff to see on the calendar."""
    clash = _clash(theater_id, start, end, besides=session_id)
    if clash is None:
        return
    untouched = {"_id": ObjectId(session_id), "held": 0, "sold": 0, "blocked": 0}
    if Session.coll().delete_one(untouched).deleted_count:
        raise PerformanceOverlaps(clash["name"], clash["start"], clash["end"])


def _scheduled_by(key: str, wanted: tuple) -> str | None:
    """The session the scheduling form ``key`` made, if it made one; the
    form sent again with other values (edited after going Back) is refused:
    it would be answered with a performance it does not describe."""
    found = Session.coll().find_one(
        {"schedule_key": key}, {"theater_id": 1, "name": 1, "start": 1, "end": 1}
    )
    if found is None:
        return None
    if (found["theater_id"], found["name"], found["start"], found["end"]) != wanted:
        raise InvalidRequest(
            f"This form has scheduled {found['name']} already: open the page "
            "again to schedule another performance."
        )
    return str(found["_id"])


class _Turn:
    kept = True  # given back by its own token: no one else had it meanwhile


@contextmanager
def _theater_turn(theater_id: ObjectId) -> Iterator[_Turn]:
    """Hold the theater's turn to schedule: a lease on the theater document
    (token and end), taken by one conditional update (free, or its lease
    over) and given back by its token. Waits for a turn others hold, up to
    TURN_WAIT. Yields the turn, whose ``kept`` says afterwards whether the
    lease outlived the work (else another scheduling may have taken it).
    Raises TheaterNotFound, SchedulingBusy."""
    token = uuid.uuid4().hex
    theaters = Theater.coll()
    deadline = time.monotonic() + TURN_WAIT
    while True:
        now = timezone.now()
        taken = theaters.update_one(
            {"_id": theater_id, "scheduling_until": {"$not": {"$gt": now}}},
            {"$set": {"scheduling_token": token, "scheduling_until": now + TURN_LEASE}},
        )
        if taken.matched_count:
            break
        if theaters.find_one({"_id": theater_id}, {"_id": 1}) is None:
            raise TheaterNotFound()
        if time.monotonic() >= deadline:
            raise SchedulingBusy()
        time.sleep(TURN_POLL)  # another scheduling's read and insert
    turn = _Turn()
    try:
        yield turn
    finally:
        given_back = theaters.update_one(
            {"_id": theater_id, "scheduling_token": token},
            {"$unset": {"scheduling_token": "", "scheduling_until": ""}},
        )
        turn.kept = bool(given_back.matched_count)
