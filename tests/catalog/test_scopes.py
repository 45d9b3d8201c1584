"""Browse scopes: counts kept by every summary write, read by browsing.

The counts a scope document holds must always equal a recount of the
summaries, whatever sequence of writes (or concurrent writers) produced
them, and a page read through the counts must be the page the aggregations
compute without them.
"""

import multiprocessing as mp
from decimal import Decimal

import pytest
from django.core.management import call_command
from django_q.tasks import async_task, result

from catalog import scopes
from catalog.selectors.browse import (
    BrowseQuery,
    browse,
    browse_pipelines,
    scope_counts,
)
from catalog.services.products import item_save, price_clear, price_set, variant_save
from tests.catalog.conftest import START, add_item


def stored(db) -> dict:
    """Every scope document, zero counts dropped (what a scope no longer
    holds), as comparable plain dicts."""

    def nonzero(counts):
        return {k: n for k, n in (counts or {}).items() if n}

    return {
        doc["_id"]: {
            "n": doc.get("n", 0),
            "facets": nonzero(doc.get("facets")),
            "children": nonzero(doc.get("children")),
            "ranks": {
                name: nonzero((doc.get("ranks") or {}).get(name))
                for name in scopes.RANKS
            },
        }
        for doc in db.browse_scopes.find()
        if doc.get("n")
    }


def recounted(db) -> dict:
    tally = scopes.Tally()
    tally.add(db.summaries.find())
    return {doc.pop("_id"): doc for doc in tally.documents()}


# --- the vocabulary -------------------------------------------------------------


def test_an_item_shows_in_the_catalogue_its_department_and_every_category_prefix():
    assert scopes.scopes_of("Shoes", "Shoes/Women/Pumps") == [
        "*",
        "Shoes",
        "Shoes/Women",
        "Shoes/Women/Pumps",
    ]
    assert scopes.child_in("*", "Shoes", "Shoes/Women/Pumps") == "Shoes"
    assert scopes.child_in("Shoes", "Shoes", "Shoes/Women/Pumps") == "Shoes/Women"
    assert scopes.child_in("Shoes/Women/Pumps", "Shoes", "Shoes/Women/Pumps") is None


@pytest.mark.parametrize("key", ["size=7.5", "brand=J.Crew", "brand=50%", "a$b.%2E"])
def test_count_keys_escape_dots_and_dollars_and_come_back_whole(key):
    escaped = scopes.escape(key)
    assert "." not in escaped and "$" not in escaped
    assert scopes.unescape(escaped) == key


def test_a_rating_falls_in_a_bucket_whose_bounds_hold_it():
    rank = scopes.RANKS["rating"]
    for rating in (0.0, 0.3, 3.5, 4.3, 4.9999999, 5.0):
        low, high = rank.bounds(rank.bucket(rating))
        assert low <= rating < high


# --- counts kept by writes --------------------------------------------------------


def test_the_small_catalogs_counts_are_hand_checked(small_catalog):
    shoes = stored(small_catalog)["Shoes"]

    assert shoes["n"] == 5
    assert shoes["facets"]["brand=Aurelia"] == 2
    assert shoes["facets"]["size=6"] == 3  # items 1, 2, 3; item 1 twice is once
    assert shoes["children"] == {"Shoes/Women": 3, "Shoes/Men": 2}
    assert stored(small_catalog)["*"]["children"] == {"Shoes": 5, "Clothing": 1}
    assert stored(small_catalog)["Shoes/Women/Pumps"]["children"] == {}


def test_counts_follow_every_kind_of_write_and_equal_a_recount(small_catalog):
    assert stored(small_catalog) == recounted(small_catalog)

    # A price that changes the price band, a move to another category, a new
    # variant with a new size, an item that loses its only online price (its
    # summary goes), and a new item.
    price_set(item_id="1", scope="online", amount=Decimal("250.00"))
    assert stored(small_catalog) == recounted(small_catalog)
    item_save(
        item_id="3",
        department="Shoes",
        category="Shoes/Men/Loafers",
        title="Classic Court Pumps",
        brand="Aurelia",
        rating=3.5,
    )
    assert stored(small_catalog) == recounted(small_catalog)
    variant_save(
        sku="2-11-blue", item_id="2", attributes={"size": "11", "colour": "blue"}
    )
    assert stored(small_catalog) == recounted(small_catalog)
    price_clear(item_id="5", scope="online")
    assert stored(small_catalog) == recounted(small_catalog)
    add_item(
        "7",
        "Shoes/Kids/School",
        "Buckle Shoe",
        "Brixton",
        "22.00",
        4.2,
        [("1", "black")],
    )

    assert stored(small_catalog) == recounted(small_catalog)
    assert stored(small_catalog)["Shoes"]["children"] == {
        "Shoes/Women": 2,
        "Shoes/Men": 2,
        "Shoes/Kids": 1,
    }
    assert "Shoes/Women/Pumps" in stored(small_catalog)  # item 1 is still there


def _reprice(uri, db_name, barrier, amounts):
    # A client of the child's own, made after the fork, on the test database.
    from config import mongo

    mongo.connect(uri, db=db_name)
    barrier.wait(timeout=60)
    for amount in amounts:
        price_set(item_id="1", scope="online", amount=Decimal(amount))


@pytest.mark.concurrency
def test_concurrent_writers_of_one_item_leave_counts_equal_to_a_recount(
    small_catalog, mongo_uri
):
    # Eight processes reprice the same item across every price band at once:
    # each summary write must add the difference from the summary it really
    # replaced, or the bands' counts drift.
    ctx = mp.get_context("fork")
    bands = ["10.00", "30.00", "60.00", "150.00", "250.00"]
    barrier = ctx.Barrier(8)
    procs = [
        ctx.Process(
            target=_reprice,
            args=(mongo_uri, small_catalog.name, barrier, bands[n % 5 :] + bands),
        )
        for n in range(8)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0

    assert stored(small_catalog) == recounted(small_catalog)
    pumps = stored(small_catalog)["Shoes/Women/Pumps"]["facets"]
    assert sum(n for key, n in pumps.items() if key.startswith("price=")) == 2


@pytest.mark.django_db
def test_the_rebuild_job_repairs_counts_that_drifted(small_catalog):
    small_catalog.browse_scopes.update_one(
        {"_id": "Shoes"}, {"$inc": {"n": 7, "facets.brand=Aurelia": -2}}
    )
    small_catalog.browse_scopes.insert_one({"_id": "Toys", "n": 3})

    task = async_task("catalog.tasks.rebuild_browse_scopes", sync=True)

    assert result(task) == len(recounted(small_catalog))
    assert stored(small_catalog) == recounted(small_catalog)
    assert small_catalog.browse_scopes.find_one({"_id": "Toys"}) is None


def test_the_rebuild_command_gives_old_summaries_their_scopes(small_catalog, capsys):
    small_catalog.summaries.update_many({}, {"$unset": {"scopes": ""}})
    small_catalog.browse_scopes.delete_many({})

    call_command("browse_rebuild")

    assert "6 summaries given their scopes" in capsys.readouterr().out
    assert small_catalog.summaries.find_one({"_id": "1"})["scopes"] == [
        "*",
        "Shoes",
        "Shoes/Women",
        "Shoes/Women/Pumps",
    ]
    assert stored(small_catalog) == recounted(small_catalog)


# --- pages read through the counts ------------------------------------------------


QUERIES = [
    {},
    {"department": "Shoes"},
    {"department": "Shoes", "category": "Shoes/Women"},
    {"department": "Shoes", "category": "Shoes/Women/Pumps"},
    {"department": "Shoes", "selected": {"brand": ("Aurelia",)}},
    {"department": "Shoes", "selected": {"size": ("6", "9")}},
    {"department": "Shoes", "selected": {"brand": ("Brixton",), "size": ("9",)}},
    {"department": "Clothing"},
    {"department": "Toys"},
]


def _pages(query: dict) -> list:
    """Every page of ``query`` in every sort, two cards a page."""
    found = []
    for sort in ("relevance", "price_asc", "price_desc", "rating", "newest"):
        after = None
        while True:
            page = browse(BrowseQuery(**query, sort=sort, per_page=2, after=after))
            found.append(page)
            after = page.next_cursor
            if after is None:
                break
    return found


@pytest.mark.parametrize("query", QUERIES, ids=str)
def test_a_page_through_the_counts_is_the_page_the_aggregations_count(
    small_catalog, query
):
    through_counts = _pages(query)
    small_catalog.browse_scopes.delete_many({})

    assert _pages(query) == through_counts


def test_pages_stay_right_when_the_bucket_counts_are_wrong(small_catalog):
    truth = _pages({"department": "Shoes"})
    # Counts claiming every bucket holds a crowd: each window is one bucket,
    # far too narrow; and counts claiming the buckets are empty.
    for wrong in (100, 0):
        doc = small_catalog.browse_scopes.find_one({"_id": "Shoes"})
        ranks = {
            name: dict.fromkeys(buckets, wrong)
            for name, buckets in doc["ranks"].items()
        }
        small_catalog.browse_scopes.update_one(
            {"_id": "Shoes"}, {"$set": {"ranks": ranks}}
        )

        assert _pages({"department": "Shoes"}) == truth


def test_a_landing_page_reads_a_window_not_the_whole_scope(mongo_db):
    # 40 items rated 1.0 to 4.9, one to a bucket: a page of 4 by rating past
    # the cursor needs the buckets below the cursor's until 5 items, no more.
    for n in range(40):
        add_item(f"w{n:02d}", "Home/Decor/Vases", f"Vase {n}", "Brixton", "20.00",
                 1.0 + n / 10, [], created_at=START)  # fmt: skip
    first = browse(BrowseQuery(department="Home", sort="rating", per_page=4))
    second = BrowseQuery(
        department="Home", sort="rating", per_page=4, after=first.next_cursor
    )

    pipelines = browse_pipelines(second, scope_counts(second))

    assert [c.item_id for c in first.cards] == ["w39", "w38", "w37", "w36"]
    assert first.total == 40
    assert list(pipelines) == ["hits"]
    # From the cursor's rating (4.6) down to the fifth bucket past it (4.1).
    assert pipelines["hits"][0] == {
        "$match": {"scopes": "Home", "rating": {"$gte": 4.05}}
    }
    assert [c.item_id for c in browse(second).cards] == ["w35", "w34", "w33", "w32"]
