"""The activity documents: one small, append-only document per event.

Pure: builds plain dicts, no database. Every document has ``type``,
``user`` (the shopper), ``ts`` and, when known, ``store`` (the store the
shopper chose) and ``geo`` (where they said they are, rounded to about
10 km); the rest depends on the type and is only what that type needs
(the article's concern: the log is large, each field is paid for millions
of times).

``_id``: an ObjectId made by the writer when the event happens. It embeds
the time, so the ``_id`` index grows at its end like the article's
``{source, ts}`` key, at 12 bytes instead of a sub-document, and it is
unique without asking the server, so one unordered ``insert_many`` of a
batch never collides. The one exception is the paid order: its ``_id`` is
``order:<order id>``, so an order announced twice (a checkout finished by
the reconciler) is written once - the second insert is a duplicate key,
which the writer ignores.

Nothing sensitive is written: no card, address, e-mail or name; the
shopper is ``user:<id>`` or a one-way digest of the anonymous session
token (the token itself opens a cart, its digest does not).
"""

import hashlib
from datetime import datetime

from bson import ObjectId

SEARCH = "search"
VIEW = "view"
CART_ADD = "add"
CART_REMOVE = "remove"
SEAT_HOLD = "hold"
SEAT_RELEASE = "release"
ORDER = "order"
TYPES = (SEARCH, VIEW, CART_ADD, CART_REMOVE, SEAT_HOLD, SEAT_RELEASE, ORDER)

MAX_QUERY = 100  # characters of a search kept


def shopper(owner: str | None) -> str | None:
    """The shopper key logged for a shop owner key (``shop.identity``):
    a user stays ``user:<id>`` (so their activity can be deleted with the
    account); an anonymous token becomes ``anon:<digest>``."""
    if not owner:
        return None
    kind, _, key = owner.partition(":")
    if kind == "user":
        return owner
    digest = hashlib.blake2b(key.encode(), digest_size=10).hexdigest()
    return f"anon:{digest}"


def _base(kind: str, user: str | None, ts: datetime, where: dict | None) -> dict:
    doc = {"_id": ObjectId(), "type": kind, "ts": ts}
    if user:
        doc["user"] = user
    for key, value in (where or {}).items():
        if value is not None:
            doc[key] = value
    return doc


def where(store: str | None = None, location: dict | None = None) -> dict:
    """Store and a coarse location (one decimal: about 10 km) when known."""
    geo = None
    if location and "lng" in location and "lat" in location:
        geo = [round(float(location["lng"]), 1), round(float(location["lat"]), 1)]
    return {"store": store or None, "geo": geo}


def search(*, user, ts, query: str, results: int, at=None) -> dict:
    doc = _base(SEARCH, user, ts, at)
    doc.update(q=query.strip()[:MAX_QUERY], n=int(results))
    return doc


def view(*, user, ts, item: str, sku: str | None = None, at=None) -> dict:
    doc = _base(VIEW, user, ts, at)
    doc["item"] = item
    if sku:
        doc["sku"] = sku
    return doc


def cart(*, user, ts, item: str, sku: str, qty: int, at=None) -> dict:
    """A cart add (qty > 0) or remove (qty < 0), logged with a positive qty."""
    doc = _base(CART_ADD if qty > 0 else CART_REMOVE, user, ts, at)
    doc.update(item=item, sku=sku, qty=abs(int(qty)))
    return doc


def seats(*, user, ts, session: str, seats: list[str], held: bool, at=None) -> dict:
    doc = _base(SEAT_HOLD if held else SEAT_RELEASE, user, ts, at)
    doc.update(session=session, seats=list(seats))
    return doc


def order(*, order_id, user, ts, number: str, lines: list[dict], at=None) -> dict:
    """A paid order: its product lines (item, sku, qty), its ticket lines
    (session, qty) and ``items``, the distinct items, sorted (the pairs of
    "bought together" are counted from it). A product line given without
    its item gets it from ``with_items`` before it is written."""
    doc = _base(ORDER, user, ts, at)
    doc["_id"] = f"order:{order_id}"
    doc["order"] = number
    doc["lines"] = lines
    doc["items"] = sorted({line["item"] for line in lines if "item" in line})
    return doc


def needs_items(doc: dict) -> list[str]:
    """The SKUs of an order's product lines that do not name their item."""
    if doc.get("type") != ORDER:
        return []
    return [x["sku"] for x in doc["lines"] if "sku" in x and "item" not in x]


def with_items(doc: dict, items: dict[str, str]) -> dict:
    """The order with its lines' items filled in from ``items`` (SKU ->
    item; a SKU no longer known keeps its line without one)."""
    for line in doc["lines"]:
        if "sku" in line and "item" not in line and line["sku"] in items:
            line["item"] = items[line["sku"]]
    doc["items"] = sorted({x["item"] for x in doc["lines"] if "item" in x})
    return doc
