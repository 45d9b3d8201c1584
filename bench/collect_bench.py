"""Click & collect: what the stores' stock locations cost.

Loads the demo catalogue (``--items``, 1,000 by default) and prints how long
the load took and the part spent opening the stores' stock locations (one
``Inventory`` and one ledger entry per store and SKU in stock), then, through
the real services, p50/p95 in milliseconds of: a delivery add and a collect
add (``cart_add_item`` on online stock / on a store's location), the nearest
stores with a SKU (``stores_near_with_stock``), and the item page's selector
without a store and with one (its two choices). Prints ``uptime`` before and
after.

    .venv/bin/python bench/collect_bench.py
    .venv/bin/python bench/collect_bench.py --items 1000 --samples 200

Uses MONGODB_URI when set (a scratch database, dropped at the end),
otherwise an embedded server (the default engine) in a temporary directory.
"""

import argparse
import io
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from bench.dbserver import scratch_database  # noqa: E402
from catalog import demo  # noqa: E402
from catalog.documents import Inventory, StockMovement  # noqa: E402
from catalog.selectors.products import item_page  # noqa: E402
from catalog.selectors.stores import stores_near_with_stock  # noqa: E402
from shop.kinds import PRODUCTS  # noqa: E402
from shop.services.carts import cart_add_item  # noqa: E402

LEEDS = (-1.5437, 53.7997)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def load(items: int) -> None:
    """The demo load, timing its store stock part (wrapped, not changed)."""
    spent = []
    opener = demo.store_stocks_open

    def opening(**kwargs):
        start = time.perf_counter()
        try:
            return opener(**kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    demo.store_stocks_open = opening
    try:
        start = time.perf_counter()
        demo.load(items=items, seed=7, out=io.StringIO())
        total = time.perf_counter() - start
    finally:
        demo.store_stocks_open = opener
    stores = Inventory.coll().count_documents({"store_id": {"$ne": None}})
    ledger = StockMovement.coll().estimated_document_count()
    print(
        f"demo load of {items} items: {total:.1f}s, of which opening "
        f"{stores:,} store stock locations {sum(spent):.1f}s "
        f"({ledger:,} ledger entries in all)"
    )


def pairs(samples: int) -> list[tuple[str, str, str]]:
    """(item, sku, store) of SKUs in stock both online and at a store."""
    found = Inventory.coll().find(
        {"store_id": {"$ne": None}, "quantity": {"$gte": 2}},
        {"of_sku": 1, "item_id": 1, "store_id": 1},
    )
    rows = [(d["item_id"], d["of_sku"], d["store_id"]) for d in found]
    online = {
        d["_id"]
        for d in Inventory.coll().find(
            {"_id": {"$in": [r[1] for r in rows]}, "quantity": {"$gte": 2}}, {"_id": 1}
        )
    }
    rows = [r for r in rows if r[1] in online]
    random.Random(7).shuffle(rows)
    return rows[:samples]


def measure(samples: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    rows = pairs(samples)
    out["delivery add"] = [
        timed(
            lambda s=sku: cart_add_item(
                owner=f"anon:{uuid.uuid4().hex}", sku=s, quantity=1
            )
        )
        for _item, sku, _store in rows
    ]
    out["collect add"] = [
        timed(
            lambda s=sku, st=store: cart_add_item(
                owner=f"anon:{uuid.uuid4().hex}", sku=s, store_id=st, quantity=1
            )
        )
        for _item, sku, store in rows
    ]
    out["nearest stores"] = [
        timed(lambda s=sku: stores_near_with_stock(sku=s, lng=LEEDS[0], lat=LEEDS[1]))
        for _item, sku, _store in rows
    ]
    out["item page, online"] = [
        timed(lambda i=item, s=sku: item_page(item_id=i, sku=s))
        for item, sku, _store in rows
    ]
    out["item page, a store"] = [
        timed(lambda i=item, s=sku, st=store: item_page(item_id=i, sku=s, store_id=st))
        for item, sku, store in rows
    ]
    return out


def uptime() -> None:
    print(
        "uptime:",
        subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    with scratch_database("bench_collect") as uri:
        print(f"server: {uri.split('?')[0]}; {args.samples} samples per operation")
        uptime()
        load(args.items)
        results = measure(args.samples)
        problems = PRODUCTS.resource_problems()
        assert problems == [], problems
        print(f"\n{'operation':<20}{'p50 ms':>10}{'p95 ms':>10}")
        for operation, values in results.items():
            print(f"{operation:<20}{pct(values, 50):>10.2f}{pct(values, 95):>10.2f}")
        uptime()


if __name__ == "__main__":
    main()
