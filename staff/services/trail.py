"""What the back office does at each state change the shop announces.

The receivers of shop.events (connected in StaffConfig.ready). The shop
sends ``order_moved`` right after the conditional update that moved an
order, only when that update matched: the update is the guard, so each
transition is recorded once. It writes the audit entry and, for
``refunding``, moves the sales counters (themselves idempotent per order,
which covers a retry after a crash between the two writes).

Payments come in batches, a moment after their checkouts (``orders_paid``,
shop.services.settle): one insert of their audit entries and one counter
update per hour bucket. An order may be announced again, so each part is
done once per order: a payment's audit entry has its order's ``_id``, and a
bucket lists the orders it counted.
"""

from contextvars import Context
from datetime import datetime

from config.decimals import decimal_of
from shop.documents import PAID, PENDING_PAYMENT, REFUNDED, REFUNDING, Order
from staff.services.audit import audit_once, audit_record, current_actor
from staff.services.counters import count_refund, count_sales

PAID_ACTION = f"order {PAID}"


def order_moved(order: dict, *, before: str | None, after: str, at: datetime) -> None:
    """Record an order's state change; count it if it was paid or refunded.

    Not its creation: the order document records that (``created_at``,
    ``owner``), and the staff timeline shows it from there
    (``staff.selectors.orders.order_timeline``), so a checkout writes one
    audit entry, not two."""
    if before is None:
        return
    if after in (REFUNDING, REFUNDED):
        count_refund(order)
    audit_record(
        action=f"order {after}",
        object_kind="order",
        object_id=order["number"],
        before=before,
        after=after,
        at=at,
    )


def orders_paid(paid: list[tuple[dict, Context | None]]) -> None:
    """Count the paid orders and put each on the trail, once per order.
    The actor is the one of the code that paid it (``context``), or, for
    an order the reconciler announces, the reconciler's."""
    count_sales([order for order, _ in paid])
    audit_once(
        [
            {
                # One "order paid" entry per order: a second is a duplicate.
                "_id": order["_id"],
                "action": PAID_ACTION,
                "object_kind": "order",
                "object_id": order["number"],
                "before": PENDING_PAYMENT,
                "after": PAID,
                "at": order["paid_at"],
                "details": {"total": str(decimal_of(order["total"]))},
            }
            for order, _ in paid
        ],
        actors=[context.run(current_actor) if context else None for _, context in paid],
    )


def order_of_cart_moved(cart_id: str, *, before: str, after: str, at: datetime) -> None:
    raw = Order.coll().find_one({"cart_id": cart_id})
    if raw is not None:
        order_moved(raw, before=before, after=after, at=at)


def cart_moved(cart_id: str, *, before: str, after: str, at: datetime) -> None:
    audit_record(
        action=f"cart {after}",
        object_kind="cart",
        object_id=cart_id,
        before=before,
        after=after,
        at=at,
    )


# --- receivers of shop.events ---------------------------------------------


def on_order_moved(sender, *, order, before, after, at, **kwargs) -> None:
    order_moved(order, before=before, after=after, at=at)


def on_orders_paid(sender, *, paid, **kwargs) -> None:
    orders_paid(paid)


def on_cart_order_moved(sender, *, cart_id, before, after, at, **kwargs) -> None:
    order_of_cart_moved(cart_id, before=before, after=after, at=at)


def on_cart_moved(sender, *, cart_id, before, after, at, **kwargs) -> None:
    cart_moved(cart_id, before=before, after=after, at=at)
