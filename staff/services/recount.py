"""The sales counters replaced by a recount of the orders: a repair after a
bulk load, and the conversion of an earlier version's counters (run by
``convert_data`` with the shop stopped). Both write, so they are services;
the recount itself is the selector ``staff.selectors.counters.recount``.
"""

from django.conf import settings

from staff.selectors.counters import FIELDS, LISTS, recount
from staff.services.counters import counters, hour_start


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
            "start": entry["start"],
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
