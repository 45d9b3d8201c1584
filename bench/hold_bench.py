"""A hold's cost against the number of carts holding the same SKU.

For 1, 100, 1,000 and 5,000 holders of one SKU (written in bulk as the
services leave them: set-up, not measured), measures through the real
services: reserve (a new cart), adjust (+1 on a held hold) and release,
p50/p95 in milliseconds, and the documents' sizes before and after. The
target is a cost independent of the holders: at most 1.5x between the
smallest and the largest case. Also prints what the inventory would weigh
in the previous shape (every hold inside it), and ``uptime``.

    .venv/bin/python bench/hold_bench.py
    .venv/bin/python bench/hold_bench.py --holders 1 100 1000 5000 --samples 100

Uses MONGODB_URI when set (a scratch database, dropped at the end),
otherwise an embedded server (the default engine) in a temporary directory.
"""

import argparse
import os
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

import bson  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.dbserver import scratch_database  # noqa: E402
from catalog.documents import Inventory, StockHoldDoc, hold_id  # noqa: E402
from catalog.selectors.stock import stock_level, stock_problems  # noqa: E402
from catalog.services.stock import (  # noqa: E402
    stock_adjust,
    stock_release,
    stock_reserve,
    stock_restock,
)

OPERATIONS = ("reserve", "adjust +1", "release")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def fill(sku: str, holders: int) -> None:
    """``holders`` carts holding one unit each, as stock_reserve leaves them."""
    now = timezone.now()
    for start in range(0, holders, 1000):
        count = min(1000, holders - start)
        docs = []
        for _ in range(count):
            cart_id = uuid.uuid4().hex
            docs.append(
                {
                    "_id": hold_id(sku, cart_id),
                    "sku": sku,
                    "cart_id": cart_id,
                    "quantity": 1,
                    "at": now,
                    "applied": [uuid.uuid4().hex],
                }
            )
        StockHoldDoc.coll().insert_many(docs)
        Inventory.coll().update_one({"_id": sku}, {"$inc": {"quantity": -count}})


def sizes(sku: str) -> tuple[int, int, int]:
    """(inventory now, one hold, the inventory in the previous shape)."""
    inv = Inventory.coll().find_one({"_id": sku})
    hold = StockHoldDoc.coll().find_one({"sku": sku}) or {}
    old = dict(inv)
    old["reservations"] = [
        {"cart_id": h["cart_id"], "quantity": h["quantity"], "at": h["at"]}
        for h in StockHoldDoc.coll().find({"sku": sku})
    ]
    return (
        len(bson.encode(inv)),
        len(bson.encode(hold)) if hold else 0,
        len(bson.encode(old)),
    )


def measure(sku: str, samples: int) -> dict[str, list[float]]:
    carts = [f"bench-{uuid.uuid4().hex}" for _ in range(samples)]
    out: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    for cart in carts:
        out["reserve"].append(
            timed(lambda c=cart: stock_reserve(sku=sku, cart_id=c, quantity=1))
        )
    for cart in carts:
        out["adjust +1"].append(
            timed(lambda c=cart: stock_adjust(sku=sku, cart_id=c, delta=1))
        )
    for cart in carts:
        out["release"].append(timed(lambda c=cart: stock_release(sku=sku, cart_id=c)))
    return out


def run(holder_counts: list[int], samples: int) -> None:
    results = {}
    for holders in holder_counts:
        sku = f"HOLD-{holders}"
        stock_restock(sku=sku, quantity=holders + 4 * samples)
        fill(sku, holders)
        before = sizes(sku)
        results[holders] = measure(sku, samples)
        after = sizes(sku)
        level = stock_level(sku=sku)
        assert level.holders == holders and level.held == holders, level
        print(
            f"{holders:>6} holders: inventory {before[0]:,} -> {after[0]:,} bytes, "
            f"one hold {before[1]:,} bytes (previous shape: inventory "
            f"{before[2]:,} bytes)"
        )
    assert stock_problems() == [], stock_problems()
    print(
        f"\n{'holders':>8}"
        + "".join(f"{op + ' p50':>14}{'p95':>8}" for op in OPERATIONS)
    )
    for holders, ops in results.items():
        print(
            f"{holders:>8}"
            + "".join(
                f"{pct(ops[op], 50):>14.2f}{pct(ops[op], 95):>8.2f}"
                for op in OPERATIONS
            )
        )
    small, large = results[holder_counts[0]], results[holder_counts[-1]]
    for op in OPERATIONS:
        ratio = pct(large[op], 50) / pct(small[op], 50)
        print(
            f"{op}: p50 at {holder_counts[-1]} holders"
            f" / at {holder_counts[0]}: {ratio:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holders", type=int, nargs="+", default=[1, 100, 1000, 5000])
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    with scratch_database("bench_holds") as uri:
        print(f"server: {uri.split('?')[0]}; {args.samples} samples per operation")
        print(
            "uptime:",
            subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        )
        run(args.holders, args.samples)
        print(
            "uptime:",
            subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        )


if __name__ == "__main__":
    main()
