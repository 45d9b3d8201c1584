"""manage.py stock_holds_migrate: reservations inside inventories -> hold documents."""

from datetime import UTC, datetime

from django.core.management import call_command

from catalog.selectors.stock import stock_hold, stock_level, stock_problems
from catalog.services.stock import stock_holds_migrate, stock_release
from tests.shop.factories import make_product

T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


def old_shape(mongo_db, sku, entries, free):
    """An inventory as the previous version left it: the entries inside it."""
    mongo_db.inventories.update_one(
        {"_id": sku},
        {
            "$set": {
                "quantity": free,
                "reservations": [
                    {"cart_id": cart_id, "quantity": q, "at": T0}
                    for cart_id, q in entries
                ],
            }
        },
    )
    mongo_db.inventories.create_index("reservations.cart_id")


def test_the_old_shape_is_converted_once_and_holds_work_after(mongo_db, capsys):
    make_product(sku="A", stock=10)
    make_product(sku="B", stock=5)
    old_shape(mongo_db, "A", [("cart-1", 2), ("cart-2", 3)], free=5)
    old_shape(mongo_db, "B", [], free=5)

    call_command("stock_holds_migrate")
    call_command("mongo_setup")  # drops the old shape's index (serve runs both)

    assert "2 reservations moved" in capsys.readouterr().out
    for doc in mongo_db.inventories.find():
        assert "reservations" not in doc
    assert "reservations.cart_id_1" not in mongo_db.inventories.index_information()
    assert stock_hold(sku="A", cart_id="cart-2").quantity == 3
    level = stock_level(sku="A")
    assert (level.free, level.held, level.holders) == (5, 5, 2)
    assert stock_problems() == []
    # A second run finds nothing to do and changes nothing.
    assert stock_holds_migrate() == (0, 0)
    assert stock_level(sku="A") == level
    # The converted holds are ordinary holds.
    assert stock_release(sku="A", cart_id="cart-1") == 2
    assert stock_level(sku="A").free == 7


def test_a_run_stopped_between_insert_and_pull_is_finished_by_the_next(mongo_db):
    make_product(sku="A", stock=10)
    old_shape(mongo_db, "A", [("cart-1", 4)], free=6)
    # What a crash after the hold's insert leaves: both sides present.
    mongo_db.stock_holds.insert_one(
        {"_id": "A|cart-1", "sku": "A", "cart_id": "cart-1", "quantity": 4, "at": T0}
    )

    assert stock_holds_migrate() == (1, 1)

    level = stock_level(sku="A")
    assert (level.free, level.held) == (6, 4)
    assert stock_problems() == []
