"""What follows a payment, announced after the checkout has answered.

An order's payment is followed by its audit entry and its place in the
sales counters (the back office) and its confirmation email (accounts),
each a receiver of ``events.orders_paid``. Written inside the checkout,
one command each and a queued task, for every order, they weighed on every
checkout; written together they cost a command per batch:

* The write that marks the order paid also marks it to be announced: its
  ``announce_at`` and ``announce_context`` (``to_announce``). That mark is
  the outbox; it is part of the paid write, so a paid order is never
  without it until it has been announced, and it costs no write of its own.
* The checkout hands the order to this process's settler, a batching queue
  (config.batching) that announces what waits every
  ``SHOP_SETTLE_SECONDS`` or as soon as ``SHOP_SETTLE_BATCH`` orders wait:
  one audit insert, one counter update per hour bucket and one email task
  for all of them. Then one update takes the mark off their orders.
* What no settler announced (its process stopped, its queue was full, a
  receiver or the database failed) the reconciler announces: every order
  marked longer than ``SHOP_SETTLE_GRACE_SECONDS`` ago (``orders_settle``),
  in the context the payment was taken in: the mark keeps what the
  listeners asked to keep of it (``keep_context``: the back office's actor,
  a box office clerk), so the audit trail names the same person whoever
  announces the payment.

Exactly once per order: every receiver does its part once per order (the
audit entry's ``_id`` is the order's, a bucket lists the numbers it
counted, an email is recorded as sent), so an order announced twice, by a
slow settler and the reconciler, or again after a crash between the
announcement and the unmarking, is recorded, counted and mailed once.

``SHOP_SETTLE_SYNC`` (the tests) announces each order at once, in the
checkout, through the same ``settle``.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from config.batching import BatchWriter, PerProcess
from shop import events
from shop.documents import Order

log = logging.getLogger("marquee.shop.settle")

# Orders per announcement when the reconciler settles a backlog.
SWEEP_BATCH = 100


def _orders():
    return Order.coll()


# Where earlier versions kept the outbox (``outbox_convert``).
_OLD_OUTBOX = "payments_to_announce"

# The mark taken off an announced order.
_UNMARK = {"$unset": {"announce_at": "", "announce_context": ""}}

# name -> (save, restore): what the mark keeps of the context the payment
# was taken in (``keep_context``).
_kept: dict[str, tuple[Callable[[], object], Callable[[object], None]]] = {}


def keep_context(
    name: str, *, save: Callable[[], object], restore: Callable[[object], None]
) -> None:
    """Keep ``save()`` (a BSON value read from the payer's context) with
    each order's mark, and ``restore`` it in the context the reconciler
    announces that order in. For listeners that read the context (the back
    office's actor): the shop does not know what they read."""
    _kept[name] = (save, restore)


def _context_of(kept: dict | None) -> contextvars.Context:
    """A context with what an order's mark kept set again (a new context:
    nothing of the reconciler's own leaks into it)."""
    context = contextvars.Context()
    for name, value in (kept or {}).items():
        if name in _kept:
            context.run(_kept[name][1], value)
    return context


def to_announce(now: datetime) -> dict:
    """The fields that mark an order to be announced: the paid write sets
    them (``shop.services.checkout``), with what ``keep_context`` asked to
    keep of the payer's context."""
    kept = {name: save() for name, (save, _) in _kept.items()}
    return {"announce_at": now, "announce_context": kept}


def later(order: dict) -> None:
    """Announce ``order`` with this process's next batch (at once with
    ``SHOP_SETTLE_SYNC``). Its paid write marked it, so a batch that never
    runs leaves it to the reconciler."""
    item = (order, contextvars.copy_context())
    try:
        if settings.SHOP_SETTLE_SYNC:
            settle([item])
        else:
            settler().put(item)  # a full queue: left to the reconciler
    except Exception:
        log.exception("order %s: not announced; the reconciler will", order["number"])


def settle(paid: list[tuple[dict, contextvars.Context | None]]) -> int:
    """Announce ``paid`` (``events.orders_paid``), then take their orders'
    marks off; how many. If a receiver fails, every mark stays for the
    reconciler (the receivers that succeeded do nothing the second time)."""
    # Only a paid order is announced. A copy without ``paid_at`` is out of
    # date (the order's own paid write marked it, for the reconciler).
    paid = [(order, context) for order, context in paid if order.get("paid_at")]
    if not paid:
        return 0
    failed = [
        (receiver, result)
        for receiver, result in events.orders_paid.send_robust(sender=None, paid=paid)
        if isinstance(result, Exception)
    ]
    for receiver, exc in failed:
        log.error(
            "orders %s: %s failed; the reconciler will announce them again",
            ", ".join(order["number"] for order, _ in paid),
            getattr(receiver, "__qualname__", receiver),
            exc_info=exc,
        )
    if failed:
        return 0
    _orders().update_many(
        {"_id": {"$in": [order["_id"] for order, _ in paid]}}, _UNMARK
    )
    return len(paid)


def orders_settle(*, now: datetime | None = None) -> int:
    """The reconciler's part: announce every paid order marked longer ago
    than the grace (a settler would have long since), each in the context
    its mark kept; how many.

    An order a batch could not announce is tried on its own, so one that
    fails stays for the next run without holding back the others; the
    sweep stops at a page where none could be announced."""
    now = now or timezone.now()
    before = now - timedelta(seconds=settings.SHOP_SETTLE_GRACE_SECONDS)
    done = 0
    while True:
        waiting = list(
            _orders()
            .find({"announce_at": {"$lt": before}})
            .sort("announce_at", 1)
            .limit(SWEEP_BATCH)
        )
        if not waiting:
            return done
        items = [
            (order, _context_of(order.get("announce_context"))) for order in waiting
        ]
        settled = settle(items)
        if not settled:
            settled = sum(settle([item]) for item in items)
            if not settled:
                return done
        done += settled
        if len(waiting) < SWEEP_BATCH:
            return done


def outbox_convert() -> int:
    """Earlier versions kept the outbox as a collection of its own
    (``payments_to_announce``, one entry per paid order, written after the
    paid write): mark each entry's order, if paid, then delete the entry,
    and drop the collection once empty; how many orders were marked.
    Idempotent (a crash in between marks again, guarded on the mark)."""
    old = _orders().database[_OLD_OUTBOX]
    marked = 0
    for entry in old.find():
        marked += (
            _orders()
            .update_one(
                {"_id": entry["_id"], "paid_at": {"$ne": None}, "announce_at": None},
                {
                    "$set": {
                        "announce_at": entry["at"],
                        "announce_context": entry.get("context") or {},
                    }
                },
            )
            .modified_count
        )
        old.delete_one({"_id": entry["_id"]})
    old.drop()
    return marked


# --- this process's settler ----------------------------------------------


def _make() -> BatchWriter:
    return BatchWriter(
        sink=settle,
        name="settle",
        noun="orders",
        batch=settings.SHOP_SETTLE_BATCH,
        interval=settings.SHOP_SETTLE_SECONDS,
    )


_process = PerProcess(_make)


def settler() -> BatchWriter:
    """This process's settler, made on first use with the settings."""
    return _process.get()


def flush() -> int:
    """Announce what this process's settler holds now; how many."""
    return _process.flush()


def shutdown() -> None:
    """Announce what is left and stop (exit hooks, gunicorn's worker_exit)."""
    _process.shutdown()


def reset() -> None:
    """Stop this process's settler; the next use makes one with the
    settings of then (tests)."""
    _process.reset()
