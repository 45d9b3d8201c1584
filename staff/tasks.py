"""django-q2 task functions of the staff app: thin, safe to run twice.

The staff app has no periodic job: its sales counters are moved by one
exactly-once write per order (staff.services.counters), nothing to settle.
"""

from config.schedules import Job

SCHEDULES: list[Job] = []
