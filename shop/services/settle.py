"""What follows a payment, announced after the checkout has answered.

An order's payment is followed by its audit entry and its place in the
sales counters (the back office) and its confirmation email (accounts),
each a receiver of ``events.orders_paid``. Written inside the checkout,
one command each and a queued task, for every order, they weighed on every
checkout; written together they cost a command per batch:

* Right after the write that marks the order paid, a small
  ``PaymentToAnnounce`` (``_id``: the order's) records that its payment
  is to be announced: the outbox. A crash before it leaves the cart
  pending, and whoever finishes that checkout announces the payment
  through ``later`` too.
* The checkout hands the order to this process's settler, a batching queue
  (config.batching) that announces what waits every
  ``SHOP_SETTLE_SECONDS`` or as soon as ``SHOP_SETTLE_BATCH`` orders wait:
  one audit insert, one counter update per hour bucket and one email task
  for all of them. Then one delete removes their outbox entries.
* What no settler announced (its process stopped, its queue was full, a
  receiver or the database failed) the reconciler announces: every entry
  older than ``SHOP_SETTLE_GRACE_SECONDS`` (``orders_settle``), in the
  context the payment was taken in: the outbox entry keeps what the
  listeners asked to keep of it (``keep_context``: the back office's actor,
  a box office clerk), so the audit trail names the same person whoever
  announces the payment.

Exactly once per order: every receiver does its part once per order (the
audit entry's ``_id`` is the order's, a bucket lists the numbers it
counted, an email is recorded as sent), so an order announced twice, by a
slow settler and the reconciler, or again after a crash between the
announcement and the delete, is recorded, counted and mailed once.

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
from pymongo.errors import DuplicateKeyError

from config.batching import BatchWriter, PerProcess
from shop import events
from shop.documents import Order, PaymentToAnnounce

log = logging.getLogger("marquee.shop.settle")

# Orders per announcement when the reconciler settles a backlog.
SWEEP_BATCH = 100


def _orders():
    return Order.coll()


def _outbox():
    return PaymentToAnnounce.coll()


# name -> (save, restore): what the outbox entry keeps of the context the
# payment was taken in (``keep_context``).
_kept: dict[str, tuple[Callable[[], object], Callable[[object], None]]] = {}


def keep_context(
    name: str, *, save: Callable[[], object], restore: Callable[[object], None]
) -> None:
    """Keep ``save()`` (a BSON value read from the payer's context) with
    each outbox entry, and ``restore`` it in the context the reconciler
    announces that entry in. For listeners that read the context (the back
    office's actor): the shop does not know what they read."""
    _kept[name] = (save, restore)


def _context_of(kept: dict | None) -> contextvars.Context:
    """A context with what an outbox entry kept set again (a new context:
    nothing of the reconciler's own leaks into it)."""
    context = contextvars.Context()
    for name, value in (kept or {}).items():
        if name in _kept:
            context.run(_kept[name][1], value)
    return context


def later(order: dict, now: datetime) -> None:
    """Announce ``order``, just marked paid, with this process's next batch
    (at once with ``SHOP_SETTLE_SYNC``), once its outbox entry is written.
    Raises only if that write fails: the checkout then stops with its cart
    pending, which its recovery finishes."""
    kept = {name: save() for name, (save, _) in _kept.items()}
    try:
        _outbox().insert_one({"_id": order["_id"], "at": now, "context": kept})
    except DuplicateKeyError:
        pass  # a run before this one wrote it
    item = (order, contextvars.copy_context())
    try:
        if settings.SHOP_SETTLE_SYNC:
            settle([item])
        else:
            settler().put(item)  # a full queue: left to the reconciler
    except Exception:
        log.exception("order %s: not announced; the reconciler will", order["number"])


def settle(paid: list[tuple[dict, contextvars.Context | None]]) -> int:
    """Announce ``paid`` (``events.orders_paid``), then delete their outbox
    entries; how many. If a receiver fails, every entry stays for the
    reconciler (the receivers that succeeded do nothing the second time)."""
    # Only a paid order is announced. A copy without ``paid_at`` is either
    # out of date or of an order never paid: its entry stays for the
    # reconciler, which reads the order afresh and drops it if unpaid.
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
    _outbox().delete_many({"_id": {"$in": [order["_id"] for order, _ in paid]}})
    return len(paid)


def orders_settle(*, now: datetime | None = None) -> int:
    """The reconciler's part: announce every payment whose outbox entry is
    older than the grace (a settler would have long since), each in the
    context its entry kept; how many.

    An order a batch could not announce is tried on its own, so one that
    fails stays for the next run without holding back the others; the
    sweep stops at a page where none could be announced."""
    now = now or timezone.now()
    before = now - timedelta(seconds=settings.SHOP_SETTLE_GRACE_SECONDS)
    done = 0
    while True:
        waiting = {
            entry["_id"]: entry.get("context")
            for entry in _outbox()
            .find({"at": {"$lt": before}}, {"_id": 1, "context": 1})
            .sort("at", 1)
            .limit(SWEEP_BATCH)
        }
        if not waiting:
            return done
        found = list(_orders().find({"_id": {"$in": list(waiting)}}))
        paid = [order for order in found if order.get("paid_at")]
        # Nothing to announce: an order deleted since, or one that was
        # never paid (a late charge's run wrote its entry before it found
        # the order canceled).
        nothing = set(waiting) - {order["_id"] for order in paid}
        if nothing:
            _outbox().delete_many({"_id": {"$in": list(nothing)}})
        items = [(order, _context_of(waiting[order["_id"]])) for order in paid]
        settled = settle(items)
        if items and not settled:
            settled = sum(settle([item]) for item in items)
            if not settled:
                return done
        done += settled
        if len(waiting) < SWEEP_BATCH:
            return done


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
