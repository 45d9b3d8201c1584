"""The sales counters recounted from the orders, and their differences.

A full scan of the orders: for ``check_invariants`` and tests (a quiet
moment), never for a page.
"""

from collections import defaultdict
from datetime import UTC, datetime

from shop.documents import Order
from shop.kinds.base import Problem
from staff.services.counters import bucket_of, counters, sale_figures

FIELDS = (
    "orders",
    "revenue",
    "ticket_revenue",
    "goods_revenue",
    "tickets",
    "units",
    "refunds",
    "refunded",
    "refunded_tickets",
    "refunded_units",
)
LISTS = ("paid", "refunded_orders")


def _start_of(bucket: str) -> datetime:
    hour = bucket[2:].split("/")[0]
    return datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC)


def _blank() -> dict:
    return {
        "products": defaultdict(lambda: {"qty": 0, "revenue": 0}),
        "names": {},
        **{listed: set() for listed in LISTS},
        **dict.fromkeys(FIELDS, 0),
    }


def recount() -> dict[str, dict]:
    """What every hour shard should hold, from the orders alone."""
    buckets: dict[str, dict] = defaultdict(_blank)
    cursor = Order.coll().find(
        {"paid_at": {"$ne": None}},
        {
            "number": 1,
            "paid_at": 1,
            "canceled_at": 1,
            "state": 1,
            "total": 1,
            "lines": 1,
        },
    )
    for order in cursor:
        moves = [(order["paid_at"], "paid", 1)]
        if order["state"] in ("refunding", "refunded") and order.get("canceled_at"):
            moves.append((order["canceled_at"], "refunded_orders", -1))
        for at, listed, sign in moves:
            inc, names = sale_figures(order, sign)
            entry = buckets[bucket_of(at, order["number"])[0]]
            entry[listed].add(order["number"])
            for name, title in names.items():
                entry["names"][name.split(".")[1]] = title
            for name, value in inc.items():
                if name.startswith("products."):
                    _, key, what = name.split(".")
                    entry["products"][key][what] += value
                else:
                    entry[name] += value
    return buckets


def _stored(doc: dict) -> dict:
    return {
        **{name: doc.get(name, 0) for name in FIELDS},
        "products": {
            k: {"qty": v.get("qty", 0), "revenue": v.get("revenue", 0)}
            for k, v in (doc.get("products") or {}).items()
        },
        **{listed: set(doc.get(listed) or []) for listed in LISTS},
    }


def hour_sums(start: datetime) -> dict:
    """The hour starting at ``start`` (UTC), its shards added up: the
    figures, ``products``, and the lists of orders counted."""
    total: dict = {**dict.fromkeys(FIELDS, 0), "products": {}, "paid": []}
    total["refunded_orders"] = []
    for doc in counters().find({"kind": "hour", "start": start}).sort("_id"):
        for name in FIELDS:
            total[name] += doc.get(name, 0)
        for listed in LISTS:
            total[listed] += doc.get(listed) or []
        for key, figures in (doc.get("products") or {}).items():
            entry = total["products"].setdefault(key, {"qty": 0, "revenue": 0})
            entry["qty"] += figures.get("qty", 0)
            entry["revenue"] += figures.get("revenue", 0)
    return total


def counter_problems() -> list[Problem]:
    """Every hour shard whose counters differ from the recount."""
    expected = {k: {**v, "products": dict(v["products"])} for k, v in recount().items()}
    stored = {doc["_id"]: _stored(doc) for doc in counters().find({"kind": "hour"})}
    problems = []
    for bucket in sorted(set(expected) | set(stored)):
        want = expected.get(bucket) or {**_blank(), "products": {}}
        have = stored.get(bucket) or {**_blank(), "products": {}}
        for name in (*FIELDS, *LISTS):
            if want[name] != have[name]:
                problems.append(
                    Problem(
                        "sales",
                        bucket,
                        f"{name} is {have[name]!r}, the orders say {want[name]!r}",
                    )
                )
        if want["products"] != have["products"]:
            problems.append(Problem("sales", bucket, "per-product figures differ"))
    return problems


def unsharded() -> bool:
    """Whether an hour is kept whole, as before its shards (``h:...T12``,
    no ``/5``): counted by an earlier version, converted by a rebuild."""
    return counters().find_one({"_id": {"$regex": "^h:[^/]*$"}}, {"_id": 1}) is not None


def counters_rebuild() -> int:
    """Replace every bucket by the recount (after a bulk load; a repair; an
    earlier version's whole hours, into shards). Not for a live shop:
    payments meanwhile would be lost."""
    buckets = recount()
    # Also drops day buckets and their entries, kept by an earlier version.
    counters().delete_many({})
    counters().database.drop_collection("sales_entries")
    counters().database.drop_collection("sales_rollups")  # sums of the old hours
    docs = [
        {
            "_id": bucket,
            "kind": "hour",
            "start": _start_of(bucket),
            **{name: entry[name] for name in FIELDS},
            "products": {
                key: {**figures, "name": entry["names"].get(key, key)}
                for key, figures in entry["products"].items()
            },
            **{listed: sorted(entry[listed]) for listed in LISTS},
        }
        for bucket, entry in buckets.items()
    ]
    if docs:
        counters().insert_many(docs)
    return len(docs)
