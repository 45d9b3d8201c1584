"""Counting the MongoDB commands each request issues, inside a web worker.

The HTTP level starts ``manage.py serve`` with ``bench.web.settings``:
Marquee's settings plus this middleware, outermost, which counts every
command the request's thread starts (a ``pymongo.monitoring`` listener,
registered when the settings are imported, before any MongoClient exists)
and reports the count in the ``X-DB-Commands`` response header. Synchronous
pymongo starts a command on the thread that issues it, and gunicorn's
gthread worker runs a request on one thread, so the count is exactly that
request's. Nothing else about Marquee changes.
"""

from __future__ import annotations

import threading

from pymongo import monitoring

HEADER = "X-DB-Commands"

_local = threading.local()


class _Counter(monitoring.CommandListener):
    def started(self, event: monitoring.CommandStartedEvent) -> None:
        count = getattr(_local, "count", None)
        if count is not None:
            _local.count = count + 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


_installed = False


def install() -> None:
    """Register the listener for every MongoClient created from now on."""
    global _installed
    if not _installed:
        monitoring.register(_Counter())
        _installed = True


class CountCommands:
    """Middleware: the request's command count in a response header."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        _local.count = 0
        try:
            response = self.get_response(request)
        finally:
            count, _local.count = _local.count, None
        response[HEADER] = str(count)
        return response
