"""manage.py store_stock_migrate: the old per-store-and-item counts -> the
stores' stock locations, which click & collect reserves."""

from django.core.management import call_command

from catalog.selectors.stock import stock_level
from catalog.selectors.stores import stores_near_with_stock
from catalog.services.store_stock import (
    store_stock_migrate,
    store_stock_set,
    store_stocks_open,
)
from tests.catalog.conftest import sku_of
from tests.stock import hold, stock_problems

RED_6, RED_7 = sku_of("1", "6", "red"), sku_of("1", "7", "red")
BOOTS = sku_of("2", "6", "black")
LEEDS = (-1.5437, 53.7997)


def old_shape(mongo_db, store_id, item_id, counts):
    """A store's stock as the previous version kept it: one document per
    store and item, its variants' counts inside."""
    mongo_db.store_stock.insert_one(
        {
            "_id": f"{store_id}|{item_id}",
            "store_id": store_id,
            "item_id": item_id,
            "location": {"type": "Point", "coordinates": list(LEEDS)},
            "vars": [{"sku": sku, "quantity": q} for sku, q in counts.items()],
        }
    )


def test_old_counts_become_store_locations_once(small_catalog, stores, capsys):
    old_shape(small_catalog, "leeds", "1", {RED_6: 4, RED_7: 0})
    old_shape(small_catalog, "york", "1", {RED_6: 2})
    old_shape(small_catalog, "leeds", "2", {BOOTS: 7})

    call_command("store_stock_migrate")

    assert "3 store stock documents converted" in capsys.readouterr().out
    assert small_catalog.store_stock.count_documents({}) == 0
    level = stock_level(sku=f"{RED_6}@leeds")
    assert (level.free, level.received, level.sold) == (4, 4, 0)
    # A zero count stays a location the store stocks, with nothing in it.
    assert stock_level(sku=f"{RED_7}@leeds").received == 0
    assert stock_level(sku=f"{BOOTS}@leeds").free == 7
    assert small_catalog.stock_ledger.count_documents({}) == 3
    assert stock_problems() == []
    # The nearest-store lookup and a collect reservation read the new home.
    near = stores_near_with_stock(sku=RED_6, lng=LEEDS[0], lat=LEEDS[1])
    assert [(s.store_id, s.quantity) for s in near] == [("leeds", 4), ("york", 2)]
    hold(f"{RED_6}@york", "c1", 2)
    assert stock_level(sku=f"{RED_6}@york").free == 0

    assert store_stock_migrate() == (0, 0)
    assert stock_level(sku=f"{RED_6}@york").held == 2
    assert stock_problems() == []


def test_a_run_stopped_after_opening_is_finished_without_counting_twice(
    small_catalog, stores
):
    old_shape(small_catalog, "leeds", "1", {RED_6: 4})
    # A run that crashed after opening the locations, before deleting.
    store_stocks_open(counts={("leeds", RED_6): 4}, items={RED_6: "1"})

    assert store_stock_migrate() == (1, 0)

    assert stock_level(sku=f"{RED_6}@leeds").received == 4
    assert small_catalog.store_stock.count_documents({}) == 0
    assert stock_problems() == []


def test_a_location_written_since_keeps_its_own_count(small_catalog, stores):
    store_stock_set(store_id="leeds", sku=RED_6, quantity=9)
    old_shape(small_catalog, "leeds", "1", {RED_6: 4, RED_7: 1})

    store_stock_migrate()

    assert stock_level(sku=f"{RED_6}@leeds").free == 9
    assert stock_level(sku=f"{RED_7}@leeds").free == 1
    assert stock_problems() == []


def test_convert_data_converts_an_upgraded_database_quietly(
    small_catalog, stores, capsys
):
    # What ``serve`` runs before any worker starts.
    old_shape(small_catalog, "leeds", "1", {RED_6: 4})

    call_command("convert_data", verbosity=0)
    call_command("convert_data", verbosity=0)  # a current database: nothing

    assert capsys.readouterr().out == ""
    assert stock_level(sku=f"{RED_6}@leeds").free == 4
    assert small_catalog.stock_ledger.count_documents({}) == 1
    assert stock_problems() == []
