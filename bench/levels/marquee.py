"""Marquee's own data for the services and HTTP levels: set-up and checks.

Both levels run against the same documents, so they share this module. Data
is written through Marquee's documents (``catalog.documents``: every item,
variant and price is a validated MongoEngine document, inserted in bulk) and
its stock through the catalog's own services: ``stock_open``, the bulk form
of a first ``stock_restock`` (the same inventory and applied ledger entry,
a few bulk writes instead of 7 round trips per SKU; tests/test_bench_data.py
holds the two to the same documents), and ``stock_restock`` itself for the
probe's SKUs.

The check after a run is ``manage.py check_invariants``'s
(``shop.selectors.invariants.invariant_problems``: per SKU free + held +
sold == received, the ledger agrees, every hold belongs to a live cart that
lists it) plus the cross-checks of the raw level: units the inventories
count as sold == units in paid orders, paid orders == completed carts.
"""

from __future__ import annotations

import os
import random
from collections import Counter

from bench import monitor
from bench.levels import Check

INSERT_BATCH = 500
# Extra SKUs only the probe touches, outside the load's data: the probe adds
# one to a new cart (the first add) and then another (an add to a cart).
PROBE_SKUS = ("PROBE-A", "PROBE-B")
PROBE_STOCK = 10
INITIAL_NOTE = "initial"
EMAIL = "shopper@example.com"
SHIPPING = {
    "name": "Joe Dow",
    "line1": "Some street 1",
    "line2": "",
    "city": "London",
    "postcode": "SW1A 1AA",
    "country": "GB",
}
# The built-in test gateway's card that pays (shop/payments/test_gateway.py).
CARD_NUMBER = "4242424242424242"


def setup_django() -> None:
    """Django with Marquee's settings, once per process."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def django_tables() -> None:
    """Django's own tables (django-q2's queue, which a paid order's email
    goes through), as ``make run`` creates them; once, in the parent."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def connect(uri: str, db_name: str):
    """Marquee's own connection (config.mongo) to the run's database."""
    setup_django()
    from config import mongo

    mongo.connect(uri, db=db_name)
    return mongo.db()


def sku(product: int) -> str:
    return f"SKU-{product:05d}"


def card():
    from shop.payments import Card

    return Card(number=CARD_NUMBER, exp_month=12, exp_year=2099, cvc="123")


# --- Set-up -----------------------------------------------------------------


def _insert(documents) -> None:
    """Validated MongoEngine documents, inserted in one batch per collection."""
    documents = list(documents)
    for document in documents:
        document.validate()
    collection = type(documents[0]).coll()
    collection.insert_many([d.to_mongo().to_dict() for d in documents], ordered=False)


def add_products(products: dict[str, tuple[int, str]], filler, now) -> None:
    """Items, variants and online prices of SKUs {sku: (number, price)}."""
    from decimal import Decimal

    from catalog.documents import ONLINE, Item, Price, Variant

    skus = list(products)
    for start in range(0, len(skus), INSERT_BATCH):
        batch = skus[start : start + INSERT_BATCH]
        _insert(
            Item(
                item_id=f"item-{s}",
                department="Bench",
                category="Bench/Products",
                brand="Marquee",
                title=f"Product {products[s][0]}",
                description=filler(),
                created_at=now,
            )
            for s in batch
        )
        _insert(Variant(sku=s, item_id=f"item-{s}", attributes={}) for s in batch)
        _insert(
            Price(price_id=f"{s}_{ONLINE}", amount=Decimal(products[s][1]))
            for s in batch
        )


def cart_setup(db, run) -> str:
    """The scenario's products, stocked, plus the probe's two SKUs."""
    from django.utils import timezone

    from catalog.services.stock import stock_open, stock_restock
    from config import mongo

    p = run.params
    mongo.ensure_indexes()
    django_tables()
    now = timezone.now()
    rng = random.Random(run.seed)
    letters = "abcdefghijklmnopqrstuvwxyz "

    def filler() -> str:
        # The seed's products carry 1 KiB of properties; Marquee's items a
        # description of that size.
        return "".join(rng.choices(letters, k=p.product_bytes))

    products = {sku(i): (i, str(p.price(i))) for i in range(p.products)}
    products.update({s: (p.products + k, "9.50") for k, s in enumerate(PROBE_SKUS)})
    add_products(products, filler, now)
    stock_open(
        quantities={sku(i): p.stock for i in range(p.products)},
        note=INITIAL_NOTE,
        now=now,
    )
    for s in PROBE_SKUS:
        stock_restock(sku=s, quantity=PROBE_STOCK, note=INITIAL_NOTE, now=now)
    hot = f", users pick among the first {p.hot}" if p.hot else ""
    return (
        f"{p.products} items + variants + prices (1 KiB descriptions), stock "
        f"{p.stock:,} each{hot}"
    )


def _row_label(row: int) -> str:
    """A, B, ..., Z, AA, AB, ...: as halls letter their rows."""
    label = ""
    row += 1
    while row:
        row, rest = divmod(row - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


PROBE_SHOW = "Probe"


def _show(index: int) -> str:
    return f"Play {index:05d}"


def theater_setup(db, run) -> str:
    """Theaters and sessions through booking's own services, as staff make them.

    ``theater_create`` for each hall (one price zone, rows x seats, no gaps),
    ``session_create`` for each performance, in the raw level's order (so
    that ``bench.levels.raw.seats_for`` picks the same seats), named
    "Play 00000", ...; plus the probe's own session in the first hall.
    """
    from datetime import timedelta

    from django.utils import timezone

    from booking.services.layouts import session_create, theater_create
    from booking.values import SeatSpec, ZoneSpec
    from config import mongo

    p = run.params
    mongo.ensure_indexes()
    django_tables()
    zones = [ZoneSpec(code="stalls", name="Stalls", colour="#9b2335", rank=0)]
    layout = [
        [
            SeatSpec(row=_row_label(r), number=c + 1, zone="stalls")
            for c in range(p.seats_per_row)
        ]
        for r in range(p.rows)
    ]
    halls = [
        theater_create(name=f"Theater {t}", zones=zones, layout=layout)
        for t in range(p.theaters)
    ]
    per_theater = p.sessions_for(run.users)
    start = timezone.now() + timedelta(days=30)
    prices = {"stalls": p.price}
    for index in range(p.theaters * per_theater):
        session_create(
            theater_id=halls[index // per_theater],
            show=_show(index),
            start=start,
            end=start + timedelta(hours=3),
            prices=prices,
        )
    session_create(
        theater_id=halls[0],
        show=PROBE_SHOW,
        start=start,
        end=start + timedelta(hours=3),
        prices=prices,
    )
    what = (
        f"{p.hot_seats} hot seats in row A of 1 session"
        if p.hot_seats
        else f"{p.tickets} adjacent seats per user, none shared"
    )
    return (
        f"{p.theaters} theater{'s' if p.theaters != 1 else ''} of "
        f"{p.rows}x{p.seats_per_row} seats, {per_theater} session"
        f"{'s' if per_theater != 1 else ''} each (booking's services); {what}"
    )


_sessions: dict[str, tuple[list[str], str]] = {}


def sessions(db) -> tuple[list[str], str]:
    """The load's session ids by number (the raw level's), and the probe's.

    Read once per process and database, counted for no flow: a shopper
    arrives knowing which performance it wants (a link, the listing).
    """
    if db.name not in _sessions:
        with monitor.uncounted():
            found = {
                d["name"]: str(d["_id"]) for d in db.sessions.find({}, {"name": 1})
            }
        probe = found.pop(PROBE_SHOW)
        _sessions[db.name] = ([found[name] for name in sorted(found)], probe)
    return _sessions[db.name]


# --- After the run ------------------------------------------------------------


def cart_check(db, run) -> Check:
    """check_invariants, plus: sold per SKU == units in paid orders."""
    from shop.kinds import line_stock
    from shop.selectors.invariants import invariant_problems

    p = run.params
    problems = invariant_problems()
    in_orders: Counter = Counter()
    for row in db.orders.aggregate(
        [
            {"$match": {"state": "paid"}},
            {"$unwind": "$lines"},
            {"$match": {"lines.kind": "product"}},
            {"$group": {"_id": "$lines.key", "n": {"$sum": "$lines.quantity"}}},
        ]
    ):
        in_orders[row["_id"]] = row["n"]
    oversell = mismatched = 0
    sold_by_load = reserved = 0
    held_by = line_stock.held_units()
    for inv in db.inventories.find({}, {"sold": 1, "received": 1}):
        held = held_by.get(inv["_id"], 0)
        oversell += max(0, inv["sold"] + held - inv["received"])
        mismatched += inv["sold"] != in_orders[inv["_id"]]
        if inv["_id"] not in PROBE_SKUS:
            sold_by_load += inv["sold"]
            reserved += held
    paid = db.orders.count_documents({"state": "paid"})
    complete = db.carts.count_documents({"state": "complete"})
    ok = not problems and oversell == 0 and mismatched == 0 and paid == complete
    offered = p.stock * (p.hot or p.products)
    lines = [
        "check_invariants (free + held + sold == received, ledger, every hold "
        f"listed by a live cart): {'ok' if not problems else 'BROKEN'}",
        f"sold per SKU == units in paid orders: "
        f"{'yes' if mismatched == 0 else f'NO ({mismatched} differ)'}",
        f"units sold to users {sold_by_load:,} of {offered:,} on offer, still "
        f"reserved {reserved:,}; paid orders {paid:,} = completed carts "
        f"{complete:,} (the probe's one included)",
    ]
    lines += [f"problem: {problem}" for problem in problems[:5]]
    figures = {"sold": sold_by_load, "offered": offered, "reserved": reserved}
    return Check(ok=ok, oversell=oversell, lines=tuple(lines), figures=figures)


def theater_check(db, run) -> Check:
    """check_invariants (which for seats is booking's session check against the
    paid orders' tickets), plus: no seat in two paid orders or sold twice in
    its session, paid orders == completed carts."""
    from shop.selectors.invariants import invariant_problems

    p = run.params
    problems = invariant_problems()
    load, probe = sessions(db)
    in_orders: Counter = Counter()
    for order in db.orders.find({"state": "paid"}, {"lines": 1}):
        for line in order["lines"]:
            if line["kind"] == "ticket":
                seat = (line["ticket"]["row"], line["ticket"]["col"])
                in_orders[(line["key"], seat)] += 1
    oversell = sum(n - 1 for n in in_orders.values() if n > 1)
    sold_total = held_total = 0
    # A seat has one state in its session (held, sold, ...): it cannot be
    # sold twice there; the counters count the states (check_invariants).
    for doc in db.sessions.find({}, {"sold": 1, "held": 1}):
        if str(doc["_id"]) != probe:
            sold_total += doc["sold"]
            held_total += doc["held"]
    paid = db.orders.count_documents({"state": "paid"})
    complete = db.carts.count_documents({"state": "complete"})
    ok = not problems and oversell == 0 and paid == complete
    lines = [
        "check_invariants (per session the counters count the seat states, "
        "sold == the paid orders' tickets, every hold listed by a live cart): "
        f"{'ok' if not problems else 'BROKEN'}",
        f"seats sold to users {sold_total:,}, still held {held_total:,}; paid "
        f"orders {paid:,} = completed carts {complete:,} (the probe's one "
        "included)",
    ]
    lines += [f"problem: {problem}" for problem in problems[:5]]
    offered = p.hot_seats or p.rows * p.seats_per_row * len(load)
    figures = {"sold": sold_total, "offered": offered, "reserved": held_total}
    return Check(ok=ok, oversell=oversell, lines=tuple(lines), figures=figures)
