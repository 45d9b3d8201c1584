"""Catalog browse and item page: server time against raw database time.

For each catalogue size it loads the demo catalogue (once: the data directory
is kept and reused), then measures, over ``--runs`` requests each:

* browse a department with 0, 1 and 3 active facets, the whole catalogue
  with 1, and the item page (with a shopper
  location, so the nearest-stores query runs too), through Django's test
  client: the whole server-side time (forms, selectors, templates);
* the same database work issued directly with pymongo: for a browse page
  served by the department's in-memory index, the scope document and the
  page's summaries by ``_id``; for the item page, its finds and
  ``$geoNear``;
* for browse, the aggregations the selector runs when no index is up to
  date (the first pages after a catalogue change): the cost the index saves.

The ratio server/raw is the application's own cost on top of the database.
The index is built (in the background, as a server does) after the warm-up
request and before the measured ones; its build time is printed per
department. Prints a table of p50/p95 in milliseconds.

    .venv/bin/python bench/catalog_bench.py --items 10000 100000
    .venv/bin/python bench/catalog_bench.py --items 10000 --load-only
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402

from config import engine as engines  # noqa: E402
from config import mongo  # noqa: E402
from config.embedded import EmbeddedServer  # noqa: E402

# Where the benchmark's shopper is (the item page's nearest-stores query).
LEEDS = [-1.5437, 53.7997]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(func, runs: int, before=None) -> list[float]:
    """Milliseconds of each of ``runs`` calls of ``func`` (``before`` runs
    untimed ahead of each)."""
    func()  # warm-up: first use of connections, templates, caches
    samples = []
    for run in range(runs):
        if before is not None:
            before(run)
        started = time.perf_counter()
        func()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def ensure_loaded(items: int, out) -> float | None:
    """Load the demo catalogue unless this database already holds it; bring
    a catalogue kept from an older run up to date (indexes, browse scopes)."""
    from catalog import demo
    from catalog.documents import BrowseScope, Item, Summary
    from catalog.services.scopes import browse_scopes_rebuild
    from catalog.services.summaries import summaries_rescope

    mongo.ensure_indexes()
    if Item.coll().estimated_document_count() == items:
        if Summary.coll().find_one({"scopes": {"$exists": False}}):
            summaries_rescope()
        if not BrowseScope.coll().find_one():
            browse_scopes_rebuild()
        return None
    started = time.monotonic()
    demo.load(items=items, seed=7, out=out)
    return time.monotonic() - started


def scenarios():
    """The pages to measure, picked from the loaded data (deterministic)."""
    from catalog.documents import Summary

    summaries = Summary.coll()
    department = "Shoes"
    item = summaries.find_one(
        {"department": department, "vars.4": {"$exists": True}},
        sort=[("_id", 1)],
    )
    brand = item["brand"]
    size_token, colour_token = (
        item["vars"][0]["attrs"][0],
        item["vars"][0]["attrs"][1],
    )
    size = size_token.split("=", 1)[1]
    colour = colour_token.split("=", 1)[1]
    return {
        "browse, 0 facets": f"/c/{department}/",
        "browse, 1 facet": f"/c/{department}/?brand={brand}",
        "browse, 3 facets": (
            f"/c/{department}/?brand={brand}&size={size}&colour={colour}"
        ),
        # The whole catalogue: every department's index.
        "catalogue, 1 facet": f"/?brand={brand}",
        "item page": f"/p/{item['_id']}/?sku={item['vars'][0]['sku']}",
    }


def raw_work(path: str):
    """The database commands behind ``path``, issued directly, and for a
    browse page the aggregations that would serve it without an index."""
    from urllib.parse import parse_qs, urlsplit

    from django.http import QueryDict

    from catalog.documents import Inventory, Item, Price, Store, Summary, Variant
    from catalog.forms import BrowseForm
    from catalog.selectors import browse_index
    from catalog.selectors.browse import (
        CARD_FIELDS,
        browse_pipelines,
        scope_counts,
        scope_document,
        sort_spec,
    )
    from catalog.selectors.pricing import price_ids
    from catalog.selectors.stores import stores_by_distance_pipeline

    url = urlsplit(path)
    if url.path == "/" or url.path.startswith("/c/"):
        form = BrowseForm(
            QueryDict(url.query), path=url.path.removeprefix("/c/").strip("/")
        )
        assert form.is_valid(), form.errors
        query = form.browse_query()

        indexes = browse_index.indexes_for(query, scope_document(query))
        assert indexes is not None, "the index is built before measuring"
        ids = browse_index.evaluate(indexes, query, sort_spec(query))["ids"]

        def served():
            scope_document(query)
            list(
                Summary.coll().find(
                    {"_id": {"$in": ids}}, dict.fromkeys(CARD_FIELDS, 1)
                )
            )

        def aggregated():
            counted = scope_counts(query)
            for pipeline in browse_pipelines(query, counted).values():
                list(Summary.coll().aggregate(pipeline))

        return served, aggregated

    item_id = url.path.strip("/").split("/")[1]
    sku = parse_qs(url.query)["sku"][0]

    def item_page():
        Item.coll().find_one({"_id": item_id})
        list(Variant.coll().find({"item_id": item_id}).sort("_id"))
        ids = price_ids(item_id=item_id, sku=sku, store=None)
        list(Price.coll().find({"_id": {"$in": ids}}))
        list(Store.coll().find({}))
        lines = Inventory.coll().find({"of_sku": sku}, {"store_id": 1, "quantity": 1})
        ids = sorted(row["store_id"] for row in lines if row["quantity"] > 0)
        list(
            Store.coll().aggregate(
                stores_by_distance_pipeline(
                    lng=LEEDS[0], lat=LEEDS[1], store_ids=ids, limit=10
                )
            )
        )

    return item_page, None


def build_times(departments: list[str]) -> dict[str, float]:
    """Seconds to build each department's index from the summaries."""
    from catalog.selectors.browse_index import DepartmentIndex

    times = {}
    for department in departments:
        started = time.perf_counter()
        DepartmentIndex.load(department)
        times[department] = time.perf_counter() - started
    return times


def measure(runs: int) -> dict[str, tuple[list[float], list[float], list | None]]:
    from catalog.selectors import browse_index

    client = Client()
    # The shopper says where they are once; the item page then runs the
    # nearest-stores query on every view, as it does for a real shopper.
    client.post("/location/", {"place": "LS1 6HD", "next": "/"})
    results = {}
    for label, path in scenarios().items():

        def request(path=path):
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)

        request()  # starts the department's index build, as a server would
        assert browse_index.builds_finish(timeout=600)
        served, aggregated = raw_work(path)
        results[label] = (
            timed(request, runs),
            timed(served, runs),
            timed(aggregated, runs) if aggregated else None,
        )
    # A catalogue being edited: a new price for one of the department's items
    # before each request, which then first catches its index up.
    path = scenarios()["browse, 3 facets"]
    results["3 facets, after a write"] = (
        timed(lambda: request(path), runs, before=_reprice),
        [],
        None,
    )
    return results


def _reprice(run: int) -> None:
    from decimal import Decimal

    from catalog.documents import Summary
    from catalog.services.products import price_set

    item = Summary.coll().find_one(
        {"department": "Shoes"}, {"_id": 1}, sort=[("_id", 1)]
    )
    amount = Decimal("40.00") + Decimal(run % 7)
    price_set(item_id=item["_id"], scope="online", amount=amount)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--data", type=Path, default=ROOT / "var" / "bench", help="kept between runs"
    )
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument(
        "--engine", choices=engines.ENGINES, default=None, help="embedded server"
    )
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]

    rows = []
    for items in args.items:
        # Both servers read the same on-disk format: one loaded catalogue
        # serves either.
        server = EmbeddedServer(
            args.data / f"catalog-{items}",
            args.data / f"catalog-{items}.log",
            engine=engines.resolve(args.engine),
        )
        uri = server.start()
        print(f"{items} items on the {server.engine.name} server", flush=True)
        try:
            mongo.connect(uri, db="bench")
            loaded = ensure_loaded(items, sys.stderr)
            if loaded is not None:
                print(f"loaded {items} items in {loaded:.0f}s", flush=True)
            if args.load_only:
                continue
            for department, seconds in build_times(["Shoes"]).items():
                print(f"{items} items: the {department} index builds in {seconds:.1f}s")
            for label, (server_ms, raw_ms, aggregated_ms) in measure(args.runs).items():
                rows.append((items, label, server_ms, raw_ms, aggregated_ms))
        finally:
            server.stop()

    if rows:
        print(
            f"\n{'items':>7}  {'page':<24} {'server p50':>10} {'p95':>8}"
            f" {'raw p50':>9} {'p95':>8} {'server/raw':>10}"
            f" {'no index p50':>13} {'p95':>8}"
        )
        for items, label, server_ms, raw_ms, aggregated_ms in rows:
            line = (
                f"{items:>7}  {label:<24} {percentile(server_ms, 0.5):>10.1f}"
                f" {percentile(server_ms, 0.95):>8.1f}"
            )
            if raw_ms:
                ratio = statistics.median(server_ms) / statistics.median(raw_ms)
                line += (
                    f" {percentile(raw_ms, 0.5):>9.1f} {percentile(raw_ms, 0.95):>8.1f}"
                    f" {ratio:>10.2f}"
                )
            if aggregated_ms:
                line += (
                    f" {percentile(aggregated_ms, 0.5):>13.1f}"
                    f" {percentile(aggregated_ms, 0.95):>8.1f}"
                )
            print(line)
        print(
            f"(milliseconds; {args.runs} runs each after one warm-up; raw: the"
            " served page's own database work; no index: the aggregations that"
            " serve it while its department's index is built)"
        )


if __name__ == "__main__":
    main()
