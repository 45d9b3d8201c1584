"""Stock: what is received, returned and sold on each stock location (DESIGN
§3), beside the counter's moves (``catalog.services.counters``).

Every function's ``sku`` is a stock location (``catalog.documents.
stock_location``): a SKU's online stock, or one store's (``"<sku>@<store>"``,
click & collect). Each location is a counter of its own
(``Inventory.quantity`` free, ``sold``, ``received``). Units leave the
counter for a cart's line and come back (free, or sold) through the moves
of ``catalog.services.counters``, in the order the shop writes them
(``shop.kinds.line_stock``: the units a cart holds are in its lines). This
module keeps the rest: the ledger of units received (restock, count
correction, opening stock), and a paid order's units returned on sale
(``stock_return``). Invariant per location: ``quantity + held + sold ==
received`` and ``quantity >= 0`` (``catalog.selectors.stock.stock_problems``,
with what the carts hold).
"""

import re
from collections.abc import Mapping
from datetime import datetime

from django.utils import timezone
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from catalog.documents import StockMovement
from catalog.errors import (
    AlreadyRecorded,
    FreeStockShort,
    InvalidQuantity,
    NotStocked,
    ReservationMissing,
)
from catalog.services import counters
from config.mongo import insert_new

# Attempts of a read-then-conditional-update loop before giving up; each
# retry means another writer changed the same hold in between.
_ATTEMPTS = 8


def _inventories() -> Collection:
    return counters.inventories()


def _ledger() -> Collection:
    return StockMovement.coll()


def _units(value: object) -> int:
    """A strictly positive int (bools excluded), else InvalidQuantity."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidQuantity()
    return value


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
