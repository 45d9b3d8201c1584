"""Registration of the django-q2 schedules every app declares.

Each app lists its periodic jobs as ``SCHEDULES`` in its ``tasks.py``; one
idempotent command writes them to django-q2's Schedule table, so running it
on every start never duplicates a job.
"""

import importlib
from dataclasses import dataclass

from django_q.models import Schedule

APPS = ("catalog", "booking", "shop", "staff", "activity", "accounts")


@dataclass(frozen=True)
class Job:
    name: str
    func: str
    minutes: int


def declared_jobs() -> list[Job]:
    jobs = []
    for app in APPS:
        module = importlib.import_module(f"{app}.tasks")
        jobs.extend(getattr(module, "SCHEDULES", ()))
    return jobs


def register(jobs: list[Job] | None = None) -> list[str]:
    """Create or update one Schedule per job, keyed by name; return the names.

    Registering every declared job also deletes the schedules of the apps'
    jobs no app declares any more, so a job removed from the code stops
    running instead of failing every few minutes. Only schedules shaped as
    this makes them (every so many minutes) are deleted: a one-off schedule
    is a task's own later attempt (an email's retry, ``accounts.tasks``),
    and stays."""
    if jobs is None:
        jobs = declared_jobs()
        prefixes = tuple(f"{app}.tasks." for app in APPS)
        gone = Schedule.objects.filter(schedule_type=Schedule.MINUTES).exclude(
            name__in=[job.name for job in jobs]
        )
        for schedule in gone:
            if schedule.func.startswith(prefixes):
                schedule.delete()
    for job in jobs:
        Schedule.objects.update_or_create(
            name=job.name,
            defaults={
                "func": job.func,
                "schedule_type": Schedule.MINUTES,
                "minutes": job.minutes,
                "repeats": -1,
            },
        )
    return [job.name for job in jobs]
