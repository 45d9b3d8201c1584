import logging

from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache

from config import mongo

log = logging.getLogger(__name__)


def _django_db_problem() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return f"unreachable: {exc}"
    return None


@never_cache
def healthz(request):
    """Both databases answer: 200; otherwise 503 naming the one that does not.

    The page is public (a load balancer asks it), so it says only which
    database is unreachable; the reason (which may name hosts, ports and
    paths) goes to the log."""
    problems = {"mongodb": mongo.ping(), "django_db": _django_db_problem()}
    for name, problem in problems.items():
        if problem:
            log.warning("health check: %s %s", name, problem)
    healthy = not any(problems.values())
    return JsonResponse(
        {
            "status": "ok" if healthy else "unavailable",
            "checks": {
                name: "unreachable" if problem else "ok"
                for name, problem in problems.items()
            },
        },
        status=200 if healthy else 503,
    )
