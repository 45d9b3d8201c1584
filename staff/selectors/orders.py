"""Orders as staff see them: search, filters, keyset pages, one order's story."""

import re
from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId

from shop.documents import Order
from staff.documents import AuditEntry

PAGE_SIZE = 25
# Ticket codes: 12 letters of the shop's alphabet; order numbers: MQ-123456.
_NUMBER = re.compile(r"^MQ-\d+$", re.IGNORECASE)
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
        elif _NUMBER.match(q):
            query["number"] = q.upper()
        elif code := _ticket_code(q):
            query["codes"] = code
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


def order_search(
    *,
    q: str = "",
    state: str = "",
    kind: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    after: str | None = None,
    size: int = PAGE_SIZE,
) -> OrderPage:
    """Newest first, ``size`` a page; ``after`` is the previous page's cursor
    (``<created_at iso>|<_id>``: keyset paging stays fast on page 4,000)."""
    query = _filter(q=q, state=state, kind=kind, since=since, until=until)
    if after:
        at, _, oid = after.partition("|")
        cursor_at = datetime.fromisoformat(at)
        query = {
            "$and": [
                query,
                {
                    "$or": [
                        {"created_at": {"$lt": cursor_at}},
                        {"created_at": cursor_at, "_id": {"$lt": ObjectId(oid)}},
                    ]
                },
            ]
        }
    found = list(
        Order._get_collection()
        .find(
            query,
            {
                "number": 1,
                "email": 1,
                "state": 1,
                "total": 1,
                "created_at": 1,
                "lines.kind": 1,
                "lines.quantity": 1,
            },
        )
        .sort([("created_at", -1), ("_id", -1)])
        .limit(size + 1)
    )
    next_cursor = None
    if len(found) > size:
        found = found[:size]
        last = found[-1]
        next_cursor = f"{last['created_at'].isoformat()}|{last['_id']}"
    for raw in found:
        kinds = {line["kind"] for line in raw.get("lines") or []}
        raw["has_tickets"] = "ticket" in kinds
        raw["has_goods"] = bool(kinds - {"ticket"})
        raw["total"] = raw["total"].to_decimal()
    return OrderPage(orders=found, next_cursor=next_cursor, query=q)


def order_detail(*, number: str) -> Order | None:
    if not isinstance(number, str) or not number:
        return None
    raw = Order._get_collection().find_one({"number": number})
    return Order._from_son(raw) if raw else None


def order_kinds(order: Order) -> set[str]:
    return {line.kind for line in order.lines}


def timeline(*, kind: str, object_id: str) -> list[dict]:
    """Every audit entry of one object, oldest first."""
    return list(
        AuditEntry._get_collection()
        .find({"object_kind": kind, "object_id": object_id})
        .sort([("at", 1), ("_id", 1)])  # entries of one moment in written order
    )
