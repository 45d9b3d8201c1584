"""Time partitions: named by period, created on first write, dropped whole
by the job past retention (a fake clock: ``now`` is passed), and read only
where a query's bounds fall."""

from datetime import UTC, datetime, timedelta

import pytest

from activity import kinds, periods
from activity.selectors import item_activity, shopper_activity
from activity.services.partitions import activity_write, partitions_for
from activity.tasks import drop_old_activity
from config.schedules import declared_jobs


def at(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def views(user: str, item: str, *moments: datetime) -> list[dict]:
    return [kinds.view(user=user, ts=m, item=item) for m in moments]


def partitions(mongo_db) -> list[str]:
    return sorted(n for n in mongo_db.list_collection_names() if periods.parse(n))


@pytest.mark.parametrize(
    ("moment", "period", "name", "start", "end"),
    [  # fmt: skip
        # Monday 00:00 starts an ISO week; Sunday 23:59 is still the last.
        (
            at(2030, 1, 14),
            "week",
            "activity_w2030_03",
            at(2030, 1, 14),
            at(2030, 1, 21),
        ),  # noqa: E501
        (
            at(2030, 1, 20, 23, 59),
            "week",
            "activity_w2030_03",
            at(2030, 1, 14),
            at(2030, 1, 21),
        ),  # noqa: E501
        # 1 January 2027 is a Friday of ISO week 53 of 2026.
        (at(2027, 1, 1), "week", "activity_w2026_53", at(2026, 12, 28), at(2027, 1, 4)),
        (
            at(2030, 12, 31, 23),
            "month",
            "activity_m2030_12",
            at(2030, 12, 1),
            at(2031, 1, 1),
        ),  # noqa: E501
    ],
)
def test_a_moment_falls_in_its_period(moment, period, name, start, end):
    found = periods.partition_of(moment, period)

    assert (found.name, found.start, found.end) == (name, start, end)
    assert periods.parse(name) == found


def test_names_that_are_not_partitions_are_left_alone():
    for name in ("activity_item_days", "activity_w2030_54", "activity_m2030_13", "x"):
        assert periods.parse(name) is None


def test_the_drop_job_drops_whole_periods_past_retention(mongo_db, settings):
    settings.ACTIVITY_RETENTION_DAYS = 90
    activity_write(views("u", "1", at(2030, 1, 1), at(2030, 1, 8), at(2030, 4, 10)))
    assert partitions(mongo_db) == [
        "activity_w2030_01",
        "activity_w2030_02",
        "activity_w2030_15",
    ]

    # Week 1 ends on 7 January: 90 days later it goes, week 2 stays.
    assert drop_old_activity(now=at(2030, 4, 7)) == ["activity_w2030_01"]
    assert drop_old_activity(now=at(2030, 4, 7)) == []  # safe to run twice
    assert partitions(mongo_db) == ["activity_w2030_02", "activity_w2030_15"]
    assert drop_old_activity(now=at(2030, 4, 14, 0, 0, 1)) == ["activity_w2030_02"]
    assert partitions(mongo_db) == ["activity_w2030_15"]
    assert mongo_db["activity_w2030_15"].count_documents({}) == 1


def test_monthly_partitions_and_the_retention_setting(mongo_db, settings):
    settings.ACTIVITY_PERIOD = "month"
    settings.ACTIVITY_RETENTION_DAYS = 10
    activity_write(views("u", "1", at(2030, 1, 31), at(2030, 2, 1)))

    assert partitions(mongo_db) == ["activity_m2030_01", "activity_m2030_02"]
    assert drop_old_activity(now=at(2030, 2, 11)) == ["activity_m2030_01"]


def test_the_drop_job_is_scheduled_with_the_others():
    jobs = {job.name: job.func for job in declared_jobs()}

    assert jobs["drop_old_activity"] == "activity.tasks.drop_old_activity"
    assert jobs["bought_together"] == "activity.tasks.bought_together"


def test_a_query_across_a_partition_boundary_reads_both(mongo_db):
    sunday, monday = at(2030, 1, 20, 23, 59), at(2030, 1, 21, 0, 1)
    activity_write(views("user:7", "1", at(2030, 1, 19), sunday, monday))
    activity_write(views("user:8", "1", monday + timedelta(minutes=1)))

    since, until = at(2030, 1, 20), at(2030, 1, 22)
    assert partitions_for(since, until) == ["activity_w2030_04", "activity_w2030_03"]
    found = shopper_activity(user="user:7", since=since, until=until)
    assert [e["ts"] for e in found] == [monday, sunday]  # newest first
    by_item = item_activity(item="1", since=since, until=until)
    assert [e["user"] for e in by_item] == ["user:8", "user:7", "user:7"]


def test_a_query_within_one_period_reads_only_that_one(mongo_db):
    assert partitions_for(at(2030, 1, 21), at(2030, 1, 23)) == ["activity_w2030_04"]
    # An empty or missing partition reads as nothing.
    since, until = at(2030, 1, 21), at(2030, 1, 23)
    assert shopper_activity(user="u", since=since, until=until) == []


def test_the_limit_stops_at_the_newest_partition(mongo_db):
    activity_write(views("u", "1", at(2030, 1, 19), at(2030, 1, 21), at(2030, 1, 22)))

    found = shopper_activity(
        user="u", since=at(2030, 1, 1), until=at(2030, 2, 1), limit=2
    )
    assert [e["ts"] for e in found] == [at(2030, 1, 22), at(2030, 1, 21)]
