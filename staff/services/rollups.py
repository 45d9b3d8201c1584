"""Per-product figures of whole days, for the dashboard's top products.

The hour buckets (staff.services.counters) count each order once and list
its number; they keep no per-product figures, which would make every count
rewrite a map of every product sold in the bucket. A day's per-product sum
is kept in ``sales_rollups``, summed from the orders its hours list (paid:
added, refunded: taken away, each in the hour it was counted), with how
many orders and refunds those hours had counted then (``counted``) and how
much of each bucket's lists it has summed (``summed``: a bucket's lists
only grow at their end, one number per count). Every count moves
``orders`` or ``refunds`` by one, so a day whose hours say the same number
has the same products; one whose hours say more is brought up to date with
the orders counted since (under sales, the few of the last minutes: never
the whole day again), and written back guarded on the ``counted`` it was
read with, so of two racing sums one is kept and the other is only shown.
"""

from pymongo.errors import DuplicateKeyError

from shop.documents import Order
from staff.documents import SalesRollup
from staff.services.counters import counters, pence

# What a day's sum reads of each order it lists.
_LINE_FIELDS = {
    "number": 1,
    "lines.kind": 1,
    "lines.key": 1,
    "lines.name": 1,
    "lines.quantity": 1,
    "lines.line_total": 1,
    "lines.ticket.show": 1,
}


def rollups():
    return SalesRollup.coll()


def product_key(line: dict) -> tuple[str, str]:
    """A field name for the line's product or show, and its display name."""
    if line.get("kind") == "ticket" and line.get("ticket"):
        name = line["ticket"]["show"]
        key = f"show:{name}"
    else:
        name = line["name"]
        key = f"sku:{line['key']}"
    # Field names may not hold dots or start with $.
    return key.replace(".", "%2E").replace("$", "%24"), name


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


def orders_products(signs: dict[str, int]) -> dict[str, dict]:
    """Per product or show, the units and pence of the orders numbered in
    ``signs`` (number -> +1 sold, -1 refunded, 0 both), one read by number."""
    products: dict[str, dict] = {}
    wanted = [number for number, sign in signs.items() if sign]
    for order in Order.coll().find({"number": {"$in": wanted}}, _LINE_FIELDS):
        sign = signs[order["number"]]
        for line in order.get("lines") or []:
            key, name = product_key(line)
            entry = products.setdefault(key, {"name": name, "qty": 0, "revenue": 0})
            entry["qty"] += sign * line["quantity"]
            entry["revenue"] += sign * pence(line["line_total"])
    return products


def _brought_up(
    doc: dict | None, hours: list[str]
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """The orders the day's buckets counted since ``doc`` summed them
    (number -> +1 paid, -1 refunded, 0 both) and how much of each bucket's
    lists is summed with them."""
    summed = dict((doc or {}).get("summed") or {})
    signs: dict[str, int] = {}
    for bucket in counters().find(
        {"_id": {"$in": hours}}, {"paid": 1, "refunded_orders": 1}
    ):
        paid = bucket.get("paid") or []
        refunded = bucket.get("refunded_orders") or []
        done_paid, done_refunded = summed.get(bucket["_id"], (0, 0))
        for number in paid[done_paid:]:
            signs[number] = signs.get(number, 0) + 1
        for number in refunded[done_refunded:]:
            signs[number] = signs.get(number, 0) - 1
        summed[bucket["_id"]] = [len(paid), len(refunded)]
    return signs, summed


def _sum_again(day: str, hours: list[str], counted: int, doc: dict | None) -> dict:
    """The day's rollup brought up to its buckets, written back unless a
    concurrent sum wrote first. A rollup that does not say what it summed
    (an earlier version's) is summed from the start."""
    if doc is not None and "summed" not in doc:
        doc = None
    signs, summed = _brought_up(doc, hours)
    products = sum_products([doc or {}, {"products": orders_products(signs)}])
    fresh = {"counted": counted, "products": products, "summed": summed}
    try:
        if doc is None:
            rollups().update_one({"_id": day}, {"$set": fresh}, upsert=True)
        else:
            rollups().update_one(
                {"_id": day, "counted": doc["counted"]}, {"$set": fresh}
            )
    except DuplicateKeyError:
        pass  # a concurrent first sum of the day made it: compared next time
    return fresh


def day_products(days: dict[str, tuple[list[str], int]]) -> dict[str, dict]:
    """Each day's per-product figures, summed over the days given.

    ``days`` maps a day (``d:YYYY-MM-DD``) to its hour buckets' ids and the
    orders plus refunds they have counted (read by the caller with the
    figures). Days whose rollup is current cost one read between them; one
    whose buckets counted more reads their lists and the orders counted
    since."""
    found = {doc["_id"]: doc for doc in rollups().find({"_id": {"$in": list(days)}})}
    current = []
    for day, (hours, counted) in days.items():
        if not counted:
            continue
        doc = found.get(day)
        if doc is None or doc["counted"] != counted:
            doc = _sum_again(day, hours, counted, doc)
        current.append(doc)
    return sum_products(current)
