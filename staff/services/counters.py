"""Sales counters (the computed pattern): moved when an order is paid or
refunded, never recounted on a page.

Invariant: every bucket equals a recount from the orders
(``staff.selectors.counters.counter_problems`` checks it): an order counts as
sold in the hour of its ``paid_at`` once it has been paid, and as refunded in
the hour of its ``canceled_at`` once it left ``paid`` for ``refunding``.

Exactly once, without transactions: one order moves one document, its
bucket, with one upsert whose filter requires the order's number to be
absent from the bucket's list (``paid`` or ``refunded_orders``) and whose
update pushes it, so a retried, recovered or raced call counts it once.

Bounded: a bucket is one local hour's orders (``hour_start``) of one block
of ``BLOCK`` consecutive order numbers (``h:2030-01-15T12#400``), and holds
the hour's totals and the numbers it counted, nothing that grows with the
products sold. A bucket is rewritten whole by every count: one document per
hour made the 5,000th order of a flash sale's hour cost the server ten
times its first, and a bucket that also summed each product it sold (900
products after 250 orders of a 1,000-product shop) cost 2.3 ms of the
server's CPU per count, against 0.5 for the same 250 orders without the map
(bench/doc_update_bench.py, bench/RESULTS.md). The per-product figures of
the dashboard's top products are summed per day from the orders a day's
buckets list (staff.services.rollups). A quiet hour is one bucket, a busy
one a bucket per ``BLOCK`` orders; a day is the sum of its buckets, added
up when read (``staff.selectors.dashboard``).
"""

from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal

from django.utils import timezone
from pymongo.errors import DuplicateKeyError

from config.decimals import decimal_of
from staff.documents import SalesCounter


def counters():
    return SalesCounter.coll()


def pence(value) -> int:
    return int((Decimal(decimal_of(value)) * 100).to_integral_value())


# Orders per bucket: small enough that a count stays cheap, large enough
# that a normal hour's orders share one or two buckets (the dashboard reads
# every bucket of its 30 days).
BLOCK = 500


def hour_start(at: datetime) -> datetime:
    """The start, in UTC, of the shop's local hour (``TIME_ZONE``) that holds
    ``at``. Local, not UTC: in a zone half an hour or 45 minutes off UTC
    (India, Nepal, Newfoundland, South Australia) a UTC hour straddles two
    local days, and the dashboard's days are local. In a whole-hour zone
    the two are the same."""
    local = at.astimezone(timezone.get_default_timezone())
    # astimezone sets ``fold`` in the hour the clocks go back, and replace
    # keeps it: each of the two 01:00s is an hour of its own.
    return local.replace(minute=0, second=0, microsecond=0).astimezone(UTC)


def bucket_stamp(start: datetime) -> str:
    """How a bucket's id names its hour: ``2030-01-15T12``, with the minute
    when the hour does not start on the hour in UTC (``T18:30``)."""
    return f"{start:%Y-%m-%dT%H}" + (f":{start:%M}" if start.minute else "")


def _serial(number: str) -> int:
    """The running number in an order number (MQ-100042 -> 100042): the
    one form ``shop.services.numbers`` makes."""
    return int(number.rpartition("-")[2])


def bucket_of(number: str, at: datetime) -> tuple[str, datetime]:
    """The bucket that counts order ``number`` at ``at``: (id, hour start)."""
    start = hour_start(at)
    return f"h:{bucket_stamp(start)}#{_serial(number) // BLOCK}", start


def sale_figures(order: dict, sign: int = 1) -> dict:
    """What one order adds to its hour (the ``$inc``)."""
    lines = order.get("lines") or []
    seats = [line for line in lines if line["kind"] == "ticket"]
    goods = [line for line in lines if line["kind"] != "ticket"]
    tickets = sum(line["quantity"] for line in seats)
    units = sum(line["quantity"] for line in goods)
    total = pence(order["total"])
    if sign > 0:
        return {
            "orders": 1,
            "revenue": total,
            "ticket_revenue": sum(pence(line["line_total"]) for line in seats),
            "goods_revenue": sum(pence(line["line_total"]) for line in goods),
            "tickets": tickets,
            "units": units,
        }
    return {
        "refunds": 1,
        "refunded": total,
        "refunded_tickets": tickets,
        "refunded_units": units,
    }


def count_sale(order: dict) -> bool:
    """Count a paid order in the hour of its ``paid_at`` (once)."""
    if not order.get("paid_at"):
        return False
    return _count([order], order["paid_at"], "paid", 1)


def count_sales(orders: list[dict]) -> int:
    """``count_sale`` of each order, with one update per bucket for the
    orders that share it (a settler's batch); how many were counted now.
    A bucket that lists one of them already refuses the update: its orders
    are then counted one by one, each once."""
    by_bucket: dict[str, list[dict]] = {}
    for order in orders:
        if order.get("paid_at"):
            bucket, _ = bucket_of(order["number"], order["paid_at"])
            by_bucket.setdefault(bucket, []).append(order)
    counted = 0
    for group in by_bucket.values():
        if len(group) > 1 and _count(group, group[0]["paid_at"], "paid", 1):
            counted += len(group)
        else:
            counted += sum(count_sale(order) for order in group)
    return counted


def count_refund(order: dict) -> bool:
    """Count a canceled paid order in the hour of its ``canceled_at`` (once)."""
    if not order.get("canceled_at") or not order.get("paid_at"):
        return False
    return _count([order], order["canceled_at"], "refunded_orders", -1)


def _count(orders: list[dict], at: datetime, listed: str, sign: int) -> bool:
    """Orders of one bucket (``at`` places them) in one guarded upsert, all
    or none: True if it counted them, False if the bucket lists one of them
    (counted before)."""
    numbers = [order["number"] for order in orders]
    if len(set(numbers)) < len(numbers):
        return False
    bucket, start = bucket_of(numbers[0], at)
    figures: Counter[str] = Counter()
    for order in orders:
        figures.update(sale_figures(order, sign))
    update = {
        "$inc": dict(figures),
        "$push": {listed: {"$each": numbers}},
        "$setOnInsert": {"kind": "hour", "start": start},
    }
    return _upsert({"_id": bucket, listed: {"$nin": numbers}}, update)


def _upsert(guard: dict, update: dict) -> bool:
    try:
        counters().update_one(guard, update, upsert=True)
        return True
    except DuplicateKeyError:
        # The bucket exists: it lists the number already (the filter missed,
        # the upsert's insert collided), or a concurrent first count of the
        # hour created it meanwhile. Without the insert, the filter decides.
        return counters().update_one(guard, update).modified_count == 1
