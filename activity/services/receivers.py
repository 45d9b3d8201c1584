"""The activity log's receivers of the catalog's and the shop's signals.

Each builds one small document (``activity.kinds``) and hands it to the
writer, which only queues it: a page pays microseconds, never a round trip
(a paid order's SKUs get their items in the writer's thread).
Connected in ``ActivityConfig.ready``.
"""

from collections import Counter

from django.utils import timezone

from activity import kinds
from activity.services.writer import record
from catalog.documents import location_parts
from shop.identity import owner_of

PRODUCT, TICKET = "product", "ticket"


def _where(request) -> dict:
    session = getattr(request, "session", None) or {}
    return kinds.where(session.get("store_id"), session.get("location"))


def on_searched(sender, *, request, text, results, **kwargs) -> None:
    record(
        kinds.search(
            user=kinds.shopper(owner_of(request)),
            ts=timezone.now(),
            query=text,
            results=results,
            at=_where(request),
        )
    )


def on_item_viewed(sender, *, request, item_id, sku=None, **kwargs) -> None:
    """A whole item page shown (a variant swapped in by htmx is the same
    view). The shopper gets a session token now, so that what they view
    can be shown back to them as "Recently viewed"."""
    if getattr(request, "htmx", False):
        return
    record(
        kinds.view(
            user=kinds.shopper(owner_of(request, create=True)),
            ts=timezone.now(),
            item=item_id,
            sku=sku,
            at=_where(request),
        )
    )


def on_cart_line_changed(sender, *, request, owner, sku, item_id, delta, **kw):
    record(
        kinds.cart(
            user=kinds.shopper(owner),
            ts=timezone.now(),
            item=item_id,
            sku=sku,
            qty=delta,
            at=_where(request),
        )
    )


def on_seats_changed(sender, *, request, owner, hold, held, **kwargs) -> None:
    record(
        kinds.seats(
            user=kinds.shopper(owner),
            ts=timezone.now(),
            session=hold.session_id,
            seats=list(hold.labels),
            held=held,
            at=_where(request),
        )
    )


def order_lines(order: dict) -> list[dict]:
    """An order's lines as the log keeps them: product lines by SKU (their
    items are looked up by the writer, a batch at a time, off the request),
    ticket lines counted per performance."""
    raw = order.get("lines") or []
    # A product line's key is its stock location: the SKU, or "<sku>@<store>"
    # for a line collected at a store; the log keeps the SKU.
    lines = [
        {"sku": location_parts(x["key"])[0], "qty": x["quantity"]}
        for x in raw
        if x["kind"] == PRODUCT
    ]
    seats = Counter(x["key"] for x in raw if x["kind"] == TICKET)
    lines += [{"session": key, "qty": n} for key, n in seats.items()]
    return lines


def order_paid(order: dict) -> None:
    record(
        kinds.order(
            order_id=order["_id"],
            user=kinds.shopper(order.get("owner")),
            ts=order.get("paid_at") or timezone.now(),
            number=order["number"],
            lines=order_lines(order),
        )
    )


def on_orders_paid(sender, *, paid, **kwargs) -> None:
    """Orders paid, announced together (the same ``_id`` per order: an
    order announced again is logged once)."""
    for order, _ in paid:
        order_paid(order)
