"""One SKU held by thousands of carts: document size and operation latency.

Reservations are embedded in the SKU's inventory document (double
bookkeeping, DESIGN §3), so a popular SKU's document grows with every open
cart. This gives one SKU N open reservations (written in bulk: set-up, not
measured), then measures through the real services, on that SKU and on an
idle one: reserve (a new cart), adjust (+1 on a held entry), release, a
read of one cart's entry, and the reconciler's scan of every entry. Then it
drops the ``reservations.cart_id`` index and measures again, to show what
the index costs. Prints the BSON size and p50/p95 in milliseconds.

    .venv/bin/python bench/hot_sku.py                 # 5,000 holders
    .venv/bin/python bench/hot_sku.py --holders 10000 --samples 30

Uses MONGODB_URI when set (a scratch database, dropped at the end),
otherwise an embedded server in a temporary directory.
"""

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import bson  # noqa: E402
from django.utils import timezone  # noqa: E402

from catalog.documents import Inventory  # noqa: E402
from catalog.selectors.stock import (  # noqa: E402
    stock_hold,
    stock_holds,
    stock_problems,
)
from catalog.services.stock import (  # noqa: E402
    stock_adjust,
    stock_release,
    stock_reserve,
    stock_restock,
)
from config import mongo  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402
from config.progress import Progress  # noqa: E402


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure(sku: str, samples: int, label: str) -> dict[str, list[float]]:
    carts = [f"{label}-bench-{i:05d}" for i in range(samples)]
    out: dict[str, list[float]] = {
        "reserve": [],
        "adjust +1": [],
        "read entry": [],
        "release": [],
    }
    for cart in carts:
        out["reserve"].append(
            timed(lambda c=cart: stock_reserve(sku=sku, cart_id=c, quantity=1))
        )
    for cart in carts:
        out["adjust +1"].append(
            timed(lambda c=cart: stock_adjust(sku=sku, cart_id=c, delta=1))
        )
    for cart in carts:
        out["read entry"].append(timed(lambda c=cart: stock_hold(sku=sku, cart_id=c)))
    for cart in carts:
        out["release"].append(timed(lambda c=cart: stock_release(sku=sku, cart_id=c)))
    return out


def fill(sku: str, holders: int) -> None:
    """N open reservations of one unit each, as N stock_reserve calls leave
    them, written in chunks (the set-up is not what is measured)."""
    collection = Inventory.coll()
    now = timezone.now()
    with Progress("reservations", holders) as progress:
        for start in range(0, holders, 500):
            chunk = [
                {"cart_id": uuid.uuid4().hex, "quantity": 1, "at": now}
                for _ in range(min(500, holders - start))
            ]
            collection.update_one(
                {"_id": sku},
                {
                    "$inc": {"quantity": -len(chunk)},
                    "$push": {"reservations": {"$each": chunk}},
                },
            )
            progress.advance(len(chunk))


def report(title: str, idle: dict, hot: dict, samples: int) -> None:
    print(f"\n{title}")
    print(
        f"{'operation':<12}{'idle p50':>10}{'idle p95':>10}"
        f"{'hot p50':>10}{'hot p95':>10}   (ms, {samples} samples each)"
    )
    for op in hot:
        print(
            f"{op:<12}{pct(idle[op], 50):>10.1f}{pct(idle[op], 95):>10.1f}"
            f"{pct(hot[op], 50):>10.1f}{pct(hot[op], 95):>10.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holders", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    # A kill still stops the embedded server (the finally below runs).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    server = None
    uri = os.environ.get("MONGODB_URI")
    if not uri:
        home = Path(tempfile.mkdtemp(prefix="marquee-bench-"))
        # As `serve` runs it: every commit synced to disk.
        server = EmbeddedServer(home / "data", home / "mongo.log")
        uri = server.start()
    name = f"bench_hot_sku_{os.getpid()}"
    mongo.connect(uri, db=name)
    try:
        mongo.ensure_indexes()
        stock_restock(sku="HOT", quantity=args.holders + 4 * args.samples)
        stock_restock(sku="IDLE", quantity=4 * args.samples)
        fill("HOT", args.holders)
        raw = Inventory.coll().find_one({"_id": "HOT"})
        size = len(bson.encode(raw))
        assert stock_problems() == [], stock_problems()

        print(f"\nserver: {uri.split('?')[0]}; one SKU held by {args.holders} carts")
        print(
            f"inventory document: {size:,} bytes ({size / args.holders:.0f} bytes "
            f"per reservation; the 16 MiB limit is ~"
            f"{16 * 1024 * 1024 * args.holders // size:,} holders)"
        )
        with_index = (
            measure("IDLE", args.samples, "i1"),
            measure("HOT", args.samples, "h1"),
        )
        scan = timed(lambda: sum(1 for _ in stock_holds(before=None)))
        report(
            "with the reservations.cart_id index (as shipped)",
            *with_index,
            args.samples,
        )
        print(f"reconciler scan of all {args.holders} entries: {scan:.0f} ms")

        Inventory.coll().drop_index("reservations.cart_id_1")
        without = (
            measure("IDLE", args.samples, "i2"),
            measure("HOT", args.samples, "h2"),
        )
        report("without that index (for comparison)", *without, args.samples)
        assert stock_problems() == [], stock_problems()
    finally:
        mongo.db().client.drop_database(name)
        if server is not None:
            server.stop()
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
