"""The in-memory browse index: the aggregations' answers, only while fresh.

Whatever a shopper filters by, a page the index serves must be the page the
aggregations compute, counts, cards and next-page cursor alike; and after
any write the index must not answer from the catalogue it was built on.
"""

import io
import random
from decimal import Decimal

import pytest

from catalog import demo, facets
from catalog.selectors import browse_index
from catalog.selectors.browse import BrowseQuery, browse
from catalog.services.products import (
    item_save,
    price_clear,
    price_set,
    variant_save,
)
from catalog.services.scopes import browse_scopes_rebuild
from catalog.services.summaries import summary_rebuild
from tests.catalog.conftest import add_item


def _every_page(query: BrowseQuery, pages: int = 3) -> list:
    found = []
    while len(found) < pages:
        page = browse(query)
        found.append(page)
        if page.next_cursor is None:
            break
        query = BrowseQuery(**{**query.__dict__, "after": page.next_cursor})
    return found


def _both_ways(settings, query: BrowseQuery) -> tuple[list, list]:
    """The query's pages from the index, then from the aggregations."""
    settings.BROWSE_INDEX = "sync"
    assert browse_index.indexes_for(query, _scope_doc(query)) is not None
    indexed = _every_page(query)
    settings.BROWSE_INDEX = "off"
    return indexed, _every_page(query)


def _scope_doc(query: BrowseQuery) -> dict | None:
    from catalog.documents import BrowseScope

    scope = query.category or query.department or "*"
    return BrowseScope.coll().find_one({"_id": scope})


def _random_queries(db, rng: random.Random, count: int) -> list[BrowseQuery]:
    """Queries over what the catalogue holds: the whole catalogue, a
    department or one of its categories, up to three facets of one or two
    values (sometimes a value nobody carries), sometimes a price range,
    every sort, varied page size."""
    queries = []
    for _ in range(count):
        departments = sorted(db.summaries.distinct("department"))
        department = rng.choice(departments)
        whole = rng.random() < 0.15  # the whole catalogue: every department
        categories = sorted(
            db.summaries.distinct("category", {"department": department})
        )
        category = None
        if rng.random() < 0.4:
            path = rng.choice(categories).split("/")
            category = "/".join(path[: rng.randint(2, len(path))])
        if whole:
            department = category = None
        tokens = db.browse_scopes.find_one({"_id": department or "*"})["facets"]
        by_facet: dict[str, list[str]] = {}
        for tok in sorted(tokens):
            name, value = facets.split_token(tok)
            by_facet.setdefault(name, []).append(value)
        selected = {}
        for name in rng.sample(sorted(by_facet), rng.randint(0, 3)):
            values = rng.sample(
                by_facet[name], min(len(by_facet[name]), rng.randint(1, 2))
            )
            if rng.random() < 0.1:
                values.append("nobody-carries-this")
            selected[name] = tuple(values)
        low = high = None
        if rng.random() < 0.3:
            low = rng.choice([None, 2000, 5000])
            high = rng.choice([None, 8000, 15000])
        queries.append(
            BrowseQuery(
                department=department,
                category=category,
                selected=selected,
                min_cents=low,
                max_cents=high,
                sort=rng.choice(
                    ["relevance", "price_asc", "price_desc", "rating", "newest"]
                ),
                per_page=rng.choice([3, 7, 24]),
            )
        )
    return queries


@pytest.fixture
def demo_catalog(mongo_db):
    demo.load(items=150, seed=11, out=io.StringIO())
    return mongo_db


def test_every_page_the_index_serves_is_the_page_the_aggregations_compute(
    demo_catalog, settings
):
    rng = random.Random(5)
    found = []
    for query in _random_queries(demo_catalog, rng, 40):
        indexed, aggregated = _both_ways(settings, query)

        assert indexed == aggregated, query
        found.append((query, indexed[0].total))

    # Then writes the indexes catch up on: new prices, new variants.
    items = sorted(demo_catalog.summaries.distinct("_id"))
    for item_id in rng.sample(items, 12):
        amount = Decimal(rng.randint(500, 30000)) / 100
        price_set(item_id=item_id, scope="online", amount=amount)
    for n, item_id in enumerate(rng.sample(items, 6)):
        size, colour = rng.choice(["6", "M", "10"]), rng.choice(["Red", "Navy"])
        variant_save(
            sku=f"{item_id}-extra{n}",
            item_id=item_id,
            attributes={"size": size, "colour": colour},
        )
    for query in _random_queries(demo_catalog, rng, 40):
        indexed, aggregated = _both_ways(settings, query)

        assert indexed == aggregated, query
        found.append((query, indexed[0].total))

    # The queries found things, not just empty pages, and paged through some,
    # across the whole catalogue too.
    assert sum(1 for _query, total in found if total) >= 40
    assert sum(1 for _query, total in found if total > 7) >= 12
    assert sum(1 for query, total in found if not query.department and total) >= 5
    assert any(index.dead for index in browse_index._indexes.values())


@pytest.mark.parametrize(
    "selected",
    [
        {},
        {"brand": ("Aurelia",)},
        {"size": ("6", "9")},
        {"size": ("7",), "colour": ("red",)},
        {"brand": ("Aurelia", "Brixton"), "size": ("6",), "colour": ("black", "tan")},
        {"price": ("25-50", "100-200"), "colour": ("red",)},
    ],
    ids=str,
)
@pytest.mark.parametrize("category", [None, "Shoes/Women", "Shoes/Men/Loafers"])
def test_the_small_catalogs_pages_are_the_same_either_way(
    small_catalog, settings, selected, category
):
    for sort in ("relevance", "price_asc", "price_desc", "newest"):
        query = BrowseQuery(
            department="Shoes",
            category=category,
            selected=selected,
            sort=sort,
            per_page=2,
        )
        indexed, aggregated = _both_ways(settings, query)

        assert indexed == aggregated


def test_sizes_under_a_chosen_colour_count_only_its_variants_from_the_index(
    small_catalog,
):
    page = browse(BrowseQuery(department="Shoes", selected={"colour": ("red",)}))

    sizes = {
        v.value: v.count for f in page.facets if f.name == "size" for v in f.values
    }
    # Red comes in 6 and 7 (item 1), 7 (item 3) and 8 (item 4).
    assert sizes == {"6": 1, "7": 2, "8": 1}


def _index_of(department: str):
    key = (browse_index.Summary.coll().database.name, department)
    return browse_index._indexes.get(key)


def test_a_write_is_on_the_next_page_and_the_old_index_is_not_asked(small_catalog):
    query = BrowseQuery(department="Shoes", selected={"brand": ("Brixton",)})
    before = browse(query)
    built = _index_of("Shoes")

    # A new price keeps every count (same band, same pound bucket order
    # aside) but moves the item in the price sort: only the version says so.
    price_set(item_id="5", scope="online", amount=Decimal("95.50"))
    by_price = browse(BrowseQuery(**{**query.__dict__, "sort": "price_desc"}))

    assert not built.fresh_for(_scope_doc(query))
    assert _index_of("Shoes") is not built
    assert [c.price for c in by_price.cards] == [Decimal("120.00"), Decimal("95.50")]
    assert before.total == 2

    item_save(item_id="7", department="Shoes", category="Shoes/Men/Loafers",
              title="Suede Loafers", brand="Brixton", rating=4.9)  # fmt: skip
    variant_save(sku="7-9-tan", item_id="7", attributes={"size": "9", "colour": "tan"})
    price_set(item_id="7", scope="online", amount=Decimal("60.00"))
    after = browse(query)

    assert after.total == 3
    assert after.cards[0].item_id == "7"
    sizes = {
        v.value: v.count for f in after.facets if f.name == "size" for v in f.values
    }
    assert sizes["9"] == 2


def test_a_move_between_categories_bumps_both_and_logs_it_on_the_department(
    small_catalog,
):
    scopes = small_catalog.browse_scopes
    before = {doc["_id"]: (doc["epoch"], doc["v"]) for doc in scopes.find()}

    item_save(item_id="5", department="Shoes", category="Shoes/Women/Boots",
              title="Leather Loafers", brand="Brixton", rating=4.1)  # fmt: skip
    moved = {doc["_id"]: (doc["epoch"], doc["v"]) for doc in scopes.find()}

    changed = {scope for scope in before if moved[scope] != before[scope]}
    assert changed == {
        "*", "Shoes", "Shoes/Men", "Shoes/Men/Loafers", "Shoes/Women",
        "Shoes/Women/Boots",
    }  # fmt: skip
    assert all(moved[s][1] == before[s][1] + 1 for s in changed)
    assert scopes.find_one({"_id": "Shoes"})["changed"][-1] == "5"


def test_writes_are_caught_up_from_the_log_and_pages_stay_the_aggregations(
    small_catalog, settings
):
    queries = [
        BrowseQuery(department="Shoes", selected={"size": ("9",)}),
        BrowseQuery(department="Shoes", category="Shoes/Women", sort="price_asc"),
        BrowseQuery(department="Shoes", selected={"colour": ("black",)}, sort="newest"),
    ]
    for query in queries:
        browse(query)
    built = _index_of("Shoes")

    price_set(item_id="4", scope="online", amount=Decimal("20.00"))  # new band
    item_save(item_id="2", department="Shoes", category="Shoes/Men/Boots",
              title="Suede Ankle Boots", brand="Brixton", rating=4.0)  # fmt: skip
    item_save(item_id="5", department="Clothing", category="Clothing/Men/Shoes",
              title="Leather Loafers", brand="Brixton", rating=4.1)  # fmt: skip
    price_clear(item_id="3", scope="online")  # no longer sold online
    variant_save(sku="1-9-tan", item_id="1", attributes={"size": "9", "colour": "tan"})

    for query in queries:
        indexed, aggregated = _both_ways(settings, query)
        assert indexed == aggregated
    caught_up = _index_of("Shoes")
    assert caught_up is not built
    # Caught up, not built anew: the changed items' old entries are dead.
    # (4, 2, 5, 3 and 1 changed; 5 left the department, 3 is no longer sold.)
    assert caught_up.n == built.n + 3 and caught_up.dead == 5
    sizes = browse(queries[0])
    assert [c.item_id for c in sizes.cards] == ["4", "1"]


def test_an_index_behind_its_log_is_built_anew_in_the_background(
    small_catalog, settings, monkeypatch
):
    settings.BROWSE_INDEX = "background"
    monkeypatch.setattr("catalog.services.scopes.CHANGE_LOG", 2)
    query = BrowseQuery(department="Shoes", selected={"size": ("9",)})

    assert browse_index.indexes_for(query, _scope_doc(query)) is None  # building
    assert browse_index.builds_finish(timeout=60)
    [built] = browse_index.indexes_for(query, _scope_doc(query))

    for item_id in ("1", "2", "4"):  # three writes: the log keeps two
        summary_rebuild(item_id=item_id)
    assert browse_index.indexes_for(query, _scope_doc(query)) is None
    page = browse(query)  # served by the aggregations meanwhile
    assert browse_index.builds_finish(timeout=60)

    assert page.total == 2
    [rebuilt] = browse_index.indexes_for(query, _scope_doc(query))
    assert rebuilt is not built and rebuilt.dead == 0


def test_a_recount_keeps_the_index_serving(small_catalog):
    query = BrowseQuery(department="Shoes", selected={"size": ("9",)})
    browse(query)
    built = _index_of("Shoes")

    browse_scopes_rebuild()  # counts only: no summary changed

    assert built.fresh_for(_scope_doc(query))
    assert browse(query).total == 2
    assert _index_of("Shoes") is built


def test_an_old_index_is_built_anew_behind_the_pages_it_serves(
    small_catalog, settings, monkeypatch
):
    query = BrowseQuery(department="Shoes", selected={"size": ("9",)})
    browse(query)
    built = _index_of("Shoes")
    settings.BROWSE_INDEX = "background"
    monkeypatch.setattr(browse_index, "_REBUILT_AFTER", -1)

    assert browse_index.indexes_for(query, _scope_doc(query)) == [built]
    assert browse_index.builds_finish(timeout=60)

    assert _index_of("Shoes") is not built


def test_an_index_never_answers_for_another_database(small_catalog, settings):
    browse(BrowseQuery(department="Shoes", selected={"size": ("9",)}))
    keys = [key for key in browse_index._indexes if key[1] == "Shoes"]

    assert (small_catalog.name, "Shoes") in keys


def test_a_catalogue_of_one_department_still_lists_it(mongo_db, settings):
    add_item("1", "Home/Decor/Vases", "Tall Vase", "Brixton", "20.00", 4.0,
             [("M", "blue")])  # fmt: skip
    query = BrowseQuery(selected={"colour": ("blue",)})

    indexed, aggregated = _both_ways(settings, query)

    assert indexed == aggregated
    assert [(d.label, d.count) for d in indexed[0].departments] == [("Home", 1)]
