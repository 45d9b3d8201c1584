"""django-q2 task functions of the catalog app: thin, safe to run twice."""

from catalog.services.scopes import browse_scopes_rebuild
from config.schedules import Job

SCHEDULES: list[Job] = [
    # Repairs what a process dying between a summary write and its count
    # update left behind; counts only steer browsing, so an hour is soon.
    Job("rebuild_browse_scopes", "catalog.tasks.rebuild_browse_scopes", 60),
]


def rebuild_browse_scopes() -> int:
    """Recount every browse scope from the summaries; returns how many."""
    return browse_scopes_rebuild()
