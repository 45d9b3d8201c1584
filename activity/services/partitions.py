"""The partition collections: created with their indexes on first write,
written in unordered batches, dropped whole when past retention.

The partitions are plain collections named by ``activity.periods``; no
MongoEngine document stands for them, since their names change with time.
"""

import logging
import threading
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from pymongo.collection import Collection
from pymongo.database import Database

from activity import kinds, periods
from catalog.selectors.offers import items_of_skus
from config import mongo

log = logging.getLogger("marquee.activity")

# Time-bounded reads of a shopper's and of an item's activity.
INDEXES = ([("user", 1), ("ts", 1)], [("item", 1), ("ts", 1)])

# Partitions this process has seen with their indexes, per database.
_ready: set[tuple[str, str]] = set()
_ready_lock = threading.Lock()


def period() -> str:
    return settings.ACTIVITY_PERIOD


def retention() -> timedelta:
    return timedelta(days=settings.ACTIVITY_RETENTION_DAYS)


def partition_coll(name: str, database: Database | None = None) -> Collection:
    return (database if database is not None else mongo.db())[name]


def partition_ensure(name: str, database: Database | None = None) -> Collection:
    """The partition's collection, its indexes created the first time this
    process writes to it (compared first: idempotent on every server)."""
    coll = partition_coll(name, database)
    key = (coll.database.name, name)
    if key in _ready:
        return coll
    have = {
        tuple(tuple(k) for k in info["key"])
        for info in coll.index_information().values()
    }
    for keys in INDEXES:
        if tuple(keys) not in have:
            coll.create_index(keys)
    with _ready_lock:
        _ready.add(key)
    return coll


def activity_write(docs: Iterable[dict], database: Database | None = None) -> int:
    """Write events to their partitions: one unordered ``insert_many`` per
    partition, so one bad or repeated document never stops the others.

    Invariant: an event is written at most once (a repeated ``_id`` - a paid
    order announced again - is refused by the server and ignored here).
    Returns how many were inserted; raises PyMongoError for anything but
    duplicates (the writer counts those events as lost).
    """
    docs = _with_items(list(docs))
    by_partition: dict[str, list[dict]] = defaultdict(list)
    for doc in docs:
        by_partition[periods.partition_of(doc["ts"], period()).name].append(doc)
    inserted = 0
    for name, batch in by_partition.items():
        coll = partition_ensure(name, database)
        inserted += len(mongo.insert_new(coll, batch))
    return inserted


def _with_items(docs: list[dict]) -> list[dict]:
    """Paid orders' product lines get their items: one read for the batch."""
    skus = [sku for doc in docs for sku in kinds.needs_items(doc)]
    if not skus:
        return docs
    items = items_of_skus(skus=skus)
    return [kinds.with_items(d, items) if kinds.needs_items(d) else d for d in docs]


def partitions_present(database: Database | None = None) -> list[periods.Partition]:
    """The activity partitions the database holds, newest first."""
    database = database if database is not None else mongo.db()
    found = [periods.parse(n) for n in database.list_collection_names()]
    return sorted((p for p in found if p), key=lambda p: p.start, reverse=True)


def partitions_for(since: datetime, until: datetime) -> list[str]:
    """Names of the partitions a query over ``[since, until)`` reads,
    newest first (only those overlapping the bounds)."""
    return [p.name for p in periods.partitions_between(since, until, period())]


def activity_drop_old(*, now: datetime) -> list[str]:
    """Drop every partition whose whole period is older than the retention.

    Safe to run twice or concurrently (dropping a dropped collection is a
    no-op). An event written late for a dropped period recreates it; the
    next run drops it again. Returns the names dropped.
    """
    database = mongo.db()
    dropped = []
    for partition in partitions_present(database):
        if periods.expired(partition, now=now, retention=retention()):
            database.drop_collection(partition.name)
            with _ready_lock:
                _ready.discard((database.name, partition.name))
            dropped.append(partition.name)
    if dropped:
        log.info("activity partitions dropped: %s", ", ".join(dropped))
    return dropped


def activity_forget(*, user: str) -> int:
    """Delete every event of a shopper (``user:<id>``), in every partition:
    the account's activity goes with the account. Returns how many."""
    database = mongo.db()
    return sum(
        database[p.name].delete_many({"user": user}).deleted_count
        for p in partitions_present(database)
    )
