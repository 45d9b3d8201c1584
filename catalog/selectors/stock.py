"""Reads of stock (online and in stores): its counters, thresholds and
ledger; never writes. What carts hold is the shop's to read
(``shop.kinds.line_stock``)."""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from catalog.documents import (
    Inventory,
    StockMovement,
    StockThreshold,
)


@dataclass(frozen=True)
class StockLevel:
    sku: str
    free: int
    held: int
    sold: int
    received: int


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


def stock_at_stores(*, sku: str) -> dict[str, int]:
    """Units free to reserve of ``sku`` in each store that stocks it (its
    store locations, index on ``of_sku``); stores without one are absent."""
    found = _inventories().find({"of_sku": sku}, {"store_id": 1, "quantity": 1})
    return {doc["store_id"]: doc["quantity"] for doc in found}


def store_free(*, store_id: str) -> dict[str, int]:
    """Units free per SKU at one store (index on ``store_id``)."""
    found = _inventories().find({"store_id": store_id}, {"of_sku": 1, "quantity": 1})
    return {doc["of_sku"]: doc["quantity"] for doc in found}


def store_totals(*, item_ids: list[str]) -> dict[str, tuple[int, int]]:
    """Per SKU of these items: free units over every store, and how many
    stores stock it (index on ``item_id``)."""
    totals: dict[str, tuple[int, int]] = {}
    found = _inventories().find(
        {"item_id": {"$in": list(item_ids)}}, {"of_sku": 1, "quantity": 1}
    )
    for doc in found:
        units, stores = totals.get(doc["of_sku"], (0, 0))
        totals[doc["of_sku"]] = (units + doc["quantity"], stores + 1)
    return totals


# What a SKU's level is read from: the counters on its inventory. What is
# neither free nor sold is held: in carts' lines, or on its way between a
# cart and the counter (shop.kinds.line_stock counts it from the carts).
_LEVEL_FIELDS = {"quantity": 1, "sold": 1, "received": 1}


def _level(doc: dict) -> StockLevel:
    free, sold, received = doc["quantity"], doc.get("sold", 0), doc.get("received", 0)
    return StockLevel(
        sku=doc["_id"],
        free=free,
        held=received - free - sold,
        sold=sold,
        received=received,
    )


def stock_level(*, sku: str) -> StockLevel | None:
    return stock_levels(skus=[sku]).get(sku)


def stock_levels(*, skus: Iterable[str]) -> dict[str, StockLevel]:
    """The levels of many SKUs (one query); SKUs without online stock are
    absent."""
    docs = _inventories().find({"_id": {"$in": list(skus)}}, _LEVEL_FIELDS)
    return {d["_id"]: _level(d) for d in docs}


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
    default (index on ``quantity``) but those with a threshold of their
    own, which are read apart (index on ``threshold``; few: products
    silenced or watched more closely). Leaving them out of the first read
    keeps any number of silenced SKUs from filling its limit.
    """
    default = settings.LOW_STOCK_THRESHOLD if default is None else default
    own = {
        doc["_id"]: doc["threshold"]
        for doc in StockThreshold.coll().find(
            {"threshold": {"$ne": default}}, {"threshold": 1}
        )
    }
    under = (
        _inventories()
        # Online stock only: a store's stock is its own location.
        .find(
            {
                "quantity": {"$lt": default},
                "store_id": None,
                "_id": {"$nin": list(own)},
            },
            {"quantity": 1},
        )
        .sort([("quantity", 1), ("_id", 1)])
        .limit(limit)
    )
    found = [LowStock(doc["_id"], doc["quantity"], default) for doc in under]
    for doc in _inventories().find({"_id": {"$in": list(own)}}, {"quantity": 1}):
        if doc["quantity"] < own[doc["_id"]]:
            found.append(LowStock(doc["_id"], doc["quantity"], own[doc["_id"]]))
    return sorted(found, key=lambda low: (low.free, low.sku))[:limit]


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


def stock_problems(*, held: Mapping[str, int]) -> list[StockProblem]:
    """SKUs breaking conservation, each with the reason.

    Per SKU: ``quantity >= 0``; ``quantity + held + sold == received``,
    where ``held`` (the caller's: the shop counts it from the carts' lines
    and the moves in flight, ``shop.kinds.line_stock.held_units``) is what
    carts hold; and ``received`` equals the sum of the ledger entries
    applied so far, voided (refused) ones left out. Read from several
    documents: meant for a quiet moment (under traffic a move between two
    reads shows for a moment).
    """
    ledger: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for entry in StockMovement.coll().find({}, {"sku": 1, "seq": 1, "quantity": 1}):
        ledger[entry["sku"]].append((entry["seq"], entry["quantity"]))
    inventories = {doc["_id"]: doc for doc in _inventories().find({})}

    problems = []
    for sku, doc in inventories.items():
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
        if free + held.get(sku, 0) + sold != received:
            problems.append(
                StockProblem(
                    sku,
                    f"free {free} + held {held.get(sku, 0)} + sold {sold}"
                    f" != received {received}",
                )
            )
        if applied != received:
            problems.append(
                StockProblem(sku, f"ledger says {applied} received, stock {received}")
            )
    return problems
