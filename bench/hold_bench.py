"""A hold's cost against the number of carts holding the same SKU.

For 1, 100, 1,000 and 5,000 holders of one SKU (carts holding a line of one
unit each, written in bulk as the services leave them: set-up, not
measured), measures the products kind's own steps on a cart of its own
(``shop.kinds.products``): reserve (a new line: the counter's take, the
cart's record), adjust +1 (a take growing the line) and release (the line
taken back: the cart's write, the counter's give-back, the finish), p50/p95
in milliseconds, and the documents' sizes before and after. The target is
a cost independent of the holders: at most 1.5x between the smallest and
the largest case. Also prints what the inventory would weigh in the oldest
shape (every hold inside it), and ``uptime``.

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
from catalog.documents import Inventory  # noqa: E402
from catalog.selectors.stock import stock_level  # noqa: E402
from catalog.services.stock import stock_restock  # noqa: E402
from shop.documents import CartLine  # noqa: E402
from shop.kinds import PRODUCTS, line_stock  # noqa: E402
from shop.services.common import cart_document, carts, touched  # noqa: E402

OPERATIONS = ("reserve", "adjust +1", "release")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def a_line(sku: str, units: int) -> CartLine:
    return CartLine(sku=sku, item_id=sku, name=sku, quantity=units, unit_price=0)


def fill(sku: str, holders: int) -> None:
    """``holders`` carts holding one unit each, as the add leaves them."""
    now = timezone.now()
    for start in range(0, holders, 1000):
        count = min(1000, holders - start)
        docs = []
        for _ in range(count):
            line = a_line(sku, 1).to_mongo().to_dict()
            line["applied"] = [uuid.uuid4().hex]
            _, son = cart_document(f"anon:{uuid.uuid4().hex}", uuid.uuid4().hex, now)
            son["items"] = [line]
            docs.append(son)
        carts().insert_many(docs)
        Inventory.coll().update_one({"_id": sku}, {"$inc": {"quantity": -count}})


def sizes(sku: str) -> tuple[int, int, int]:
    """(inventory now, one holder's cart, the inventory in the oldest shape)."""
    inv = Inventory.coll().find_one({"_id": sku})
    holder = carts().find_one({"items.sku": sku}) or {}
    old = dict(inv)
    old["reservations"] = [
        {"cart_id": c["_id"], "quantity": 1, "at": c["created_at"]}
        for c in carts().find({"items.sku": sku}, {"created_at": 1})
    ]
    return (
        len(bson.encode(inv)),
        len(bson.encode(holder)) if holder else 0,
        len(bson.encode(old)),
    )


def reserve(sku: str, cart_id: str) -> None:
    line = PRODUCTS.take(cart_id=cart_id, line=a_line(sku, 1), now=timezone.now())
    assert PRODUCTS.record(cart_id=cart_id, line=line, now=timezone.now())


def adjust(sku: str, cart_id: str, old: int) -> None:
    line = PRODUCTS.take(cart_id=cart_id, line=a_line(sku, 1), now=timezone.now())
    assert PRODUCTS.grow(cart_id=cart_id, line=line, old=old, now=timezone.now())


def release(sku: str, cart_id: str) -> None:
    raw = carts().find_one({"_id": cart_id})
    (line,) = [CartLine._from_son(x) for x in raw["items"] if x["sku"] == sku]
    now = timezone.now()
    assert PRODUCTS.take_back(
        cart_id=cart_id, line=line, update=touched({}, now), now=now
    )


def measure(sku: str, samples: int) -> dict[str, list[float]]:
    ids = []
    for _ in range(samples):
        cart, son = cart_document(
            f"anon:bench-{uuid.uuid4().hex}", uuid.uuid4().hex, timezone.now()
        )
        carts().insert_one(son)
        ids.append(cart.cart_id)
    out: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    for cart_id in ids:
        out["reserve"].append(timed(lambda c=cart_id: reserve(sku, c)))
    for cart_id in ids:
        out["adjust +1"].append(timed(lambda c=cart_id: adjust(sku, c, 1)))
    for cart_id in ids:
        out["release"].append(timed(lambda c=cart_id: release(sku, c)))
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
        assert level.held == holders, level
        assert line_stock.held_units()[sku] == holders
        print(
            f"{holders:>6} holders: inventory {before[0]:,} -> {after[0]:,} bytes, "
            f"one holder's cart {before[1]:,} bytes (oldest shape: inventory "
            f"{before[2]:,} bytes)"
        )
    problems = PRODUCTS.resource_problems()
    assert problems == [], problems
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
