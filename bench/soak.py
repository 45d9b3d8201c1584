"""Drift: does one embedded daemon slow down as writes accumulate?

Drives N cart writes (default 100,000) against one daemon, one at a time,
in the shapes Marquee's cart and stock services issue: a cart insert, a
stock reserve (a conditional ``$inc`` on the SKU), a line ``$push`` guarded
on the cart's state, a quantity change through a positional ``$set``, a
line ``$pull`` with its stock given back. Every 10,000 writes it prints the
window's write latency p50 / p95 (ms), the daemon's resident memory and the
database's data size, then the ratio of the last window's p50 to the first's.

    .venv/bin/python bench/soak.py                        # the default engine
    .venv/bin/python bench/soak.py --engine python
    .venv/bin/python bench/soak.py --retry-writes on      # what they cost

The daemon runs as ``serve`` runs it (``--sync-on-commit``, its URI's
options), in a temporary directory, and is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from pymongo import MongoClient  # noqa: E402

from bench.stats import percentile  # noqa: E402
from config import engine as engines  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402

WINDOW = 10_000
SKUS = 200
LINES_PER_CART = 3


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def writes(db):
    """An endless cycle of cart writes; yields after each one.

    A cart: insert, then per line reserve + push, then a quantity change
    (reserve one more + positional set), then each line pulled and its units
    given back. 3 lines: 1 + 3x2 + 2 + 3x2 = 15 writes a cart.
    """
    carts, stock = db.carts, db.stock
    n = 0
    while True:
        n += 1
        cart_id = f"cart-{n}"
        carts.insert_one({"_id": cart_id, "state": "active", "items": [], "v": 0})
        yield
        skus = [f"sku-{(n * LINES_PER_CART + i) % SKUS}" for i in range(LINES_PER_CART)]
        for sku in skus:
            stock.update_one(
                {"_id": sku, "free": {"$gte": 1}},
                {"$inc": {"free": -1, "held": 1}},
            )
            yield
            carts.update_one(
                {"_id": cart_id, "state": "active", "items.sku": {"$ne": sku}},
                {"$push": {"items": {"sku": sku, "quantity": 1}}, "$inc": {"v": 1}},
            )
            yield
        stock.update_one(
            {"_id": skus[0], "free": {"$gte": 1}}, {"$inc": {"free": -1, "held": 1}}
        )
        yield
        carts.update_one(
            {"_id": cart_id, "state": "active", "items.sku": skus[0]},
            {"$set": {"items.$.quantity": 2}, "$inc": {"v": 1}},
        )
        yield
        for i, sku in enumerate(skus):
            carts.update_one(
                {"_id": cart_id, "state": "active"},
                {"$pull": {"items": {"sku": sku}}, "$inc": {"v": 1}},
            )
            yield
            units = 2 if i == 0 else 1
            stock.update_one(
                {"_id": sku, "held": {"$gte": units}},
                {"$inc": {"free": units, "held": -units}},
            )
            yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=100_000)
    parser.add_argument("--engine", choices=engines.ENGINES, default=None)
    parser.add_argument(
        "--retry-writes",
        choices=("on", "off"),
        default="off",
        help="off is what Marquee's embedded connection uses",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    chosen = engines.resolve(args.engine)
    if chosen.fallback_reason:
        print(chosen.fallback_reason)
    home = Path(tempfile.mkdtemp(prefix="marquee-soak-"))
    server = EmbeddedServer(home / "data", home / "mongo.log", engine=chosen)
    try:
        uri = server.start()
        if args.retry_writes == "on":
            uri = uri.replace("retryWrites=false", "retryWrites=true")
        client = MongoClient(uri)
        db = client.soak
        db.stock.insert_many(
            [{"_id": f"sku-{i}", "free": 10**9, "held": 0} for i in range(SKUS)]
        )
        print(
            f"engine: {chosen.name} ({chosen.executable}); retryable writes "
            f"{args.retry_writes}; {args.writes:,} writes, one at a time"
        )
        header = ("writes", "p50 ms", "p95 ms", "RSS MiB", "data MiB")
        print("{:>9} {:>8} {:>8} {:>8} {:>9}".format(*header))
        stream = writes(db)
        window: list[float] = []
        firsts, lasts = None, None
        started = time.perf_counter()
        for done in range(1, args.writes + 1):
            t = time.perf_counter()
            next(stream)
            window.append((time.perf_counter() - t) * 1000)
            if done % WINDOW == 0 or done == args.writes:
                stats = db.command("dbStats")
                window.sort()
                p50, p95 = percentile(window, 50), percentile(window, 95)
                firsts = firsts or (p50, p95)
                lasts = (p50, p95)
                print(
                    f"{done:>9,} {p50:>8.2f} {p95:>8.2f} "
                    f"{rss_mib(server.process.pid):>8.0f} "
                    f"{stats.get('dataSize', 0) / 2**20:>9.1f}",
                    flush=True,
                )
                window = []
        total = time.perf_counter() - started
        print(
            f"{args.writes / total:,.0f} writes/s; last/first window p50 "
            f"{lasts[0] / firsts[0]:.2f}x, p95 {lasts[1] / firsts[1]:.2f}x"
        )
        client.close()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
