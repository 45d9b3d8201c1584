"""What one update of a hot document costs the server, by the document's shape.

The embedded server's CPU per command (read from /proc around a batch of
commands, one client thread: nothing else runs in the daemon), for the two
hot documents of a flash sale:

* a session of 30 x 30 seats (one integer per seat, as booking keeps it):
  the seat change as ``update_one`` against ``find_one_and_update``
  returning the session's header (what ``swap_states`` did before), and the
  same on a session without its seat grid, for scale;
* a sales counter: the guarded ``$inc`` that counts one order
  (``staff.services.counters``) on a bucket that already lists 0, 250,
  1,000, 2,500 and 5,000 orders, and one whose per-product map has 10,
  100 and 1,000 products: why a bucket holds one block of order numbers,
  and (the last three cases: 250 orders with 900 products, as a bucket of
  a 1,000-product shop was, against 250 and 500 orders and no map) why it
  no longer sums each product.

    .venv/bin/python bench/doc_update_bench.py
    .venv/bin/python bench/doc_update_bench.py --ops 2000

Starts its own embedded server (the default engine) in a temporary
directory, as ``serve`` runs it (sync on commit). Prints ``uptime`` first:
take the figures on a quiet machine.
"""

import argparse
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bson import Decimal128, ObjectId  # noqa: E402
from pymongo import MongoClient, ReturnDocument  # noqa: E402

from bench.dbserver import Target, cpu_seconds  # noqa: E402

ROWS = COLS = 30
SESSIONS = 200
TAG = 1613265961036955  # a hold's tag: a 63-bit number, as booking makes them
HEADER = {"name": 1, "theater_name": 1, "start": 1, "prices": 1, "layout_id": 1}


def session(i: int, seats: bool) -> dict:
    return {
        "_id": i,
        "name": "Hamlet",
        "theater_name": "The Royal",
        "theater_id": ObjectId(),
        "start": datetime(2030, 1, 1, 19, 30, tzinfo=UTC),
        "prices": {"stalls": Decimal128("35.00"), "circle": Decimal128("20.00")},
        "layout_id": "royal:1",
        "seatsAvailable": ROWS * COLS,
        "held": 0,
        "sold": 0,
        "blocked": 0,
        "version": 0,
        "seats": [[0] * COLS for _ in range(ROWS)] if seats else [],
    }


def per_op(pid: int, ops: int, one: Callable[[int], None]) -> float:
    """Milliseconds of the daemon's CPU per call of ``one``."""
    before = cpu_seconds(pid)
    for i in range(ops):
        one(i)
    return 1000 * (cpu_seconds(pid) - before) / ops


def seat_changes(db, pid: int, ops: int) -> None:
    print("\nA seat change on a session (daemon CPU, ms per command)")
    print(f"{'session':<28} {'update_one':>11} {'find_one_and_update':>20}")
    for label, seats in (("30 x 30 seats", True), ("no seat grid", False)):
        coll = db[f"sessions_{int(seats)}"]
        coll.insert_many([session(i, seats) for i in range(SESSIONS)])
        coll.create_index("held")

        def change(i: int, seats=seats) -> tuple[dict, dict]:
            # Hold a free seat (another one each time), as swap_states does.
            inc = {"$inc": {"held": 1, "version": 1}}
            if not seats:
                return {"_id": i % SESSIONS}, {"$set": {"n": i}, **inc}
            seat = f"seats.{i // SESSIONS % ROWS}.{i % COLS}"
            return {"_id": i % SESSIONS, seat: 0}, {"$set": {seat: TAG}, **inc}

        def update(i: int, coll=coll, change=change) -> None:
            assert coll.update_one(*change(i)).modified_count == 1

        def find_and_modify(i: int, coll=coll, change=change) -> None:
            flt, upd = change(i + ops)  # seats the updates did not take
            found = coll.find_one_and_update(
                flt, upd, projection=HEADER, return_document=ReturnDocument.AFTER
            )
            assert found is not None

        print(
            f"{label:<28} {per_op(pid, ops, update):11.3f}"
            f" {per_op(pid, ops, find_and_modify):20.3f}"
        )


def counts(db, pid: int, ops: int) -> None:
    print("\nOne order counted in a sales bucket (daemon CPU, ms per count)")
    print(f"{'bucket before the counts':<40} {'ms':>7}")
    # The products map is the shape before the day rollups summed the
    # orders (a bucket now lists its orders and nothing per product: 0).
    cases = [(n, 10) for n in (0, 250, 1000, 2500, 5000)] + [(0, 100), (0, 1000)]
    cases += [(250, 900), (250, 0), (500, 0)]
    for listed, products in cases:
        db.counters.drop()
        bucket = {
            "_id": "h",
            "orders": 0,
            "paid": [f"MQ-{100000 + i}" for i in range(listed)],
        }
        if products:
            bucket["products"] = {
                f"show:Play {k}": {"name": f"Play {k}", "qty": 1, "revenue": 1}
                for k in range(products)
            }
        db.counters.insert_one(bucket)

        def count(i: int, products=products) -> None:
            number = f"MQ-{900000 + i}"
            update = {"$inc": {"orders": 1, "revenue": 5000}, "$push": {"paid": number}}
            if products:
                update["$inc"]["products.show:Play 3.qty"] = 5
                update["$inc"]["products.show:Play 3.revenue"] = 5000
                update["$set"] = {"products.show:Play 3.name": "Play 3"}
            counted = db.counters.update_one(
                {"_id": "h", "paid": {"$ne": number}}, update
            )
            assert counted.modified_count == 1

        # Few counts, so that the list grows little during the case.
        n = min(ops, 250)
        label = f"{listed:,} orders listed, {products:,} products"
        print(f"{label:<40} {per_op(pid, n, count):7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000, help="commands per case")

    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with Target() as target:
        client = MongoClient(target.uri, w="majority", tz_aware=True)
        try:
            db = client.doc_update_bench
            seat_changes(db, target.pid, args.ops)
            counts(db, target.pid, args.ops)
            client.drop_database(db.name)
        finally:
            client.close()


if __name__ == "__main__":
    main()
