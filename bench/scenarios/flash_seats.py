"""Flash sale of a performance: 2,000 shoppers, 16 at a time, one 300-seat hall.

Run on its own (it starts what the http level starts: an embedded database
and ``manage.py serve`` with its defaults, as production runs it):

    .venv/bin/python bench/scenarios/flash_seats.py
    .venv/bin/python bench/scenarios/flash_seats.py --shoppers 500 --checkout

Each shopper is a fresh browser (``bench.levels.http.Browser``: its own
cookies, so a fresh session and a cart of its own): it opens the
performance's page, picks a random free pair of adjacent seats from the map
it was sent, and POSTs the map's own hold form with htmx; when beaten to a
seat it picks again from the map the refusal redraws, 3 tries. With
``--checkout`` a shopper who held seats also pays with the test card. 16
shoppers run at once (a closed loop). Prints shoppers/s, the hold POST's
p50/p95/p99 and the end state: held + sold <= 300, no seat held or sold
twice (``check_invariants``), and ``uptime``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from bson import ObjectId  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.levels import http as web  # noqa: E402
from bench.levels.raw import free_blocks  # noqa: E402
from booking.services import session_create, theater_create  # noqa: E402
from booking.values import SeatSpec, ZoneSpec  # noqa: E402
from config import mongo  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402

ROWS, PER_ROW, PAIR, TRIES = 10, 30, 2, 3


def hall() -> str:
    zones = [ZoneSpec(code="stalls", name="Stalls", colour="#9b2335", rank=0)]
    layout = [
        [SeatSpec(row=chr(65 + r), number=c + 1, zone="stalls") for c in range(PER_ROW)]
        for r in range(ROWS)
    ]
    theater = theater_create(name="Flash Hall", zones=zones, layout=layout)
    start = timezone.now() + timedelta(days=7)
    return session_create(
        theater_id=theater,
        show="Opening Night",
        start=start,
        end=start + timedelta(hours=2),
        prices={"stalls": Decimal("40")},
    )


def shopper(base: str, session_id: str, seed: int, checkout: bool) -> dict:
    """One shopper's visit: (outcome, hold POST times in s)."""
    rng = random.Random(seed)
    browser = web.Browser(base)
    times = []
    try:
        page = web._view_seats(browser, session_id)
        for _ in range(TRIES):
            states = web._seat_states(page)
            pairs = [
                (r, first)
                for r in range(ROWS)
                for first in free_blocks(
                    [states.get((r, c), "taken") for c in range(PER_ROW)],
                    PAIR,
                    free="free",
                )
            ]
            if not pairs:
                return {"outcome": "sold out", "times": times}
            r, first = rng.choice(pairs)
            began = time.perf_counter()
            held, page = web._hold(
                browser, session_id, [(r, first + k) for k in range(PAIR)]
            )
            times.append(time.perf_counter() - began)
            if held:
                if checkout:
                    web._checkout(browser)
                return {"outcome": "paid" if checkout else "held", "times": times}
        return {"outcome": "beaten", "times": times}
    finally:
        browser.close()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def end_state(db, session_id: str) -> list[str]:
    from shop.selectors.invariants import invariant_problems

    doc = db.sessions.find_one({"_id": ObjectId(session_id)})
    problems = [str(p) for p in invariant_problems()]
    lines = [
        f"end state: held {doc['held']} + sold {doc['sold']} ="
        f" {doc['held'] + doc['sold']} of {doc['seat_count']} seats"
        f" ({'ok' if doc['held'] + doc['sold'] <= doc['seat_count'] else 'OVERSOLD'}),"
        f" free {doc['seatsAvailable']};"
        f" check_invariants: {'ok' if not problems else 'BROKEN'}"
    ]
    return lines + [f"problem: {p}" for p in problems[:5]]


def run(uri: str, args) -> None:
    name = f"bench_flash_seats_{os.getpid()}"
    mongo.connect(uri, db=name)
    mongo.ensure_indexes()
    session_id = hall()
    server = web.Server(uri, name, args.web_workers)
    server.start()
    try:
        began = time.perf_counter()
        with ThreadPoolExecutor(args.at_once) as pool:
            visits = list(
                pool.map(
                    lambda i: shopper(server.base, session_id, i, args.checkout),
                    range(args.shoppers),
                )
            )
        elapsed = time.perf_counter() - began
        times = [t * 1000 for v in visits for t in v["times"]]
        outcomes: dict[str, int] = {}
        for v in visits:
            outcomes[v["outcome"]] = outcomes.get(v["outcome"], 0) + 1
        print(
            f"{args.shoppers} shoppers, {args.at_once} at a time, {ROWS * PER_ROW}"
            f" seats, {PAIR} each{', with checkout' if args.checkout else ''}:"
            f" {elapsed:.1f} s, {args.shoppers / elapsed:.1f} shoppers/s"
        )
        print(f"outcomes: {outcomes}")
        print(
            f"hold POST ({len(times)}): p50 {pct(times, 50):.0f} ms,"
            f" p95 {pct(times, 95):.0f} ms, p99 {pct(times, 99):.0f} ms"
        )
        for line in end_state(mongo.db(), session_id):
            print(line)
    finally:
        server.stop()
        mongo.db().client.drop_database(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoppers", type=int, default=2000)
    parser.add_argument("--at-once", type=int, default=16)
    parser.add_argument("--web-workers", type=int, default=web.DEFAULT_WORKERS)
    parser.add_argument("--checkout", action="store_true")
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    print(f"uptime before: {uptime.strip()}")
    server, home = None, None
    uri = os.environ.get("MONGODB_URI")
    if not uri:
        home = Path(tempfile.mkdtemp(prefix="marquee-bench-"))
        server = EmbeddedServer(home / "data", home / "mongo.log")
        uri = server.start()
    try:
        run(uri, args)
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(home, ignore_errors=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    print(f"uptime after: {uptime.strip()}")


if __name__ == "__main__":
    main()
