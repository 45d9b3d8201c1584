"""Low-stock thresholds per SKU (``StockThreshold``); the default is
settings.LOW_STOCK_THRESHOLD, read by catalog.selectors.stock.stock_low.

A threshold is a setting, not stock: setting it is a plain upsert of the
SKU's own document (``_id`` is the SKU), and it never moves a unit.
"""

from catalog.documents import Inventory, StockThreshold
from catalog.errors import InvalidQuantity, NotStocked

MAX_THRESHOLD = 1_000_000


def stock_threshold_set(*, sku: str, threshold: int | None) -> bool:
    """Give ``sku`` its own low-stock threshold (None: back to the default);
    whether that changed it (the threshold it has already changes nothing).

    Raises NotStocked (no online stock for the SKU), InvalidQuantity.
    """
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int)
        or not 0 <= threshold <= MAX_THRESHOLD
    ):
        raise InvalidQuantity("A threshold is a whole number from 0 to 1,000,000.")
    if not Inventory.coll().count_documents({"_id": sku}, limit=1):
        raise NotStocked()
    if threshold is None:
        return StockThreshold.coll().delete_one({"_id": sku}).deleted_count == 1
    done = StockThreshold.coll().update_one(
        {"_id": sku}, {"$set": {"threshold": threshold}}, upsert=True
    )
    return bool(done.upserted_id is not None or done.modified_count)
