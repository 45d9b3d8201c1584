"""Orders as staff see them: search, filters, keyset pages, one order's story."""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from bson import ObjectId
from django.utils import timezone

from config.decimals import decimal_of
from config.mongo import read_in_windows
from shop.documents import PAID, PENDING_PAYMENT, Order
from shop.payments import BOX_OFFICE
from staff.documents import AuditEntry

PAGE_SIZE = 25
# Ticket codes: 12 letters of the shop's alphabet; order numbers: MQ-123456,
# also typed as "#MQ-123456", "MQ123456" or "mq 123456".
_NUMBER = re.compile(r"^#?\s*MQ[-\s]?(\d+)$", re.IGNORECASE)
# The digits alone, read out over the phone: a number, once no ticket code.
_DIGITS = re.compile(r"^#?\s*(\d{1,9})$")
_CODE = re.compile(r"^[A-Z0-9]{12}$")


def _ticket_code(q: str) -> str | None:
    """A ticket code as the shop writes it (ABCD-EFGH-JKLM), typed with or
    without dashes and spaces, any case; None if ``q`` is not one."""
    raw = re.sub(r"[\s-]", "", q).upper()
    if not _CODE.match(raw):
        return None
    return "-".join(raw[i : i + 4] for i in range(0, 12, 4))


@dataclass
class OrderPage:
    orders: list[dict]
    next_cursor: str | None
    query: str


def _filter(*, q: str, state: str, kind: str, since, until) -> dict:
    query: dict = {}
    q = (q or "").strip()
    if q:
        if "@" in q:
            query["email"] = q.lower()
        elif number := _NUMBER.match(q):
            query["number"] = f"MQ-{number.group(1)}"
        elif code := _ticket_code(q):
            query["codes"] = code
        elif digits := _DIGITS.match(q):
            query["number"] = f"MQ-{digits.group(1)}"
        else:
            query["number"] = q  # finds nothing rather than scanning
    if state:
        query["state"] = state
    if kind == "tickets":
        query["lines.kind"] = "ticket"
    elif kind == "goods":
        query["lines.kind"] = "product"
    if since or until:
        query["created_at"] = {
            **({"$gte": since} if since else {}),
            **({"$lt": until} if until else {}),
        }
    return query


# Time windows a page is looked for in, newest first, widening until one
# holds a page. On the embedded server an index scan costs about the number
# of entries in its bounds even under a limit, so a page of the newest
# orders is read from the last hours' entries, not from all 100,000.
WINDOWS = [
    timedelta(hours=2),
    timedelta(hours=12),
    timedelta(days=3),
    timedelta(days=15),
    timedelta(days=60),
    timedelta(days=365),
    None,
]
_FIELDS = {
    "number": 1,
    "email": 1,
    "state": 1,
    "total": 1,
    "created_at": 1,
    "lines.kind": 1,
    "payment_method": 1,
    "customer_name": 1,
}
_NEWEST = [("created_at", -1), ("_id", -1)]


def order_search(
    *,
    q: str = "",
    state: str = "",
    kind: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    after: str | None = None,
    size: int = PAGE_SIZE,
    now: datetime | None = None,
) -> OrderPage:
    """Newest first, ``size`` a page; ``after`` is the previous page's cursor
    (``<created_at iso>|<_id>``: keyset paging stays fast on page 4,000).

    A search (``q``) is bounded by its own index (number, ticket code,
    email); a list is read window by window (WINDOWS).
    """
    base = _filter(q=q, state=state, kind=kind, since=None, until=None)
    upper = until
    found: list[dict] = []
    if after:
        at, _, oid = after.partition("|")
        cursor_at = datetime.fromisoformat(at)
        found = _same_moment(base, cursor_at, ObjectId(oid), size + 1)
        upper = min(upper, cursor_at) if upper else cursor_at
    if len(found) <= size:
        found += _newest(
            base,
            since=since,
            upper=upper,
            wanted=size + 1 - len(found),
            windowed=not q,
            now=now,
        )
    next_cursor = None
    if len(found) > size:
        found = found[:size]
        last = found[-1]
        next_cursor = f"{last['created_at'].isoformat()}|{last['_id']}"
    for raw in found:
        _describe(raw)
    return OrderPage(orders=found, next_cursor=next_cursor, query=q)


def _orders():
    return Order.coll()


def _same_moment(base: dict, at: datetime, before: ObjectId, limit: int) -> list:
    """Orders of the cursor's very moment after it in the order: their own
    bounded query (an $or in one query would scan the whole index)."""
    query = {**base, "created_at": at, "_id": {"$lt": before}}
    return list(_orders().find(query, _FIELDS).sort(_NEWEST).limit(limit))


def _describe(raw: dict) -> None:
    kinds = {line["kind"] for line in raw.get("lines") or []}
    raw["has_tickets"] = "ticket" in kinds
    raw["has_goods"] = bool(kinds - {"ticket"})
    raw["total"] = decimal_of(raw["total"])


def _newest(base, *, since, upper, wanted, windowed, now) -> list[dict]:
    """Up to ``wanted`` orders created in [since, upper), newest first."""
    return read_in_windows(
        _orders(),
        base,
        field="created_at",
        windows=_windows(since=since, upper=upper, windowed=windowed, now=now),
        sort=_NEWEST,
        limit=wanted,
        projection=_FIELDS,
    )


def _windows(*, since, upper, windowed, now):
    """The bounds of ``created_at`` in [since, upper), newest first: orders
    dated after now (none in a live shop) on their own, then WINDOWS back
    from now (or from ``upper``), the last one down to ``since``."""
    now = now or timezone.now()
    top = upper
    if top is None or top > now:
        yield {"$gte": now, **({"$lt": top} if top else {})}
        top = now
    for width in WINDOWS if windowed else [None]:
        lower = top - width if width is not None else None
        if since is not None and (lower is None or lower < since):
            lower, width = since, None  # the last window: the asked range
        yield {"$lt": top, **({"$gte": lower} if lower is not None else {})}
        if width is None:
            return
        top = lower  # the next, wider window starts where this one ended


def order_detail(*, number: str) -> Order | None:
    if not isinstance(number, str) or not number:
        return None
    raw = Order.coll().find_one({"number": number})
    return Order._from_son(raw) if raw else None


def order_kinds(order: Order) -> set[str]:
    return {line.kind for line in order.lines}


def order_timeline(order: Order) -> list[dict]:
    """An order's timeline: its creation (from the order itself: the audit
    trail records changes, not creations), then its audit entries. Created
    by the shopper, or at the box office by whoever took the payment."""
    entries = timeline(kind="order", object_id=order.number)
    actor = "shopper"
    if order.payment_method == BOX_OFFICE:
        actor = next((e["actor"] for e in entries if e["after"] == PAID), "staff")
    created = {
        "at": order.created_at,
        "actor": actor,
        "action": "order created",
        "object_kind": "order",
        "object_id": order.number,
        "reason": "",
        "before": None,
        "after": PENDING_PAYMENT,
        "details": {},
    }
    return [created, *entries]


def timeline(*, kind: str, object_id: str) -> list[dict]:
    """Every audit entry of one object, oldest first."""
    return list(
        AuditEntry.coll()
        .find({"object_kind": kind, "object_id": object_id})
        .sort([("at", 1), ("_id", 1)])  # entries of one moment in written order
    )


def latest(*, kind: str, limit: int) -> list[dict]:
    """The newest audit entries of one kind of object (a page's own part
    of the trail: the jobs', the team's), newest first."""
    return list(
        AuditEntry.coll()
        .find({"object_kind": kind})
        .sort([("at", -1), ("_id", -1)])
        .limit(limit)
    )
