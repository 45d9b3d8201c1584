"""Data that only grows: ended carts are deleted after a retention.

Carts are expired, canceled (emptied by a merge) or completed, never deleted
by the services that end them. Left alone they pile up, and every query
whose cost grows with the collection pays (config/compat.py). The
purge_carts job deletes them CART_RETENTION_DAYS after they ended. A job,
not a TTL index: what may go is a rule (an ended state, no order still in
payment or refunding), not only an age, and neither SecantusDB server is
relied on to run TTL monitors.
"""

from datetime import datetime, timedelta

from django.conf import settings

from catalog.services import counters
from shop.cart_state import CANCELED, COMPLETE, EXPIRED
from shop.documents import PENDING_PAYMENT, REFUNDING
from shop.services.common import carts, orders, utcnow

# The states in which a cart is over: no hold is live, no checkout runs.
ENDED = [EXPIRED, CANCELED, COMPLETE]
_BATCH = 1000
# No stock move in flight out of or into the cart.
_SETTLED = {"stock_back.0": {"$exists": False}, "moved_in.0": {"$exists": False}}


def retention() -> timedelta:
    return timedelta(days=settings.CART_RETENTION_DAYS)


def carts_purge(*, now: datetime | None = None, limit: int = 20_000) -> int:
    """Delete carts that ended more than the retention ago; return how many.

    Never one a live hold or a pending checkout needs: only ended states
    (an active, pending or expiring cart is never touched; the delete itself
    is guarded on the state), never one whose stock moves are in flight
    (``stock_back``, ``moved_in``: the proof the recovery reads), and never
    the cart of an order still in payment or refunding. A paid order keeps
    its own lines, owner, totals and payment, so it needs no cart. The
    tombstones of fenced takes (``line_stock``) are ended carts, purged
    alike. Also drops the counters' fences of moves recovered before the
    retention. Safe to run twice at once.
    """
    now = utcnow(now)
    cutoff = now - retention()
    purged, busy = 0, set()
    while purged < limit:
        query: dict = {
            "state": {"$in": ENDED},
            "ended_at": {"$lt": cutoff},
            **_SETTLED,
        }
        if busy:
            query["_id"] = {"$nin": sorted(busy)}  # rare: kept for their order
        ids = [raw["_id"] for raw in carts().find(query, {"_id": 1}, limit=_BATCH)]
        if not ids:
            break
        busy |= _in_payment(ids)
        gone = [cart_id for cart_id in ids if cart_id not in busy]
        purged += (
            carts()
            .delete_many({"_id": {"$in": gone}, "state": {"$in": ENDED}, **_SETTLED})
            .deleted_count
        )
    counters.fences_purge(cutoff)
    return purged


def _in_payment(cart_ids: list[str]) -> set[str]:
    """Those of the carts whose order is still in payment or refunding."""
    found = orders().find(
        {"cart_id": {"$in": cart_ids}, "state": {"$in": [PENDING_PAYMENT, REFUNDING]}},
        {"cart_id": 1},
    )
    return {raw["cart_id"] for raw in found}
