"""Throttling of the requests that take seats or stock (holds and adds).

Fixed windows counted in MongoDB: one document per (who, window) whose
``_id`` names both, so every worker process (and machine) shares the
counts. A request is counted by one conditional ``$inc`` whose filter
carries the limit (``n < limit``, ``hit``): the update is the decision, as
for stock and seats, so concurrent requests can never pass more than the
limit and nothing is read back. Why not Django's cache framework: the only
shared backends without a new server are the database cache, whose
``incr`` is a read then a write (two workers can both count 7), and local
memory, which is per process. Old windows are deleted by a TTL index on
``expires`` (``ThrottleCount``).

Who: the session (its key) and the client address, each with its limit
(settings ``THROTTLE_PER_SESSION``, ``THROTTLE_PER_ADDRESS`` per
``THROTTLE_WINDOW_SECONDS``). Over either: 429 with a page that says when
to try again.
"""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.shortcuts import render
from pymongo.errors import DuplicateKeyError

from accounts.documents import ThrottleCount

# The POSTs that take seats or stock (url names); nothing else is counted.
THROTTLED = {"shop:add", "shop:hold_seats", "shop:best_seats"}


def client_ip(request) -> str:
    """The client's address: the proxy's header if one is configured (only
    behind a proxy that sets it), else REMOTE_ADDR. Also django-axes'.

    Of a list (``X-Forwarded-For: a, b``), the last entry: the one the
    trusted proxy appended. The entries before it are whatever the client
    sent, and counting by them would let a client pick its own address."""
    header = settings.CLIENT_IP_HEADER
    if header and request.META.get(header):
        return request.META[header].split(",")[-1].strip() or "unknown"
    return request.META.get("REMOTE_ADDR") or "unknown"


def window_id(key: str, window: int, now: datetime) -> str:
    """The ``_id`` of ``key``'s count in the window of ``window`` seconds
    that ``now`` falls in."""
    return f"{key}|{int(now.timestamp()) // window * window}"


def hit(key: str, *, limit: int, window: int, now: datetime | None = None) -> bool:
    """Count one request for ``key`` if the current window of ``window``
    seconds has fewer than ``limit``; whether it was counted (within).

    One upsert guarded on ``n < limit``: it counts a window under its limit,
    or makes a window not seen yet with the first count. A window at its
    limit fails the guard, so the upsert tries to make it again and the
    ``_id`` answers DuplicateKeyError; so does a window another request made
    a moment ago, hence one more guarded update (no upsert) decides. Never a
    findAndModify: on the Rust server its cost grows with the collection
    (``config/compat.py``), and this one gains a document per shopper's
    session per window, on the add's own request.
    """
    if limit < 1:
        return False  # an upsert makes a missing window whatever its guard
    now = now or datetime.now(UTC)
    under = {"_id": window_id(key, window, now), "n": {"$lt": limit}}
    count = {"$inc": {"n": 1}}
    counts = ThrottleCount.coll()
    try:
        counts.update_one(
            under,
            {**count, "$setOnInsert": {"expires": now + timedelta(seconds=2 * window)}},
            upsert=True,
        )
        return True
    except DuplicateKeyError:
        return counts.update_one(under, count).matched_count == 1


def window_left(window: int, now: datetime | None = None) -> int:
    """Seconds until the current window of ``window`` seconds ends (when
    a request over the limit may try again), at least 1."""
    now = now or datetime.now(UTC)
    return max(1, window - int(now.timestamp()) % window)


def when_again(window: int, now: datetime) -> dict:
    """When a request refused in the window of ``window`` seconds may try
    again, as a refusal says it: ``seconds`` (also ``Retry-After``),
    ``minutes`` (rounded up) and the moment, ``retry_at``."""
    seconds = window_left(window, now)
    return {
        "seconds": seconds,
        "minutes": -(-seconds // 60),
        "retry_at": now + timedelta(seconds=seconds),
    }


def counted(
    request,
    *,
    per_address: int,
    per_session: int | None,
    window: int,
    prefix: str = "",
    now: datetime | None = None,
) -> bool:
    """Count this request against its client address and, when it has a
    session and ``per_session`` is given, its session (keys ``prefix``
    ``ip:...`` and ``session:...``); whether both were under their limits
    (each is counted either way)."""
    ok = hit(
        f"{prefix}ip:{client_ip(request)}", limit=per_address, window=window, now=now
    )
    session = getattr(request, "session", None)
    if per_session is not None and session is not None and session.session_key:
        key = f"{prefix}session:{session.session_key}"
        ok = hit(key, limit=per_session, window=window, now=now) and ok
    return ok


def within_limits(request) -> bool:
    return counted(
        request,
        per_address=settings.THROTTLE_PER_ADDRESS,
        per_session=settings.THROTTLE_PER_SESSION,
        window=settings.THROTTLE_WINDOW_SECONDS,
    )


def throttle_refusal(request):
    """The 429 for a hold or an add over its limits, or None (counted)."""
    if within_limits(request):
        return None
    seconds = window_left(settings.THROTTLE_WINDOW_SECONDS)
    if getattr(request, "htmx", False):
        # A toast where the page shows its messages (base.html lets htmx
        # swap a 429); the page itself stays as it is.
        response = render(request, "_throttled.html", {"seconds": seconds}, status=429)
        response["HX-Retarget"] = "#toasts"
        response["HX-Reswap"] = "beforeend"
    else:
        response = render(request, "429.html", {"seconds": seconds}, status=429)
    response["Retry-After"] = str(seconds)
    return response
