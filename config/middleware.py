"""Pages while MongoDB is unreachable: a styled 503 within a second.

When the database cannot be reached (the embedded server died and ``serve``
is restarting it, or a deployment's replica set has no server left), a
request either finds the driver already knowing it (its monitor checked the
server and failed), and is answered at once without a database call, or
fails inside pymongo with a ``ConnectionFailure``, which becomes the same
page. Either way nothing half-done is left behind: the failed operation was
not applied, or is reported as not done, and every write Marquee makes is
safe to repeat when the shopper tries again.
"""

from __future__ import annotations

import logging

from django.http import HttpResponse
from django.template.loader import render_to_string
from pymongo.errors import ConnectionFailure

from config import mongo

log = logging.getLogger("marquee.outage")

RETRY_AFTER_S = 5
# /healthz reports the outage in its own words (JSON naming the database).
OWN_REPORT = ("/healthz",)


def outage_response() -> HttpResponse:
    # Rendered without the request: the site's context processors read the
    # shopper's cart from the very database that is down.
    response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseOutageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path not in OWN_REPORT and mongo.known_down():
            return outage_response()
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, ConnectionFailure):
            log.warning("MongoDB is unreachable: %s", str(exception).split(",")[0])
            return outage_response()
        return None
