"""The sales counters recounted from the orders, and their differences.

A full scan of the orders: for ``check_invariants`` and tests (a quiet
moment), never for a page.
"""

from collections import defaultdict
from datetime import UTC, datetime

from django.utils import timezone

from shop.documents import Order
from shop.kinds.base import Problem
from staff.services.counters import counters, day_bucket, hour_bucket, sale_figures

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


def _blank() -> dict:
    return {
        "products": defaultdict(lambda: {"qty": 0, "revenue": 0}),
        "names": {},
        "paid": set(),
        "refunded_orders": set(),
        # Day buckets: how many orders of each hour they hold, per list.
        "applied": {"paid": defaultdict(int), "refunded_orders": defaultdict(int)},
        **dict.fromkeys(FIELDS, 0),
    }


def recount() -> dict[str, dict]:
    """What every bucket should hold, from the orders alone."""
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
            inc, day_inc, names = sale_figures(order, sign)
            hour, hour_start = hour_bucket(at)
            day = day_bucket(hour_start)[0]
            for name, title in names.items():
                buckets[day]["names"][name.split(".")[1]] = title
            buckets[hour][listed].add(order["number"])
            buckets[day]["applied"][listed][hour[-2:]] += 1
            for bucket, figures in ((hour, inc), (day, day_inc)):
                entry = buckets[bucket]
                for name, value in figures.items():
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
        "paid": set(doc.get("paid") or []),
        "refunded_orders": set(doc.get("refunded_orders") or []),
        "applied": {
            listed: dict((doc.get("applied") or {}).get(listed) or {})
            for listed in ("paid", "refunded_orders")
        },
    }


def counter_problems() -> list[Problem]:
    """Every bucket whose counters differ from the recount."""
    expected = {k: {**v, "products": dict(v["products"])} for k, v in recount().items()}
    stored = {doc["_id"]: _stored(doc) for doc in counters().find({})}
    problems = []
    for bucket in sorted(set(expected) | set(stored)):
        want = expected.get(bucket) or {**_blank(), "products": {}}
        have = stored.get(bucket) or {**_blank(), "products": {}}
        want["applied"] = {k: dict(v) for k, v in want["applied"].items()}
        for name in (*FIELDS, "paid", "refunded_orders", "applied"):
            if want[name] != have[name]:
                problems.append(
                    Problem(
                        "sales",
                        bucket,
                        f"{name} is {have[name]!r}, the orders say {want[name]!r}",
                    )
                )
        if {k: v for k, v in want["products"].items()} != have["products"]:
            problems.append(Problem("sales", bucket, "per-product figures differ"))
    return problems


def _start(bucket: str) -> datetime:
    if bucket.startswith("h:"):
        return datetime.strptime(bucket[2:], "%Y-%m-%dT%H").replace(tzinfo=UTC)
    day = datetime.strptime(bucket[2:], "%Y-%m-%d")
    return timezone.make_aware(day).astimezone(UTC)


def counters_rebuild() -> int:
    """Replace every bucket by the recount (after a bulk load; a repair).
    Not for a live shop: payments meanwhile would be lost."""
    from staff.services.counters import entries

    buckets = recount()
    counters().delete_many({})
    entries().delete_many({})  # every day below holds all its hours' orders
    docs = []
    for bucket, entry in buckets.items():
        docs.append(
            {
                "_id": bucket,
                "kind": "hour" if bucket.startswith("h:") else "day",
                "start": _start(bucket),
                **{name: entry[name] for name in FIELDS},
                "products": {
                    key: {**figures, "name": entry["names"].get(key, key)}
                    for key, figures in entry["products"].items()
                },
                "paid": sorted(entry["paid"]),
                "refunded_orders": sorted(entry["refunded_orders"]),
                "applied": {k: dict(v) for k, v in entry["applied"].items()},
            }
        )
    if docs:
        counters().insert_many(docs)
    return len(docs)
