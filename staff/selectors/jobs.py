"""The scheduled jobs (django-q2) with their last run and recent failures."""

from django_q.models import Failure, Schedule, Success, Task


def jobs() -> list[dict]:
    rows = []
    for schedule in Schedule.objects.order_by("name"):
        last = Task.objects.filter(group=schedule.name).order_by("-stopped").first()
        if last is None and schedule.task:
            last = Task.objects.filter(id=schedule.task).first()
        rows.append(
            {
                "schedule": schedule,
                "last": last,
                "failures": Failure.objects.filter(group=schedule.name).count(),
                "successes": Success.objects.filter(group=schedule.name).count(),
            }
        )
    return rows
