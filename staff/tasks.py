"""django-q2 task functions of the staff app: thin, safe to run twice."""

from datetime import timedelta

from django.utils import timezone

from config.schedules import Job
from staff.services.counters import counters_settle

SCHEDULES: list[Job] = [
    Job("settle_sales_counters", "staff.tasks.settle_sales_counters", 5),
]


def settle_sales_counters() -> int:
    """Days take what their hours counted but a dead process left untaken
    (the last two days' hours); returns how many orders it applied."""
    return counters_settle(since=timezone.now() - timedelta(days=2))
