"""manage.py stock_lines_migrate: what an earlier version held outside the
carts (hold documents, or reservation entries inside inventories), with its
moves left in flight, moved into the carts' lines; conservation holds after,
and a second run changes nothing."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.core.management import call_command

from catalog.selectors.stock import stock_level
from shop.documents import CartLine
from shop.kinds import line_stock
from shop.services.common import cart_document, carts
from shop.services.stock_lines_migrate import stock_lines_migrate
from tests.shop.factories import make_product
from tests.stock import held_by, hold, stock_problems

T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


def old_line(key: str, units: int) -> dict:
    """A line as an earlier version wrote it: no ``applied``."""
    son = CartLine(
        sku=key, item_id=f"item-{key}", name=key, quantity=units, unit_price=Decimal(10)
    ).to_mongo()
    son = son.to_dict()
    son.pop("applied", None)
    return son


def cart_listing(cart_id: str, **lines: int) -> None:
    _, son = cart_document(
        f"anon:{cart_id}",
        cart_id,
        T0,
        {"items": [old_line(k, n) for k, n in lines.items()]},
    )
    carts().insert_one(son)


def held_outside(mongo_db, key: str, units: int) -> None:
    """The counter as an earlier version left it: ``units`` not free."""
    mongo_db.inventories.update_one({"_id": key}, {"$inc": {"quantity": -units}})


def old_hold(mongo_db, key: str, cart_id: str, units: int, **fields) -> None:
    mongo_db.stock_holds.insert_one(
        {
            "_id": f"{key}|{cart_id}",
            "sku": key,
            "cart_id": cart_id,
            "quantity": units,
            "at": T0,
            "applied": [],
            **fields,
        }
    )


def levels(*keys):
    return {k: (stock_level(sku=k).free, stock_level(sku=k).sold) for k in keys}


def test_a_hold_meets_its_line_and_the_document_goes(mongo_db):
    make_product(sku="SHOE", stock=10)
    cart_listing("c1", SHOE=2)
    held_outside(mongo_db, "SHOE", 2)
    old_hold(mongo_db, "SHOE", "c1", 2, applied=["t1"])
    mongo_db.inventories.update_one(
        {"_id": "SHOE"},
        {"$push": {"takes": {"op": "t1", "hold": "SHOE|c1", "units": 2, "at": T0}}},
    )

    call_command("stock_lines_migrate", verbosity=0)

    (line,) = mongo_db.carts.find_one({"_id": "c1"})["items"]
    assert (line["quantity"], line["applied"]) == (2, [])
    assert mongo_db.inventories.find_one({"_id": "SHOE"})["takes"] == []
    assert "stock_holds" not in mongo_db.list_collection_names()
    assert levels("SHOE") == {"SHOE": (8, 0)}
    assert stock_problems() == []


def test_a_hold_beyond_its_line_frees_the_surplus_and_one_short_shrinks_it(mongo_db):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_listing("c1", SHOE=2, HAT=3)
    held_outside(mongo_db, "SHOE", 3)
    held_outside(mongo_db, "HAT", 1)
    old_hold(mongo_db, "SHOE", "c1", 3)
    old_hold(mongo_db, "HAT", "c1", 1)

    assert stock_lines_migrate(now=T0) == (2, 1)

    assert (held_by("c1", "SHOE"), held_by("c1", "HAT")) == (2, 1)
    assert levels("SHOE", "HAT") == {"SHOE": (8, 0), "HAT": (9, 0)}
    assert stock_problems() == []


def test_a_hold_no_live_cart_lists_goes_free(mongo_db):
    make_product(sku="SHOE", stock=10)
    cart_listing("ended", SHOE=2)
    mongo_db.carts.update_one({"_id": "ended"}, {"$set": {"state": "expired"}})
    held_outside(mongo_db, "SHOE", 5)
    old_hold(mongo_db, "SHOE", "gone", 3)
    old_hold(mongo_db, "SHOE", "ended", 2)

    stock_lines_migrate(now=T0)

    assert levels("SHOE") == {"SHOE": (10, 0)}
    assert stock_problems() == []


def test_moves_left_in_flight_are_settled_once(mongo_db):
    """A give-back the counter never applied (sold units of a checkout), a
    transfer its target never recorded: settled by the migration; a take
    for a hold never written: the reconciler's, as any take no cart lists."""
    make_product(sku="SHOE", stock=10)
    cart_listing("c1", SHOE=1)
    held_outside(mongo_db, "SHOE", 1 + 2 + 3 + 4)
    back = {"op": "g1", "free": 0, "sold": 2, "at": T0}
    move = {"op": "m1", "moved": 3, "to": "c2", "at": T0}
    old_hold(mongo_db, "SHOE", "c1", 1, back=[back, move])
    mongo_db.inventories.update_one(
        {"_id": "SHOE"},
        {"$push": {"takes": {"op": "t9", "hold": "SHOE|c3", "units": 4, "at": T0}}},
    )

    stock_lines_migrate(now=T0)
    stock_lines_migrate(now=T0)

    assert held_by("c1", "SHOE") == 1
    assert levels("SHOE") == {"SHOE": (3, 2)}  # the take still in flight
    assert stock_problems() == []
    line_stock.recover(before=T0 + timedelta(minutes=5))
    assert levels("SHOE") == {"SHOE": (7, 2)}
    assert stock_problems() == []


def test_a_line_no_hold_met_takes_its_units_or_goes(mongo_db):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=1)
    cart_listing("c1", SHOE=2, HAT=3)

    stock_lines_migrate(now=T0)

    cart = mongo_db.carts.find_one({"_id": "c1"})
    assert [(x["sku"], x["quantity"]) for x in cart["items"]] == [("SHOE", 2)]
    assert len(cart["items"][0]["applied"]) == 1
    assert levels("SHOE", "HAT") == {"SHOE": (8, 0), "HAT": (1, 0)}
    assert stock_problems() == []


def test_reservations_inside_an_inventory_move_into_the_lines(mongo_db):
    make_product(sku="SHOE", stock=10)
    cart_listing("c1", SHOE=2)
    held_outside(mongo_db, "SHOE", 5)
    mongo_db.inventories.update_one(
        {"_id": "SHOE"},
        {
            "$set": {
                "reservations": [
                    {"cart_id": "c1", "quantity": 2, "at": T0},
                    {"cart_id": "gone", "quantity": 3, "at": T0},
                ]
            }
        },
    )

    assert stock_lines_migrate(now=T0) == (2, 3)

    assert mongo_db.inventories.find_one({"_id": "SHOE"})["reservations"] == []
    assert held_by("c1", "SHOE") == 2
    assert levels("SHOE") == {"SHOE": (8, 0)}
    assert stock_problems() == []


def test_a_second_run_finds_nothing_to_do(mongo_db):
    make_product(sku="SHOE", stock=10)
    cart_listing("c1", SHOE=2)
    held_outside(mongo_db, "SHOE", 3)
    old_hold(mongo_db, "SHOE", "c1", 3)

    assert stock_lines_migrate(now=T0) == (1, 1)
    assert stock_lines_migrate(now=T0) == (0, 0)

    assert levels("SHOE") == {"SHOE": (8, 0)}
    assert stock_problems() == []


def test_on_a_current_database_it_changes_nothing(mongo_db):
    """``serve`` runs it at every start: a take a line records, whose
    counter entry waits for its process's next write (lost with the
    process), stays the line's; the reconciler drops the entry later."""
    make_product(sku="SHOE", stock=10)
    hold("SHOE", "c1", 2, T0)
    assert mongo_db.inventories.find_one({"_id": "SHOE"})["takes"]

    assert stock_lines_migrate(now=T0) == (0, 0)

    assert held_by("c1", "SHOE") == 2
    assert levels("SHOE") == {"SHOE": (8, 0)}
    assert stock_problems() == []
