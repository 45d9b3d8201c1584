"""django-q2 task functions of the activity log: thin, safe to run twice."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from activity.services.insight import bought_together_rebuild, item_days_count
from activity.services.partitions import activity_drop_old
from config.schedules import Job

SCHEDULES: list[Job] = [
    # Partitions are whole weeks or months: a daily look is soon enough.
    Job("drop_old_activity", "activity.tasks.drop_old_activity", 24 * 60),
    Job("bought_together", "activity.tasks.bought_together", 60),
    Job("count_item_days", "activity.tasks.count_item_days", 15),
]


def drop_old_activity(now=None) -> list[str]:
    """Partitions past ``ACTIVITY_RETENTION_DAYS`` -> dropped; their names."""
    return activity_drop_old(now=now or timezone.now())


def bought_together(now=None) -> int:
    """Each item's top partners in paid orders of the last N days."""
    return bought_together_rebuild(
        now=now,
        days=settings.BOUGHT_TOGETHER_DAYS,
        top=settings.BOUGHT_TOGETHER_TOP,
    )


def count_item_days(now=None) -> int:
    """Today's and yesterday's per-item counts (views, adds, orders)."""
    today = timezone.localdate(now or timezone.now())
    return sum(item_days_count(day=today - timedelta(days=k)) for k in (0, 1))
