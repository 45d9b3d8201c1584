"""Concurrent guarded writes on the embedded server, with and without its oplog.

Marquee runs its embedded Rust server without an oplog
(config/embedded.py ``EmbeddedServer._environment``). This measures what
that saves: ``--threads`` writers, each repeating a stock take's two writes
(a counter's guarded ``$inc`` with a journal entry pushed, then a hold's
upsert in a collection with two secondary indexes), for ``--seconds``, on a
fresh daemon synced on every commit as ``serve`` runs it, alternately
without and with the oplog (``--rounds`` pairs). Prints per run the writes
per second and the daemon's and this process's CPU per write (the
daemon's from every one of its threads' ``schedstat``). Prints ``uptime``
first: take the figures on a quiet machine.

    .venv/bin/python bench/oplog_bench.py [--threads 8] [--seconds 6] [--rounds 3]
"""

import argparse
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymongo import MongoClient  # noqa: E402

from bench.dbserver import Target  # noqa: E402

COUNTERS = 1000


def daemon_cpu_ns(pid: int) -> int:
    """CPU time of every thread of process ``pid`` so far, in ns."""
    total = 0
    for path in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def run(*, oplog: bool, threads: int, seconds: float) -> tuple[float, float, float]:
    """(writes/s, daemon us per write, client us per write)."""
    with Target(oplog=oplog) as target:
        client = MongoClient(target.uri, w="majority", retryWrites=False)
        db = client.oplog_bench
        now = datetime.now(UTC)
        db.counters.insert_many(
            [{"_id": f"s{i}", "quantity": 10**9} for i in range(COUNTERS)]
        )
        db.holds.create_index("sku")
        db.holds.create_index("at")
        writes = [0] * threads
        stop = threading.Event()

        def writer(n: int) -> None:
            i = n
            while not stop.is_set():
                i += threads
                sku, op = f"s{i % COUNTERS}", uuid.uuid4().hex
                db.counters.update_one(
                    {"_id": sku, "quantity": {"$gte": 1}},
                    {"$inc": {"quantity": -1}, "$push": {"takes": {"op": op}}},
                )
                db.holds.update_one(
                    {"_id": f"{sku}|{op}"},
                    {"$inc": {"quantity": 1}, "$set": {"sku": sku, "at": now}},
                    upsert=True,
                )
                writes[n] += 2

        pool = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
        daemon0, client0, wall0 = (
            daemon_cpu_ns(target.pid),
            time.process_time(),
            time.perf_counter(),
        )
        for thread in pool:
            thread.start()
        time.sleep(seconds)  # the measured span, not a wait for an outcome
        stop.set()
        for thread in pool:
            thread.join()
        wall = time.perf_counter() - wall0
        done = sum(writes)
        daemon = (daemon_cpu_ns(target.pid) - daemon0) / 1e3 / done
        own = (time.process_time() - client0) * 1e6 / done
        client.close()
    return done / wall, daemon, own


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"{args.threads} writers, {args.seconds:g} s a run, a take's two writes each")
    print(f"{'oplog':>8} {'writes/s':>10} {'daemon/write':>14} {'client/write':>14}")
    for _ in range(args.rounds):
        for oplog in (False, True):
            rate, daemon, own = run(
                oplog=oplog, threads=args.threads, seconds=args.seconds
            )
            name = "with" if oplog else "without"
            print(f"{name:>8} {rate:10,.0f} {daemon:11,.0f} us {own:11,.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
