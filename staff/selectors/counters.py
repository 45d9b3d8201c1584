"""The sales counters recounted from the orders, and their differences.

A full scan of the orders: for ``check_invariants`` and tests (a quiet
moment), never for a page.
"""

from collections import defaultdict
from datetime import UTC, datetime

from django.conf import settings

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


def _start_of(bucket: str) -> datetime:
    """The hour of a bucket's id (``h:2030-01-15T12#400``, or
    ``h:2030-01-15T18:30#400``: ``bucket_stamp``)."""
    stamp = bucket[2:].partition("#")[0]
    form = "%Y-%m-%dT%H:%M" if ":" in stamp else "%Y-%m-%dT%H"
    return datetime.strptime(stamp, form).replace(tzinfo=UTC)


def _blank() -> dict:
    return {**{listed: set() for listed in LISTS}, **dict.fromkeys(FIELDS, 0)}


def recount() -> dict[str, dict]:
    """What every hour bucket should hold, from the orders alone."""
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
            entry = buckets[bucket_of(order["number"], at)[0]]
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


def counters_rebuild() -> int:
    """Replace every bucket by the recount (after a bulk load; a repair).
    Not for a live shop: payments meanwhile would be lost."""
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
            **{listed: sorted(entry[listed]) for listed in LISTS},
        }
        for bucket, entry in buckets.items()
    ]
    if docs:
        counters().insert_many(docs)
    _counted_in(settings.TIME_ZONE)
    return len(docs)


_ZONE = "zone"


def _counted_in(zone: str) -> None:
    """Record the zone whose local hours the buckets count."""
    counters().update_one(
        {"_id": _ZONE}, {"$set": {"kind": _ZONE, "zone": zone}}, upsert=True
    )


# An hour bucket of the shape before blocks: ``h:2030-01-15T12``, no ``#``.
_UNBLOCKED = {"kind": "hour", "_id": {"$regex": "^h:[0-9T-]+$"}}


def _off_the_hours() -> bool:
    """Whether a bucket counts an hour that is not one of the shop's local
    hours (an earlier version counted UTC hours, which a zone off UTC by a
    part of an hour does not share)."""
    starts = counters().find({"kind": "hour"}, {"start": 1, "_id": 0})
    return any(doc["start"] != hour_start(doc["start"]) for doc in starts)


def _zone_changed() -> bool:
    """Whether the buckets count another zone's hours than ``TIME_ZONE``'s:
    its hours, and the local days the day rollups sum, are not the shop's
    now. A database counted before the zone was recorded is read once."""
    counted = counters().find_one({"_id": _ZONE})
    if counted is None:
        return _off_the_hours()
    return counted["zone"] != settings.TIME_ZONE


def counters_convert() -> int:
    """Counters of an earlier version's shape, converted; how many buckets
    were written. One document per hour, or the hours of another zone than
    ``TIME_ZONE`` (an earlier version counted UTC hours; the zone changed):
    recounted from the orders into buckets per local hour and block of
    order numbers. Buckets that also summed each product (the day rollups
    now sum the orders instead): that map dropped, the figures and lists
    kept. 0 (and nothing written) when there is none of these. With the
    shop stopped (``convert_data``): a count meanwhile would be lost."""
    if counters().find_one(_UNBLOCKED, {"_id": 1}) is not None or _zone_changed():
        return counters_rebuild()
    _counted_in(settings.TIME_ZONE)
    return (
        counters()
        .update_many({"products": {"$exists": True}}, {"$unset": {"products": ""}})
        .modified_count
    )
