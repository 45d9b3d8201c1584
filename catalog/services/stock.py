"""Online stock: reserve, adjust, release, commit and restock (DESIGN §3).

Every change is ONE conditional update of ONE inventory document. The rule
that must hold (enough free units, this cart's entry present and of this
size) is in the update's filter, never checked beforehand; a modified count
of 0 means the rule said no. Filters that name two fields of one reservation
entry use ``$elemMatch`` so both must hold on the same entry.

Invariant kept by every function, per SKU:
``quantity + sum(reservations.quantity) + sold == received`` and
``quantity >= 0``; each cart has at most one entry, of at least 1 unit.
"""

from collections.abc import Mapping
from datetime import datetime

from django.utils import timezone
from pymongo import UpdateOne
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, DuplicateKeyError

from catalog.documents import Inventory, StockMovement
from catalog.errors import (
    AlreadyReserved,
    FreeStockShort,
    InvalidQuantity,
    NotStocked,
    OutOfStock,
    ReservationMissing,
)
from config.errors import DomainError

# Attempts of a read-then-conditional-update loop before giving up; each
# retry means another writer changed the same entry in between.
_ATTEMPTS = 8


def _inventories() -> Collection:
    return Inventory.coll()


def _ledger() -> Collection:
    return StockMovement.coll()


def _units(value: object) -> int:
    """A strictly positive int (bools excluded), else InvalidQuantity."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidQuantity()
    return value


def _entry(sku: str, cart_id: str) -> tuple[dict | None, dict | None]:
    """The inventory (without its other entries) and this cart's entry."""
    doc = _inventories().find_one(
        {"_id": sku},
        {
            "quantity": 1,
            "reservations": {"$elemMatch": {"cart_id": cart_id}},
        },
    )
    if doc is None:
        return None, None
    entries = doc.get("reservations") or []
    return doc, (entries[0] if entries else None)


def _entry_as_read(sku: str, cart_id: str, quantity: int, at) -> dict:
    """The guard of a write based on this cart's entry as read: it must still
    hold ``quantity`` units stamped ``at`` ($elemMatch: on the SAME entry)."""
    entry = {"cart_id": cart_id, "quantity": quantity, "at": at}
    return {"_id": sku, "reservations": {"$elemMatch": entry}}


def stock_reserve(
    *, sku: str, cart_id: str, quantity: int, now: datetime | None = None
) -> None:
    """Hold ``quantity`` units of ``sku`` for ``cart_id`` (a new entry).

    Guard: ``quantity >= n`` and no entry of this cart yet; effect: move n
    units from ``quantity`` to a new reservation entry. A repeat fails the
    guard, so nothing is ever held twice.

    Raises InvalidQuantity, NotStocked, AlreadyReserved (use stock_adjust),
    OutOfStock (with the number still free).
    """
    quantity = _units(quantity)
    now = now or timezone.now()
    result = _inventories().update_one(
        {
            "_id": sku,
            "quantity": {"$gte": quantity},
            "reservations.cart_id": {"$ne": cart_id},
        },
        {
            "$inc": {"quantity": -quantity},
            "$push": {
                "reservations": {"cart_id": cart_id, "quantity": quantity, "at": now}
            },
            "$set": {"modified_at": now},
        },
    )
    if result.modified_count:
        return
    # Only to explain the refusal; the decision was the filter's.
    doc, entry = _entry(sku, cart_id)
    if doc is None:
        raise NotStocked()
    if entry is not None:
        raise AlreadyReserved()
    raise OutOfStock(available=doc["quantity"])


def stock_adjust(
    *,
    sku: str,
    cart_id: str,
    delta: int,
    now: datetime | None = None,
    expect_quantity: int | None = None,
    expect_at: datetime | None = None,
) -> None:
    """Change the cart's reservation of ``sku`` by ``delta`` units (+ or -).

    Guard: this cart's entry exists with more than ``-delta`` units (it keeps
    at least one; use stock_release to end it) and, when growing,
    ``quantity >= delta``; effect: move ``delta`` between ``quantity`` and
    the entry (positional ``$`` on the entry the ``$elemMatch`` found).
    With ``expect_quantity``/``expect_at`` the entry must also still have that
    size/stamp (the reconciler adjusts exactly what it inspected).

    Raises InvalidQuantity (delta 0, or the entry would drop below 1 unit),
    NotStocked, ReservationMissing, OutOfStock.
    """
    if isinstance(delta, bool) or not isinstance(delta, int) or delta == 0:
        raise InvalidQuantity()
    now = now or timezone.now()
    match: dict = {"cart_id": cart_id, "quantity": {"$gte": 1 - delta}}
    if expect_quantity is not None:
        if expect_quantity + delta < 1:
            raise InvalidQuantity("A hold cannot shrink below one unit; release it.")
        match["quantity"] = expect_quantity
    if expect_at is not None:
        match["at"] = expect_at
    query: dict = {"_id": sku, "reservations": {"$elemMatch": match}}
    if delta > 0:
        query["quantity"] = {"$gte": delta}
    result = _inventories().update_one(
        query,
        {
            "$inc": {"quantity": -delta, "reservations.$.quantity": delta},
            "$set": {"reservations.$.at": now, "modified_at": now},
        },
    )
    if not result.modified_count:
        raise _adjust_refusal(sku, cart_id, delta, expect_quantity, expect_at)


def _adjust_refusal(
    sku: str, cart_id: str, delta: int, expect_quantity, expect_at
) -> DomainError:
    """Why ``stock_adjust``'s guarded update matched nothing, read again."""
    doc, entry = _entry(sku, cart_id)
    if doc is None:
        return NotStocked()
    if entry is None:
        return ReservationMissing()
    if (expect_quantity is not None and entry["quantity"] != expect_quantity) or (
        expect_at is not None and entry["at"] != expect_at
    ):
        return ReservationMissing("That hold changed meanwhile.")
    if delta < 0:
        return InvalidQuantity("A hold cannot shrink below one unit; release it.")
    return OutOfStock(available=doc["quantity"])


def stock_release(
    *,
    sku: str,
    cart_id: str,
    expect_quantity: int | None = None,
    expect_at: datetime | None = None,
) -> int:
    """Give back this cart's whole reservation of ``sku``; return the units.

    Guard: the entry as just read (``$elemMatch`` on cart, size and stamp);
    effect: add its units to ``quantity`` and ``$pull`` it, in one update.
    With ``expect_quantity``/``expect_at`` the entry is released only if it
    still has that size/stamp (the reconciler releases exactly what it inspected).
    Idempotent: a second release finds no entry and returns 0.
    """
    for _ in range(_ATTEMPTS):
        doc, entry = _entry(sku, cart_id)
        if entry is None:
            return 0
        if expect_quantity is not None and entry["quantity"] != expect_quantity:
            return 0
        if expect_at is not None and entry["at"] != expect_at:
            return 0
        units = entry["quantity"]
        result = _inventories().update_one(
            _entry_as_read(sku, cart_id, units, entry["at"]),
            {
                "$inc": {"quantity": units},
                "$pull": {"reservations": {"cart_id": cart_id}},
            },
        )
        if result.modified_count:
            return units
    return 0


def stock_commit(*, sku: str, cart_id: str, quantity: int) -> None:
    """Sell ``quantity`` units this cart holds: they leave stock for good.

    Guard: this cart's entry holds exactly ``quantity`` (one update), else
    the entry as just read, holding more; effect: ``$pull`` it, count
    ``quantity`` as sold and give any surplus back to ``quantity`` (a
    concurrent decrease may not have released it yet).

    Raises InvalidQuantity, ReservationMissing (no entry, or a smaller one).
    """
    quantity = _units(quantity)
    # The usual case, in one round trip: the entry holds exactly what is
    # sold, so nothing read is needed to write the effect.
    result = _inventories().update_one(
        {
            "_id": sku,
            "reservations": {"$elemMatch": {"cart_id": cart_id, "quantity": quantity}},
        },
        {
            "$inc": {"sold": quantity},
            "$pull": {"reservations": {"cart_id": cart_id}},
        },
    )
    if result.modified_count:
        return
    # A larger entry (its surplus goes back to free stock), or none.
    for _ in range(_ATTEMPTS):
        doc, entry = _entry(sku, cart_id)
        if entry is None or entry["quantity"] < quantity:
            raise ReservationMissing()
        held = entry["quantity"]
        result = _inventories().update_one(
            _entry_as_read(sku, cart_id, held, entry["at"]),
            {
                "$inc": {"sold": quantity, "quantity": held - quantity},
                "$pull": {"reservations": {"cart_id": cart_id}},
            },
        )
        if result.modified_count:
            return
    raise ReservationMissing()


def stock_transfer(
    *, sku: str, from_cart_id: str, to_cart_id: str, now: datetime | None = None
) -> bool:
    """Hand this SKU's reservation from one cart to another (cart merge).

    Guard: the source cart has an entry and the target has none; effect: the
    entry's ``cart_id`` changes. No unit is ever free in between, so nobody
    else can take it. Returns False when the guard fails.
    """
    now = now or timezone.now()
    result = _inventories().update_one(
        {
            "_id": sku,
            "$and": [
                {"reservations.cart_id": from_cart_id},
                {"reservations.cart_id": {"$ne": to_cart_id}},
            ],
        },
        {
            "$set": {
                "reservations.$[held].cart_id": to_cart_id,
                "reservations.$[held].at": now,
                "modified_at": now,
            }
        },
        array_filters=[{"held.cart_id": from_cart_id}],
    )
    return bool(result.modified_count)


def stock_refresh(
    *, sku: str, cart_ids: list[str], before: datetime, now: datetime | None = None
) -> int:
    """Stamp ``at = now`` on the entries of these carts older than ``before``.

    The reconciler confirmed those carts still hold the units; one update per
    SKU however many carts. Only the stamp changes, never a quantity.
    """
    if not cart_ids:
        return 0
    now = now or timezone.now()
    result = _inventories().update_one(
        {"_id": sku},
        {"$set": {"reservations.$[held].at": now}},
        array_filters=[{"held.cart_id": {"$in": cart_ids}, "held.at": {"$lt": before}}],
    )
    return result.modified_count


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


def _new_inventory(sku: str, now: datetime) -> dict:
    """An empty inventory: nothing received, held or sold, no ledger applied."""
    return {
        "_id": sku,
        "quantity": 0,
        "reservations": [],
        "received": 0,
        "sold": 0,
        "ledger_seq": 0,
        "modified_at": now,
    }


def _ensure_inventory(sku: str, now: datetime) -> None:
    try:
        _inventories().insert_one(_new_inventory(sku, now))
    except DuplicateKeyError:
        pass


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


def _record(sku: str, quantity: int, kind: str, note: str, now: datetime) -> int:
    """Write ledger entry ``n + 1`` of ``sku`` and apply it; its number."""
    for _ in range(_ATTEMPTS * 4):
        seq = _settle(sku) + 1
        try:
            _ledger().insert_one(
                {
                    "sku": sku,
                    "seq": seq,
                    "quantity": quantity,
                    "kind": kind,
                    "note": note[:200],
                    "at": now,
                    "pending": True,
                }
            )
        except DuplicateKeyError:
            continue  # another entry took this number: apply it, try the next
        _apply_next(sku, seq)
        return seq
    raise RuntimeError(f"could not record stock of {sku}: too many concurrent entries")


def stock_restock(
    *, sku: str, quantity: int, note: str = "", now: datetime | None = None
) -> int:
    """Receive ``quantity`` new units of ``sku`` (creating its inventory).

    The receipt is written to the ledger first as entry ``n + 1``, then
    applied with the guard ``ledger_seq == n``, so a crash in between leaves
    a pending entry that the next restock or stock_ledger_settle applies,
    exactly once. Returns the entry's number.

    Raises InvalidQuantity.
    """
    quantity = _units(quantity)
    now = now or timezone.now()
    _ensure_inventory(sku, now)
    return _record(sku, quantity, "receipt", note, now)


# What an adjustment may be: units damaged (written off), or a stock count
# that found more or fewer units than the books say.
ADJUSTMENTS = ("damaged", "correction")


def stock_correct(
    *, sku: str, delta: int, kind: str, note: str = "", now: datetime | None = None
) -> int:
    """Adjust ``sku``'s units by ``delta`` (negative: units leave), as a ledger
    entry of ``kind`` (one of ADJUSTMENTS), never a bare overwrite.

    Invariant: free stock never goes negative, and only free units can leave
    (held ones are a cart's, sold ones a buyer's). The entry is applied like
    a receipt (``_apply_next``); one the free units cannot cover is voided
    and this raises. Conservation holds throughout: ``received`` is the sum
    of the entries applied. Returns the entry's number.

    Raises InvalidQuantity (delta 0 or not whole, unknown kind), NotStocked,
    FreeStockShort (with the units free).
    """
    if isinstance(delta, bool) or not isinstance(delta, int) or delta == 0:
        raise InvalidQuantity("An adjustment is a whole number of units, not 0.")
    if kind not in ADJUSTMENTS:
        raise InvalidQuantity(f"An adjustment is one of: {', '.join(ADJUSTMENTS)}.")
    if not _inventories().count_documents({"_id": sku}, limit=1):
        raise NotStocked()
    seq = _record(sku, delta, kind, note, now or timezone.now())
    doc = _inventories().find_one({"_id": sku}, {"quantity": 1, "voided": 1})
    if seq in (doc.get("voided") or []):
        raise FreeStockShort(free=doc["quantity"], asked=-delta)
    return seq


def stock_open(
    *, quantities: Mapping[str, int], note: str = "opening stock", now=None
) -> int:
    """Open the online stock of many SKUs at once (demo loads, imports).

    The bulk form of a first ``stock_restock``, with the same documents and
    the same order of writes: empty inventories, then ledger entry 1 of each
    SKU (pending), then each entry applied under the guard
    ``ledger_seq == 0``, then the pending flags cleared. A crash anywhere
    leaves state that ``stock_ledger_settle`` finishes. A SKU that already
    has a ledger is left alone (its entry 1 exists), so running it twice
    opens nothing twice. Returns how many SKUs were opened.

    Raises InvalidQuantity when a quantity is not a positive whole number.
    """
    wanted = {sku: _units(quantity) for sku, quantity in quantities.items()}
    if not wanted:
        return 0
    now = now or timezone.now()
    _insert_new(_inventories(), [_new_inventory(sku, now) for sku in wanted])
    entries = [
        {"sku": sku, "seq": 1, "quantity": q, "note": note[:200], "at": now}
        for sku, q in wanted.items()
    ]
    opened = _insert_new(_ledger(), [{**e, "pending": True} for e in entries])
    skus = [entries[i]["sku"] for i in opened]
    if not skus:
        return 0
    _inventories().bulk_write(
        [
            UpdateOne(
                {"_id": sku, "ledger_seq": 0},
                {
                    "$inc": {"quantity": wanted[sku], "received": wanted[sku]},
                    "$set": {"ledger_seq": 1, "modified_at": now},
                },
            )
            for sku in skus
        ],
        ordered=False,
    )
    _ledger().update_many(
        {"sku": {"$in": skus}, "seq": 1, "pending": True}, {"$unset": {"pending": ""}}
    )
    return len(skus)


def _insert_new(collection: Collection, documents: list[dict]) -> list[int]:
    """Insert what is not there yet; the positions of the documents inserted."""
    try:
        collection.insert_many(documents, ordered=False)
    except BulkWriteError as exc:
        if any(e["code"] != 11000 for e in exc.details["writeErrors"]):
            raise
        duplicates = {e["index"] for e in exc.details["writeErrors"]}
        return [i for i in range(len(documents)) if i not in duplicates]
    return list(range(len(documents)))


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
