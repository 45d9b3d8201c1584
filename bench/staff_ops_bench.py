"""The box office and stock pages: server time at a full house and a big
catalog.

Loads (through the services where it matters) one hall of ``--rows`` x 30
seats with ``--performances`` performances, the first one sold out to paid
orders of 2 tickets each (bulk-inserted orders, as staff_bench does), and
``--skus`` SKUs with online stock (``stock_open``), a tenth of them under
the low-stock threshold. Then measures through Django's test client (access
checks, forms, selectors, templates), ``--runs`` requests each:

* the performances list, a full hall's staff seat map, the check-in counter;
* a check-in scan (each run admits another ticket: the POST and its page);
* the stock report (first page, a SKU prefix, a title word), the low-stock
  page, one SKU's page.

Prints p50/p95/max in milliseconds, with the machine's load beside them.

    .venv/bin/python bench/staff_ops_bench.py
    .venv/bin/python bench/staff_ops_bench.py --skus 2000 --runs 10
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
DATA = ROOT / "var" / "bench"
DATA.mkdir(parents=True, exist_ok=True)
os.environ["DATABASE_URL"] = f"sqlite:///{DATA / 'staff-ops-bench.sqlite3'}"

import django  # noqa: E402

django.setup()

from bson import Decimal128  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.staff_bench import code_of, percentile  # noqa: E402
from config import mongo  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402


def load_box_office(rows: int, performances: int) -> tuple[str, list[str]]:
    """A hall, its performances, the first sold out; (session id, codes)."""
    from booking.services.layouts import session_create, theater_create
    from booking.values import SeatSpec, ZoneSpec
    from shop.documents import Order

    layout = [
        [SeatSpec(row=f"R{r + 1}", number=c + 1, zone="stalls") for c in range(30)]
        for r in range(rows)
    ]
    hall = theater_create(
        name="Bench Hall",
        zones=[ZoneSpec(code="stalls", name="Stalls", colour="#2f6db5")],
        layout=layout,
    )
    start = timezone.now() + timedelta(days=10)
    sessions = [
        session_create(
            theater_id=hall,
            show=f"Show {i % 7}",
            start=start + timedelta(days=i),
            end=start + timedelta(days=i, hours=3),
            prices={"stalls": Decimal("30")},
        )
        for i in range(performances)
    ]
    full = sessions[0]
    seats = [(r, c) for r in range(rows) for c in range(30)]
    orders = [_order(n, full, start, seats[n : n + 2]) for n in range(0, len(seats), 2)]
    Order.coll().insert_many(orders)
    return full, [code for order in orders for code in order["codes"]]


def _order(n: int, session_id: str, start, seats) -> dict:
    """A paid order of these seats (one ticket line each, codes unique)."""
    lines = [
        {
            "kind": "ticket",
            "key": session_id,
            "name": f"Show 0, Row R{r + 1}, seat {c + 1}",
            "quantity": 1,
            "unit_price": Decimal128("30.00"),
            "line_total": Decimal128("30.00"),
            "code": code_of(r * 30 + c),
            "ticket": {
                "show": "Show 0",
                "theater": "Bench Hall",
                "start": start,
                "row": r,
                "col": c,
                "label": f"Row R{r + 1}, seat {c + 1}",
                "zone": "stalls",
                "zone_name": "Stalls",
            },
        }
        for r, c in seats
    ]
    return {
        "number": f"MQ-{300001 + n}",
        "cart_id": f"bench-ops-{n}",
        "owner": f"anon:ops{n}",
        "token": f"t{n}",
        "state": "paid",
        "email": f"door{n}@example.com",
        "shipping": {"name": f"Guest {n}", "line1": "1", "city": "Leeds"},
        "lines": lines,
        "codes": [line["code"] for line in lines],
        "total": Decimal128("60.00"),
        "created_at": timezone.now(),
        "paid_at": timezone.now(),
    }


def load_stock(skus: int) -> None:
    from catalog.documents import Item, Summary, Variant
    from catalog.facets import keywords_of
    from catalog.services.stock import stock_open

    Item.coll().insert_many(
        [
            {
                "_id": f"item-{i}",
                "department": "Shoes",
                "category": "Shoes/Boots",
                "title": f"Boot model {i}",
            }
            for i in range(skus // 4)
        ]
    )
    # Summaries carry the keyword index a title search uses.
    Summary.coll().insert_many(
        [
            {
                "_id": f"item-{i}",
                "title": f"Boot model {i}",
                "department": "Shoes",
                "category": "Shoes/Boots",
                "keywords": keywords_of(f"Boot model {i}"),
            }
            for i in range(skus // 4)
        ]
    )
    Variant.coll().insert_many(
        [{"_id": f"SKU-{i:06d}", "item_id": f"item-{i // 4}"} for i in range(skus)]
    )
    threshold = settings.LOW_STOCK_THRESHOLD
    stock_open(
        quantities={
            f"SKU-{i:06d}": (1 if i % 10 == 0 else threshold + 20) for i in range(skus)
        }
    )


def timed(client: Client, runs: int, request) -> list[float]:
    request(client, -1)  # warm-up
    samples = []
    for run in range(runs):
        started = time.perf_counter()
        response = request(client, run)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    return samples


def report(args, results: dict[str, list[float]]) -> None:
    load = os.getloadavg()
    print(
        f"\n{args.performances} performances, a hall of {args.rows * 30} seats sold"
        f" out, {args.skus} SKUs; {args.runs} requests each (server time, ms)"
    )
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'page':<34} {'p50':>7} {'p95':>7} {'max':>7}")
    for label, samples in results.items():
        print(
            f"{label:<34} {percentile(samples, 0.5):7.1f}"
            f" {percentile(samples, 0.95):7.1f} {max(samples):7.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20, help="rows of 30 seats")
    parser.add_argument("--performances", type=int, default=60)
    parser.add_argument("--skus", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    home = Path(tempfile.mkdtemp(prefix="staff-ops-bench-", dir=DATA))
    server = EmbeddedServer(home / "data", home / "mongo.log")
    mongo.connect(server.start(), db="bench")
    try:
        mongo.ensure_indexes()
        full, codes = load_box_office(args.rows, args.performances)
        load_stock(args.skus)
        call_command("migrate", verbosity=0)
        from staff.roles import ADMINISTRATOR, create_staff

        client = Client()
        client.force_login(
            create_staff(email="ops@example.com", role=ADMINISTRATOR, password="x" * 12)
        )
        box = f"/staff/box-office/{full}/"
        pages = {
            "performances list": lambda c, _: c.get("/staff/box-office/"),
            f"staff seat map ({len(codes)} sold)": lambda c, _: c.get(box),
            "check-in counter": lambda c, _: c.get(f"{box}check-in/counter"),
            "check-in scan (admits)": lambda c, n: c.post(
                f"{box}check-in", {"code": codes[n + 1]}
            ),
            "stock, first page": lambda c, _: c.get("/staff/stock/"),
            "stock, SKU prefix": lambda c, _: c.get("/staff/stock/?q=SKU-0012"),
            "stock, title words": lambda c, _: c.get("/staff/stock/?q=model 499"),
            "stock, nothing matches": lambda c, _: c.get("/staff/stock/?q=umbrella"),
            "low stock": lambda c, _: c.get("/staff/stock/low"),
            "one SKU's page": lambda c, _: c.get("/staff/stock/SKU-000042/"),
        }
        results = {label: timed(client, args.runs, r) for label, r in pages.items()}
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
    report(args, results)


if __name__ == "__main__":
    main()
