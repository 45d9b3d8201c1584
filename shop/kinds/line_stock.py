"""A stock hold kept in its cart line (docs/architecture.md §3.8).

A product line's ``quantity`` is what its cart holds of the line's stock
location (``CartLine.sku``) while the cart is in a holding state; there is
no hold document. Every move of units is between a counter (the location's
``Inventory``: ``catalog.services.counters``) and a cart, each side one
conditional update whose filter carries the rule, in this order:

* taking n units (add, grow): 1. the counter, guarded ``quantity >= n``,
  takes them and journals the move (``takes``); 2. the cart records them:
  its write (the caller's: a line pushed, grown, or a new cart inserted with
  it) lists the move in the line's ``applied`` and is guarded on the cart
  being active and the move not fenced (``stock_void``). The cart refuses:
  the counter takes them back at once (``untake``, guarded on its entry).
* giving units back (remove, shrink, expire, cancel, complete): 1. the
  cart's write (the caller's: a line removed or shrunk, or the state move)
  carries a ``stock_back`` entry per location, guarded on the cart as read;
  2. each counter gets its units, free or sold, journaled in ``gives`` so it
  applies once; 3. the ``stock_back`` entries go, by a write of their own
  naming the ops this process saw applied (never "whatever is there": a
  writer stalled between its steps 1 and 2 would lose its units).

A unit is thus never in two places: a counter's free units only grow after
a cart gave them up, a line only grows after its counter gave it units.
Per location: ``free + held + in_flight + sold == received``, where
``held`` sums the lines of carts in a holding state and ``in_flight`` the
takes no cart lists and the ``stock_back`` entries their counter has not
applied (``held_units``).

A crash between the steps leaves a journal entry (a take the cart never
recorded; a give-back the counter may not have applied, or whose entry
stayed), which ``recover`` finishes or undoes once older than the grace,
fencing the stalled writer out first; every point has a crash test.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime

from pymongo.errors import DuplicateKeyError

from catalog import faults
from catalog.documents import hold_id
from catalog.services import counters
from shop.cart_state import EXPIRED, HOLDING_STATES
from shop.services.common import carts

# The fields the recovery reads of a cart to decide whether it lists a move.
_PROOF = {"items.applied": 1, "stock_back": 1, "moved_in": 1, "state": 1}


def _cart_of(hold: str) -> str:
    """The cart id of a counter's journal entry's ``hold`` ("<key>|<cart>")."""
    return hold.rsplit("|", 1)[1]


# --- Taking units: counter, then cart ---------------------------------------------


def new_line(line: dict, op: str) -> dict:
    """A line's document as a new cart is born with it: the take listed."""
    return {**line, "applied": [op]}


def pushed(line: dict, op: str) -> tuple[dict, dict]:
    """The guard and update recording a take as a new line (the cart lists
    no line of its location)."""
    return (
        {"items.sku": {"$ne": line["sku"]}, "stock_void": {"$ne": op}},
        {"$push": {"items": new_line(line, op)}},
    )


def grown(key: str, old: int, units: int, op: str) -> tuple[dict, dict]:
    """The guard and update recording a take as more of a line that holds
    ``old`` units, as read."""
    return (
        {
            "items": {"$elemMatch": {"sku": key, "quantity": old}},
            "stock_void": {"$ne": op},
        },
        {"$inc": {"items.$.quantity": units}, "$push": {"items.$.applied": op}},
    )


def merged(*updates: dict) -> dict:
    """One update from several, operator by operator (``{"$push": {a}}`` and
    ``{"$push": {b}}`` make ``{"$push": {a, b}}``); a field written twice is
    a mistake."""
    out: dict = {}
    for update in updates:
        for operator, fields in update.items():
            into = out.setdefault(operator, {})
            if set(into) & set(fields):
                raise ValueError(f"{operator} writes a field twice")
            into.update(fields)
    return out


# --- Giving units back: cart, counters, finish -------------------------------------


def back_entry(
    key: str, *, free: int = 0, sold: int = 0, forget: Iterable[str] = (), now
) -> dict:
    """A ``stock_back`` entry for ``free + sold`` units of ``key`` leaving a
    cart; ``forget``: the ``applied`` ops of the line it ends or shrinks."""
    return {
        "op": counters.new_op(),
        "sku": key,
        "free": free,
        "sold": sold,
        "forget": list(forget),
        "at": now,
    }


def give(
    *,
    cart_id: str,
    entries: list[dict],
    write: Callable[[dict], bool],
    finish: Callable[[str, list[tuple[str, str]]], None] | None = None,
) -> bool:
    """The give-back of ``entries`` (``back_entry``, one per location): step
    1 is ``write(push)``, the caller's guarded cart write with ``push`` (the
    entries' ``$push``) merged in, False when its guard refused (then
    nothing changed). Then every counter in one statement, then step 3
    (``finish_back``, or the caller's ``finish(cart_id, moves)``: a
    checkout batches it, and calls ``finish_back`` itself). True when the
    cart wrote."""
    if len({e["sku"] for e in entries}) < len(entries):
        raise ValueError("a give-back names each location once")
    if not write({"$push": {"stock_back": {"$each": entries}}} if entries else {}):
        return False
    if not entries:
        return True
    faults.point("stock.give.after_hold")
    moves = [
        (e["sku"], hold_id(e["sku"], cart_id), _counted(e), e["forget"])
        for e in entries
    ]
    # A move whose step 2 a recovery's fence refused (its writer stalled past
    # the grace) is the recovery's to finish: its entry stays.
    applied = set(counters.give(moves))
    faults.point("stock.give.after_counter")
    done = [(e["sku"], e["op"]) for e in entries if e["op"] in applied]
    (finish or finish_back)(cart_id, done)
    faults.point("stock.give.after_finish")
    return True


def _counted(entry: dict) -> dict:
    """What a counter's step 2 reads of a ``stock_back`` entry."""
    return {k: entry[k] for k in ("op", "free", "sold", "at")}


def finish_back(cart_id: str, moves: list[tuple[str, str]]) -> None:
    """Step 3 of give-backs of one cart whose counters applied them,
    (location, op) each (``finish_backs``)."""
    finish_backs([(cart_id, key, op) for key, op in moves])


def finish_backs(moves: list[tuple[str, str, str]]) -> None:
    """Step 3 of give-backs whose counters applied them, (cart id, location,
    op) each, several carts' in one statement (a checkout's are batched,
    ``shop.services.tidy``): the carts' ``stock_back`` entries go; then each
    counter's journal entry of the move is done (dropped by this process's
    next write to the counter: ``counters.Finished``). Never the other way
    round: a counter's entry dropped while the cart's stays would read as a
    give-back the counter never applied, and be applied again.

    Until it runs, a cart shows entries the counters' journals say were
    applied: nothing counts them twice (``held_units``), and the
    reconciler finishes them if it never runs (``recover``, after its
    grace)."""
    if not moves:
        return
    # The ops are unique: pulling every one from every cart pulls each
    # from its own.
    carts().update_many(
        {"_id": {"$in": list({cart_id for cart_id, _, _ in moves})}},
        {"$pull": {"stock_back": {"op": {"$in": [op for *_, op in moves]}}}},
    )
    for _, key, op in moves:
        counters.given(key, op)


# --- A login's transfer: source cart, target cart, finish ----------------------------


def transfer(
    *,
    key: str,
    source_id: str,
    target_id: str,
    units: int,
    applied: list[str],
    unlist: Callable[[dict], bool],
    record: Callable[[str, dict], object],
    now: datetime,
) -> object:
    """Hand a line's ``units`` of ``key`` from one cart to another (a
    login's merge); nothing is free in between, so nobody else can take
    them.

    1. ``unlist(push)``, the caller's guarded write taking the line off the
       source, with ``push`` (a ``stock_back`` entry naming the target)
       merged in; False: nothing changed, returns None.
    2. ``record(op, moved_in)``, the caller's write onto the target (built
       with ``pushed`` or ``grown``, ``moved_in`` merged in: the proof this
       transfer applied there, which outlives the line); refused: the units
       go free through the counter instead, as a give-back of the same move.
    3. the source's entry goes; 4. the target's ``moved_in``.

    ``applied``: the line's takes as read, whose counter entries are dropped
    first (the line proves them only until it leaves). Returns what
    ``record`` returned (falsy when the target refused)."""
    if applied:
        counters.drop(key, takes=applied)
    op = counters.new_op()
    entry = {"op": op, "sku": key, "free": 0, "sold": 0, "forget": []}
    entry.update({"moved": units, "to": target_id, "at": now})
    if not unlist({"$push": {"stock_back": entry}}):
        return None
    faults.point("stock.transfer.after_source")
    moved_in = {"$push": {"moved_in": {"op": op, "source": source_id, "at": now}}}
    recorded = record(op, moved_in)
    if not recorded:
        _refused(source_id, key, op, units, now)
        return recorded
    faults.point("stock.transfer.after_target")
    _pull(source_id, op)
    faults.point("stock.transfer.after_finish")
    _moved_in_done(target_id, op)
    return recorded


def _refused(source_id: str, key: str, op: str, units: int, at: datetime) -> None:
    """A transfer the target refused: its units go free, as a give-back of
    the same move (the counter applies an op once, whoever asks)."""
    counted = {"op": op, "free": units, "sold": 0, "at": at}
    applied = counters.give([(key, hold_id(key, source_id), counted, [])])
    finish_back(source_id, [(key, op) for op in applied])


def _moved_in_done(target_id: str, op: str) -> None:
    carts().update_one({"_id": target_id}, {"$pull": {"moved_in": {"op": op}}})


# --- Moves left in flight (the reconciler) -----------------------------------------


def recover(*, before: datetime) -> int:
    """Finish or undo every move left in flight since before ``before`` (a
    crash, or a writer stalled that long); return how many.

    A take its cart lists is finished (its entry dropped). One it does not
    is fenced on the cart (``stock_void``: the stalled writer can no longer
    record it) and its units go back to the counter. A give-back is fenced
    on its counter and applied there unless the writer had, then finished.
    Entries of finished moves no process dropped go too, uncounted. Safe to
    run twice at once: every step is guarded on the move's op.
    """
    done = 0
    for key, move in counters.takes_before(before):
        done += _recover_take(key, move)
    for cart in carts().find({"stock_back.at": {"$lt": before}}, {"stock_back": 1}):
        for entry in cart["stock_back"]:
            if entry["at"] < before:
                done += _recover_back(cart["_id"], entry)
    for key, move in counters.gives_before(before):
        done += _finish_give(key, move)
    for cart in carts().find({"moved_in.at": {"$lt": before}}, {"moved_in": 1}):
        done += _recover_moved_in(cart, before)
    return done


def _lists(cart: dict | None, op: str) -> bool:
    """Whether a cart (``_PROOF`` fields) proves take ``op``: a line lists it
    in ``applied``, or a give-back in flight ends it (``forget``)."""
    if cart is None:
        return False
    return (
        any(op in (line.get("applied") or []) for line in cart.get("items") or [])
        or any(op in (e.get("forget") or []) for e in cart.get("stock_back") or [])
        or any(op == m["op"] for m in cart.get("moved_in") or [])
    )


def _recover_take(key: str, move: dict) -> int:
    """A take's entry older than the grace: dropped if its cart lists the
    move (0), else the move is fenced and undone (1), unless the writer
    recorded it just before the fence (0)."""
    op, cart_id = move["op"], _cart_of(move["hold"])
    if not _lists(carts().find_one({"_id": cart_id}, _PROOF), op):
        _fence_take(cart_id, op, move["at"])
        if not _lists(carts().find_one({"_id": cart_id}, _PROOF), op):
            return int(counters.untake(key, op, move["units"]))
    counters.drop(key, takes=[op])
    return 0


def _fence_take(cart_id: str, op: str, at: datetime) -> None:
    """From now on the cart refuses take ``op`` (``stock_void``). A cart that
    does not exist yet (the take of a new cart's first line, whose insert
    has not come) is inserted as a tombstone: ended, nobody's, so the
    stalled writer's insert fails on its ``_id`` and gives the units back."""
    try:
        carts().update_one(
            {"_id": cart_id},
            {
                "$addToSet": {"stock_void": op},
                "$setOnInsert": {
                    "owner": "",
                    "state": EXPIRED,
                    "created_at": at,
                    "modified_at": at,
                    "expires_at": at,
                    "ended_at": at,
                },
            },
            upsert=True,
        )
    except DuplicateKeyError:
        _fence_take(cart_id, op, at)  # inserted meanwhile: fence that one


def _recover_back(cart_id: str, entry: dict) -> int:
    """A ``stock_back`` entry older than the grace: the counter gets its
    units unless the writer's own step 2 did, never both; then it goes.

    First a fence on the counter (``counters.fence_give``): from then on the
    writer's step 2 is refused. If the writer's entry was there, it applied.
    Else, if the cart still has the entry, the writer cannot have applied
    (it drops the entry only after its step 2), so the fence applies the
    units, once, dropping the takes the entry ends as step 2 would have."""
    key, op = entry["sku"], entry["op"]
    if entry.get("to"):
        if _transfer_applied(entry):
            _pull(cart_id, op)
            _moved_in_done(entry["to"], op)
            return 1
        # Refused for good: its units go free, as the writer's refusal does.
        entry = {**entry, "free": entry["moved"]}
    if counters.fence_give(key, op, hold_id(key, cart_id), entry["at"]):
        pending = {"_id": cart_id, "stock_back.op": op}
        if carts().count_documents(pending, limit=1):
            counters.apply_fenced(
                key, op, free=entry["free"], sold=entry["sold"], forget=entry["forget"]
            )
    _pull(cart_id, op)
    return 1


def _transfer_applied(entry: dict) -> bool:
    """Whether the target of a transfer lists it; if not, it is fenced there
    first (``_fence_take``), so it never will."""
    target, op = entry["to"], entry["op"]
    if _lists(carts().find_one({"_id": target}, _PROOF), op):
        return True
    _fence_take(target, op, entry["at"])
    return _lists(carts().find_one({"_id": target}, _PROOF), op)


def _recover_moved_in(cart: dict, before: datetime) -> int:
    """Transfers received before ``before`` whose source has finished but
    whose step 4 did not run (a crash): the target lets them go."""
    done = 0
    for moved in cart.get("moved_in") or []:
        pending = {"_id": moved["source"], "stock_back.op": moved["op"]}
        if moved["at"] < before and not carts().count_documents(pending, limit=1):
            _moved_in_done(cart["_id"], moved["op"])
            done += 1
    return done


def _pull(cart_id: str, op: str) -> None:
    carts().update_one({"_id": cart_id}, {"$pull": {"stock_back": {"op": op}}})


def _finish_give(key: str, move: dict) -> int:
    """A give-back its counter applied, older than the grace: the cart's
    step 3 if a crash came before it (then 1), and the counter's entry
    dropped."""
    cart_id, op = _cart_of(move["hold"]), move["op"]
    unfinished = carts().count_documents({"_id": cart_id, "stock_back.op": op}, limit=1)
    if unfinished:
        _pull(cart_id, op)
    counters.drop(key, gives=[op])
    return unfinished


# --- Conservation -------------------------------------------------------------------


def held_units() -> dict[str, int]:
    """Units held per location, as read now: the lines of carts in a holding
    state, the takes no cart lists, and the ``stock_back`` entries their
    counter has not applied. With the counters' free and sold units this
    is what was received (meant for a quiet moment: a move between two
    reads shows for a moment)."""
    held: dict[str, int] = defaultdict(int)
    proof: dict[str, dict] = {}
    gives: dict[str, set[str]] = {}
    takes: list[tuple[str, dict]] = []
    moving: list[dict] = []
    for inv in counters.inventories().find({}, {"takes": 1, "gives": 1}):
        gives[inv["_id"]] = {
            g["op"] for g in inv.get("gives") or [] if not g.get("fence")
        }
        takes += [(inv["_id"], t) for t in inv.get("takes") or []]
    fields = {
        "state": 1,
        "items.sku": 1,
        "items.quantity": 1,
        "items.applied": 1,
        "stock_back": 1,
        "moved_in": 1,
    }
    # Two index-served queries, not one top-level $or (which the Rust server
    # answers with a collection scan): the holding carts, and the carts with
    # a give-back in flight (sparse index on ``stock_back.at``).
    found = {
        cart["_id"]: cart
        for query in (
            {"state": {"$in": list(HOLDING_STATES)}},
            {"stock_back.at": {"$exists": True}},
        )
        for cart in carts().find(query, fields)
    }
    for cart in found.values():
        proof[cart["_id"]] = cart
        if cart["state"] in HOLDING_STATES:
            for line in cart.get("items") or []:
                held[line["sku"]] += line["quantity"]
        for entry in cart.get("stock_back") or []:
            if entry["op"] not in gives.get(entry["sku"], set()):
                held[entry["sku"]] += entry["free"] + entry["sold"]
                moving.append(entry)
    for key, take in takes:
        if not _lists(_proof_of(_cart_of(take["hold"]), proof), take["op"]):
            held[key] += take["units"]
    for entry in moving:
        # A transfer in flight: its units are the target's once it lists it.
        if entry.get("to") and not _lists(_proof_of(entry["to"], proof), entry["op"]):
            held[entry["sku"]] += entry["moved"]
    return held


def _proof_of(cart_id: str, read: dict[str, dict]) -> dict | None:
    """A cart's proof fields: as read with the others, else read now."""
    if cart_id in read:
        return read[cart_id]
    return carts().find_one({"_id": cart_id}, _PROOF)
