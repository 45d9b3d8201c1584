"""Secrets in URLs kept out of the logs.

Some links are their own key: an order's link (``/orders/MQ-7/<token>/``,
its tickets and calendar files), the link that attaches past orders to an
account and Django's password reset link. Whoever reads such a line of the
access log can open the order, cancel it or take over the account, so a
log line carries the path with the secret replaced.

The rule lives in the URL patterns, not here: a path segment is secret when
the view it reaches takes it as a keyword argument named in ``SECRET_KWARGS``.
A path no pattern matches is logged as it came. A query string's paths
are treated the same: a link opened signed out comes back as the login
page's ``?next=``.
"""

import logging
from urllib.parse import parse_qsl, unquote, urlencode

from django.urls import Resolver404, resolve

SECRET_KWARGS = ("token",)
HIDDEN = "[hidden]"


def redact_path(path: str) -> str:
    """``path`` (a query string may follow) with every secret segment
    replaced by ``HIDDEN``, in the path and in the paths the query names."""
    route, mark, query = path.partition("?")
    return _redact_route(route) + mark + _redact_query(query)


def _redact_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    hidden = [
        (key, _redact_route(value) if value.startswith("/") else value)
        for key, value in pairs
    ]
    return query if hidden == pairs else urlencode(hidden, safe="/[]")


def _redact_route(route: str) -> str:
    try:
        # Resolved as the view sees it: a client may percent-encode any
        # character of a secret.
        found = resolve(unquote(route))
    except Resolver404:
        return route
    secrets = [found.kwargs[name] for name in SECRET_KWARGS if found.kwargs.get(name)]
    if not secrets:
        return route
    # Segment by segment, so a secret that happens to be a substring of
    # another segment leaves that one alone.
    segments = [
        HIDDEN if unquote(part) in secrets else part for part in route.split("/")
    ]
    return "/".join(segments)


def redact_request_line(line: str) -> str:
    """An HTTP request line (``GET /path?q HTTP/1.1``, or with an absolute
    ``http://host/path``), its path redacted."""
    method, space, rest = line.partition(" ")
    target, space2, version = rest.rpartition(" ")
    if not space or not space2:
        return line
    start = target.find("/", target.find("://") + 3) if "://" in target else 0
    if start < 0 or not target.startswith("/", start):
        return line
    return f"{method} {target[:start]}{redact_path(target[start:])} {version}"


class RedactPaths(logging.Filter):
    """A logging filter for Django's request loggers: their messages name
    the path ("Not Found: /orders/MQ-7/<token>/")."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redact_arg(arg) for arg in record.args)
        return True


def _redact_arg(arg: object) -> object:
    return redact_path(arg) if isinstance(arg, str) and arg.startswith("/") else arg
