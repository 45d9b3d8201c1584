"""A guarded write that returns the document, by the collection's size.

Marquee writes the collections that only grow (carts until their purge,
orders for ever) with an update, then a read by ``_id``
(``config.compat.update_then_read``), never a findAndModify: on the Rust
server a findAndModify costs time growing with the collection even when
its filter names ``_id``. This prints both, p50 over ``--samples`` writes
of random documents, as the collection grows to each ``--sizes`` (documents
of about 600 bytes, like a small order):

    .venv/bin/python bench/find_and_modify_bench.py
    .venv/bin/python bench/find_and_modify_bench.py --sizes 1000 10000 100000

Starts its own embedded server (the default engine) in a temporary
directory, as ``serve`` runs it (sync on commit). Prints ``uptime`` first:
take the figures on a quiet machine.
"""

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymongo import MongoClient, ReturnDocument  # noqa: E402

from bench.dbserver import Target  # noqa: E402

PAD = "x" * 500


def timed(write, ids: list[int]) -> float:
    """p50 of ``write(id)`` over ``ids``, in ms."""
    times = []
    for _id in ids:
        start = time.perf_counter()
        write(_id)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rng = random.Random(1)
    with Target() as target:
        client = MongoClient(target.uri, w="majority", tz_aware=True)
        orders = client.bench.orders
        guard = {"state": {"$in": ["paid", "refunding"]}}

        def find_and_modify(_id: int) -> None:
            orders.find_one_and_update(
                {"_id": _id, **guard},
                {"$inc": {"moves": 1}},
                return_document=ReturnDocument.AFTER,
            )

        def update_then_read(_id: int) -> None:
            if orders.update_one(
                {"_id": _id, **guard}, {"$inc": {"moves": 1}}
            ).matched_count:
                orders.find_one({"_id": _id})

        print(f"{'documents':>10}  {'findAndModify':>14}  {'update, then read':>18}")
        have = 0
        for size in sorted(args.sizes):
            orders.insert_many(
                {"_id": i, "state": "paid", "moves": 0, "pad": PAD}
                for i in range(have, size)
            )
            have = size
            ids = [rng.randrange(size) for _ in range(args.samples)]
            fam, utr = timed(find_and_modify, ids), timed(update_then_read, ids)
            print(f"{size:>10,}  {fam:>11.2f} ms  {utr:>15.2f} ms")
        client.close()


if __name__ == "__main__":
    main()
