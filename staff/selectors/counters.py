"""The sales counters recounted from the orders, and their differences.

A full scan of the orders: for ``check_invariants`` and tests (a quiet
moment), never for a page.
"""

from collections import defaultdict
from datetime import datetime

from shop.documents import Order
from shop.kinds.base import Problem
from staff.services.counters import bucket_of, counters, hour_start, sale_figures

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


def add_figures(total: dict, doc: dict) -> None:
    """Add a bucket's figures (and lists, if ``total`` has them) to
    ``total``; a figure a bucket never moved is absent from it."""
    for name, value in doc.items():
        if name in total:
            total[name] += value


def hour_figures(at: datetime) -> dict:
    """The figures of the hour of ``at``: the sum of its buckets (one per
    block of order numbers counted in it), with the numbers they list."""
    total = {**dict.fromkeys(FIELDS, 0), **{listed: [] for listed in LISTS}}
    for doc in counters().find({"kind": "hour", "start": hour_start(at)}):
        add_figures(total, doc)
    return total


def _blank() -> dict:
    return {**{listed: set() for listed in LISTS}, **dict.fromkeys(FIELDS, 0)}


def recount() -> dict[str, dict]:
    """What every hour bucket should hold, from the orders alone: its
    figures and lists, and the hour it counts (``start``, not compared:
    the bucket's id names it)."""
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
            bucket, start = bucket_of(order["number"], at)
            entry = buckets[bucket]
            entry["start"] = start
            entry[listed].add(order["number"])
            for name, value in sale_figures(order, sign).items():
                entry[name] += value
    return buckets


def _stored(doc: dict) -> dict:
    return {
        **{name: doc.get(name, 0) for name in FIELDS},
        **{listed: set(doc.get(listed) or []) for listed in LISTS},
    }


def counter_problems() -> list[Problem]:
    """Every hour bucket whose counters differ from the recount."""
    expected = recount()
    stored = {doc["_id"]: _stored(doc) for doc in counters().find({"kind": "hour"})}
    problems = []
    for bucket in sorted(set(expected) | set(stored)):
        want = expected.get(bucket) or _blank()
        have = stored.get(bucket) or _blank()
        for name in (*FIELDS, *LISTS):
            if want[name] != have[name]:
                problems.append(
                    Problem(
                        "sales",
                        bucket,
                        f"{name} is {have[name]!r}, the orders say {want[name]!r}",
                    )
                )
    return problems
