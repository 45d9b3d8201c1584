"""A 5-seat hold and its release on a session with 0, 450 and 890 seats taken.

The compact session (DESIGN §3.10) keeps one integer per seat and four
counters; holds live in one small document per cart and session. So a hold
should cost the same however many seats other carts hold or bought. This
makes a 30 x 30 hall (900 seats), and for each case a fresh session in which
other carts hold (half) and bought (half) the given number of seats through
the real services (set-up, not measured); then times, through booking's
services, a 5-seat ``seats_hold`` of five seats kept free and the
``seats_release`` that gives them back, ``--samples`` times. Prints p50/p95
in milliseconds per case, the documents' BSON sizes, and ``uptime``.

    .venv/bin/python bench/seat_hold_bench.py
    .venv/bin/python bench/seat_hold_bench.py --samples 400

Uses MONGODB_URI when set (a scratch database, dropped at the end),
otherwise an embedded server (the default engine) in a temporary directory.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import bson  # noqa: E402
from bson import ObjectId  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.dbserver import scratch_database  # noqa: E402
from booking.documents import SeatHolds, SeatLayout, Session  # noqa: E402
from booking.selectors import session_problems  # noqa: E402
from booking.services import (  # noqa: E402
    seats_commit,
    seats_hold,
    seats_release,
    session_create,
    theater_create,
)
from booking.values import SeatSpec, ZoneSpec  # noqa: E402

SIZE = 30  # rows, and seats per row
# The five seats every case holds and releases: kept free in every case.
TARGET = [(SIZE - 1, c) for c in range(SIZE - 10, SIZE - 5)]
CASES = (0, 450, 890)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def hall() -> str:
    zones = [ZoneSpec(code="stalls", name="Stalls", colour="#9b2335", rank=0)]
    layout = [
        [SeatSpec(row=f"R{r + 1}", number=c + 1, zone="stalls") for c in range(SIZE)]
        for r in range(SIZE)
    ]
    return theater_create(name="Bench Hall", zones=zones, layout=layout)


def session(theater_id: str, name: str) -> str:
    start = timezone.now() + timedelta(days=30)
    return session_create(
        theater_id=theater_id,
        show=name,
        start=start,
        end=start + timedelta(hours=3),
        prices={"stalls": Decimal("30")},
    )


def fill(session_id: str, taken: int) -> None:
    """``taken`` seats other than TARGET taken by other carts, 5 a cart:
    the first half held, the rest bought (held, then committed)."""
    others = [(r, c) for r in range(SIZE) for c in range(SIZE) if (r, c) not in TARGET]
    seats = others[:taken]
    for i in range(0, len(seats), 5):
        cart = f"filler-{i // 5:04d}"
        seats_hold(session_id=session_id, cart_id=cart, seats=seats[i : i + 5])
        if i >= taken // 2:
            seats_commit(session_id=session_id, cart_id=cart)


def size_of(collection, _id) -> int:
    return len(bson.encode(collection.find_one({"_id": _id})))


def run_case(theater_id: str, taken: int, samples: int) -> dict:
    session_id = session(theater_id, f"Case {taken}")
    oid = ObjectId(session_id)
    empty = size_of(Session.coll(), oid)
    fill(session_id, taken)
    before = size_of(Session.coll(), oid)
    hold, release, during = [], [], 0
    for i in range(samples):
        cart = f"bench-{taken}-{i:05d}"
        hold.append(
            timed(
                lambda c=cart: seats_hold(
                    session_id=session_id, cart_id=c, seats=TARGET
                )
            )
        )
        if i == 0:
            during = size_of(SeatHolds.coll(), f"{session_id}|{cart}")
        release.append(
            timed(lambda c=cart: seats_release(session_id=session_id, cart_id=c))
        )
    return {
        "taken": taken,
        "hold": hold,
        "release": release,
        "empty": empty,
        "before": before,
        "after": size_of(Session.coll(), oid),
        "holds_doc": during,
    }


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def report(results: list[dict], samples: int, layout_size: int) -> None:
    print(f"\n5-seat hold and release, {samples} samples per case (ms)")
    print(
        f"{'taken':>6}{'hold p50':>10}{'hold p95':>10}{'rel p50':>10}{'rel p95':>10}"
        f"{'session before':>16}{'after':>8}"
    )
    for r in results:
        print(
            f"{r['taken']:>6}{pct(r['hold'], 50):>10.2f}{pct(r['hold'], 95):>10.2f}"
            f"{pct(r['release'], 50):>10.2f}{pct(r['release'], 95):>10.2f}"
            f"{r['before']:>16,}{r['after']:>8,}"
        )
    low, high = results[0], results[-1]
    for op in ("hold", "release"):
        ratio = pct(high[op], 50) / pct(low[op], 50)
        print(f"{op}: p50 at {high['taken']} taken / at {low['taken']} = {ratio:.2f}x")
    print(
        f"session document: {low['empty']:,} bytes empty; the hall's layout"
        f" version (shared, cached per process): {layout_size:,} bytes; one"
        f" cart's SeatHolds with a 5-seat hold: {low['holds_doc']:,} bytes"
    )
    print(f"uptime: {uptime()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with scratch_database("bench_seat_hold") as uri:
        print(f"server: {uri.split('?')[0]}; uptime before: {uptime()}")
        theater_id = hall()
        results = [run_case(theater_id, taken, args.samples) for taken in CASES]
        assert session_problems() == [], session_problems()
        layout = SeatLayout.coll().find_one({"theater_id": ObjectId(theater_id)})
        report(results, args.samples, len(bson.encode(layout)))


if __name__ == "__main__":
    main()
