"""The counter's side of every stock move (docs/architecture.md §3.8).

A stock location's ``Inventory`` counts its free units (``quantity``), what
it ``received`` and what is ``sold``, and journals the moves in flight:
``takes`` (units that left for a hold) and ``gives`` (units a hold gave
back, applied once). This module writes counters only; where the units
are held, and the order of the writes around these steps, are the
protocol's (``shop.kinds.line_stock``: the units a cart holds are in its
lines):

* a take's step 1 (``take``): ``quantity >= n``, ``$inc -n``, a ``takes``
  entry; undone once by ``untake`` when the hold refuses;
* a give-back's step 2 (``give``): free and sold units back on their
  counters, each applied once (``gives.op`` not there yet), one statement
  for several counters;
* the recovery's steps on the counter: a give-back fenced (``fence_give``)
  and applied by the fence (``apply_fenced``), entries dropped (``drop``).

A move's journal entry on the counter has done its work once the move is
finished. It is not dropped by a write of its own: the process drops it in
its next write to the same counter (``Finished``), and the reconciler drops
what no process did, so a counter's journal holds the moves in flight and a
few finished ones per process, never one per holder.
"""

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime

from pymongo.collection import Collection
from pymongo.errors import ConnectionFailure, PyMongoError

from catalog.documents import Inventory

# Written by the reconciler: a fence kept until the cleanup's retention.
RECOVERY = "recovery"


def inventories() -> Collection:
    return Inventory.coll()


def new_op() -> str:
    """A move's id: unique, so a step guarded on it applies once."""
    return uuid.uuid4().hex


# --- Finished moves' journal entries --------------------------------------------


class Finished:
    """The journal entries of this process's finished moves, per counter,
    which its next write to that counter drops (a take's step 1, a
    give-back's step 2).

    Dropping each entry with a write of its own cost a third of a take's
    writes and a quarter of a give-back's; folded into the next write, a
    busy counter is rewritten once per move. Only a move this process
    finished itself is kept here (never one a recovery's fence took over:
    ``give`` leaves those out), and dropping its entry is safe at any time,
    so on any doubt (a write that matched nothing) the entries are kept for
    the next write. Keyed by database and stock location; bounded: an entry
    forgotten here (a process that stops, a SKU it never writes again) is
    left to the reconciler.
    """

    LIMIT = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ops: OrderedDict[tuple[str, str], tuple[set, set]] = OrderedDict()

    @staticmethod
    def _key(sku: str) -> tuple[str, str]:
        return inventories().database.name, sku

    def add(self, sku: str, *, takes: Iterable[str] = (), gives: Iterable[str] = ()):
        key = self._key(sku)
        with self._lock:
            done_takes, done_gives = self._ops.setdefault(key, (set(), set()))
            done_takes.update(takes)
            done_gives.update(gives)
            self._ops.move_to_end(key)
            while len(self._ops) > self.LIMIT:
                self._ops.popitem(last=False)

    def pop(self, sku: str) -> tuple[list[str], list[str]]:
        """The finished takes and give-backs of ``sku``, no longer kept."""
        with self._lock:
            done_takes, done_gives = self._ops.pop(self._key(sku), ((), ()))
        return sorted(done_takes), sorted(done_gives)


finished = Finished()


def taken(sku: str, op: str) -> None:
    """Take ``op`` is finished (its hold lists it): its entry may go."""
    finished.add(sku, takes=[op])


def given(sku: str, op: str) -> None:
    """Give-back ``op`` is finished (its hold's ``back`` entry is gone): its
    entry may go."""
    finished.add(sku, gives=[op])


def journal(field: str, drop: Iterable[str] = (), add: dict | None = None) -> dict:
    """The counter's journal ``field`` without the entries of the moves
    ``drop``, with ``add`` appended: an expression of a pipeline update (an
    update cannot both push to an array and pull from it)."""
    drop = list(drop)
    if drop:
        entries = kept(field, {"$literal": drop})
    else:
        entries = {"$ifNull": [f"${field}", []]}
    if add is not None:
        entries = {"$concatArrays": [entries, {"$literal": [add]}]}
    return entries


def kept(field: str, drop: object) -> dict:
    """The journal ``field``'s entries but those of the ops ``drop`` (an
    expression worth a list). A recovery's fence is never dropped here: only
    the cleanup's retention ends it."""
    done = {"$in": ["$$entry.op", drop]}
    fence = {"$eq": [{"$ifNull": ["$$entry.by", None]}, RECOVERY]}
    return {
        "$filter": {
            "input": {"$ifNull": [f"${field}", []]},
            "as": "entry",
            "cond": {"$or": [{"$not": [done]}, fence]},
        }
    }


def each(values: Mapping[str, object], default: object) -> dict:
    """An expression worth ``values[_id]`` in each document (``default`` in
    any other): how one statement that updates several documents gives each
    its own values.

    Why one statement: a checkout commits every product line of its cart at
    once, and on the Rust server each statement of a bulk write is a
    transaction of its own; five documents in one statement cost the daemon
    about half of what five statements do (bench/RESULTS.md). Such a
    statement still carries each document's guard: in its filter with
    plain operators (an op each move writes, unique: see ``give``).
    """
    branches = [
        {"case": {"$eq": ["$_id", {"$literal": key}]}, "then": value}
        for key, value in values.items()
    ]
    return {"$switch": {"branches": branches, "default": default}}


def retried(write: Callable[[], object]) -> object:
    """``write()``, tried once more after a lost connection or a failover.

    pymongo retries a single-document write by itself (retryable writes,
    on a replica set) but never a statement that may write several. Each
    step of a give-back applies once however often it runs (the holds' by
    their guard as read, the counters' and the finish by the moves' ops),
    so one more try is safe; a partial first try shows as fewer documents
    written, which the give-back already reads as such."""
    return tried(write)[0]


def tried(write: Callable[[], object]) -> tuple[object, bool]:
    """``retried``, and whether it took a second try."""
    try:
        return write(), False
    except PyMongoError as exc:
        if not (
            isinstance(exc, ConnectionFailure)
            or exc.has_error_label("RetryableWriteError")
        ):
            raise
        return write(), True


# --- A take: step 1, or its undoing ------------------------------------------------


def take(sku: str, hold: str, units: int, now: datetime) -> str | None:
    """Step 1 of a take: ``units`` leave the free units for ``hold``,
    journaled in ``takes`` (this process's finished entries of the counter
    dropped by the same write). The move's op; None when the counter
    refused (fewer units free, or no such location): nothing changed."""
    op = new_op()
    done_takes, done_gives = finished.pop(sku)
    entry = {"op": op, "hold": hold, "units": units, "at": now}
    fields = {
        "quantity": {"$subtract": ["$quantity", units]},
        "takes": journal("takes", done_takes, entry),
        "modified_at": now,
    }
    if done_gives:
        fields["gives"] = journal("gives", done_gives)
    result = inventories().update_one(
        {"_id": sku, "quantity": {"$gte": units}}, [{"$set": fields}]
    )
    if not result.modified_count:
        finished.add(sku, takes=done_takes, gives=done_gives)
        return None
    return op


def untake(sku: str, op: str, units: int) -> bool:
    """Give a take's units back to the counter, once (guarded on its entry)."""
    result = inventories().update_one(
        {"_id": sku, "takes.op": op},
        {"$inc": {"quantity": units}, "$pull": {"takes": {"op": op}}},
    )
    return bool(result.modified_count)


def free_units(sku: str) -> int | None:
    """The location's free units as they are now (None: no such location):
    to explain a refusal, never to decide one."""
    doc = inventories().find_one({"_id": sku}, {"quantity": 1})
    return None if doc is None else doc["quantity"]


# --- A give-back: step 2 ----------------------------------------------------------


def give(moves: list[tuple[str, str, dict, list[str]]]) -> list[str]:
    """Step 2 of give-backs: each counter gets its move's units (free and
    sold), journaled in ``gives``, in one statement for all. ``moves``:
    (sku, hold, entry ``{op, free, sold, at}``, forget) each, one per SKU;
    ``forget``: take moves the hold had applied, whose entries go now, while
    the hold still proves them (a take's entry must never outlive its hold:
    the reconciler would take it for a take the hold never got).

    Each counter's guard is its own move's op, not applied yet, so a move
    applies once: the filter names every move's op, and as ops are unique, a
    counter holds none of them exactly when it does not hold its own.
    Returns the ops this writer applied: one it did not was refused by a
    recovery's fence (the writer stalled past the grace), which applies it
    and finishes it, so its writer must leave the hold's ``back`` entry
    alone and never take the fence for its own finished entry."""
    done = {sku: finished.pop(sku) for sku, *_ in moves}
    values = {
        sku: {"$literal": _move(hold, entry, forget, done[sku])}
        for sku, hold, entry, forget in moves
    }
    ops = [entry["op"] for _, _, entry, _ in moves]
    pipeline = [
        {"$set": {"_move": each(values, None)}},
        {
            "$set": {
                "quantity": {"$add": ["$quantity", "$_move.free"]},
                "sold": {"$add": [{"$ifNull": ["$sold", 0]}, "$_move.sold"]},
                "gives": {
                    "$concatArrays": [
                        kept("gives", "$_move.drop_gives"),
                        ["$_move.entry"],
                    ]
                },
                "takes": kept("takes", "$_move.drop_takes"),
                "modified_at": "$_move.at",
            }
        },
        {"$unset": "_move"},
    ]
    query = {"_id": {"$in": list(values)}, "gives.op": {"$nin": ops}}
    counted = retried(lambda: inventories().update_many(query, pipeline)).modified_count
    if counted == len(moves):
        return ops
    # Which write dropped what is unknown: the entries are kept for the
    # next write (dropping a finished one again is harmless).
    for sku, (done_takes, done_gives) in done.items():
        finished.add(sku, takes=done_takes, gives=done_gives)
    return _applied_here(moves)


def _move(
    hold: str, entry: dict, forget: list[str], done: tuple[list[str], list[str]]
) -> dict:
    """What step 2 of a give-back does to one counter, as values: the units
    going free and sold, the move's journal entry, and the entries it drops
    (``forget``, and this process's finished ones of that counter)."""
    done_takes, done_gives = done
    return {
        "op": entry["op"],
        "free": entry["free"],
        "sold": entry["sold"],
        "at": entry["at"],
        "entry": {"op": entry["op"], "hold": hold, "at": entry["at"]},
        "drop_gives": list(done_gives),
        "drop_takes": [*forget, *done_takes],
    }


def _applied_here(moves: list[tuple[str, str, dict, list[str]]]) -> list[str]:
    """The ops of ``moves`` that no recovery's fence holds on their counter."""
    ops = [entry["op"] for _, _, entry, _ in moves]
    fenced = {
        (doc["_id"], move["op"])
        for doc in inventories().find(
            {"_id": {"$in": [sku for sku, *_ in moves]}, "gives.op": {"$in": ops}},
            {"gives": 1},
        )
        for move in doc.get("gives") or []
        if move["op"] in ops and move.get("by") == RECOVERY
    }
    return [
        entry["op"] for sku, _, entry, _ in moves if (sku, entry["op"]) not in fenced
    ]


# --- The recovery's steps on the counter ---------------------------------------


def takes_before(before: datetime) -> Iterator[tuple[str, dict]]:
    """(sku, entry) of every take journaled before ``before``."""
    for inv in inventories().find({"takes.at": {"$lt": before}}, {"takes": 1}):
        for move in inv["takes"]:
            if move["at"] < before:
                yield inv["_id"], move


def gives_before(before: datetime) -> Iterator[tuple[str, dict]]:
    """(sku, entry) of every give-back a writer journaled before ``before``
    (a recovery's fences left out: they wait for the cleanup)."""
    for inv in inventories().find({"gives.at": {"$lt": before}}, {"gives": 1}):
        for move in inv["gives"]:
            if move["at"] < before and move.get("by") != RECOVERY:
                yield inv["_id"], move


def drop(sku: str, *, takes: Iterable[str] = (), gives: Iterable[str] = ()) -> None:
    """Drop the journal entries of these finished moves now."""
    pulls = {}
    if takes := list(takes):
        pulls["takes"] = {"op": {"$in": takes}}
    if gives := list(gives):
        pulls["gives"] = {"op": {"$in": gives}}
    if pulls:
        inventories().update_one({"_id": sku}, {"$pull": pulls})


def fence_give(sku: str, op: str, hold: str, at: datetime) -> bool:
    """Fence give-back ``op`` on its counter; True when the fence holds it
    (the writer's step 2 had not applied, and from now on cannot), False
    when the writer's entry was there first (it applied).

    The fence is pushed only if no entry of ``op`` is there: ``gives: {op,
    by: recovery, fence: true}``, kept until the cleanup's retention."""
    fence = {"op": op, "hold": hold, "at": at, "by": RECOVERY, "fence": True}
    inventories().update_one(
        {"_id": sku, "gives.op": {"$ne": op}}, {"$push": {"gives": fence}}
    )
    found = inventories().find_one({"_id": sku}, {"gives": {"$elemMatch": {"op": op}}})
    (move,) = (found or {}).get("gives") or [{}]
    return move.get("by") == RECOVERY


def apply_fenced(sku: str, op: str, *, free: int, sold: int, forget: list[str]) -> bool:
    """The units of a give-back the recovery fenced, applied by the fence,
    once (guarded on ``fence: true``), dropping the take entries its hold
    applied as the writer's step 2 would have (``give``)."""
    result = inventories().update_one(
        {"_id": sku, "gives": {"$elemMatch": {"op": op, "fence": True}}},
        {
            "$inc": {"quantity": free, "sold": sold},
            "$set": {"gives.$.fence": False},
            "$pull": {"takes": {"op": {"$in": forget}}},
        },
    )
    return bool(result.modified_count)


def fences_purge(before: datetime) -> None:
    """Drop the recovery's fences older than ``before`` (the cleanup's
    retention, far longer than any writer stalls)."""
    inventories().update_many(
        {"gives.at": {"$lt": before}},
        {"$pull": {"gives": {"by": RECOVERY, "at": {"$lt": before}}}},
    )
