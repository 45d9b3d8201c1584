"""A small catalog, built through the catalog's own services.

Small enough that every facet count in the tests can be worked out by hand:

| item | category             | brand      | price  | rating | variants (size colour) |
| ---- | -------------------- | ---------- | ------ | ------ | ---------------------- |
| 1    | Shoes/Women/Pumps    | Aurelia    | 49.00  | 4.5    | 6 red, 7 red, 7 black  |
| 2    | Shoes/Women/Boots    | Brixton    | 120.00 | 4.0    | 6 black, 8 tan         |
| 3    | Shoes/Women/Pumps    | Aurelia    | 30.00  | 3.5    | 6 black, 7 red         |
| 4    | Shoes/Men/Sneakers   | Northfield | 75.00  | 4.8    | 8 red, 9 black         |
| 5    | Shoes/Men/Loafers    | Brixton    | 95.00  | 4.1    | 9 tan, 10 black        |
| 6    | Clothing/Women/Coats | Aurelia    | 180.00 | 4.6    | M black, L navy        |
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from catalog.documents import Address
from catalog.services.products import item_save, price_set, variant_save
from catalog.services.stores import store_save

ITEMS = [
    ("1", "Shoes/Women/Pumps", "Evening Platform Pumps", "Aurelia", "49.00", 4.5,
     [("6", "red"), ("7", "red"), ("7", "black")]),
    ("2", "Shoes/Women/Boots", "Suede Ankle Boots", "Brixton", "120.00", 4.0,
     [("6", "black"), ("8", "tan")]),
    ("3", "Shoes/Women/Pumps", "Classic Court Pumps", "Aurelia", "30.00", 3.5,
     [("6", "black"), ("7", "red")]),
    ("4", "Shoes/Men/Sneakers", "Trail Runner", "Northfield", "75.00", 4.8,
     [("8", "red"), ("9", "black")]),
    ("5", "Shoes/Men/Loafers", "Leather Loafers", "Brixton", "95.00", 4.1,
     [("9", "tan"), ("10", "black")]),
    ("6", "Clothing/Women/Coats", "Wool Coat", "Aurelia", "180.00", 4.6,
     [("M", "black"), ("L", "navy")]),
]  # fmt: skip

START = datetime(2024, 1, 1, tzinfo=UTC)


def sku_of(item_id: str, size: str, colour: str) -> str:
    return f"{item_id}-{size}-{colour}"


def add_item(item_id, category, title, brand, price, rating, variants, **extra):
    if "created_at" not in extra:
        extra["created_at"] = START + timedelta(days=int(item_id))
    item_save(
        item_id=item_id,
        department=category.split("/")[0],
        category=category,
        title=title,
        brand=brand,
        rating=rating,
        **extra,
    )
    for size, colour in variants:
        variant_save(
            sku=sku_of(item_id, size, colour),
            item_id=item_id,
            attributes={"size": size, "colour": colour},
        )
    price_set(item_id=item_id, scope="online", amount=Decimal(price))


@pytest.fixture
def small_catalog(mongo_db):
    for row in ITEMS:
        add_item(*row)
    return mongo_db


# Stores: three around Leeds and one in London, two store groups.
STORES = [
    ("leeds", "Leeds Briggate", "sg-north", -1.5437, 53.7997, "LS1 6HD", "Leeds"),
    ("bradford", "Bradford Centre", "sg-north", -1.752, 53.793, "BD1 1US", "Bradford"),
    ("york", "York Coney Street", "sg-north", -1.0843, 53.959, "YO1 9QL", "York"),
    ("london", "London Oxford St", "sg-south", -0.141, 51.515, "W1D 1BS", "London"),
]  # fmt: skip


@pytest.fixture
def stores(mongo_db):
    for store_id, name, group, lng, lat, zip_code, city in STORES:
        store_save(
            store_id=store_id,
            name=name,
            group=group,
            lng=lng,
            lat=lat,
            region=group.removeprefix("sg-"),
            address=Address(line1="1 High St", city=city, zip=zip_code, country="GB"),
        )
    return mongo_db
