"""Time partitions of the activity log: which collection holds a moment.

Pure: no database. One collection per period (an ISO week or a calendar
month, in UTC), named so that its name says its period:
``activity_w2026_47`` or ``activity_m2026_11``. Dropping old data is then
dropping whole collections, and a query bounded in time reads only the
collections whose periods overlap its bounds.
"""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

PREFIX = "activity_"
PERIODS = ("week", "month")
_NAME = re.compile(r"^activity_(?P<kind>[wm])(?P<year>\d{4})_(?P<n>\d{2})$")


@dataclass(frozen=True)
class Partition:
    name: str
    start: datetime  # inclusive
    end: datetime  # exclusive


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def partition_of(moment: datetime, period: str) -> Partition:
    """The partition a moment falls in."""
    moment = _utc(moment)
    if period == "week":
        year, week, weekday = moment.isocalendar()
        start = _midnight(moment.date() - timedelta(days=weekday - 1))
        return Partition(f"{PREFIX}w{year}_{week:02d}", start, start + timedelta(7))
    if period == "month":
        start = datetime(moment.year, moment.month, 1, tzinfo=UTC)
        nxt = datetime(
            moment.year + moment.month // 12, moment.month % 12 + 1, 1, tzinfo=UTC
        )
        return Partition(f"{PREFIX}m{moment.year}_{moment.month:02d}", start, nxt)
    raise ValueError(f"unknown activity period {period!r}")


def parse(name: str) -> Partition | None:
    """The partition a collection name stands for; None for any other name."""
    found = _NAME.match(name)
    if found is None:
        return None
    year, n = int(found["year"]), int(found["n"])
    try:
        if found["kind"] == "w":
            start = _midnight(date.fromisocalendar(year, n, 1))
            return partition_of(start, "week")
        return partition_of(datetime(year, n, 1, tzinfo=UTC), "month")
    except ValueError:
        return None


def partitions_between(
    since: datetime, until: datetime, period: str
) -> list[Partition]:
    """Every partition overlapping ``[since, until)``, newest first."""
    found = []
    cursor = partition_of(since, period)
    until = _utc(until)
    while cursor.start < until:
        found.append(cursor)
        cursor = partition_of(cursor.end, period)
    return found[::-1]


def expired(partition: Partition, *, now: datetime, retention: timedelta) -> bool:
    """True when every moment of the partition is older than the retention."""
    return partition.end <= _utc(now) - retention
