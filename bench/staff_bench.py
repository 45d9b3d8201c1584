"""The staff dashboard and order search at 100,000 orders: server time.

Bulk-inserts ``--orders`` paid, refunded and unpaid orders spread over the
last 30 days (tickets, goods, both) with each paid one's entry on the audit
trail, rebuilds the sales counters from them
(``counters_rebuild``) and checks they equal a recount, then measures
through Django's test client (the whole server-side time: access checks,
selectors, templates), ``--runs`` requests each:

* the dashboard (``/staff/``): tiles, live figures, needs-attention,
  five charts, top products, next performances, recent activity; the same
  with an order counted since the last view (today's top products brought
  up to date with it, as during sales), and with today's top products
  summed from scratch (the first view after a rebuild);
* the orders list, newest first, and its second page (keyset cursor);
* search by order number, by email and by ticket code;
* a filtered list (refunded orders of tickets, last 7 days);
* the live carts (``/staff/carts/``), with ``--live-carts`` carts live at
  once (a sale: each holding a line, some in checkout), which the
  dashboard's live figures read too.

The data directory is kept under ``--data`` and reused by the next run of
the same size. Prints p50/p95/max in milliseconds; the target is a p95 at
or under 150 ms for every row.

    .venv/bin/python bench/staff_bench.py                # 100,000 orders
    .venv/bin/python bench/staff_bench.py --orders 10000 --runs 20
    .venv/bin/python bench/staff_bench.py --live-carts 20000
"""

import argparse
import os
import random
import sys
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
DATA = ROOT / "var" / "bench"
# The staff account lives in Django's database: the bench's own SQLite file.
os.environ["DATABASE_URL"] = f"sqlite:///{DATA / 'staff-bench.sqlite3'}"
DATA.mkdir(parents=True, exist_ok=True)

import django  # noqa: E402

django.setup()

from bson import Decimal128, ObjectId  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from config import mongo  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402

TARGET_P95_MS = 150
FROM_SCRATCH = "dashboard, today's products summed from scratch"
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def code_of(n: int) -> str:
    """A ticket code unique per ``n``, in the shop's alphabet and shape."""
    chars = []
    for _ in range(12):
        n, r = divmod(n, 32)
        chars.append(ALPHABET[r])
    raw = "".join(reversed(chars))
    return f"{raw[:4]}-{raw[4:8]}-{raw[8:]}"


# The shape of the kept data: a directory of another shape is loaded again.
# 2: order numbers follow the time of the orders, as in a shop; 3: each
# paid order's "order paid" entry on the audit trail, as checkout writes it.
DATA_SHAPE = 3


def order_doc(i: int, count: int, now, rng: random.Random) -> dict:
    # Spread over 30 days in the order of their numbers, as a shop numbers
    # its orders: an hour's orders share one or two counter buckets.
    at = now - timedelta(seconds=30 * 86400 * (count - i - rng.random()) / count)
    lines = []
    if rng.random() < 0.5:  # tickets
        show = f"Show {rng.randrange(12)}"
        for s in range(rng.randint(1, 4)):
            price = Decimal128(f"{rng.choice([20, 35, 50])}.00")
            lines.append(
                {
                    "kind": "ticket",
                    "key": f"session-{rng.randrange(40)}",
                    "name": f"{show}, Row A, seat {s + 1}",
                    "quantity": 1,
                    "unit_price": price,
                    "line_total": price,
                    "code": code_of(i * 4 + s),
                    "ticket": {
                        "show": show,
                        "theater": "The Royal",
                        "start": at,
                        "row": 0,
                        "col": s,
                        "label": f"Row A, seat {s + 1}",
                        "zone": "stalls",
                        "zone_name": "Stalls",
                    },
                }
            )
    if not lines or rng.random() < 0.3:  # goods
        qty = rng.randint(1, 3)
        sku = f"SKU-{rng.randrange(500)}"
        lines.append(
            {
                "kind": "product",
                "key": sku,
                "name": f"Product {sku}",
                "quantity": qty,
                "unit_price": Decimal128("25.00"),
                "line_total": Decimal128(f"{25 * qty}.00"),
            }
        )
    total = sum(line["line_total"].to_decimal() for line in lines)
    roll = rng.random()
    state = "paid" if roll < 0.9 else "refunded" if roll < 0.95 else "canceled"
    doc = {
        "number": f"MQ-{200001 + i}",
        "cart_id": f"bench-cart-{i}",
        "owner": f"anon:bench{i}",
        "token": f"token-{i}",
        "state": state,
        "email": f"shopper{i % 20000}@example.com",
        "shipping": {
            "name": "A",
            "line1": "1 St",
            "line2": "",
            "city": "Leeds",
            "postcode": "LS1 1AA",
            "country": "GB",
        },
        "lines": lines,
        "subtotal": Decimal128(total),
        "total": Decimal128(total),
        "currency": "GBP",
        "payment_attempts": 1,
        "attempts": [],
        "created_at": at,
    }
    codes = [line["code"] for line in lines if line.get("code")]
    if codes:
        doc["codes"] = codes
    if state != "canceled":
        doc["paid_at"] = at + timedelta(seconds=5)
        doc["payment_reference"] = f"{doc['number']}-1"
    if state == "refunded":
        doc["canceled_at"] = doc["refunded_at"] = at + timedelta(hours=1)
        doc["canceled_by"] = "staff"
    else:
        if state == "canceled":
            doc["canceled_at"] = at + timedelta(minutes=30)
    return doc


def paid_entry(order: dict) -> dict:
    """The trail's "order paid" entry of ``order``, as checkout writes it."""
    return {
        "at": order["paid_at"],
        "actor": "shopper",
        "action": "order paid",
        "object_kind": "order",
        "object_id": order["number"],
        "reason": "",
        "before": "pending_payment",
        "after": "paid",
        "details": {"total": str(order["total"].to_decimal())},
    }


def ensure_loaded(count: int) -> float | None:
    from shop.documents import Order
    from staff.documents import AuditEntry
    from staff.services.recount import counters_rebuild

    mongo.ensure_indexes()
    orders = Order.coll()
    meta = orders.database.bench_meta
    shape = (meta.find_one({"_id": "shape"}) or {}).get("value")
    if orders.estimated_document_count() == count and shape == DATA_SHAPE:
        from staff.services.counters import counters

        if counters().find_one({"kind": {"$ne": "hour"}}):
            counters_rebuild()  # kept from a version that also kept day buckets
        return None
    started = time.monotonic()
    orders.delete_many({})
    trail = AuditEntry.coll()
    trail.delete_many({})
    rng = random.Random(7)
    now = timezone.now()
    batch = []
    for i in range(count):
        batch.append(order_doc(i, count, now, rng))
        if len(batch) == 5000 or i == count - 1:
            orders.insert_many(batch, ordered=False)
            trail.insert_many(
                [paid_entry(order) for order in batch if order.get("paid_at")]
            )
            batch = []
            print(f"  {i + 1} orders", file=sys.stderr, flush=True)
    buckets = counters_rebuild()
    meta.replace_one({"_id": "shape"}, {"value": DATA_SHAPE}, upsert=True)
    print(f"  {buckets} counter buckets", file=sys.stderr)
    return time.monotonic() - started


def staff_client() -> Client:
    from staff.roles import ADMINISTRATOR, create_staff

    call_command("migrate", verbosity=0)
    user = create_staff(
        email="bench@example.com", role=ADMINISTRATOR, password="bench-password-1"
    )
    client = Client()
    client.force_login(user)
    return client


def another_order() -> None:
    """A paid order of now, counted as checkout counts one (a copy of the
    newest order under the next number)."""
    from shop.documents import Order
    from staff.services.counters import count_sale

    orders = Order.coll()
    newest = orders.find_one({"state": "paid"}, sort=[("number", -1)])
    serial = int(orders.find_one(sort=[("number", -1)])["number"][3:]) + 1
    now = timezone.now()
    order = {
        **newest,
        "_id": ObjectId(),
        "number": f"MQ-{serial}",
        "cart_id": f"bench-{serial}",
        "created_at": now,
        "paid_at": now,
    }
    order.pop("codes", None)
    for line in order["lines"]:
        line.pop("code", None)
    order["bench_added"] = True
    orders.insert_one(order)
    assert count_sale(order)


def remove_added_orders() -> None:
    """The orders ``another_order`` made go, and the counters are recounted
    without them: the kept data is the loaded data again."""
    from shop.documents import Order
    from staff.services.recount import counters_rebuild

    if Order.coll().delete_many({"bench_added": True}).deleted_count:
        counters_rebuild()


def add_live_carts(count: int) -> None:
    """``count`` carts live now, as during a sale: each with a line held for
    the rest of its hold, one in fifty in checkout (marked to be removed)."""
    from shop.documents import Cart

    rng = random.Random(11)
    now = timezone.now()
    carts = []
    for i in range(count):
        expires = now + timedelta(seconds=rng.randrange(30, 1800))
        owner = f"anon:live{i}"
        carts.append(
            {
                "_id": f"bench-live-{i}",
                "owner": owner,
                "live_owner": owner,
                "state": "pending" if i % 50 == 0 else "active",
                "items": [
                    {
                        "sku": f"SKU-{rng.randrange(500)}",
                        "name": "A product",
                        "quantity": rng.randint(1, 3),
                        "unit_price": Decimal128("25.00"),
                        "added_at": now,
                    }
                ],
                "tickets": [],
                "created_at": now,
                "modified_at": now,
                "expires_at": expires,
                "checkout_at": now,
                "lease_until": expires,
                "bench_added": True,
            }
        )
        if len(carts) == 5000:
            Cart.coll().insert_many(carts)
            carts = []
    if carts:
        Cart.coll().insert_many(carts)


def remove_live_carts() -> None:
    from shop.documents import Cart

    Cart.coll().delete_many({"bench_added": True})


def measure(client: Client, runs: int) -> dict[str, list[float]]:
    from shop.documents import Order
    from staff.documents import SalesRollup

    orders = Order.coll()
    sample = orders.find_one({"codes": {"$exists": True}}, sort=[("number", -1)])
    from staff.selectors.orders import order_search

    cursor = quote(order_search().next_cursor)
    pages = {
        "dashboard": "/staff/",
        "orders, newest": "/staff/orders/",
        "orders, page 2": f"/staff/orders/?after={cursor}",
        "search: number": f"/staff/orders/?q={sample['number']}",
        "search: email": f"/staff/orders/?q={sample['email']}",
        "search: ticket code": f"/staff/orders/?q={sample['codes'][0]}",
        "filter: refunded tickets, 7 days": "/staff/orders/?state=refunded"
        f"&kind=tickets&since={(timezone.localdate() - timedelta(days=7)).isoformat()}",
        "live carts": "/staff/carts/",
    }
    # The dashboard as staff see it during sales: an order counted since the
    # last view, so today's top products are brought up to date with it
    # (staff.services.rollups); and a day summed from its first order, as
    # the first view after a rebuild does.
    today = f"d:{timezone.localdate():%Y-%m-%d}"
    before = {
        "dashboard, 1 order counted since the last view": another_order,
        FROM_SCRATCH: lambda: SalesRollup.coll().delete_one({"_id": today}),
    }
    pages.update(dict.fromkeys(before, "/staff/"))
    results = {}
    for label, path in pages.items():
        response = client.get(path)  # warm-up
        assert response.status_code == 200, (label, response.status_code)
        samples = []
        for _ in range(runs):
            if label in before:
                before[label]()
            started = time.perf_counter()
            response = client.get(path)
            samples.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
        results[label] = samples
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--data", type=Path, default=DATA, help="kept between runs")
    parser.add_argument(
        "--live-carts", type=int, default=0, help="carts live at once (a sale)"
    )
    parser.add_argument(
        "--check", action="store_true", help="also prove counters == a recount"
    )
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    server = EmbeddedServer(
        args.data / f"staff-{args.orders}", args.data / f"staff-{args.orders}.log"
    )
    uri = server.start()
    try:
        mongo.connect(uri, db="bench")
        loaded = ensure_loaded(args.orders)
        if loaded is not None:
            print(f"loaded {args.orders} orders and their counters in {loaded:.0f}s")
        if args.check:
            from staff.selectors.counters import counter_problems

            problems = counter_problems()
            print(f"counters == recount: {'yes' if not problems else problems[:3]}")
        try:
            add_live_carts(args.live_carts)
            results = measure(staff_client(), args.runs)
        finally:
            remove_added_orders()
            remove_live_carts()
    finally:
        server.stop()
    print(
        f"\n{args.orders} orders, {args.live_carts} live carts,"
        f" {args.runs} requests each (server time, ms)"
    )
    print(f"{'page':<48} {'p50':>7} {'p95':>7} {'max':>7}")
    worst = 0.0
    for label, samples in results.items():
        p95 = percentile(samples, 0.95)
        if label != FROM_SCRATCH:
            worst = max(worst, p95)
        print(
            f"{label:<48} {percentile(samples, 0.5):7.1f} {p95:7.1f}"
            f" {max(samples):7.1f}"
        )
    verdict = "within" if worst <= TARGET_P95_MS else "OVER"
    print(f"worst p95 {worst:.1f} ms: {verdict} the {TARGET_P95_MS} ms target")
    # Not a view staff make twice: the first after a rebuild, or on a day
    # the sum_sales_days job did not run. Said apart, against the same target.
    once = percentile(results[FROM_SCRATCH], 0.95)
    verdict = "within" if once <= TARGET_P95_MS else "OVER"
    print(
        f"{FROM_SCRATCH}: p95 {once:.1f} ms, {verdict} the target"
        " (the first view after a rebuild; later views add the orders since)"
    )


if __name__ == "__main__":
    main()
