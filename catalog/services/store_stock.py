"""What each physical store holds: its stock locations (click & collect).

A store's stock of a SKU is an ``Inventory`` of its own, keyed by the stock
location ``"<sku>@<store_id>"`` (``catalog.documents.stock_location``), so a
collect line reserves it with the very protocol of online stock
(``shop.kinds.line_stock``: conditional updates, lines, journals, recovery,
ledger, conservation). This module only says what staff and imports want:
a store's count set or changed is a ledger entry of that location (a
receipt, or a correction), never an overwrite. The count is the units free
to sell; units held for a collect line are a cart's and cannot be counted
away.
"""

from collections.abc import Mapping

from catalog.documents import Store, StoreStock, Variant, stock_location
from catalog.errors import (
    FreeStockShort,
    InvalidProduct,
    StockShort,
    UnknownSku,
    UnknownStore,
)
from catalog.selectors.stock import stock_free
from catalog.services.stock import (
    stock_correct,
    stock_locations_create,
    stock_open,
    stock_restock,
)

MAX_QUANTITY = 1_000_000


def _fields(store_id: str, sku: str) -> dict:
    """What names a store's location of ``sku``. Raises UnknownStore, UnknownSku."""
    if not Store.coll().count_documents({"store_id": store_id}, limit=1):
        raise UnknownStore()
    variant = Variant.coll().find_one({"_id": sku}, {"item_id": 1})
    if variant is None:
        raise UnknownSku()
    return {"of_sku": sku, "item_id": variant["item_id"], "store_id": store_id}


def _change(key: str, delta: int, fields: dict, note: str) -> None:
    """One ledger entry of ``delta`` units at location ``key`` (created if new)."""
    if delta > 0:
        stock_restock(sku=key, quantity=delta, note=note, fields=fields)
        return
    try:
        stock_correct(sku=key, delta=delta, kind="correction", note=note)
    except FreeStockShort:
        raise StockShort() from None


def store_stock_set(*, store_id: str, sku: str, quantity: int) -> int:
    """Set a store's count (units free to sell) of one SKU; returns it.

    The difference from the count read is written as one ledger entry
    (``stock_restock`` up, ``stock_correct`` down), whose guard keeps free
    units from going negative: units reserved meanwhile make a decrease
    refuse (StockShort) rather than count held units away. Creates the
    store's location on first use. Raises UnknownStore, UnknownSku,
    InvalidProduct (quantity not in 0..1,000,000), StockShort.
    """
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        raise InvalidProduct("A quantity is a whole number.")
    if not 0 <= quantity <= MAX_QUANTITY:
        raise InvalidProduct("A quantity is between 0 and 1,000,000.")
    fields = _fields(store_id, sku)
    key = stock_location(sku, store_id)
    stock_locations_create(fields={key: fields})
    delta = quantity - stock_free(skus=[key]).get(key, 0)
    if delta:
        _change(key, delta, fields, "store count")
    return quantity


def store_stock_adjust(*, store_id: str, sku: str, delta: int) -> int:
    """Add ``delta`` (negative: remove) to a store's count of one SKU.

    Invariant: a count never goes below zero (the ledger entry's guard).
    Returns the new count. Raises UnknownStore, UnknownSku (also when the
    store does not stock the SKU), StockShort, InvalidProduct (delta zero or
    absurd).
    """
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise InvalidProduct("A quantity is a whole number.")
    if delta == 0 or abs(delta) > MAX_QUANTITY:
        raise InvalidProduct("A stock change is a non-zero whole number.")
    fields = _fields(store_id, sku)
    key = stock_location(sku, store_id)
    if key not in stock_free(skus=[key]):
        raise UnknownSku()
    _change(key, delta, fields, "store adjustment")
    return stock_free(skus=[key])[key]


def store_stocks_open(*, counts: Mapping[tuple[str, str], int], items: Mapping) -> int:
    """Open many stores' stock at once (demo loads, the migration): for each
    (store_id, sku) its location (``items[sku]`` the SKU's item) and, for a
    positive count, ledger entry 1 (``stock_open``: a location that already
    has a ledger is left alone, so a second run opens nothing twice).
    Returns how many locations were opened with units."""
    fields = {
        stock_location(sku, store_id): {
            "of_sku": sku,
            "item_id": items[sku],
            "store_id": store_id,
        }
        for store_id, sku in counts
    }
    quantities = {
        stock_location(sku, store_id): n
        for (store_id, sku), n in counts.items()
        if n > 0
    }
    empty = {key: named for key, named in fields.items() if key not in quantities}
    if empty:
        stock_locations_create(fields=empty)
    return stock_open(quantities=quantities, note="store opening stock", fields=fields)


def store_stock_migrate(*, batch: int = 200) -> tuple[int, int]:
    """Move the counts of the old ``StoreStock`` shape (one document per
    store and item, ``vars: [{sku, quantity}]``) into the stores' stock
    locations; return (documents converted, locations opened with units).

    Per batch of documents: first every count becomes its location (created,
    with its count as ledger entry 1; a zero count: a location with nothing
    received), then each document is deleted, guarded on its lines as read.
    A crash in between leaves a document whose locations exist: the next run
    opens nothing twice (``stock_open`` skips a location with a ledger) and
    deletes it. A location that already had a ledger keeps its own count
    (it was written since, by the new code: the truth). Idempotent; run it
    with the shop stopped, once, after deploying.
    """
    collection = StoreStock.coll()
    converted = opened = 0
    after = ""
    while True:
        docs = list(
            collection.find({"_id": {"$gt": after}}).sort("_id", 1).limit(batch)
        )
        if not docs:
            return converted, opened
        after = docs[-1]["_id"]
        counts = {
            (doc["store_id"], line["sku"]): line["quantity"]
            for doc in docs
            for line in doc.get("vars") or []
        }
        items = {
            line["sku"]: doc["item_id"]
            for doc in docs
            for line in doc.get("vars") or []
        }
        opened += store_stocks_open(counts=counts, items=items)
        for doc in docs:
            converted += collection.delete_one(
                {"_id": doc["_id"], "vars": doc.get("vars") or []}
            ).deleted_count
