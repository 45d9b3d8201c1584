"""Writes to what each physical store holds (``StoreStock``).

Stock changes only through conditional single-document updates: the rule
("this line exists", "enough of it") lives in the update's filter, with
``$elemMatch`` wherever it names two fields of one line.
"""

from pymongo.errors import DuplicateKeyError

from catalog.documents import Store, StoreStock, Variant, store_stock_id
from catalog.errors import InvalidProduct, StockShort, UnknownSku, UnknownStore

MAX_QUANTITY = 1_000_000


def _store_and_item(store_id: str, sku: str) -> tuple[dict, str]:
    store = Store.coll().find_one({"store_id": store_id}, {"location": 1})
    if store is None:
        raise UnknownStore()
    variant = Variant.coll().find_one({"_id": sku}, {"item_id": 1})
    if variant is None:
        raise UnknownSku()
    return store, variant["item_id"]


def store_stock_set(*, store_id: str, sku: str, quantity: int) -> int:
    """Set a store's count of one SKU (a stock take); returns it.

    Creates the store's stock document for the item on first use, with the
    store's location copied in. Raises UnknownStore, UnknownSku,
    InvalidProduct (quantity not in 0..1,000,000).
    """
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        raise InvalidProduct("A quantity is a whole number.")
    if not 0 <= quantity <= MAX_QUANTITY:
        raise InvalidProduct("A quantity is between 0 and 1,000,000.")
    store, item_id = _store_and_item(store_id, sku)
    stock_id = store_stock_id(store_id, item_id)
    collection = StoreStock.coll()
    for _attempt in range(3):
        if collection.update_one(
            {"_id": stock_id, "vars.sku": sku}, {"$set": {"vars.$.quantity": quantity}}
        ).matched_count:
            return quantity
        try:
            # No line for the SKU yet: add one. The filter makes a concurrent
            # add of the same line lose (and retry as a $set) instead of
            # doubling it; on a missing document the upsert creates it.
            collection.update_one(
                {"_id": stock_id, "vars.sku": {"$ne": sku}},
                {
                    "$push": {"vars": {"sku": sku, "quantity": quantity}},
                    "$setOnInsert": {
                        "store_id": store_id,
                        "item_id": item_id,
                        "location": store["location"],
                    },
                },
                upsert=True,
            )
            return quantity
        except DuplicateKeyError:
            continue
    raise StockShort("The stock changed while it was being set; try again.")


def store_stock_adjust(*, store_id: str, sku: str, delta: int) -> int:
    """Add ``delta`` (negative: remove) to a store's count of one SKU.

    Invariant: a count never goes below zero. One ``$inc`` whose filter
    requires the line to hold at least ``-delta``; returns the new count.
    Raises UnknownStore, UnknownSku (also when the store has no line for the
    SKU), StockShort, InvalidProduct (delta zero or absurd).
    """
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise InvalidProduct("A quantity is a whole number.")
    if delta == 0 or abs(delta) > MAX_QUANTITY:
        raise InvalidProduct("A stock change is a non-zero whole number.")
    _store, item_id = _store_and_item(store_id, sku)
    stock_id = store_stock_id(store_id, item_id)
    line = {"sku": sku}
    if delta < 0:
        line["quantity"] = {"$gte": -delta}
    collection = StoreStock.coll()
    # update_one, not find_one_and_update: some servers reject a positional
    # "$" in findAndModify. The count returned is read just after.
    result = collection.update_one(
        {"_id": stock_id, "vars": {"$elemMatch": line}},
        {"$inc": {"vars.$.quantity": delta}},
    )
    if result.modified_count == 0:
        exists = collection.count_documents({"_id": stock_id, "vars.sku": sku}, limit=1)
        raise StockShort() if exists else UnknownSku()
    doc = collection.find_one({"_id": stock_id}, {"vars": {"$elemMatch": {"sku": sku}}})
    return doc["vars"][0]["quantity"]
