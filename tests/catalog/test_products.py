"""Writes to items, variants and prices, and the summaries they keep current."""

from decimal import Decimal

import pytest

from catalog.errors import InvalidProduct, SkuTaken, UnknownItem, UnknownSku
from catalog.services.products import item_save, price_clear, price_set, variant_save
from catalog.services.summaries import summary_of, summary_rebuild


def test_summary_follows_every_item_variant_and_price_change(small_catalog):
    summaries = small_catalog.summaries

    item_save(
        item_id="1",
        department="Shoes",
        category="Shoes/Women/Pumps",
        title="Midnight Platform Pumps",
        brand="Calder",
        rating=4.9,
    )
    variant_save(
        sku="1-8-gold", item_id="1", attributes={"size": "8", "colour": "gold"}
    )
    price_set(item_id="1", scope="online", amount=Decimal("210.00"))

    doc = summaries.find_one({"_id": "1"})
    assert doc["title"] == "Midnight Platform Pumps"
    assert "brand=Calder" in doc["attrs"] and "brand=Aurelia" not in doc["attrs"]
    assert "price=200-" in doc["attrs"]
    assert {"size=8", "colour=gold"} <= set(doc["vattrs"])
    assert doc["price"].to_decimal() == Decimal("210.00")
    assert doc["price_cents"] == 21000
    assert {"midnight", "calder", "gold"} <= set(doc["keywords"])


def test_an_item_without_online_price_leaves_browsing(small_catalog):
    price_clear(item_id="1", scope="online")

    assert small_catalog.summaries.find_one({"_id": "1"}) is None
    price_set(item_id="1", scope="online", amount=Decimal("5.00"))
    assert small_catalog.summaries.find_one({"_id": "1"})["price_cents"] == 500


def test_a_store_only_price_does_not_change_the_browse_price(small_catalog, stores):
    price_set(item_id="1", scope="leeds", amount=Decimal("1.00"))

    assert small_catalog.summaries.find_one({"_id": "1"})["price_cents"] == 4900


def test_an_older_rebuild_never_overwrites_a_newer_summary(small_catalog):
    summaries = small_catalog.summaries
    newer = summaries.find_one({"_id": "1"})
    # A rebuild that read version N-1 arrives late: it must not win.
    stale = {**newer, "title": "Stale", "version": newer["version"] - 1}
    summaries.replace_one(
        {"_id": "1", "version": {"$lte": stale["version"]}}, stale, upsert=False
    )
    assert summaries.find_one({"_id": "1"})["title"] == "Evening Platform Pumps"

    assert summary_rebuild(item_id="1")["version"] == newer["version"]
    summaries.update_one({"_id": "1"}, {"$set": {"version": newer["version"] + 5}})
    assert summary_rebuild(item_id="1") is None  # the newer one stands
    assert summaries.find_one({"_id": "1"})["version"] == newer["version"] + 5


def test_summary_of_is_pure_and_takes_the_lowest_variant_price():
    item = {
        "_id": "9",
        "title": "Linen Shirt",
        "department": "Clothing",
        "category": "Clothing/Men/Shirts",
        "brand": "Wren",
        "style": "Relaxed",
        "attributes": {"material": "Linen"},
    }
    variants = [
        {"_id": "9a", "attributes": {"size": "M", "colour": "White", "fit": "Slim"}},
        {"_id": "9b", "attributes": {"size": "L", "colour": "White"}},
    ]
    prices = {"9_online": Decimal("40.00"), "9b_online": Decimal("35.50")}

    doc = summary_of(item=item, variants=variants, prices=prices)

    assert doc["price_cents"] == 3550
    assert doc["attrs"] == ["brand=Wren", "price=25-50"]
    assert doc["sattrs"] == {"material": "Linen", "style": "Relaxed"}
    assert doc["vars"][0] == {
        "sku": "9a",
        "attrs": ["size=M", "colour=White"],
        "sattrs": {"fit": "Slim"},
    }
    assert doc["vattrs"] == ["size=M", "colour=White", "size=L"]
    assert {"linen", "shirt", "wren", "white", "slim", "relaxed", "men"} <= set(
        doc["keywords"]
    )
    assert summary_of(item=item, variants=variants, prices={}) is None


@pytest.mark.parametrize(
    ("department", "category"),
    [("Shoes", "Clothing/Women"), ("Shoes", "Shoes//Pumps"), ("Shoes", ""), ("", "/")],
)
def test_a_category_is_a_path_under_its_department(mongo_db, department, category):
    with pytest.raises(InvalidProduct):
        item_save(item_id="x", department=department, category=category, title="X")

    assert mongo_db.items.count_documents({}) == 0


@pytest.mark.parametrize(
    "amount", [Decimal("-1"), Decimal("1.001"), Decimal("NaN"), Decimal("1e9"), "abc"]
)
def test_absurd_prices_are_refused(small_catalog, amount):
    with pytest.raises(InvalidProduct):
        price_set(item_id="1", scope="online", amount=amount)

    assert small_catalog.prices.find_one({"_id": "1_online"})[
        "amount"
    ].to_decimal() == (Decimal("49.00"))


def test_a_sku_belongs_to_one_item_for_good(small_catalog):
    with pytest.raises(SkuTaken):
        variant_save(sku="1-6-red", item_id="2", attributes={"size": "6"})

    assert small_catalog.variants.find_one({"_id": "1-6-red"})["item_id"] == "1"


def test_writes_about_unknown_items_or_skus_are_refused(small_catalog):
    with pytest.raises(UnknownItem):
        variant_save(sku="new", item_id="nope", attributes={})
    with pytest.raises(UnknownItem):
        price_set(item_id="nope", scope="online", amount=Decimal("1"))
    with pytest.raises(UnknownSku):
        price_set(item_id="1", sku="2-6-black", scope="online", amount=Decimal("1"))
