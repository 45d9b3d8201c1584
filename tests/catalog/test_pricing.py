"""Which price applies: the most specific of five scopes, one $in query;
and the price a cart add takes, read at most CART_PRICE_SECONDS ago."""

import time
from decimal import Decimal

import pytest
from bson import Decimal128
from pymongo import monitoring

from catalog.errors import NotForSale, UnknownSku, UnknownStore
from catalog.selectors import pricing
from catalog.selectors.pricing import price_for, sellable
from catalog.services.products import item_save, price_clear, price_set, variant_save

ITEM, SKU, OTHER_SKU = "30671", "93284847362823", "93284847362830"


@pytest.fixture
def pumps(stores):
    item_save(
        item_id=ITEM,
        department="Shoes",
        category="Shoes/Women/Pumps",
        title="Evening Platform Pumps",
        brand="Aurelia",
    )
    variant_save(sku=SKU, item_id=ITEM, attributes={"size": "6", "colour": "red"})
    variant_save(sku=OTHER_SKU, item_id=ITEM, attributes={"size": "7", "colour": "red"})
    # Every scope priced, each with its own amount; tests remove the more
    # specific ones to see the next one win.
    for key, scope, amount in [
        (SKU, "leeds", "101.00"),
        (SKU, "sg-north", "102.00"),
        (None, "leeds", "103.00"),
        (None, "sg-north", "104.00"),
        (SKU, "online", "105.00"),
        (None, "online", "106.00"),
    ]:
        price_set(item_id=ITEM, sku=key, scope=scope, amount=Decimal(amount))


def test_variant_store_price_wins_over_every_other(pumps):
    assert price_for(item_id=ITEM, sku=SKU, store_id="leeds") == Decimal("101.00")


def test_variant_group_price_applies_without_a_variant_store_price(pumps):
    price_clear(item_id=ITEM, sku=SKU, scope="leeds")

    assert price_for(item_id=ITEM, sku=SKU, store_id="leeds") == Decimal("102.00")
    # Bradford is in the same group and has no price of its own.
    assert price_for(item_id=ITEM, sku=SKU, store_id="bradford") == Decimal("102.00")


def test_item_store_price_applies_without_variant_prices_in_store_or_group(pumps):
    price_clear(item_id=ITEM, sku=SKU, scope="leeds")
    price_clear(item_id=ITEM, sku=SKU, scope="sg-north")

    assert price_for(item_id=ITEM, sku=SKU, store_id="leeds") == Decimal("103.00")
    # A SKU with no prices of its own takes the item's store price too.
    assert price_for(item_id=ITEM, sku=OTHER_SKU, store_id="leeds") == Decimal("103.00")


def test_item_group_price_applies_in_every_store_of_the_group(pumps):
    price_clear(item_id=ITEM, sku=SKU, scope="leeds")
    price_clear(item_id=ITEM, sku=SKU, scope="sg-north")
    price_clear(item_id=ITEM, scope="leeds")

    assert price_for(item_id=ITEM, sku=SKU, store_id="leeds") == Decimal("104.00")
    assert price_for(item_id=ITEM, sku=SKU, store_id="york") == Decimal("104.00")


def test_online_default_applies_outside_any_priced_store(pumps):
    # London's group (sg-south) has no prices: the online ones apply, the
    # variant's own before the item's.
    assert price_for(item_id=ITEM, sku=SKU, store_id="london") == Decimal("105.00")
    other = price_for(item_id=ITEM, sku=OTHER_SKU, store_id="london")
    assert other == Decimal("106.00")
    assert price_for(item_id=ITEM, sku=SKU) == Decimal("105.00")
    assert price_for(item_id=ITEM) == Decimal("106.00")


def test_no_price_at_all_means_not_for_sale(pumps):
    for key, scope in [
        (SKU, "leeds"),
        (SKU, "sg-north"),
        (None, "leeds"),
        (None, "sg-north"),
        (SKU, "online"),
        (None, "online"),
    ]:
        price_clear(item_id=ITEM, sku=key, scope=scope)

    assert price_for(item_id=ITEM, sku=SKU, store_id="leeds") is None
    with pytest.raises(NotForSale):
        sellable(sku=SKU, store_id="leeds")


def test_sellable_records_the_store_price_and_the_variant_name(pumps):
    line = sellable(sku=SKU, store_id="leeds")

    assert line.unit_price == Decimal("101.00")
    assert line.name == "Evening Platform Pumps (6 / red)"
    assert line.item_id == ITEM


def test_prices_are_stored_as_decimal128_never_float(pumps, mongo_db):
    stored = mongo_db.prices.find_one({"_id": f"{SKU}_leeds"})

    assert stored["amount"].to_decimal() == Decimal("101.00")
    assert type(stored["amount"]).__name__ == "Decimal128"


def test_unknown_store_and_sku_are_refused(pumps):
    with pytest.raises(UnknownStore):
        price_for(item_id=ITEM, sku=SKU, store_id="atlantis")
    with pytest.raises(UnknownSku):
        sellable(sku="no-such-sku")
    with pytest.raises(UnknownStore):
        price_set(item_id=ITEM, scope="atlantis", amount=Decimal("1.00"))


def test_an_add_keeps_the_names_longer_than_the_price(pumps, mongo_db):
    """``sellable`` keeps a SKU's names per process (NAMES_TTL) and its
    price for a minute (CART_PRICE_SECONDS): a price set here applies to
    the next add, a new title only once the cached names run out."""
    first = sellable(sku=SKU)
    price_set(item_id=ITEM, sku=SKU, scope="online", amount=Decimal("99.00"))
    mongo_db.items.update_one({"_id": ITEM}, {"$set": {"title": "Renamed"}})

    again = sellable(sku=SKU)

    assert (first.unit_price, again.unit_price) == (Decimal("105.00"), Decimal("99.00"))
    assert again.name == first.name == "Evening Platform Pumps (6 / red)"


def test_names_warm_reads_a_sale_s_products_in_two_queries(pumps, mongo_db):
    assert pricing.names_warm([SKU, OTHER_SKU, "NO-SUCH-SKU"]) == 2
    mongo_db.variants.delete_one({"_id": OTHER_SKU})

    # Cached: the variant deleted since is still named (for NAMES_TTL).
    assert sellable(sku=OTHER_SKU).name == "Evening Platform Pumps (7 / red)"
    with pytest.raises(UnknownSku):
        sellable(sku="NO-SUCH-SKU")


class CommandsOn(monitoring.CommandListener):
    """How many commands the code under test sends to one collection."""

    def __init__(self, collection: str):
        self.collection, self.count = collection, 0

    def started(self, event):
        if event.command.get(event.command_name) == self.collection:
            self.count += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_a_cart_add_takes_a_price_read_moments_ago(pumps, listen):
    """A process reads a SKU's price once per CART_PRICE_SECONDS, not once
    per add."""
    assert sellable(sku=SKU).unit_price == Decimal("105.00")
    reads = listen(CommandsOn("prices"))

    assert sellable(sku=SKU).unit_price == Decimal("105.00")
    assert sellable(sku=SKU).unit_price == Decimal("105.00")

    assert reads.count == 0


def test_a_price_changed_in_this_process_reaches_the_next_add_at_once(pumps):
    assert sellable(sku=SKU).unit_price == Decimal("105.00")

    price_set(item_id=ITEM, sku=SKU, scope="online", amount=Decimal("120.00"))
    assert sellable(sku=SKU).unit_price == Decimal("120.00")

    price_clear(item_id=ITEM, sku=SKU, scope="online")
    assert sellable(sku=SKU).unit_price == Decimal("106.00")


def test_a_price_changed_by_another_process_reaches_adds_within_the_setting(
    pumps, mongo_db, monkeypatch, settings
):
    assert sellable(sku=SKU).unit_price == Decimal("105.00")
    # Another process (a staff worker) changes the price.
    mongo_db.prices.update_one(
        {"_id": f"{SKU}_online"}, {"$set": {"amount": Decimal128("130.00")}}
    )

    # An add moments later may still take the price it read: checkout
    # re-prices (tests/shop/test_checkout_services.py), and what is shown
    # as the price of the SKU is read afresh.
    assert sellable(sku=SKU).unit_price == Decimal("105.00")
    assert price_for(item_id=ITEM, sku=SKU) == Decimal("130.00")

    later = time.monotonic() + settings.CART_PRICE_SECONDS
    monkeypatch.setattr(pricing.time, "monotonic", lambda: later)
    assert sellable(sku=SKU).unit_price == Decimal("130.00")


def test_recent_prices_are_kept_per_store(pumps):
    """The cache is keyed by the prices that could apply, so a store's
    price and the online one never stand in for each other."""
    assert sellable(sku=SKU).unit_price == Decimal("105.00")
    assert sellable(sku=SKU, store_id="leeds").unit_price == Decimal("101.00")
    assert sellable(sku=SKU, store_id="bradford").unit_price == Decimal("102.00")
    assert sellable(sku=SKU).unit_price == Decimal("105.00")


def test_a_shop_may_have_every_add_read_the_price(pumps, mongo_db, settings):
    settings.CART_PRICE_SECONDS = 0
    assert sellable(sku=SKU).unit_price == Decimal("105.00")
    mongo_db.prices.update_one(
        {"_id": f"{SKU}_online"}, {"$set": {"amount": Decimal128("130.00")}}
    )

    assert sellable(sku=SKU).unit_price == Decimal("130.00")
