"""django-q2 task functions of the staff app: thin, safe to run twice.

The sales counters need no job: one exactly-once write per order moves them
(staff.services.counters). The days' top-product sums are brought up to
date by the dashboard's views; the job does it every few minutes as well,
so that a view sums the orders of the last minutes, never a whole day.
"""

from datetime import datetime

from django.utils import timezone

from config.schedules import Job
from staff.selectors.dashboard import top_products

SCHEDULES: list[Job] = [
    Job("sum_sales_days", "staff.tasks.sum_sales_days", 5),
]


def sum_sales_days(now: datetime | None = None) -> int:
    """The last days' per-product sums brought up to their counters (what
    the dashboard reads); returns how many products its top list shows."""
    return len(top_products(now or timezone.now()))
