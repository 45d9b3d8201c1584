"""Reads of online stock and its reservations; never writes."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from catalog.documents import Inventory, StockMovement, StockThreshold


@dataclass(frozen=True)
class StockHold:
    """One reservation entry: ``quantity`` units of ``sku`` held by a cart."""

    sku: str
    cart_id: str
    quantity: int
    at: datetime


@dataclass(frozen=True)
class StockLevel:
    sku: str
    free: int
    held: int
    sold: int
    received: int
    holders: int


@dataclass(frozen=True)
class StockProblem:
    sku: str
    message: str


def _inventories():
    return Inventory.coll()


def stock_free(*, skus: Iterable[str]) -> dict[str, int]:
    """Units free to reserve per SKU; SKUs without online stock are absent."""
    found = _inventories().find({"_id": {"$in": list(skus)}}, {"quantity": 1})
    return {doc["_id"]: doc["quantity"] for doc in found}


# What a SKU's level is read from: the one place that knows how free, held,
# sold and received units are stored on an inventory.
_LEVEL_FIELDS = {"quantity": 1, "reservations.quantity": 1, "sold": 1, "received": 1}


def _level(doc: dict) -> StockLevel:
    entries = doc.get("reservations") or []
    return StockLevel(
        sku=doc["_id"],
        free=doc["quantity"],
        held=sum(e["quantity"] for e in entries),
        sold=doc.get("sold", 0),
        received=doc.get("received", 0),
        holders=len(entries),
    )


def stock_level(*, sku: str) -> StockLevel | None:
    doc = _inventories().find_one({"_id": sku}, _LEVEL_FIELDS)
    return None if doc is None else _level(doc)


def stock_levels(*, skus: Iterable[str]) -> dict[str, StockLevel]:
    """The levels of many SKUs (one query); SKUs without online stock are absent."""
    found = _inventories().find({"_id": {"$in": list(skus)}}, _LEVEL_FIELDS)
    return {doc["_id"]: _level(doc) for doc in found}


@dataclass(frozen=True)
class LowStock:
    sku: str
    free: int
    threshold: int


def stock_thresholds(*, skus: Iterable[str]) -> dict[str, int]:
    """The SKUs' own low-stock thresholds (SKUs on the default are absent)."""
    found = StockThreshold.coll().find({"_id": {"$in": list(skus)}})
    return {doc["_id"]: doc["threshold"] for doc in found}


def stock_low(*, default: int | None = None, limit: int = 100) -> list[LowStock]:
    """SKUs whose free units are under their threshold, fewest free first.

    The threshold is the SKU's own (``StockThreshold``) or ``default``
    (settings.LOW_STOCK_THRESHOLD). Index-served: inventories under the
    default (index on ``quantity``), then the few SKUs whose own threshold
    is higher than the default.
    """
    default = settings.LOW_STOCK_THRESHOLD if default is None else default
    under = list(
        _inventories()
        .find({"quantity": {"$lt": default}}, {"quantity": 1})
        .sort([("quantity", 1), ("_id", 1)])
        .limit(limit * 2)
    )
    own = stock_thresholds(skus=[doc["_id"] for doc in under])
    higher = {
        doc["_id"]: doc["threshold"]
        for doc in StockThreshold.coll().find({"threshold": {"$gt": default}})
    }
    found = {
        doc["_id"]: LowStock(doc["_id"], doc["quantity"], own.get(doc["_id"], default))
        for doc in under
        if doc["quantity"] < own.get(doc["_id"], default)
    }
    for doc in _inventories().find({"_id": {"$in": list(higher)}}, {"quantity": 1}):
        if doc["quantity"] < higher[doc["_id"]]:
            found[doc["_id"]] = LowStock(
                doc["_id"], doc["quantity"], higher[doc["_id"]]
            )
    return sorted(found.values(), key=lambda low: (low.free, low.sku))[:limit]


@dataclass(frozen=True)
class LedgerEntry:
    seq: int
    quantity: int
    kind: str
    note: str
    at: datetime
    voided: bool


def stock_ledger(*, sku: str, limit: int = 20) -> list[LedgerEntry]:
    """A SKU's latest ledger entries, newest first (voided: refused)."""
    doc = _inventories().find_one({"_id": sku}, {"voided": 1}) or {}
    voided = set(doc.get("voided") or [])
    found = StockMovement.coll().find({"sku": sku}).sort("seq", -1).limit(limit)
    return [
        LedgerEntry(
            seq=e["seq"],
            quantity=e["quantity"],
            kind=e.get("kind", "receipt"),
            note=e.get("note", ""),
            at=e["at"],
            voided=e["seq"] in voided,
        )
        for e in found
    ]


def stock_hold(*, sku: str, cart_id: str) -> StockHold | None:
    """This cart's reservation of ``sku``, if it has one."""
    doc = _inventories().find_one(
        {"_id": sku}, {"reservations": {"$elemMatch": {"cart_id": cart_id}}}
    )
    entries = (doc or {}).get("reservations") or []
    if not entries:
        return None
    e = entries[0]
    return StockHold(sku=sku, cart_id=cart_id, quantity=e["quantity"], at=e["at"])


def stock_holds_of_cart(*, cart_id: str) -> list[StockHold]:
    """Every reservation of one cart (index on ``reservations.cart_id``)."""
    found = _inventories().find(
        {"reservations.cart_id": cart_id},
        {"reservations": {"$elemMatch": {"cart_id": cart_id}}},
    )
    holds = []
    for doc in found:
        for e in doc.get("reservations") or []:
            holds.append(
                StockHold(
                    sku=doc["_id"], cart_id=cart_id, quantity=e["quantity"], at=e["at"]
                )
            )
    return holds


def stock_holds(*, before: datetime | None = None) -> Iterator[StockHold]:
    """Every reservation entry (stamped before ``before``), SKU by SKU."""
    stage: dict = {"reservations.0": {"$exists": True}}
    pipeline: list[dict] = [{"$match": stage}, {"$unwind": "$reservations"}]
    if before is not None:
        stage["reservations.at"] = {"$lt": before}
        pipeline.append({"$match": {"reservations.at": {"$lt": before}}})
    pipeline.append({"$sort": {"_id": 1}})
    pipeline.append(
        {
            "$project": {
                "cart_id": "$reservations.cart_id",
                "quantity": "$reservations.quantity",
                "at": "$reservations.at",
            }
        }
    )
    for row in _inventories().aggregate(pipeline):
        yield StockHold(
            sku=row["_id"],
            cart_id=row["cart_id"],
            quantity=row["quantity"],
            at=row["at"],
        )


def stock_problems() -> list[StockProblem]:
    """SKUs breaking conservation, each with the reason.

    Per SKU, from one document (an atomic snapshot): ``quantity >= 0``;
    every entry holds at least one unit and no cart has two entries;
    ``quantity + held + sold == received``; and ``received`` equals the sum of
    the ledger entries applied so far (seq <= ledger_seq, not voided).
    """
    ledger: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for entry in StockMovement.coll().find({}, {"sku": 1, "seq": 1, "quantity": 1}):
        ledger[entry["sku"]].append((entry["seq"], entry["quantity"]))

    problems = []
    for doc in _inventories().find({}):
        sku = doc["_id"]
        entries = doc.get("reservations") or []
        held = sum(e["quantity"] for e in entries)
        free, sold = doc["quantity"], doc.get("sold", 0)
        received = doc.get("received", 0)
        voided = set(doc.get("voided") or [])
        applied = sum(
            q
            for seq, q in ledger[sku]
            if seq <= doc.get("ledger_seq", 0) and seq not in voided
        )
        if free < 0:
            problems.append(StockProblem(sku, f"negative free quantity {free}"))
        if any(e["quantity"] < 1 for e in entries):
            problems.append(StockProblem(sku, "a reservation of less than 1 unit"))
        carts = [e["cart_id"] for e in entries]
        if len(carts) != len(set(carts)):
            problems.append(StockProblem(sku, "a cart holds two reservation entries"))
        if free + held + sold != received:
            problems.append(
                StockProblem(
                    sku,
                    f"free {free} + held {held} + sold {sold} != received {received}",
                )
            )
        if applied != received:
            problems.append(
                StockProblem(sku, f"ledger says {applied} received, stock {received}")
            )
    return problems
