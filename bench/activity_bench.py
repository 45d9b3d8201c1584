"""The activity log: ingestion rate, the bought-together job, and what
logging adds to a product page.

On a fresh embedded server (the default engine), through the log's public
services only:

1. ingestion, events/s: ``--events`` mixed events through the batching
   writer (the request side only queues; the rate is events written per
   second until the last is flushed), then ``--single-events`` written one
   ``insert_one``-sized batch per event (``activity_write([doc])``), as a
   writer without batching would;
2. the bought-together job (``bought_together_rebuild``, 30 days, top 5)
   over ``--job-events`` events spread over the last 30 days, a share
   ``--order-share`` of them paid orders of 1-4 items out of
   ``--items`` items;
3. the product page (``/p/<id>/``, Django's test client: the whole server
   time) ``--page-runs`` times with logging on and off, interleaved; the
   target is at most 1 ms added at the p50.

Prints figures with the machine's load (``uptime``).

    .venv/bin/python bench/activity_bench.py                       # 1M events job
    .venv/bin/python bench/activity_bench.py --job-events 100000 --events 20000
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The page runs' sessions live in Django's database: the bench's own file.
(ROOT / "var" / "bench").mkdir(parents=True, exist_ok=True)
os.environ["DATABASE_URL"] = f"sqlite:///{ROOT / 'var' / 'bench' / 'activity.sqlite3'}"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from activity import kinds  # noqa: E402
from activity.selectors import bought_together, recently_viewed  # noqa: E402
from activity.services import writer as writers  # noqa: E402
from activity.services.insight import bought_together_rebuild  # noqa: E402
from activity.services.partitions import activity_write  # noqa: E402
from catalog import events as catalog_events  # noqa: E402
from catalog.services.products import item_save, price_set, variant_save  # noqa: E402
from catalog.services.stock import stock_restock  # noqa: E402
from config import mongo  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def random_event(rng: random.Random, now, items: int, order_id: int) -> dict:
    user = f"user:{rng.randrange(50_000)}"
    item = f"p{rng.randrange(items)}"
    ts = now - timedelta(seconds=rng.randrange(30 * 86400))
    roll = rng.random()
    if roll < 0.6:
        return kinds.view(user=user, ts=ts, item=item, sku=f"{item}-a")
    if roll < 0.8:
        return kinds.cart(user=user, ts=ts, item=item, sku=f"{item}-a", qty=1)
    if roll < 0.9:
        return kinds.search(user=user, ts=ts, query="red shoes", results=12)
    return paid_order(rng, now, items, order_id)


def paid_order(rng: random.Random, now, items: int, order_id: int) -> dict:
    chosen = rng.sample(range(items), rng.randint(1, 4))
    lines = [{"item": f"p{i}", "sku": f"p{i}-9", "qty": 1} for i in chosen]
    ts = now - timedelta(seconds=rng.randrange(30 * 86400))
    return kinds.order(
        order_id=order_id, user="user:1", ts=ts, number=str(order_id), lines=lines
    )


def ingestion(events: int, single: int, items: int) -> None:
    rng, now = random.Random(1), timezone.now()
    docs = [random_event(rng, now, items, k) for k in range(events)]
    # A producer that waits for room (budget 1 s) measures the writer's
    # throughput; the request side's own cost is measured on the page.
    writer = writers.Writer(capacity=10_000, batch=500, interval=1.0, budget=1.0)
    started = time.perf_counter()
    for doc in docs:
        writer.put(doc)
    writer.stop()
    batched = time.perf_counter() - started
    stats = writer.stats()
    print(
        f"batching writer: {stats.written} events in {batched:.2f} s = "
        f"{stats.written / batched:,.0f} events/s "
        f"(dropped {stats.dropped}, failed {stats.failed})"
    )
    docs = [random_event(rng, now, items, events + k) for k in range(single)]
    started = time.perf_counter()
    for doc in docs:
        activity_write([doc])
    one = time.perf_counter() - started
    print(
        f"one insert per event: {single} events in {one:.2f} s = "
        f"{single / one:,.0f} events/s"
    )


def bought_together_job(events: int, order_share: float, items: int) -> None:
    rng, now = random.Random(2), timezone.now()
    orders = 0
    started = time.perf_counter()
    batch: list[dict] = []
    for k in range(events):
        if rng.random() < order_share:
            batch.append(paid_order(rng, now, items, 10_000_000 + k))
            orders += 1
        else:
            batch.append(random_event(rng, now, items, -1))
            if batch[-1]["type"] == kinds.ORDER:
                batch[-1] = kinds.view(user="user:2", ts=batch[-1]["ts"], item="1")
        if len(batch) == 10_000:
            activity_write(batch)
            batch = []
    activity_write(batch)
    loaded = time.perf_counter() - started
    print(
        f"loaded {events:,} events ({orders:,} paid orders) in {loaded:.1f} s "
        f"= {events / loaded:,.0f} events/s (insert_many of 10,000)"
    )
    started = time.perf_counter()
    with_partners = bought_together_rebuild(now=now, days=30, top=5)
    took = time.perf_counter() - started
    print(
        f"bought-together job: {took:.2f} s over {events:,} events "
        f"({with_partners:,} items with partners)"
    )


def make_catalog(items: int) -> None:
    for i in range(items):
        item_id = f"p{i}"
        item_save(
            item_id=item_id,
            department="Shoes",
            category="Shoes/Sneakers",
            title=f"Runner {i}",
            brand="Bench",
            rating=4.0,
        )
        variant_save(sku=f"{item_id}-9", item_id=item_id, attributes={"size": "9"})
        price_set(item_id=item_id, scope="online", amount=Decimal("50.00"))
        stock_restock(sku=f"{item_id}-9", quantity=100, note="bench")


def page_times(runs: int, items: int) -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    client = Client()
    timings: dict[bool, list[float]] = {True: [], False: []}
    for k in range(runs * 2 + 20):
        on = k % 2 == 0
        settings.ACTIVITY_LOG = on
        started = time.perf_counter()
        response = client.get(f"/p/p{k % items}/")
        took = (time.perf_counter() - started) * 1000
        assert response.status_code == 200
        if k >= 20:  # warm-up
            timings[on].append(took)
    writers.flush()
    on, off = percentile(timings[True], 0.5), percentile(timings[False], 0.5)
    print(
        f"product page p50: logging on {on:.2f} ms, off {off:.2f} ms, "
        f"added {on - off:+.2f} ms (target <= 1 ms); "
        f"p95 on {percentile(timings[True], 0.95):.2f}, "
        f"off {percentile(timings[False], 0.95):.2f} ms"
    )
    receiver_cost(client)
    display_cost(runs, items)


def display_cost(runs: int, items: int) -> None:
    """What the pages' two strips cost, read alone (their selectors): a
    shopper's "Recently viewed" after six views, and an item's "Often
    bought together" (the job has run over the orders of six pages)."""
    settings.ACTIVITY_LOG = True
    seasoned = Client()
    for k in range(6):
        seasoned.get(f"/p/p{k % items}/")
    writers.flush()
    user = kinds.shopper(f"anon:{seasoned.session['shop_owner']}")
    now = timezone.now()
    pairs = [
        kinds.order(
            order_id=20_000_000 + k,
            user="user:1",
            ts=now - timedelta(minutes=1),
            number=str(k),
            lines=[
                {"item": i, "sku": f"{i}-9", "qty": 1} for i in ("p1", f"p{2 + k % 5}")
            ],
        )
        for k in range(50)
    ]
    activity_write(pairs)
    bought_together_rebuild(now=now, days=30, top=5)
    for name, read in (
        ("recently viewed (6 items)", lambda: recently_viewed(user=user)),
        ("often bought together", lambda: bought_together(item_ids=["p1"])),
    ):
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            shown = read()
            samples.append((time.perf_counter() - started) * 1000)
        print(
            f"{name}: p50 {percentile(samples, 0.5):.2f} ms, "
            f"p95 {percentile(samples, 0.95):.2f} ms ({len(shown)} shown)"
        )


def receiver_cost(client: Client, calls: int = 20_000) -> None:
    """What logging adds to a view, alone: the signal, its receiver, the
    document and the queue (the page's p50s above carry the machine's
    noise). The queue is flushed every 5,000 calls, as its thread would."""
    request = client.get("/p/p0/").wsgi_request
    settings.ACTIVITY_LOG = True
    started = time.perf_counter()
    for k in range(calls):
        catalog_events.item_viewed.send(
            sender=None, request=request, item_id="p1", sku="p1-9"
        )
        if k % 5000 == 4999:
            pause = time.perf_counter()
            writers.flush()
            started += time.perf_counter() - pause
    took = (time.perf_counter() - started) / calls * 1e6
    writers.flush()
    print(f"one product view logged (signal, receiver, queue): {took:.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--single-events", type=int, default=20_000)
    parser.add_argument("--job-events", type=int, default=1_000_000)
    parser.add_argument("--order-share", type=float, default=0.1)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--page-runs", type=int, default=300)
    args = parser.parse_args()
    print(uptime())
    with tempfile.TemporaryDirectory() as home:
        server = EmbeddedServer(Path(home) / "data", Path(home) / "mongo.log")
        uri = server.start()
        try:
            mongo.connect(uri, db="bench")
            mongo.ensure_indexes()
            started = time.perf_counter()
            make_catalog(args.items)
            took = time.perf_counter() - started
            print(f"catalog of {args.items} items in {took:.1f} s")
            page_times(args.page_runs, items=min(50, args.items))
            ingestion(args.events, args.single_events, args.items)
            for name in mongo.db().list_collection_names():
                if name.startswith("activity_w"):
                    mongo.db().drop_collection(name)
            bought_together_job(args.job_events, args.order_share, args.items)
        finally:
            writers.shutdown()  # before the server goes, not at exit
            server.stop()
    print(uptime())


if __name__ == "__main__":
    main()
