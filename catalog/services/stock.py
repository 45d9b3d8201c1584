"""Stock: reserve, adjust, release, commit and restock (DESIGN §3).

Every function's ``sku`` is a stock location (``catalog.documents.
stock_location``): a SKU's online stock, or one store's (``"<sku>@<store>"``,
click & collect). Each location is a counter and holds of its own, so the
rules below hold per location.

The counter of free units (``Inventory.quantity``) and each cart's hold (a
``StockHoldDoc``, ``_id = "<sku>|<cart_id>"``) are separate documents, so a
hold costs the same however many carts hold the SKU. Every change is a move
between them, each side one conditional update of that document whose
filter carries the rule (``quantity >= n`` on the counter; the hold as read
on the hold); a checkout's commit writes the holds, then the counters,
then the holds' finish, of all its lines in one statement per step that
still carries each document's own guard (``_holds_give_statement``,
``counters.give``). The counter's side of each step (its update, journal
and fences) is ``catalog.services.counters``; this module is the holds' side
and the order of the writes. Without transactions, that order makes every
crash point harmless or repairable (``stock_moves_recover``):

* taking n units (reserve, grow): 1. the counter, guarded ``quantity >= n``,
  takes them and journals the move (``takes``); 2. the hold gets them and
  lists the move in ``applied``. The hold refuses (AlreadyReserved,
  changed): the counter takes them back at once.
* giving back (release, shrink, commit): 1. the hold, guarded as read,
  drops the units into a ``back`` entry; 2. the counter gets them (free or
  sold), journaled in ``gives`` so it applies once; 3. the ``back`` entry
  goes (the hold with it when empty).
* transfer (login): 1. the source's units into a ``back`` entry naming the
  target; 2. the target hold gets them (``applied``, and ``moved_in``,
  which keeps the target, even emptied, as the proof it applied); 3. the
  source finishes; 4. the target drops ``moved_in``. No unit is free in
  between.

A move's journal entry on the counter has done its work once the move is
finished (the hold lists a take; a give-back's ``back`` entry is gone). It
is not dropped by a write of its own: the process drops it in its next
write to the same counter (``counters.Finished``), and the reconciler
drops what no process did (``stock_moves_recover``), so a counter's journal
holds the moves in flight and a few finished ones per process, never one
per holder.

A unit is thus never in two places: free units only grow after a hold gave
them up, a hold only grows after the counter gave it units. Invariant kept
per SKU: ``quantity + held + sold == received`` and ``quantity >= 0``, where
``held`` counts the holds' units and the moves in flight
(``catalog.selectors.stock.stock_problems``); a cart has at most one hold
per SKU (its ``_id``).
"""

import re
from collections.abc import Callable, Mapping
from datetime import datetime

from django.utils import timezone
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from catalog import faults
from catalog.documents import StockHoldDoc, StockMovement, hold_id
from catalog.errors import (
    AlreadyRecorded,
    AlreadyReserved,
    FreeStockShort,
    InvalidQuantity,
    NotStocked,
    OutOfStock,
    ReservationMissing,
)
from catalog.services import counters
from catalog.services.counters import each, retried, tried
from config.errors import DomainError
from config.mongo import insert_new

# Attempts of a read-then-conditional-update loop before giving up; each
# retry means another writer changed the same hold in between.
_ATTEMPTS = 8


def _inventories() -> Collection:
    return counters.inventories()


def _holds() -> Collection:
    return StockHoldDoc.coll()


def _ledger() -> Collection:
    return StockMovement.coll()


def _units(value: object) -> int:
    """A strictly positive int (bools excluded), else InvalidQuantity."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidQuantity()
    return value


def _hold(sku: str, cart_id: str) -> dict | None:
    """This cart's hold of the SKU with units in it, else None."""
    doc = _holds().find_one(
        {"_id": hold_id(sku, cart_id)}, {"quantity": 1, "at": 1, "applied": 1}
    )
    return doc if doc and doc["quantity"] > 0 else None


def _why_short(sku: str, cart_id: str | None = None) -> DomainError:
    """Why the counter refused to give units (read again, to explain)."""
    free = counters.free_units(sku)
    if free is None:
        return NotStocked()
    if cart_id is not None and _hold(sku, cart_id) is not None:
        return AlreadyReserved()
    return OutOfStock(available=free)


# --- Taking units: counter, hold ---------------------------------------------


def _take(
    sku: str, cart_id: str, units: int, now: datetime, hold_guard: dict | None
) -> bool:
    """Move ``units`` from the counter into this cart's hold.

    ``hold_guard`` None: a new hold (none with units yet), else the filter
    the existing hold must match. False when the hold refused (the units are
    back on the counter). Raises NotStocked, OutOfStock.
    """
    op = counters.take(sku, hold_id(sku, cart_id), units, now)
    if op is None:
        raise _why_short(sku, cart_id if hold_guard is None else None)
    faults.point("stock.take.after_counter")
    if not _hold_gets(sku, cart_id, op, units, now, hold_guard):
        counters.untake(sku, op, units)
        return False
    faults.point("stock.take.after_hold")
    counters.taken(sku, op)
    return True


def _hold_gets(sku, cart_id, op, units, now, hold_guard, *, source=None) -> bool:
    """Step 2 of a take: the hold gets the units (never a move it was fenced
    from: ``void``). A new hold is inserted, or fills a hold of 0 units.
    ``source``: the hold a transfer's units come from, kept in ``moved_in``
    until that source has finished (``_moved_in_done``)."""
    query = {"_id": hold_id(sku, cart_id), "void": {"$ne": op}}
    query.update({"quantity": 0} if hold_guard is None else hold_guard)
    update = {
        "$inc": {"quantity": units},
        "$set": {"sku": sku, "cart_id": cart_id, "at": now},
        "$push": {"applied": op},
    }
    if source is not None:
        update["$push"]["moved_in"] = {"op": op, "source": source, "at": now}
    try:
        done = _holds().update_one(query, update, upsert=hold_guard is None)
    except DuplicateKeyError:
        return False  # the cart holds units already, or the move was fenced
    return bool(done.modified_count or done.upserted_id)


# --- Giving units back: hold, counter, finish ----------------------------------


def _give(
    sku: str,
    cart_id: str,
    guard: dict,
    *,
    free: int,
    sold: int = 0,
    now: datetime,
    touch: bool = False,
    forget: list[str] = (),
) -> bool:
    """Move ``free + sold`` units out of this cart's hold (guarded by
    ``guard``) to the counter's free units and ``sold``; False when the guard
    matched nothing (nothing changed). ``forget``: the take moves of a hold
    this ends (``applied`` as read), see ``counters.give``. ``touch``: the
    hold's ``at`` moves to ``now`` (it keeps units). The steps are
    ``_give_all``'s, for one SKU."""
    moves = [(sku, guard, free, sold, list(forget))]
    return bool(_give_all(cart_id, moves, now, touch=touch))


def _finish_back(hid: str, op: str) -> None:
    """Step 3: the ``back`` entry goes; so does a hold left with no units and
    nothing in flight (a fenced one stays, see ``_fence``)."""
    _finish_backs([(hid, op)])


def _last_back(ids: list[str], ops: list[str]) -> dict:
    """The holds of ``ids`` that one of the moves ``ops`` emptied, whose last
    move in flight it is, and that no fence or unfinished transfer keeps."""
    return {
        "_id": {"$in": ids},
        "quantity": 0,
        "back.op": {"$in": ops},
        "back.1": {"$exists": False},
        **_KEPT_BY_NOTHING,
    }


# A hold of 0 units that nothing keeps: no fence (``void``), and no transfer
# whose source has not finished (``moved_in``: the recovery of that source
# reads the transfer's ``applied`` here, and an absent hold reads as "never
# applied", which would give the units back to the source a second time).
_KEPT_BY_NOTHING = {"void.0": {"$exists": False}, "moved_in.0": {"$exists": False}}


def _give_all(
    cart_id: str,
    moves: list[tuple[str, dict, int, int, list]],
    now,
    *,
    touch: bool = False,
    finish: Callable[[list], object] | None = None,
):
    """The give-back (§3.8's order of writes) of one or several SKUs of one
    cart: ``moves`` are (sku, guard, free, sold, forget). Each document gets
    the one conditional write of its step, and each step is one command for
    every SKU, so a checkout's cart of n lines pays 3 statements, not 3n:
    the holds' step moves each hold only where it is as read
    (``_holds_give_statement``), the counters' and the finish are guarded
    by the moves' unique ops (``counters.give``). Returns the SKUs whose
    hold matched its guard (the others changed nothing).

    ``finish``: who runs step 3 (``stock_finish``), if not this call: a
    caller that batches it with others' (see ``stock_commit_all``).

    Never a findAndModify: on the Rust server it costs time growing with
    the collection (config/compat.py).
    """
    if len({sku for sku, *_ in moves}) < len(moves):
        # One move per SKU: the steps below key each document by its SKU.
        raise ValueError("a give-back names each SKU once")
    planned = []
    for sku, guard, free, sold, forget in moves:
        entry = {"op": counters.new_op(), "free": free, "sold": sold, "at": now}
        planned.append((sku, hold_id(sku, cart_id), guard, entry, list(forget)))
    planned = _holds_give(planned, {"at": now} if touch else None)
    if not planned:
        return []
    faults.point("stock.give.after_hold")
    # A move whose step 2 a recovery's fence refused (its writer stalled
    # past the grace) is the recovery's to finish: its ``back`` entry stays.
    applied = set(
        counters.give(
            [(sku, hid, entry, forget) for sku, hid, _, entry, forget in planned]
        )
    )
    done = [p for p in planned if p[3]["op"] in applied]
    faults.point("stock.give.after_counter")
    finished_moves = [(hid, entry["op"], sku) for sku, hid, _, entry, _ in done]
    (finish or stock_finish)(finished_moves)
    faults.point("stock.give.after_finish")
    return [sku for sku, *_ in planned]


def stock_finish(moves: list[tuple[str, str, str]]) -> None:
    """Step 3 of give-backs whose counters got their units, (hold id, op,
    sku) each, in one statement (``_finish_backs``): the ``back`` entries
    go, and the holds left empty with them; then each counter's journal
    entry of the move is done (``counters.Finished``: dropped by this process's
    next write to the counter).

    Until it runs, a hold shows its ``back`` entry, which the counter's
    journal says was applied: nothing counts it twice
    (``catalog.selectors.stock``), nothing takes from it (it has no units),
    and the reconciler finishes it if it never runs (``stock_moves_recover``,
    after its grace). So it may be run a moment later, batched with
    others' (a checkout's commits: ``stock_commit_all``'s ``finish``)."""
    _finish_backs([(hid, op) for hid, op, _ in moves])
    for _, op, sku in moves:
        counters.given(sku, op)


def _holds_give(planned: list, sets: dict | None) -> list:
    """Step 1 of ``_give_all``: each hold, guarded as read, drops its units
    into a ``back`` entry (a single hold also takes ``sets``). Returns the
    planned moves whose hold did."""
    if len(planned) == 1:
        [(_, hid, guard, entry, _)] = planned
        update = {
            "$inc": {"quantity": -(entry["free"] + entry["sold"])},
            "$push": {"back": entry},
        }
        if sets:
            update["$set"] = sets
        result, again = tried(
            lambda: _holds().update_one({"_id": hid, **guard}, update)
        )
    elif sets:
        raise ValueError("only a single hold's give-back sets fields")
    else:
        statement = _holds_give_statement(planned)
        result, again = tried(lambda: _holds().update_many(*statement))
    took = result.modified_count
    if took == len(planned):
        return planned
    if not took and not again:
        return []  # every guard refused: nothing moved
    # Which holds did move: their back entry says so (also after a second
    # try, whose count leaves out what the first one moved).
    ops = [entry["op"] for *_, entry, _ in planned]
    moved = {
        doc["_id"]
        for doc in _holds().find(
            {"_id": {"$in": [p[1] for p in planned]}, "back.op": {"$in": ops}},
            {"_id": 1},
        )
    }
    return [p for p in planned if p[1] in moved]


def _holds_give_statement(planned: list) -> tuple[dict, list]:
    """Step 1 for several holds as one statement: (filter, pipeline).

    Why one statement: on the Rust server each statement is a transaction
    of its own, committed with a log sync as Marquee runs it; a checkout's
    five holds as five statements cost the daemon more than twice what one
    statement does (bench/RESULTS.md, "The holds' step as one statement").

    Each hold's guard is its own (the hold as read), so it cannot be a plain
    filter, and an ``$expr`` in the filter makes the Rust server scan the
    collection. The filter names the holds (and, a second safeguard for a
    second try, none that has its move already; the guard alone refuses
    it, as a move takes at least one unit); the pipeline then moves each
    hold only if it still equals its guard, and leaves any other exactly as
    it was. None of the servers counts a document an update leaves as it
    was as modified (asserted per server in tests/test_server_conformance.py),
    so the count is the holds that moved.
    """
    fields = sorted(planned[0][2])
    for *_, guard, _, _ in planned:
        if sorted(guard) != fields or any(isinstance(v, dict) for v in guard.values()):
            raise ValueError("holds given back together are guarded by values as read")
    moves = {
        hid: {
            "$literal": {
                "units": entry["free"] + entry["sold"],
                "entry": entry,
                "guard": guard,
            }
        }
        for _, hid, guard, entry, _ in planned
    }
    as_read = {"$and": [{"$eq": [f"${f}", f"$_move.guard.{f}"]} for f in fields]}
    moves_here = {"$ne": ["$_move", None]}

    def moved(value, otherwise):
        return {"$cond": [moves_here, value, otherwise]}

    changes = {
        "quantity": moved({"$subtract": ["$quantity", "$_move.units"]}, "$quantity"),
        "back": moved(
            {"$concatArrays": [{"$ifNull": ["$back", []]}, ["$_move.entry"]]}, "$back"
        ),
    }
    pipeline = [
        {"$set": {"_move": each(moves, None)}},
        {"$set": {"_move": {"$cond": [as_read, "$_move", None]}}},
        {"$set": changes},
        {"$unset": "_move"},
    ]
    ops = [entry["op"] for *_, entry, _ in planned]
    query = {"_id": {"$in": [hid for _, hid, *_ in planned]}, "back.op": {"$nin": ops}}
    return query, pipeline


def _finish_backs(backs: list[tuple[str, str]]) -> None:
    """Step 3 of ``_give_all`` for (hold id, op) pairs: every hold left empty
    is deleted; the others' back entries go (a deleted hold matches
    nothing), which only a hold keeping units (a surplus) or a fence needs."""
    if not backs:
        return
    # One statement for all (why: ``counters.each``): each hold's one ``back`` entry
    # is its own move's, and the ops are unique, so a hold matches the list
    # of ops exactly when it matches its own.
    ids = [hid for hid, _ in backs]
    ops = [op for _, op in backs]
    deleted = retried(lambda: _holds().delete_many(_last_back(ids, ops)))
    if deleted.deleted_count < len(backs):
        retried(
            lambda: _holds().update_many(
                {"_id": {"$in": ids}, "back.op": {"$in": ops}},
                {"$pull": {"back": {"op": {"$in": ops}}}},
            )
        )


# --- The services ---------------------------------------------------------------


def stock_reserve(
    *, sku: str, cart_id: str, quantity: int, now: datetime | None = None
) -> None:
    """Hold ``quantity`` units of ``sku`` for ``cart_id`` (a new hold).

    Guard: the counter has ``quantity >= n`` (its filter), and the cart has
    no hold with units yet (the hold's ``_id``); effect: n units move from
    the counter to the cart's new hold. A repeat is refused by the hold, so
    nothing is ever held twice.

    Raises InvalidQuantity, NotStocked, AlreadyReserved (use stock_adjust),
    OutOfStock (with the number still free).
    """
    quantity = _units(quantity)
    now = now or timezone.now()
    if not _take(sku, cart_id, quantity, now, None):
        raise AlreadyReserved()


def stock_adjust(
    *,
    sku: str,
    cart_id: str,
    delta: int,
    now: datetime | None = None,
    expect_quantity: int | None = None,
    expect_at: datetime | None = None,
) -> None:
    """Change the cart's hold of ``sku`` by ``delta`` units (+ or -).

    Guard: the cart's hold has more than ``-delta`` units (it keeps at least
    one; use stock_release to end it) and, when growing, the counter has
    ``quantity >= delta``; effect: ``delta`` units move between the counter
    and the hold. With ``expect_quantity``/``expect_at`` the hold must also
    still have that size/stamp (the reconciler adjusts what it inspected).

    Raises InvalidQuantity (delta 0, or the hold would drop below 1 unit),
    NotStocked, ReservationMissing, OutOfStock.
    """
    if isinstance(delta, bool) or not isinstance(delta, int) or delta == 0:
        raise InvalidQuantity()
    now = now or timezone.now()
    guard: dict = {"quantity": {"$gte": max(1, 1 - delta)}}
    if expect_quantity is not None:
        if expect_quantity + delta < 1:
            raise InvalidQuantity("A hold cannot shrink below one unit; release it.")
        guard["quantity"] = expect_quantity
    if expect_at is not None:
        guard["at"] = expect_at
    if delta > 0:
        if _take(sku, cart_id, delta, now, guard):
            return
    elif _give(sku, cart_id, guard, free=-delta, now=now, touch=True):
        return
    raise _adjust_refusal(sku, cart_id, delta, expect_quantity, expect_at)


def _adjust_refusal(
    sku: str, cart_id: str, delta: int, expect_quantity, expect_at
) -> DomainError:
    """Why ``stock_adjust``'s guarded update matched nothing, read again."""
    if not _inventories().count_documents({"_id": sku}, limit=1):
        return NotStocked()
    hold = _hold(sku, cart_id)
    if hold is None:
        return ReservationMissing()
    if (expect_quantity is not None and hold["quantity"] != expect_quantity) or (
        expect_at is not None and hold["at"] != expect_at
    ):
        return ReservationMissing("That hold changed meanwhile.")
    if delta < 0:
        return InvalidQuantity("A hold cannot shrink below one unit; release it.")
    return ReservationMissing("That hold changed meanwhile.")


def stock_release(
    *,
    sku: str,
    cart_id: str,
    expect_quantity: int | None = None,
    expect_at: datetime | None = None,
) -> int:
    """Give back this cart's whole hold of ``sku``; return the units.

    Guard: the hold as just read (size and stamp); effect: its units go back
    to the counter and the hold ends. With ``expect_quantity``/``expect_at``
    the hold is released only if it still has that size/stamp (the
    reconciler releases exactly what it inspected). Idempotent: a second
    release finds no hold and returns 0.
    """
    for _ in range(_ATTEMPTS):
        hold = _hold(sku, cart_id)
        if hold is None:
            return 0
        if expect_quantity is not None and hold["quantity"] != expect_quantity:
            return 0
        if expect_at is not None and hold["at"] != expect_at:
            return 0
        units = hold["quantity"]
        guard = {"quantity": units, "at": hold["at"]}
        forget = hold.get("applied") or []
        if _give(sku, cart_id, guard, free=units, now=timezone.now(), forget=forget):
            return units
    return 0


def stock_commit(*, sku: str, cart_id: str, quantity: int) -> None:
    """Sell ``quantity`` units this cart holds: they leave stock for good.

    Guard: the cart's hold as just read, holding ``quantity`` or more;
    effect: the hold ends, ``quantity``
    units count as sold and any surplus goes back to the counter (a
    concurrent decrease may not have released it yet).

    Raises InvalidQuantity, ReservationMissing (no hold, or a smaller one).
    """
    if sku not in stock_commit_all(cart_id=cart_id, quantities={sku: quantity}):
        raise ReservationMissing()


def stock_commit_all(
    *,
    cart_id: str,
    quantities: Mapping[str, int],
    known: Mapping | None = None,
    finish: Callable[[list], object] | None = None,
) -> set[str]:
    """``stock_commit`` of several SKUs of one cart (a checkout's product
    lines), with the same guard and effect per SKU, each step one command
    for all of them (``_give_all``). Returns the SKUs committed; one whose hold is
    missing or smaller than its quantity is left out (ReservationMissing,
    for a single SKU). ``known``: the holds as the caller just read them
    (sku -> ``StockHold``), spared a read on the first try; a hold that
    changed since fails its guard and is read again. ``finish``: a caller
    that runs the last step itself, later (``stock_finish``), is handed
    the moves to finish instead. Raises InvalidQuantity."""
    todo = {sku: _units(quantity) for sku, quantity in quantities.items()}
    now = timezone.now()
    done: set[str] = set()
    for _ in range(_ATTEMPTS):
        if not todo:
            break
        from_known = known is not None
        holds = (
            _holds_as_known(known, cart_id)
            if from_known
            else _read_holds([hold_id(sku, cart_id) for sku in todo])
        )
        known = None
        moves = []
        for sku, quantity in todo.items():
            hold = holds.get(hold_id(sku, cart_id))
            if hold is None or hold["quantity"] < quantity:
                continue
            guard = {"quantity": hold["quantity"], "at": hold["at"]}
            surplus = hold["quantity"] - quantity
            moves.append((sku, guard, surplus, quantity, hold.get("applied") or []))
        if not from_known:
            # A missing or smaller hold stays so: only the others are tried.
            todo = {sku: todo[sku] for sku, *_ in moves}
        if moves:
            done.update(_give_all(cart_id, moves, now, finish=finish))
        # A hold that changed between the read and its write: read again.
        todo = {sku: q for sku, q in todo.items() if sku not in done}
    return done


def _read_holds(ids: list[str]) -> dict[str, dict]:
    found = _holds().find({"_id": {"$in": ids}}, {"quantity": 1, "at": 1, "applied": 1})
    return {doc["_id"]: doc for doc in found}


def _holds_as_known(known: Mapping, cart_id: str) -> dict[str, dict]:
    """A caller's ``StockHold`` snapshot in the shape ``_read_holds`` reads."""
    return {
        hold_id(sku, cart_id): {
            "quantity": h.quantity,
            "at": h.at,
            "applied": list(h.applied),
        }
        for sku, h in known.items()
    }


def stock_transfer(
    *, sku: str, from_cart_id: str, to_cart_id: str, now: datetime | None = None
) -> bool:
    """Hand this SKU's hold from one cart to another (cart merge).

    Guard: the source has a hold (as read) and the target none with units;
    effect: the units leave the source into a ``back`` entry naming the
    target, the target's hold gets them, the entry goes. No unit is ever
    free in between, so nobody else can take it. Returns False when the
    guard fails (nothing changed).
    """
    now = now or timezone.now()
    hold = _hold(sku, from_cart_id)
    if hold is None or _hold(sku, to_cart_id) is not None:
        return False
    source, units, op = hold_id(sku, from_cart_id), hold["quantity"], counters.new_op()
    if hold.get("applied"):
        # The source ends here: drop its take entries while it proves them.
        counters.drop(sku, takes=hold["applied"])
    entry = {"op": op, "moved": units, "to": to_cart_id, "at": now}
    moved = _holds().update_one(
        {"_id": source, "quantity": units, "at": hold["at"]},
        {"$inc": {"quantity": -units}, "$push": {"back": entry}},
    )
    if not moved.modified_count:
        return False
    faults.point("stock.transfer.after_source")
    target = hold_id(sku, to_cart_id)
    if not _hold_gets(sku, to_cart_id, op, units, now, None, source=source):
        _unmove(source, op, units)
        return False
    faults.point("stock.transfer.after_target")
    _finish_back(source, op)
    faults.point("stock.transfer.after_finish")
    _moved_in_done(target, op)
    return True


def _moved_in_done(target: str, op: str) -> None:
    """Step 4 of a transfer, once its source has finished: the target no
    longer keeps it in ``moved_in``; a target its cart emptied meanwhile
    (kept only for this) goes."""
    _holds().update_one({"_id": target}, {"$pull": {"moved_in": {"op": op}}})
    _holds().delete_one(
        {"_id": target, "quantity": 0, "back.0": {"$exists": False}, **_KEPT_BY_NOTHING}
    )


def _unmove(source: str, op: str, units: int) -> bool:
    """A transfer the target refused: the units return to the source, once."""
    result = _holds().update_one(
        {"_id": source, "back.op": op},
        {"$inc": {"quantity": units}, "$pull": {"back": {"op": op}}},
    )
    return bool(result.modified_count)


def stock_refresh(
    *, sku: str, cart_ids: list[str], before: datetime, now: datetime | None = None
) -> int:
    """Stamp ``seen_at = now`` on the holds of these carts (confirmed live by
    the reconciler); one update per SKU however many carts. ``at`` (the last
    change, which the stale-holder lookup reads) and quantities stay."""
    if not cart_ids:
        return 0
    now = now or timezone.now()
    result = _holds().update_many(
        {"_id": {"$in": [hold_id(sku, c) for c in cart_ids]}, "at": {"$lt": before}},
        {"$set": {"seen_at": now}},
    )
    return result.modified_count


# --- Moves left in flight (the reconciler) --------------------------------------


def stock_moves_recover(*, before: datetime) -> int:
    """Finish or undo every move left in flight since before ``before`` (a
    crash, or a writer stalled that long); return how many.

    A take the hold has applied is finished: its entry is dropped. One it
    has not is fenced on the hold (``void``: the stalled writer can no
    longer apply it) and its units go back to the counter. A give-back is
    fenced on the counter (``gives: {by: recovery}``, kept until the
    cleanup's retention) and applied there unless the writer had
    (``_recover_give``), then finished. A transfer the target has applied is
    finished, else fenced and undone. The entries of finished moves that no
    process dropped (``counters.Finished``) go too, uncounted. Safe to run twice at
    once: every step is guarded on the move's id.
    """
    done = 0
    for sku, move in counters.takes_before(before):
        done += _recover_take(sku, move)
    for hold in _holds().find({"back.at": {"$lt": before}}):
        for entry in hold["back"]:
            if entry["at"] < before:
                done += _recover_back(hold, entry)
    for hold in _holds().find({"moved_in.at": {"$lt": before}}):
        done += _recover_moved_in(hold, before)
    for sku, move in counters.gives_before(before):
        done += _finish_give(sku, move)
    return done


def _finish_give(sku: str, move: dict) -> int:
    """A give-back the counter has applied: its hold's step 3 if a crash
    came before it (then 1), and its entry dropped."""
    unfinished = _holds().count_documents(
        {"_id": move["hold"], "back.op": move["op"]}, limit=1
    )
    if unfinished:
        _finish_back(move["hold"], move["op"])
    counters.drop(sku, gives=[move["op"]])
    return unfinished


def _fenced(hid: str, op: str, at: datetime) -> bool:
    """Fence take ``op`` out of hold ``hid`` unless it applied; True if it had."""
    sku, cart_id = hid.rsplit("|", 1)
    try:
        _holds().update_one(
            {"_id": hid},
            {
                "$addToSet": {"void": op},
                "$setOnInsert": {
                    "sku": sku,
                    "cart_id": cart_id,
                    "quantity": 0,
                    "at": at,
                },
            },
            upsert=True,
        )
    except DuplicateKeyError:
        pass  # inserted meanwhile: the read below tells
    return bool(_holds().count_documents({"_id": hid, "applied": op}, limit=1))


def _recover_take(sku: str, move: dict) -> int:
    """A take's entry older than the grace: dropped if the hold lists the
    move (finished, 0), else the move is fenced and undone (1), unless the
    writer applied it just before the fence (0)."""
    op, hid = move["op"], move["hold"]
    applied = _holds().count_documents({"_id": hid, "applied": op}, limit=1)
    if not applied and not _fenced(hid, op, move["at"]):
        return int(counters.untake(sku, op, move["units"]))
    counters.drop(sku, takes=[op])
    return 0


def _recover_back(hold: dict, entry: dict) -> int:
    """A ``back`` entry older than the grace. A transfer the target applied
    (its ``applied``, kept by ``moved_in`` however the target's units went
    since) is finished; one it has not is fenced there and undone. A
    give-back is the counter's (``_recover_give``), then finished."""
    hid, op = hold["_id"], entry["op"]
    if entry.get("to"):
        target = hold_id(hold["sku"], entry["to"])
        applied = _holds().count_documents({"_id": target, "applied": op}, limit=1)
        if not applied and not _fenced(target, op, entry["at"]):
            return int(_unmove(hid, op, entry["moved"]))
        _finish_back(hid, op)
        _moved_in_done(target, op)
        return 1
    _recover_give(hold["sku"], hid, entry, forget=hold.get("applied") or [])
    _finish_back(hid, op)
    return 1


def _recover_moved_in(hold: dict, before: datetime) -> int:
    """A transfer received before ``before`` whose source has finished but
    whose last step did not run (a crash): the target lets it go."""
    done = 0
    for entry in hold.get("moved_in") or []:
        if entry["at"] >= before:
            continue
        pending = {"_id": entry["source"], "back.op": entry["op"]}
        if not _holds().count_documents(pending, limit=1):
            _moved_in_done(hold["_id"], entry["op"])
            done += 1
    return done


def _recover_give(sku: str, hid: str, entry: dict, *, forget: list[str]) -> None:
    """A give-back whose ``back`` entry outlived the grace: the counter gets
    its units unless the writer's own step 2 did, never both.

    First a fence on the counter (``counters.fence_give``): from then on the
    writer's step 2 is refused. If the writer's entry was there, it applied.
    Else, if the hold still has the ``back`` entry, the writer cannot have
    applied (it drops its entry only after the ``back`` entry), so the fence
    applies the units, once (``counters.apply_fenced``), dropping the take
    entries the hold applied as the writer's step 2 would have.
    """
    op = entry["op"]
    if not counters.fence_give(sku, op, hid, entry["at"]):
        return  # the writer's: applied
    if not _holds().count_documents({"_id": hid, "back.op": op}, limit=1):
        return  # finished meanwhile, by the writer or another recovery
    counters.apply_fenced(
        sku, op, free=entry["free"], sold=entry["sold"], forget=forget
    )


def stock_fences_purge(*, before: datetime) -> int:
    """Drop the fences of moves recovered before ``before`` (the cleanup's
    retention, far longer than any writer stalls): the recovery journal
    entries and the holds of 0 units kept only for their ``void``."""
    counters.fences_purge(before)
    return (
        _holds()
        .delete_many(
            {
                "at": {"$lt": before},
                "quantity": 0,
                "back.0": {"$exists": False},
                "moved_in.0": {"$exists": False},
            }
        )
        .deleted_count
    )


# --- Converting a database of the old shape ------------------------------------


def stock_holds_migrate() -> tuple[int, int]:
    """Move every reservation entry kept inside an inventory (the old shape:
    ``reservations: [{cart_id, quantity, at}]``) into its own hold document;
    return (entries moved, inventories converted).

    Per entry: the hold is inserted with the entry's units (``$setOnInsert``:
    a repeat inserts nothing), then the entry is pulled from the inventory,
    guarded on the entry as read. A crash in between leaves the entry and
    its hold both present; the next run only pulls it. Units never pass
    through the counter, so ``quantity`` is untouched. Idempotent. Run it
    with the shop stopped (old code would still write entries meanwhile).
    """
    moved = converted = 0
    for inv in _inventories().find({"reservations": {"$exists": True}}):
        sku = inv["_id"]
        for entry in inv.get("reservations") or []:
            _holds().update_one(
                {"_id": hold_id(sku, entry["cart_id"])},
                {
                    "$setOnInsert": {
                        "sku": sku,
                        "cart_id": entry["cart_id"],
                        "quantity": entry["quantity"],
                        "at": entry["at"],
                    }
                },
                upsert=True,
            )
            moved += (
                _inventories()
                .update_one(
                    {"_id": sku, "reservations": {"$elemMatch": entry}},
                    {"$pull": {"reservations": {"cart_id": entry["cart_id"]}}},
                )
                .modified_count
            )
        converted += (
            _inventories()
            .update_one(
                {"_id": sku, "reservations": {"$size": 0}},
                {"$unset": {"reservations": ""}},
            )
            .modified_count
        )
    return moved, converted


def stock_return(
    *, sku: str, quantity: int, reference: str, now: datetime | None = None
) -> bool:
    """Put ``quantity`` sold units of ``sku`` back on sale (a canceled order).

    Guard: ``sold >= n`` and ``reference`` not applied yet; effect: move n
    units from ``sold`` to ``quantity`` and remember the reference, in one
    update. Conservation holds with ``sold`` decreasing: ``quantity + held +
    sold`` stays equal to ``received``. Idempotent per reference: a repeat
    (a retried cancellation) returns False and changes nothing.

    Raises InvalidQuantity, NotStocked, ReservationMissing (fewer units sold
    than asked back).
    """
    quantity = _units(quantity)
    if not isinstance(reference, str) or not reference:
        raise InvalidQuantity("A return needs a reference.")
    result = _inventories().update_one(
        {"_id": sku, "sold": {"$gte": quantity}, "returns": {"$ne": reference}},
        {
            "$inc": {"sold": -quantity, "quantity": quantity},
            "$push": {"returns": reference},
            "$set": {"modified_at": now or timezone.now()},
        },
    )
    if result.modified_count:
        return True
    doc = _inventories().find_one({"_id": sku, "returns": reference}, {"_id": 1})
    if doc is not None:
        return False
    if not _inventories().count_documents({"_id": sku}, limit=1):
        raise NotStocked()
    raise ReservationMissing("Fewer units were sold than asked back.")


# --- Receiving stock (the ledger) ---------------------------------------------


def _new_inventory(sku: str, now: datetime, fields: Mapping | None = None) -> dict:
    """An empty inventory: nothing received, held or sold, no ledger applied.

    ``fields``: what names a store's location (``of_sku``, ``item_id``,
    ``store_id``); never a counter.
    """
    return {
        **(fields or {}),
        "_id": sku,
        "quantity": 0,
        "received": 0,
        "sold": 0,
        "ledger_seq": 0,
        "modified_at": now,
    }


def _ensure_inventory(sku: str, now: datetime, fields: Mapping | None = None) -> None:
    try:
        _inventories().insert_one(_new_inventory(sku, now, fields))
    except DuplicateKeyError:
        pass


def stock_locations_create(
    *, fields: Mapping[str, Mapping], now: datetime | None = None
) -> int:
    """Create empty inventories (nothing received) for these stock locations,
    each with its naming ``fields``; those that exist are left alone (their
    counters and holds untouched). Returns how many were created."""
    now = now or timezone.now()
    docs = [_new_inventory(key, now, extra) for key, extra in fields.items()]
    return len(insert_new(_inventories(), docs))


def _apply_next(sku: str, seq: int) -> bool:
    """Apply ledger entry ``seq`` if the inventory has applied ``seq - 1``.

    Guard: ``ledger_seq == seq - 1`` (entries apply once, in order) and, for
    units leaving (a negative adjustment), ``quantity >= units``; effect: the
    units join or leave free stock and count in ``received``. An adjustment
    the free units cannot cover is voided instead, by the opposite guard:
    ``ledger_seq`` moves on and ``voided`` lists it, in one update, so the
    ledger never stalls and a refused entry never counts. True if applied.
    """
    entry = _ledger().find_one({"sku": sku, "seq": seq})
    if entry is None:
        return False
    units = entry["quantity"]
    applied = False
    for _ in range(_ATTEMPTS * 4):
        guard: dict = {"_id": sku, "ledger_seq": seq - 1}
        if units < 0:
            guard["quantity"] = {"$gte": -units}
        result = _inventories().update_one(
            guard,
            {
                "$inc": {"quantity": units, "received": units},
                "$set": {"ledger_seq": seq, "modified_at": entry["at"]},
            },
        )
        if result.modified_count or units > 0:
            applied = bool(result.modified_count)
            break
        voided = _inventories().update_one(
            {"_id": sku, "ledger_seq": seq - 1, "quantity": {"$lt": -units}},
            {"$set": {"ledger_seq": seq}, "$push": {"voided": seq}},
        )
        if voided.modified_count or not _inventories().count_documents(
            {"_id": sku, "ledger_seq": seq - 1}, limit=1
        ):
            break  # decided, here or by another process
    _ledger().update_one({"_id": entry["_id"]}, {"$unset": {"pending": ""}})
    return applied


def _settle(sku: str) -> int:
    """Apply every written-but-unapplied ledger entry of ``sku``; the last seq."""
    while True:
        doc = _inventories().find_one({"_id": sku}, {"ledger_seq": 1})
        seq = doc["ledger_seq"]
        if not _ledger().count_documents({"sku": sku, "seq": seq + 1}, limit=1):
            return seq
        _apply_next(sku, seq + 1)


# A request key: what a form carries so that sending it twice records once.
_KEY = re.compile(r"[A-Za-z0-9_-]{8,64}")


def _entry_id(sku: str, key: str | None) -> str | None:
    """The ledger entry's ``_id`` for a request ``key``: unique per SKU and
    key, so a second insert of the same request is refused by the server
    (uniqueness from ``_id``, never a secondary index: docs/architecture.md
    §3.10). None: no key, the server's ObjectId."""
    if key is None:
        return None
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidQuantity("That request key is not valid: reload the page.")
    return f"{sku}|{key}"


def _record(
    sku: str, quantity: int, kind: str, note: str, now: datetime, key: str | None
) -> tuple[int, bool]:
    """Write ledger entry ``n + 1`` of ``sku`` and apply it: (its number,
    True). With a request ``key`` whose entry exists, nothing is written:
    that entry is applied if a crash left it pending, and this returns (its
    number, False) when it records the same movement; raises AlreadyRecorded
    when it records another."""
    entry_id = _entry_id(sku, key)
    for _ in range(_ATTEMPTS * 4):
        seq = _settle(sku) + 1
        entry = {
            "sku": sku,
            "seq": seq,
            "quantity": quantity,
            "kind": kind,
            "note": note[:200],
            "at": now,
            "pending": True,
        }
        if entry_id is not None:
            entry["_id"] = entry_id
        try:
            _ledger().insert_one(entry)
        except DuplicateKeyError:
            done = entry_id and _ledger().find_one({"_id": entry_id})
            if done:
                _settle(sku)
                asked = (quantity, kind, note[:200])
                if (done["quantity"], done["kind"], done.get("note", "")) != asked:
                    raise AlreadyRecorded(seq=done["seq"], same=False) from None
                return done["seq"], False
            continue  # another entry took this number: apply it, try the next
        _apply_next(sku, seq)
        return seq, True
    raise RuntimeError(f"could not record stock of {sku}: too many concurrent entries")


def stock_restock(
    *,
    sku: str,
    quantity: int,
    note: str = "",
    now: datetime | None = None,
    fields: Mapping | None = None,
    key: str | None = None,
) -> int:
    """Receive ``quantity`` new units of ``sku`` (creating its inventory).

    The receipt is written to the ledger first as entry ``n + 1``, then
    applied with the guard ``ledger_seq == n``, so a crash in between leaves
    a pending entry that the next restock or stock_ledger_settle applies,
    exactly once. Returns the entry's number. ``fields`` name a store's
    location when its inventory is created here (see ``_new_inventory``).
    ``key``: the request's own key (a staff form's); a second receipt with
    the same key adds nothing, however often or concurrently it is sent.

    Raises InvalidQuantity, AlreadyRecorded (the key's receipt exists).
    """
    quantity = _units(quantity)
    now = now or timezone.now()
    _ensure_inventory(sku, now, fields)
    seq, fresh = _record(sku, quantity, "receipt", note, now, key)
    if not fresh:
        raise AlreadyRecorded(seq=seq, same=True)
    return seq


# What an adjustment may be: units damaged (written off), or a stock count
# that found more or fewer units than the books say.
ADJUSTMENTS = ("damaged", "correction")


def stock_correct(
    *,
    sku: str,
    delta: int,
    kind: str,
    note: str = "",
    now: datetime | None = None,
    key: str | None = None,
) -> int:
    """Adjust ``sku``'s units by ``delta`` (negative: units leave), as a ledger
    entry of ``kind`` (one of ADJUSTMENTS), never a bare overwrite.

    Invariant: free stock never goes negative, and only free units can leave
    (held ones are a cart's, sold ones a buyer's). The entry is applied like
    a receipt (``_apply_next``); one the free units cannot cover is voided
    and this raises. Conservation holds throughout: ``received`` is the sum
    of the entries applied. Returns the entry's number. ``key``: as
    ``stock_restock``'s; a repeat gets the first sending's answer (refused
    again, or AlreadyRecorded).

    Raises InvalidQuantity (delta 0 or not whole, unknown kind), NotStocked,
    FreeStockShort (with the units free), AlreadyRecorded.
    """
    if isinstance(delta, bool) or not isinstance(delta, int) or delta == 0:
        raise InvalidQuantity("An adjustment is a whole number of units, not 0.")
    if kind not in ADJUSTMENTS:
        raise InvalidQuantity(f"An adjustment is one of: {', '.join(ADJUSTMENTS)}.")
    if not _inventories().count_documents({"_id": sku}, limit=1):
        raise NotStocked()
    seq, fresh = _record(sku, delta, kind, note, now or timezone.now(), key)
    doc = _inventories().find_one({"_id": sku}, {"quantity": 1, "voided": 1})
    refused = seq in (doc.get("voided") or [])
    if not fresh:
        # The first sending's answer, not today's free units: refused then.
        raise AlreadyRecorded(seq=seq, same=True, refused=refused)
    if refused:
        raise FreeStockShort(free=doc["quantity"], asked=-delta)
    return seq


def _apply_openings(wanted: Mapping[str, int], now: datetime) -> None:
    """Entry 1 of each SKU applied to its inventory, guarded on
    ``ledger_seq == 0`` (an inventory applies its first entry once).

    One update per distinct quantity, not per SKU: opening counts repeat,
    and on the Rust server one update_many costs far less than as many
    single updates; the guard is still each inventory's own.
    """
    by_units: dict[int, list[str]] = {}
    for sku, units in wanted.items():
        by_units.setdefault(units, []).append(sku)
    for units, group in by_units.items():
        _inventories().update_many(
            {"_id": {"$in": group}, "ledger_seq": 0},
            {
                "$inc": {"quantity": units, "received": units},
                "$set": {"ledger_seq": 1, "modified_at": now},
            },
        )


def stock_open(
    *,
    quantities: Mapping[str, int],
    note: str = "opening stock",
    now=None,
    fields: Mapping[str, Mapping] | None = None,
) -> int:
    """Open the online stock of many SKUs at once (demo loads, imports).

    The bulk form of a first ``stock_restock``, with the same documents and
    the same order of writes: empty inventories, then ledger entry 1 of each
    SKU (pending), then each entry applied under the guard
    ``ledger_seq == 0``, then the pending flags cleared. A crash anywhere
    leaves state that ``stock_ledger_settle`` finishes. A SKU that already
    has a ledger is left alone (its entry 1 exists), so running it twice
    opens nothing twice. Returns how many SKUs were opened. ``fields``: per
    stock location, what names it when its inventory is created here (a
    store's, see ``_new_inventory``).

    Raises InvalidQuantity when a quantity is not a positive whole number.
    """
    wanted = {sku: _units(quantity) for sku, quantity in quantities.items()}
    if not wanted:
        return 0
    now = now or timezone.now()
    fields = fields or {}
    insert_new(
        _inventories(), [_new_inventory(sku, now, fields.get(sku)) for sku in wanted]
    )
    entries = [
        {
            "sku": sku,
            "seq": 1,
            "quantity": q,
            "kind": "receipt",
            "note": note[:200],
            "at": now,
        }
        for sku, q in wanted.items()
    ]
    opened = insert_new(_ledger(), [{**e, "pending": True} for e in entries])
    skus = [entries[i]["sku"] for i in opened]
    if not skus:
        return 0
    _apply_openings({sku: wanted[sku] for sku in skus}, now)
    _ledger().update_many(
        {"sku": {"$in": skus}, "seq": 1, "pending": True}, {"$unset": {"pending": ""}}
    )
    return len(skus)


def stock_ledger_settle() -> int:
    """Apply every pending ledger entry (after a crash); return how many SKUs.

    Safe to run at any time and concurrently: entries apply once, in order.
    """
    skus = _ledger().distinct("sku", {"pending": True})
    for sku in skus:
        _settle(sku)
        # Entries applied by a run that crashed before clearing the flag.
        applied = _inventories().find_one({"_id": sku}, {"ledger_seq": 1})
        _ledger().update_many(
            {"sku": sku, "pending": True, "seq": {"$lte": applied["ledger_seq"]}},
            {"$unset": {"pending": ""}},
        )
    return len(skus)
