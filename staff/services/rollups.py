"""Per-product figures of whole days, for the dashboard's top products.

The hour buckets (staff.services.counters) are the truth; a month of them
carries tens of thousands of per-product entries, too many to add up on
every page. A day's sum is kept in ``sales_rollups`` with how many orders
and refunds its hours had counted then. Every count moves ``orders`` or
``refunds`` by one, so a day whose hours say the same number has the same
products, and one whose hours say more is summed again from its 24 hours
and overwritten (``$set``: a recomputation, idempotent; two racing ones
write sums of which the larger wins the next comparison or is redone).
"""

from pymongo.errors import DuplicateKeyError

from staff.documents import SalesRollup
from staff.services.counters import counters


def rollups():
    return SalesRollup.coll()


def sum_products(docs) -> dict[str, dict]:
    products: dict[str, dict] = {}
    for doc in docs:
        for key, figures in (doc.get("products") or {}).items():
            entry = products.setdefault(
                key, {"name": figures.get("name", key), "qty": 0, "revenue": 0}
            )
            entry["qty"] += figures.get("qty", 0)
            entry["revenue"] += figures.get("revenue", 0)
    return products


def day_products(days: dict[str, tuple[list[str], int]]) -> dict[str, dict]:
    """Each day's per-product figures, summed over the days given.

    ``days`` maps a day (``d:YYYY-MM-DD``) to its hour buckets' ids and the
    orders plus refunds they have counted (read by the caller with the
    figures). Days whose rollup is current cost one read between them."""
    kept = {
        doc["_id"]: doc
        for doc in rollups().find({"_id": {"$in": list(days)}})
        if doc["counted"] == days[doc["_id"]][1]
    }
    stale = [
        day for day, (hours, counted) in days.items() if counted and day not in kept
    ]
    for day in stale:
        hours, counted = days[day]
        products = sum_products(
            counters().find({"_id": {"$in": hours}}, {"products": 1})
        )
        try:
            rollups().update_one(
                {"_id": day},
                {"$set": {"counted": counted, "products": products}},
                upsert=True,
            )
        except DuplicateKeyError:
            pass  # a concurrent first sum of the day made it: compared next time
        kept[day] = {"products": products}
    return sum_products(kept.values())
