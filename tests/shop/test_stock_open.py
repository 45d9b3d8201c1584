"""Opening online stock in bulk (the demo's path) keeps the ledger's books."""

import pytest

from catalog.errors import InvalidQuantity
from catalog.selectors.stock import stock_level
from catalog.services.stock import stock_open
from tests.stock import hold, stock_problems


def test_stock_open_creates_inventories_with_their_ledger_entries(mongo_db):
    opened = stock_open(quantities={"A1": 5, "B2": 40})

    assert opened == 2
    assert stock_level(sku="A1").free == 5
    assert stock_level(sku="B2").received == 40
    assert mongo_db.stock_ledger.count_documents({"pending": True}) == 0
    assert stock_problems() == []


def test_stock_open_twice_leaves_existing_stock_and_its_holds_alone(mongo_db):
    stock_open(quantities={"A1": 5})
    hold("A1", "cart-1", 2)

    opened = stock_open(quantities={"A1": 50, "C3": 7})

    assert opened == 1
    level = stock_level(sku="A1")
    assert (level.free, level.held, level.received) == (3, 2, 5)
    assert stock_level(sku="C3").free == 7
    assert stock_problems() == []


@pytest.mark.parametrize("bad", [0, -3, "ten", 2.5, None])
def test_stock_open_refuses_a_bad_quantity_before_writing(mongo_db, bad):
    with pytest.raises(InvalidQuantity):
        stock_open(quantities={"A1": 5, "B2": bad})

    assert mongo_db.inventories.count_documents({}) == 0
