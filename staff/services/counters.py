"""Sales counters (the computed pattern): moved when an order is paid or
refunded, never recounted on a page.

Invariant: for every hour and day bucket, the counters equal a recount from
the orders (``staff.selectors.counters.counter_problems`` checks it):
an order counts as sold in the buckets of its ``paid_at`` once it has been
paid, and as refunded in the buckets of its ``canceled_at`` once it left
``paid`` for ``refunding``.

Exactly once, without transactions:
* an hour bucket's ``$inc`` is guarded by the order's number being absent
  from the bucket's list (``paid`` or ``refunded_orders``), in the same
  update, so a retried, recovered or raced call moves it once;
* that list fixes the order in which the hour's orders reach their day:
  the day bucket keeps, per hour, how many of them it has taken
  (``applied.<list>.<HH>``), and takes the next one only if that count is
  still what it read (a compare-and-swap in the update's filter). Any
  process counting in that hour applies whatever is due, its own order and
  any left by a process that died, each once. What an order adds to its
  day is written first, in ``sales_entries``, for whichever process
  applies it.
Day buckets thus carry no per-order list: the dashboard reads 30 of them
quickly whatever the number of orders.
"""

from datetime import UTC, datetime
from decimal import Decimal

from django.utils import timezone
from pymongo.errors import DuplicateKeyError

from staff.documents import SalesCounter, SalesEntry


def counters():
    return SalesCounter.coll()


def pence(value) -> int:
    if hasattr(value, "to_decimal"):
        value = value.to_decimal()
    return int((Decimal(value) * 100).to_integral_value())


def hour_bucket(at: datetime) -> tuple[str, datetime]:
    start = at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return f"h:{start:%Y-%m-%dT%H}", start


def day_bucket(at: datetime) -> tuple[str, datetime]:
    local = timezone.localtime(at)
    start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return f"d:{start:%Y-%m-%d}", start.astimezone(UTC)


def _product_key(line: dict) -> tuple[str, str]:
    """A field name for the line's product or show, and its display name."""
    if line.get("kind") == "ticket" and line.get("ticket"):
        name = line["ticket"]["show"]
        key = f"show:{name}"
    else:
        name = line["name"]
        key = f"sku:{line['key']}"
    # Field names may not hold dots or start with $.
    return key.replace(".", "%2E").replace("$", "%24"), name


def sale_figures(order: dict, sign: int = 1) -> tuple[dict, dict, dict]:
    """What one order adds to a bucket: (hour $inc, day $inc, day $set)."""
    lines = order.get("lines") or []
    seats = [line for line in lines if line["kind"] == "ticket"]
    goods = [line for line in lines if line["kind"] != "ticket"]
    tickets = sum(line["quantity"] for line in seats)
    units = sum(line["quantity"] for line in goods)
    ticket_rev = sum(pence(line["line_total"]) for line in seats)
    goods_rev = sum(pence(line["line_total"]) for line in goods)
    total = pence(order["total"])
    if sign > 0:
        inc = {
            "orders": 1,
            "revenue": total,
            "ticket_revenue": ticket_rev,
            "goods_revenue": goods_rev,
            "tickets": tickets,
            "units": units,
        }
    else:
        inc = {
            "refunds": 1,
            "refunded": total,
            "refunded_tickets": tickets,
            "refunded_units": units,
        }
    day_inc = dict(inc)
    names = {}
    for line in lines:
        key, name = _product_key(line)
        day_inc[f"products.{key}.qty"] = (
            day_inc.get(f"products.{key}.qty", 0) + sign * line["quantity"]
        )
        day_inc[f"products.{key}.revenue"] = day_inc.get(
            f"products.{key}.revenue", 0
        ) + sign * pence(line["line_total"])
        names[f"products.{key}.name"] = name
    return inc, day_inc, names


def _apply(bucket: str, kind: str, start, listed: str, number: str, inc, set_) -> bool:
    """One guarded upsert: True if it counted, False if already counted."""
    update = {
        "$inc": inc,
        "$push": {listed: number},
        "$setOnInsert": {"kind": kind, "start": start},
    }
    if set_:
        update["$set"] = set_
    for _ in range(5):
        try:
            counters().update_one(
                {"_id": bucket, listed: {"$ne": number}}, update, upsert=True
            )
            return True
        except DuplicateKeyError:
            # The bucket exists and lists the number (counted before), or two
            # first-ever upserts of the bucket raced: look, then retry.
            if counters().count_documents({"_id": bucket, listed: number}, limit=1):
                return False
    raise RuntimeError(f"could not count order {number} in {bucket}")


def count_sale(order: dict) -> bool:
    """Count a paid order in the buckets of its ``paid_at`` (once)."""
    if not order.get("paid_at"):
        return False
    return _count(order, order["paid_at"], "paid", 1)


def count_refund(order: dict) -> bool:
    """Count a canceled paid order in the buckets of its ``canceled_at`` (once)."""
    if not order.get("canceled_at") or not order.get("paid_at"):
        return False
    return _count(order, order["canceled_at"], "refunded_orders", -1)


def _count(order: dict, at: datetime, listed: str, sign: int) -> bool:
    inc, day_inc, names = sale_figures(order, sign)
    hour, hour_start = hour_bucket(at)
    # The hour's local day (whole-hour UTC offsets: an hour lies in one day).
    day, day_start = day_bucket(hour_start)
    number = order["number"]
    try:
        entries().update_one(
            {"_id": f"{listed}|{hour}|{number}"},
            {
                "$setOnInsert": {
                    "inc": [[k, v] for k, v in day_inc.items()],
                    "set": [[k, v] for k, v in names.items()],
                }
            },
            upsert=True,
        )
    except DuplicateKeyError:
        pass  # written by a concurrent call for the same order: the same content
    counted = _apply(hour, "hour", hour_start, listed, number, inc, None)
    settle_day(hour=hour, listed=listed)
    return counted


def entries():
    return SalesEntry.coll()


def settle_day(*, hour: str, listed: str) -> int:
    """Apply to its day every order of ``hour``'s list the day has not taken
    yet, in list order, each once; return how many this call applied."""
    start = datetime.strptime(hour[2:], "%Y-%m-%dT%H").replace(tzinfo=UTC)
    day, day_start = day_bucket(start)
    field = f"applied.{listed}.{hour[-2:]}"
    raw = counters().find_one({"_id": hour}, {listed: 1})
    numbers = (raw or {}).get(listed) or []
    applied = 0
    while True:
        doc = counters().find_one({"_id": day}, {field: 1}) or {}
        done = doc.get("applied", {}).get(listed, {}).get(hour[-2:], 0)
        if done >= len(numbers):
            return applied
        key = f"{listed}|{hour}|{numbers[done]}"
        entry = entries().find_one({"_id": key})
        if entry is None:
            continue  # applied and tidied away by another process: look again
        update = {
            "$inc": dict(entry["inc"]),
            "$set": {field: done + 1, **dict(entry["set"])},
            "$setOnInsert": {"kind": "day", "start": day_start},
        }
        guard = {field: done} if done else {field: {"$exists": False}}
        try:
            result = counters().update_one({"_id": day, **guard}, update, upsert=True)
        except DuplicateKeyError:
            continue  # another process took this one (or made the day): look again
        if result.matched_count or result.upserted_id is not None:
            applied += 1
            entries().delete_one({"_id": key})


def counters_settle(*, since: datetime | None = None) -> int:
    """Settle every hour bucket (since ``since``): what a process that died
    between its hour and its day left for its day. Safe at any time."""
    query = {"kind": "hour", **({"start": {"$gte": since}} if since else {})}
    applied = 0
    for raw in list(counters().find(query, {"_id": 1})):
        for listed in ("paid", "refunded_orders"):
            applied += settle_day(hour=raw["_id"], listed=listed)
    return applied
