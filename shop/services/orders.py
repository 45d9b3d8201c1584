"""Canceling a paid order: the money back, then what it sold back on sale.

The steps and what each leaves behind if the process dies right after it
(``orders_cancel_recover``, run by the reconciler, finishes each):

1. the order ``paid -> refunding`` (one conditional update; the refund's
   reference is fixed here). Left so: the remaining steps run again.
2. the refund through the payment provider, once per reference (a repeat
   returns the first refund).
3. per resource (a session's seats, a SKU), what the order sold goes back
   on sale, each an idempotent conditional update (``seats_return`` skips
   seats no longer sold; ``stock_return`` applies once per reference), then
   the order's lines are marked returned.
4. the order ``refunding -> refunded``.

The rule for shoppers: a paid order may be canceled until its earliest
performance starts (an order without tickets, while it is paid). Staff may
cancel a paid order at any time.
"""

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from config import compat
from shop import events, faults
from shop.documents import (
    ORDER_CANCELED,
    PAID,
    PENDING_PAYMENT,
    REFUNDED,
    REFUNDING,
    Order,
)
from shop.errors import OrderNotCancelable, OrderNotFound, RefundFailed
from shop.kinds import kind_named
from shop.payments import PaymentError, provider, refund_reference
from shop.selectors.orders import cancel_deadline
from shop.services.common import orders, utcnow

log = logging.getLogger("marquee.shop.orders")

# A cancellation still ``refunding`` after this stopped half-way (a refund
# takes seconds); the reconciler then finishes it.
CANCEL_GRACE = timedelta(minutes=10)


def _find(number: str, *, owner, token, staff: bool) -> Order:
    """The order, if the caller may see it: its owner, its link, or staff."""
    if not isinstance(number, str) or not number:
        raise OrderNotFound()
    query: dict = {"number": number}
    if staff is True:
        pass
    elif isinstance(token, str) and token:
        query["token"] = token
    elif isinstance(owner, str) and owner:
        query["owner"] = owner
    else:
        raise OrderNotFound()
    raw = orders().find_one(query)
    if raw is None:
        raise OrderNotFound()  # unknown, or someone else's: the same answer
    return Order._from_son(raw)


def order_cancel(
    *,
    number: str,
    owner: str | None = None,
    token: str | None = None,
    staff: bool = False,
    now: datetime | None = None,
) -> Order:
    """Cancel a paid order: refund it and put its seats and goods back on sale.

    Who may: the order's owner (``owner``) or the holder of its secret link
    (``token``) until its earliest performance starts; staff (``staff``) at
    any time. The order moves ``paid -> refunding -> refunded``; each step is
    idempotent, so a repeat (a double click, a retry after a crash) returns
    the same refunded order and refunds and returns nothing twice.
    Invariants: the seats and units leave ``sold`` exactly once (the
    sessions' sold seats stay equal to the paid orders' tickets, stock stays
    conserved); money is refunded once per order.

    Raises OrderNotFound (unknown, or not the caller's), OrderNotCancelable
    (not paid, or the performance has started), RefundFailed (the provider
    failed: the order stays ``refunding`` and the reconciler retries).
    """
    now = utcnow(now)
    order = _find(number, owner=owner, token=token, staff=staff)
    if order.state in (REFUNDED, ORDER_CANCELED):
        return order
    if order.state == PENDING_PAYMENT:
        raise OrderNotCancelable("This order is not paid: there is nothing to cancel.")
    if order.state == PAID:
        deadline = cancel_deadline(order)
        if not staff and deadline is not None and now >= deadline:
            raise OrderNotCancelable(
                "The performance has started, so this order can no longer be canceled."
            )
        raw = _start_refund(order, staff=staff, now=now)
        if raw is None:  # canceled concurrently: carry on with that one
            return order_cancel(
                number=number, owner=owner, token=token, staff=staff, now=now
            )
        events.order_moved.send(
            sender=None, order=raw, before=PAID, after=REFUNDING, at=now
        )
        order = Order._from_son(raw)
    faults.point("cancel.after_flip")
    return _finish(order, now)


def _start_refund(order: Order, *, staff: bool, now: datetime) -> dict | None:
    """``paid -> refunding`` (guarded on ``paid``); None if it was not paid.

    An update, then a read (``compat.update_then_read``), as every write of
    a collection that only grows: a findAndModify on the Rust server takes
    time growing with the orders (25 ms at 50,000 against 0.8 ms,
    bench/RESULTS.md).
    """
    return compat.update_then_read(
        orders(),
        {"_id": order.pk, "state": PAID},
        {
            "$set": {
                "state": REFUNDING,
                "canceled_at": now,
                "canceled_by": "staff" if staff else "owner",
                "refund_reference": refund_reference(order),
            }
        },
    )


def _finish(order: Order, now: datetime) -> Order:
    """Steps 2-4 for a ``refunding`` order; each safe to repeat."""
    try:
        provider(order.payment_method).refund(
            reference=order.refund_reference,
            charge_reference=order.payment_reference,
            amount=order.total,
            currency=order.currency,
        )
    except PaymentError as exc:
        log.warning("order %s: refund failed: %s", order.number, exc)
        raise RefundFailed() from None
    faults.point("cancel.after_refund")
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, line in enumerate(order.lines):
        if line.returned_at is None:
            groups[(line.kind, line.key)].append(i)
    for (kind_name, key), indexes in groups.items():
        kind_named(kind_name).return_sold(
            cart_id=order.cart_id,
            key=key,
            lines=[order.lines[i] for i in indexes],
            reference=f"{order.number}:{kind_name}:{key}",
        )
        faults.point("cancel.after_return")
        orders().update_one(
            {"_id": order.pk, "state": REFUNDING},
            {"$set": {f"lines.{i}.returned_at": now for i in indexes}},
        )
    raw = compat.update_then_read(
        orders(),
        {"_id": order.pk, "state": REFUNDING},
        {"$set": {"state": REFUNDED, "refunded_at": now}},
    )
    if raw is not None:
        events.order_moved.send(
            sender=None, order=raw, before=REFUNDING, after=REFUNDED, at=now
        )
    return Order.objects(pk=order.pk).first()


def orders_cancel_recover(*, now: datetime | None = None) -> int:
    """Finish every cancellation ``refunding`` for longer than CANCEL_GRACE;
    return how many were finished (a refund still failing is left for the
    next run)."""
    now = utcnow(now)
    stuck = orders().find(
        {"state": REFUNDING, "canceled_at": {"$lt": now - CANCEL_GRACE}}
    )
    finished = 0
    for raw in list(stuck):
        try:
            _finish(Order._from_son(raw), now)
        except RefundFailed:
            continue
        finished += 1
    return finished
