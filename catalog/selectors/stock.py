"""Reads of online stock and its reservations; never writes."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from catalog.documents import Inventory, StockMovement


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


def stock_level(*, sku: str) -> StockLevel | None:
    doc = _inventories().find_one({"_id": sku})
    if doc is None:
        return None
    entries = doc.get("reservations") or []
    return StockLevel(
        sku=sku,
        free=doc["quantity"],
        held=sum(e["quantity"] for e in entries),
        sold=doc.get("sold", 0),
        received=doc.get("received", 0),
        holders=len(entries),
    )


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
    the ledger entries applied so far (seq <= ledger_seq).
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
        applied = sum(q for seq, q in ledger[sku] if seq <= doc.get("ledger_seq", 0))
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
