"""A top-level ``$or`` on the carts, by the collection's size.

On the Rust server ``explain`` reports an index scan for a top-level
``$or``, yet some such queries cost time growing with the collection
(config/compat.py). The server plans each branch on its own, by the
branch's fields alone: a branch that matches many carts (every live one)
makes the query read them all, whatever else the filter names, while
branches that match few stay cheap. This prints, p50 over ``--samples``
queries, as the carts grow to each ``--sizes`` (99 % of them live, ten past
their hold, one SKU held by a tenth of them, up to 1,000):

* the old checkout lock: one cart by ``_id``, active within its hold or
  pending (a branch matching every live cart);
* the cart page's count of a SKU's units held by carts past their hold
  (``shop.selectors.carts._stale_units``): branches matching only carts
  past their hold or expiring;
* the same count as two queries without the ``$or`` (each served by the
  ``items.sku, state`` index, which reads every holder of the SKU).

    .venv/bin/python bench/or_bench.py
    .venv/bin/python bench/or_bench.py --sizes 1000 10000 50000

Starts its own embedded server (the default engine) in a temporary
directory, as ``serve`` runs it (sync on commit), with the carts' indexes
of ``shop.documents.Cart``. Prints ``uptime`` first: take the figures on a
quiet machine.
"""

import argparse
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymongo import ASCENDING, DESCENDING, MongoClient  # noqa: E402

from bench.dbserver import Target  # noqa: E402

NOW = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
HOT = "HOT-1"
HOLDERS = 1_000
STALE = 10
INDEXES = [
    [("live_owner", ASCENDING)],
    [("state", ASCENDING), ("expires_at", ASCENDING)],
    [("owner", ASCENDING), ("modified_at", DESCENDING)],
    [("items.sku", ASCENDING), ("state", ASCENDING)],
    [("tickets.session_id", ASCENDING), ("state", ASCENDING)],
    [("state", ASCENDING), ("ended_at", ASCENDING)],
]


def cart(i: int) -> dict:
    """Cart ``i``: the first STALE past their hold, a tenth of the first
    HOLDERS * 10 holding the hot SKU, the rest live with another SKU."""
    stale = i < STALE
    sku = HOT if stale or (i % 10 == 0 and i < HOLDERS * 10) else f"SKU-{i % 500}"
    expires = NOW + timedelta(minutes=-5 if stale else 20)
    return {
        "_id": f"cart-{i}",
        "owner": f"anon:{i}",
        "live_owner": f"anon:{i}",
        "state": "active",
        "items": [{"sku": sku, "quantity": 1, "name": "A product " * 5}],
        "tickets": [],
        "modified_at": expires - timedelta(minutes=30),
        "expires_at": expires,
    }


def timed(query, samples: int) -> float:
    """p50 of ``query()`` over ``samples`` runs, in ms."""
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        query()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 30_000])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rng = random.Random(1)
    with Target() as target:
        client = MongoClient(target.uri, tz_aware=True)
        carts = client.bench.carts
        for keys in INDEXES:
            carts.create_index(keys)
        run_out = {"state": "active", "expires_at": {"$lte": NOW}}
        expiring = {"state": "expiring"}
        holders = {"items.sku": {"$in": [HOT]}}
        have = 0

        def lock() -> list:
            _id = f"cart-{rng.randrange(have)}"
            live = {"state": "active", "expires_at": {"$gt": NOW}}
            return list(carts.find({"_id": _id, "$or": [live, {"state": "pending"}]}))

        def stale_or() -> list:
            query = {**holders, "$or": [run_out, expiring]}
            return list(carts.find(query, {"items": 1}))

        def stale_two() -> list:
            return [
                *carts.find({**holders, **run_out}, {"items": 1}),
                *carts.find({**holders, **expiring}, {"items": 1}),
            ]

        print(
            f"{'carts':>8}  {'lock, $or':>10}  {'past hold, $or':>15}"
            f"  {'past hold, 2 queries':>21}"
        )
        for size in sorted(args.sizes):
            if size > have:
                carts.insert_many(cart(i) for i in range(have, size))
                have = size
            assert len(stale_or()) == len(stale_two()) == min(STALE, size)
            figures = [timed(q, args.samples) for q in (lock, stale_or, stale_two)]
            print(
                f"{size:>8,}  {figures[0]:>7.2f} ms  {figures[1]:>12.2f} ms"
                f"  {figures[2]:>18.2f} ms"
            )
        client.close()


if __name__ == "__main__":
    main()
