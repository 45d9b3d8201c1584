"""Bought together, on orders small enough to count by hand.

Paid orders in the job's 30-day window (item ids of the catalog fixture):

| order | items   | days ago |
| ----- | ------- | -------- |
| o1    | 1 2 3   | 10       |
| o2    | 1 2     | 11       |
| o3    | 1 3     | 12       |
| o4    | 1 4     | 13       | item 4 is no longer for sale (its price is cleared)
| o5    | 1 4     | 14       |
| o6    | 2 3     | 2        |
| o7    | 1 5     | 3        |
| o8    | 1 5     | 40       | outside the window
| o9    | 6       | 8        | one item: no pair

Pairs: 1-2: 2 (o1 o2), 1-3: 2 (o1 o3), 1-4: 2 (o4 o5), 1-5: 1 (o7),
2-3: 2 (o1 o6). With the top 2 per item: 1 -> 2, 3 (three-way tie at 2;
4 is not for sale; 2 before 3 by id), 2 -> 1, 3 (tie), 3 -> 1, 2 (tie),
4 -> 1, 5 -> 1.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from activity import kinds
from activity.selectors import bought_together, partners_of
from activity.services.insight import bought_together_rebuild, pair_counts
from activity.services.partitions import activity_write
from catalog.services.products import price_clear
from shop.services.carts import cart_add_item
from tests.activity.conftest import logged

NOW = datetime(2030, 3, 4, 12, tzinfo=UTC)
ORDERS = [
    ("o1", ["1", "2", "3"], 10),
    ("o2", ["1", "2"], 11),
    ("o3", ["1", "3"], 12),
    ("o4", ["1", "4"], 13),
    ("o5", ["1", "4"], 14),
    ("o6", ["2", "3"], 2),
    ("o7", ["1", "5"], 3),
    ("o8", ["1", "5"], 40),
    ("o9", ["6"], 8),
]


def paid(order_id: str, items: list[str], days_ago: int, now=NOW) -> dict:
    lines = [{"item": i, "sku": f"{i}-x", "qty": 1} for i in items]
    ts = now - timedelta(days=days_ago)
    return kinds.order(order_id=order_id, user="u", ts=ts, number=order_id, lines=lines)


@pytest.fixture
def orders(catalog):
    activity_write([paid(*row) for row in ORDERS])
    # A view and a cart add of items 1 and 2: not orders, never paired.
    activity_write(
        [
            kinds.view(user="u", ts=NOW - timedelta(days=1), item="1"),
            kinds.cart(user="u", ts=NOW, item="2", sku="2-6-black", qty=1),
        ]
    )
    price_clear(item_id="4", scope="online")


def stored(mongo_db) -> dict:
    found = mongo_db.activity_bought_together.find()
    return {d["_id"]: [(p["item"], p["n"]) for p in d["partners"]] for d in found}


def test_pairs_are_counted_from_the_windows_paid_orders(orders):
    counts = pair_counts(since=NOW - timedelta(days=30), until=NOW)

    assert counts == {
        ("1", "2"): 2, ("2", "1"): 2,
        ("1", "3"): 2, ("3", "1"): 2,
        ("1", "4"): 2, ("4", "1"): 2,
        ("1", "5"): 1, ("5", "1"): 1,
        ("2", "3"): 2, ("3", "2"): 2,
    }  # fmt: skip


def test_each_item_keeps_its_top_partners_for_sale_ties_by_id(orders, mongo_db):
    assert bought_together_rebuild(now=NOW, days=30, top=2) == 5

    assert stored(mongo_db) == {
        "1": [("2", 2), ("3", 2)],
        "2": [("1", 2), ("3", 2)],
        "3": [("1", 2), ("2", 2)],
        "4": [("1", 2)],
        "5": [("1", 1)],
    }


def test_a_larger_top_shows_the_rest_but_never_an_item_not_for_sale(orders, mongo_db):
    bought_together_rebuild(now=NOW, days=30, top=5)

    assert stored(mongo_db)["1"] == [("2", 2), ("3", 2), ("5", 1)]


def test_a_rerun_replaces_the_lists_and_forgets_items_without_partners(
    orders, mongo_db
):
    bought_together_rebuild(now=NOW, days=30, top=2)
    # Ten days on, o1-o5 are out of the window: only o6 and o7 pair.
    later = NOW + timedelta(days=25)
    bought_together_rebuild(now=later, days=30, top=2)
    bought_together_rebuild(now=later, days=30, top=2)  # safe to run twice

    assert stored(mongo_db) == {
        "1": [("5", 1)],
        "2": [("3", 1)],
        "3": [("2", 1)],
        "5": [("1", 1)],
    }


def test_suggestions_are_in_stock_and_for_sale_now(orders):
    bought_together_rebuild(now=NOW, days=30, top=5)
    # Every unit of item 3 is held by a cart: out of stock.
    for sku in ("3-6-black", "3-7-red"):
        cart_add_item(owner="anon:hoarder", sku=sku, quantity=20, now=timezone.now())

    assert partners_of(item_ids=["1"]) == ["2", "3", "5"]
    assert [o.item_id for o in bought_together(item_ids=["1"])] == ["2", "5"]
    assert [o.item_id for o in bought_together(item_ids=["4"])] == ["1"]
    offer = bought_together(item_ids=["2"])[0]
    assert (offer.item_id, offer.sku, str(offer.price)) == ("1", "1-6-red", "49.00")


def test_the_item_page_shows_partners_with_a_one_click_add(client, orders, mongo_db):
    bought_together_rebuild(now=NOW, days=30, top=5)

    html = client.get("/p/1/").content.decode()

    assert "Often bought together" in html
    section = html.split("Often bought together", 1)[1].split("</section>", 1)[0]
    assert 'data-item="2"' in section and 'data-item="5"' in section
    assert 'data-item="4"' not in section  # not for sale
    assert 'name="sku" value="2-6-black"' in section
    assert 'name="csrfmiddlewaretoken"' in section
    # The one click is the shop's own add.
    added = client.post("/cart/add/", {"sku": "5-9-tan", "quantity": "1"})
    assert added.status_code == 302
    assert logged(mongo_db, type=kinds.CART_ADD)[0]["item"] == "5"


def test_the_cart_suggests_partners_of_its_lines_it_does_not_hold(client, orders):
    bought_together_rebuild(now=NOW, days=30, top=5)
    client.post("/cart/add/", {"sku": "2-6-black", "quantity": "1"})
    client.post("/cart/add/", {"sku": "3-6-black", "quantity": "1"})

    html = client.get("/cart/").content.decode()

    section = html.split("You might also like", 1)[1].split("</section>", 1)[0]
    assert 'data-item="1"' in section
    assert 'data-item="2"' not in section and 'data-item="3"' not in section


def test_pages_without_partners_show_no_section(client, catalog):
    assert "Often bought together" not in client.get("/p/6/").content.decode()
    client.post("/cart/add/", {"sku": "6-M-black", "quantity": "1"})
    assert "You might also like" not in client.get("/cart/").content.decode()


def test_an_older_run_finishing_last_never_ends_the_newer_runs_answer(orders, mongo_db):
    later = NOW + timedelta(days=25)
    # The newer run (a staff "run now") finishes first; the hourly run that
    # started a moment before it finishes after.
    bought_together_rebuild(now=later, days=30, top=2)
    bought_together_rebuild(now=later - timedelta(seconds=1), days=30, top=2)

    # Every list is still the newer run's: so its own delete, however late
    # it comes, ends only older runs' lists, never the whole answer.
    assert {doc["at"] for doc in mongo_db.activity_bought_together.find()} == {later}
    assert stored(mongo_db) == {
        "1": [("5", 1)],
        "2": [("3", 1)],
        "3": [("2", 1)],
        "5": [("1", 1)],
    }
