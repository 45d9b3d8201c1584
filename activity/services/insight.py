"""What the log is for: counts derived by aggregation, written where pages
read them in one query (the article's map-reduce, as pipelines)."""

from collections import Counter, defaultdict
from datetime import date, datetime, time, timedelta

from bson import ObjectId
from django.utils import timezone
from pymongo import ReplaceOne
from pymongo.errors import BulkWriteError

from activity import kinds
from activity.documents import BoughtTogether, ItemDay
from activity.services.partitions import partition_coll, partitions_for
from catalog.selectors.offers import items_for_sale
from config.mongo import only_duplicates

# Each paid order's distinct items, paired with each other: (a, b) and (b, a).
_PAIRS = [
    {"$project": {"_id": 0, "a": "$items", "b": "$items"}},
    {"$unwind": "$a"},
    {"$unwind": "$b"},
    {"$match": {"$expr": {"$ne": ["$a", "$b"]}}},
    {"$group": {"_id": {"a": "$a", "b": "$b"}, "n": {"$sum": 1}}},
]


def pair_counts(*, since: datetime, until: datetime) -> Counter:
    """(a, b) -> paid orders in ``[since, until)`` holding both items: one
    pipeline per partition the window touches, summed here."""
    counts: Counter = Counter()
    match = {"type": kinds.ORDER, "ts": {"$gte": since, "$lt": until}}
    for name in partitions_for(since, until):
        pipeline = [{"$match": match}, *_PAIRS]
        for row in partition_coll(name).aggregate(pipeline, allowDiskUse=True):
            counts[(row["_id"]["a"], row["_id"]["b"])] += row["n"]
    return counts


def top_partners(counts: Counter, *, top: int, for_sale: set[str]) -> dict:
    """Each item's ``top`` partners that are for sale, most orders first,
    ties by item id (so a rerun on the same data writes the same lists)."""
    partners: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for (a, b), n in counts.items():
        if b in for_sale:
            partners[a].append((b, n))
    return {
        a: sorted(found, key=lambda p: (-p[1], p[0]))[:top]
        for a, found in partners.items()
    }


def bought_together_rebuild(*, now: datetime | None = None, days: int, top: int) -> int:
    """Recount every item's top partners from the paid orders of the last
    ``days`` days and replace the stored lists.

    Invariant: the stored lists are those of one run, the newest. Each run
    writes its lists (replacing by item, but never a list a newer run
    wrote), then deletes what older runs wrote for items that have no
    partner now; running twice, or two runs at once, leaves the newer run's
    complete answer. Returns how many items have partners.
    """
    now = now or timezone.now()
    counts = pair_counts(since=now - timedelta(days=days), until=now)
    for_sale = items_for_sale(item_ids={b for _, b in counts})
    lists = top_partners(counts, top=top, for_sale=for_sale)
    run = str(ObjectId())
    writes = [
        ReplaceOne(
            # A newer run's list stays: the upsert then meets its _id and
            # is refused as a duplicate, which this run ignores.
            {"_id": item, "at": {"$lte": now}},
            {
                "partners": [{"item": b, "n": n} for b, n in found],
                "run": run,
                "at": now,
            },
            upsert=True,
        )
        for item, found in lists.items()
        if found
    ]
    coll = BoughtTogether.coll()
    for start in range(0, len(writes), 1000):
        try:
            coll.bulk_write(writes[start : start + 1000], ordered=False)
        except BulkWriteError as exc:
            if not only_duplicates(exc):
                raise
    # Older runs' lists only: a newer run's answer is never this run's to end.
    coll.delete_many({"run": {"$ne": run}, "at": {"$lt": now}})
    return len(writes)


# Views and cart adds are counted per item; a paid order once per item in it.
_DAY_COUNTS = [
    {"$project": {"type": 1, "item": {"$ifNull": ["$items", ["$item"]]}}},
    {"$unwind": "$item"},
    {"$group": {"_id": {"i": "$item", "t": "$type"}, "n": {"$sum": 1}}},
]
FUNNEL = (kinds.VIEW, kinds.CART_ADD, kinds.ORDER)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    """A local day as ``[midnight, next midnight)``."""
    start = timezone.make_aware(datetime.combine(day, time.min))
    return start, timezone.make_aware(datetime.combine(day + timedelta(1), time.min))


def item_days_count(*, day: date) -> int:
    """Recount one local day's views, cart adds and orders per item and
    replace that day's counts (idempotent). Returns how many items."""
    since, until = day_bounds(day)
    counts: dict[str, Counter] = defaultdict(Counter)
    match = {"ts": {"$gte": since, "$lt": until}, "type": {"$in": list(FUNNEL)}}
    for name in partitions_for(since, until):
        for row in partition_coll(name).aggregate([{"$match": match}, *_DAY_COUNTS]):
            if row["_id"].get("i") is not None:
                counts[row["_id"]["i"]][row["_id"]["t"]] += row["n"]
    key = f"{day:%Y-%m-%d}"
    writes = [
        ReplaceOne(
            {"_id": f"{key}|{item}"},
            {"day": key, "item": item, **{t: c.get(t, 0) for t in FUNNEL}},
            upsert=True,
        )
        for item, c in counts.items()
    ]
    coll = ItemDay.coll()
    coll.delete_many({"day": key, "item": {"$nin": list(counts)}})
    if writes:
        coll.bulk_write(writes, ordered=False)
    return len(writes)
