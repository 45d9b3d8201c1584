"""Reads of stock (online and in stores) and its holds; never writes."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from catalog.documents import (
    Inventory,
    StockHoldDoc,
    StockMovement,
    StockThreshold,
    hold_id,
)


@dataclass(frozen=True)
class StockHold:
    """One hold: ``quantity`` units of ``sku`` held by a cart."""

    sku: str
    cart_id: str
    quantity: int
    at: datetime
    # The take moves the hold applied (``stock_commit_all`` forgets them).
    applied: tuple[str, ...] = ()


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


def _holds():
    return StockHoldDoc.coll()


def _as_hold(doc: dict) -> StockHold:
    return StockHold(
        sku=doc["sku"],
        cart_id=doc["cart_id"],
        quantity=doc["quantity"],
        at=doc["at"],
        applied=tuple(doc.get("applied") or ()),
    )


_HOLD_FIELDS = {"sku": 1, "cart_id": 1, "quantity": 1, "at": 1, "applied": 1}


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


# What a SKU's level is read from: the counters on its inventory (free,
# sold, received) and its hold documents (held, holders).
_LEVEL_FIELDS = {"quantity": 1, "sold": 1, "received": 1}


def _level(doc: dict, held: int, holders: int) -> StockLevel:
    return StockLevel(
        sku=doc["_id"],
        free=doc["quantity"],
        held=held,
        sold=doc.get("sold", 0),
        received=doc.get("received", 0),
        holders=holders,
    )


def stock_level(*, sku: str) -> StockLevel | None:
    return stock_levels(skus=[sku]).get(sku)


def stock_levels(*, skus: Iterable[str]) -> dict[str, StockLevel]:
    """The levels of many SKUs (two queries: inventories, then their holds on
    the ``sku`` index); SKUs without online stock are absent."""
    docs = list(_inventories().find({"_id": {"$in": list(skus)}}, _LEVEL_FIELDS))
    held: dict[str, list[int]] = defaultdict(list)
    found = _holds().find(
        {"sku": {"$in": [d["_id"] for d in docs]}, "quantity": {"$gt": 0}},
        {"sku": 1, "quantity": 1},
    )
    for hold in found:
        held[hold["sku"]].append(hold["quantity"])
    return {d["_id"]: _level(d, sum(held[d["_id"]]), len(held[d["_id"]])) for d in docs}


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


def stock_hold(*, sku: str, cart_id: str) -> StockHold | None:
    """This cart's hold of ``sku``, if it has one (by ``_id``)."""
    doc = _holds().find_one({"_id": hold_id(sku, cart_id)}, _HOLD_FIELDS)
    return _as_hold(doc) if doc and doc["quantity"] > 0 else None


def stock_holds_of_cart(*, cart_id: str) -> list[StockHold]:
    """Every hold of one cart (index on ``cart_id``)."""
    found = _holds().find({"cart_id": cart_id, "quantity": {"$gt": 0}}, _HOLD_FIELDS)
    return [_as_hold(doc) for doc in found]


def stock_holds(*, before: datetime | None = None) -> Iterator[StockHold]:
    """Every hold with units (last changed before ``before``), oldest first."""
    query: dict = {"at": {"$lt": before}} if before is not None else {}
    found = _holds().find(query, _HOLD_FIELDS)
    if before is not None:
        found = found.sort("at", 1)
    for doc in found:
        if doc["quantity"] > 0:
            yield _as_hold(doc)


def stock_stale_holders(
    *, sku: str, changed_before: datetime, limit: int = 200
) -> list[str]:
    """Carts whose hold of ``sku`` has not changed since ``changed_before``.

    A cart whose own hold ran out has only such holds, so the caller (a
    reservation short of units, DESIGN §3.5) expires these candidates; the
    index on (sku, at) serves it, however many carts exist.
    """
    found = _holds().find(
        {"sku": sku, "at": {"$lte": changed_before}, "quantity": {"$gt": 0}},
        {"cart_id": 1},
        limit=limit,
    )
    return [doc["cart_id"] for doc in found]


def stock_problems() -> list[StockProblem]:
    """SKUs breaking conservation, each with the reason.

    Per SKU: ``quantity >= 0``; no hold below 0 units; ``quantity + held +
    sold == received``, where ``held`` counts the holds' units and the moves
    in flight (a take the hold has not applied, a give-back or transfer the
    other side has not); and ``received`` equals the sum of the ledger
    entries applied so far, voided (refused) ones left out. Read from several
    documents: meant for a quiet moment (under traffic a move between two
    reads shows for a moment).
    """
    ledger: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for entry in StockMovement.coll().find({}, {"sku": 1, "seq": 1, "quantity": 1}):
        ledger[entry["sku"]].append((entry["seq"], entry["quantity"]))
    holds = {doc["_id"]: doc for doc in _holds().find({})}
    inventories = {doc["_id"]: doc for doc in _inventories().find({})}
    held = _held(holds, inventories)

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
        if any(h["quantity"] < 0 for h in holds.values() if h["sku"] == sku):
            problems.append(StockProblem(sku, "a hold of less than 0 units"))
        if free + held[sku] + sold != received:
            problems.append(
                StockProblem(
                    sku,
                    f"free {free} + held {held[sku]} + sold {sold}"
                    f" != received {received}",
                )
            )
        if applied != received:
            problems.append(
                StockProblem(sku, f"ledger says {applied} received, stock {received}")
            )
    return problems


def _held(holds: dict[str, dict], inventories: dict[str, dict]) -> dict[str, int]:
    """Units held per SKU: in holds, or in a move one side has not applied."""
    held: dict[str, int] = defaultdict(int)
    for hold in holds.values():
        sku = hold["sku"]
        held[sku] += hold["quantity"]
        gives = {
            g["op"]
            for g in inventories.get(sku, {}).get("gives") or []
            if not g.get("fence")  # a recovery's fence not applied yet
        }
        for back in hold.get("back") or []:
            if back.get("to"):
                target = holds.get(hold_id(sku, back["to"])) or {}
                if back["op"] not in (target.get("applied") or []):
                    held[sku] += back["moved"]
            elif back["op"] not in gives:
                held[sku] += back["free"] + back["sold"]
    for sku, inv in inventories.items():
        for take in _takes_in_flight(inv, holds):
            held[sku] += take["units"]
    return held


def _takes_in_flight(inv: dict, holds: dict[str, dict]) -> list[dict]:
    """The counter's take entries whose hold has not applied them."""
    return [
        take
        for take in inv.get("takes") or []
        if take["op"] not in ((holds.get(take["hold"]) or {}).get("applied") or [])
    ]


@dataclass(frozen=True)
class StockJournal:
    """What one counter's journal holds: moves still in flight (a take the
    hold has not applied, a give-back or transfer whose hold still has its
    ``back`` entry) and entries of finished moves a process has not dropped
    yet (catalog.services.counters, ``Finished``); recovery fences apart."""

    in_flight: int
    finished: int


def stock_journal(*, sku: str) -> StockJournal:
    """The journal of ``sku``'s counter and its holds' moves, as read now."""
    inv = _inventories().find_one({"_id": sku}, {"takes": 1, "gives": 1}) or {}
    holds = {doc["_id"]: doc for doc in _holds().find({"sku": sku})}
    takes = inv.get("takes") or []
    gives = [g for g in inv.get("gives") or [] if g.get("by") is None]
    backs = {back["op"] for hold in holds.values() for back in hold.get("back") or []}
    taking = len(_takes_in_flight(inv, holds))
    giving = sum(1 for g in gives if g["op"] in backs)
    return StockJournal(
        in_flight=taking + len(backs),
        finished=len(takes) - taking + len(gives) - giving,
    )
