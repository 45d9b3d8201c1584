"""Secrets in URLs kept out of the logs.

Some links are their own key: an order's link (``/orders/MQ-7/<token>/``,
its tickets and calendar files), the link that attaches past orders to an
account and Django's password reset link. Whoever reads such a line of the
access log can open the order, cancel it or take over the account, so a
log line carries the path with the secret replaced.

The rule lives in the URL patterns, not here: a path segment is secret when
the view it reaches takes it as a keyword argument named in ``SECRET_KWARGS``.
A path is also tried with a slash added (without one, Django answers a
redirect to it), and a path no pattern matches either way is logged as it
came. A query string's paths are treated the same: a link opened signed
out comes back as the login page's ``?next=``.
"""

import functools
import logging
import re
from urllib.parse import parse_qsl, unquote, urlencode

from django.urls import Resolver404, resolve

SECRET_KWARGS = ("token",)
HIDDEN = "[hidden]"

_REQUEST_LINE = re.compile(r"^[A-Z]+ \S+ HTTP/[\d.]+$")


def redact_path(path: str) -> str:
    """``path`` (a query string may follow) with every secret segment
    replaced by ``HIDDEN``, in the path and in the paths the query names."""
    route, mark, query = path.partition("?")
    return _redact_route(route) + mark + _redact_query(query)


def redact_url(url: str) -> str:
    """A path, or an absolute URL (``http://host/path``), redacted; anything
    else as it is."""
    if url.startswith("/"):
        return redact_path(url)
    if "://" not in url:
        return url
    start = url.find("/", url.find("://") + 3)
    return url if start < 0 else url[:start] + redact_path(url[start:])


def redact_request_line(line: str) -> str:
    """An HTTP request line (``GET /path?q HTTP/1.1``, or with an absolute
    ``http://host/path``), its target redacted."""
    method, space, rest = line.partition(" ")
    target, space2, version = rest.rpartition(" ")
    if not space or not space2:
        return line
    return f"{method} {redact_url(target)} {version}"


def _redact_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    hidden = [(key, redact_url(value)) for key, value in pairs]
    return query if hidden == pairs else urlencode(hidden, safe="/[]")


# Most requests ask again for the same few paths (pages, static files);
# a link with a secret is asked for a few times at most.
@functools.lru_cache(maxsize=1024)
def _redact_route(route: str) -> str:
    secrets = _secrets(route)
    if not secrets:
        return route
    # Segment by segment, each as the view would see it: a client may
    # percent-encode any character of a secret, a slash included.
    return "/".join(
        HIDDEN if any(secret in unquote(part) for secret in secrets) else part
        for part in route.split("/")
    )


def _secrets(route: str) -> list[str]:
    decoded = unquote(route)
    for candidate in (decoded, decoded + "/"):
        try:
            found = resolve(candidate)
        except Resolver404:
            continue
        return [found.kwargs[name] for name in SECRET_KWARGS if found.kwargs.get(name)]
    return []


class RedactPaths(logging.Filter):
    """A logging filter for the handlers Django's loggers write to: their
    messages name the path ("Not Found: /orders/MQ-7/<token>/") or, under
    runserver, the request line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = redact_args(record.args)
        return True


def redact_args(args: tuple) -> tuple:
    """A log call's arguments, each path or request line redacted."""
    return tuple(_redact_arg(arg) for arg in args)


def _redact_arg(arg: object) -> object:
    if not isinstance(arg, str):
        return arg
    if arg.startswith("/"):
        return redact_path(arg)
    if _REQUEST_LINE.match(arg):
        return redact_request_line(arg)
    return arg
