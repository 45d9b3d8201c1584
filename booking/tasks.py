"""django-q2 task functions of the booking app: thin, safe to run twice."""

from config.schedules import Job

SCHEDULES: list[Job] = []
