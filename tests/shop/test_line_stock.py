"""The stock hold kept in its cart line (shop.kinds.line_stock), on its own:
each move's writes, a crash at every point between them (a real child
process exits there), and the recovery that finishes or undoes it, with
conservation (free + held + in flight + sold == received) asserted right
after the crash and after the recovery."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from catalog.errors import OutOfStock
from catalog.selectors.stock import stock_level
from catalog.services import counters
from shop import faults
from shop.cart_state import ACTIVE, COMPLETE, EXPIRED
from shop.documents import CartLine
from shop.kinds import PRODUCTS, line_stock
from shop.services.common import cart_document, carts
from tests.concurrency.cart_processes import run_until_crash
from tests.shop.factories import make_product

T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
SOON = T0 + timedelta(minutes=15)


def line(key: str, units: int) -> dict:
    son = CartLine(
        sku=key,
        item_id=f"item-{key}",
        name=key,
        quantity=units,
        unit_price=Decimal("10"),
    ).to_mongo()
    return son.to_dict()


def a_cart(cart_id: str = "c1", *lines: dict) -> str:
    _, son = cart_document(f"anon:{cart_id}", cart_id, T0, {"items": list(lines)})
    carts().insert_one(son)
    return cart_id


def conserved(*keys: str) -> dict[str, tuple[int, int, int]]:
    """(free, held, sold) per location; asserts free + held + sold ==
    received, ``held`` as ``line_stock.held_units`` counts it."""
    held = line_stock.held_units()
    found = {}
    for key in keys:
        level = stock_level(sku=key)
        assert level.free + held[key] + level.sold == level.received, key
        found[key] = (level.free, held[key], level.sold)
    return found


def add(cart_id: str, key: str, units: int):
    """The products kind's take, then its record of a new line (refused if
    the cart lists the location); a refusal gives the units back. (op, the
    cart after or None)."""
    taken = PRODUCTS.take(
        cart_id=cart_id, line=CartLine._from_son(line(key, units)), now=T0
    )
    cart = carts().find_one({"_id": cart_id})
    recorded = PRODUCTS.push(cart=cart, line=taken, now=T0)
    if recorded is None:
        PRODUCTS.untake(cart_id=cart_id, line=taken)
    return taken.applied[-1], recorded


def grow(cart_id: str, key: str, old: int, units: int):
    """The take of ``units`` more for the line read holding ``old``."""
    taken = PRODUCTS.take(
        cart_id=cart_id, line=CartLine._from_son(line(key, units)), now=T0
    )
    recorded = PRODUCTS.grow(cart_id=cart_id, line=taken, old=old, now=T0)
    if recorded is None:
        PRODUCTS.untake(cart_id=cart_id, line=taken)
    return taken.applied[-1], recorded


def remove(cart_id: str, key: str):
    """The line leaves the cart, its units back free (guarded on the line as
    read)."""
    cart = carts().find_one({"_id": cart_id})
    (found,) = [x for x in cart["items"] if x["sku"] == key]
    entry = line_stock.back_entry(
        key, free=found["quantity"], forget=found.get("applied") or [], now=T0
    )

    def write(push):
        query = {
            "_id": cart_id,
            "items": {"$elemMatch": {"sku": key, "quantity": found["quantity"]}},
        }
        update = {"$pull": {"items": {"sku": key}}, **push}
        return carts().update_one(query, update).modified_count

    return line_stock.give(cart_id=cart_id, entries=[entry], write=write)


def complete(cart_id: str):
    """Every line's units sold, in the write that completes the cart."""
    cart = carts().find_one({"_id": cart_id})
    entries = [
        line_stock.back_entry(
            x["sku"], sold=x["quantity"], forget=x.get("applied") or [], now=T0
        )
        for x in cart["items"]
    ]

    def write(push):
        query = {"_id": cart_id, "state": ACTIVE, "items": cart["items"]}
        update = {"$set": {"state": COMPLETE}, **push}
        return carts().update_one(query, update).modified_count

    return line_stock.give(cart_id=cart_id, entries=entries, write=write)


def test_a_take_moves_units_from_the_counter_into_the_line(mongo_db):
    make_product(sku="SHOE", stock=10)
    a_cart()

    op, recorded = add("c1", "SHOE", 3)

    assert recorded is not None
    (held,) = mongo_db.carts.find_one({"_id": "c1"})["items"]
    assert (held["quantity"], held["applied"]) == (3, [op])
    assert conserved("SHOE") == {"SHOE": (7, 3, 0)}


def test_a_take_the_cart_refuses_gives_the_units_straight_back(mongo_db):
    make_product(sku="SHOE", stock=10)
    a_cart("c1", line("SHOE", 1))

    op, recorded = add("c1", "SHOE", 3)  # the cart lists SHOE already

    assert op is not None and not recorded
    assert mongo_db.inventories.find_one({"_id": "SHOE"})["takes"] == []
    assert stock_level(sku="SHOE").free == 10


def test_a_take_the_counter_refuses_changes_nothing(mongo_db):
    make_product(sku="SHOE", stock=2)
    a_cart()

    with pytest.raises(OutOfStock):
        add("c1", "SHOE", 3)
    assert mongo_db.carts.find_one({"_id": "c1"})["items"] == []
    assert stock_level(sku="SHOE").free == 2


def test_a_grow_is_guarded_on_the_line_as_read(mongo_db):
    make_product(sku="SHOE", stock=10)
    a_cart()
    add("c1", "SHOE", 2)

    _, stale = grow("c1", "SHOE", 1, 2)  # read when it held 1
    _, fresh = grow("c1", "SHOE", 2, 2)

    assert (stale, fresh is not None) == (None, True)
    (held,) = mongo_db.carts.find_one({"_id": "c1"})["items"]
    assert (held["quantity"], len(held["applied"])) == (4, 2)
    assert conserved("SHOE") == {"SHOE": (6, 4, 0)}


def test_a_give_back_frees_the_units_once_and_leaves_nothing_in_flight(mongo_db):
    make_product(sku="SHOE", stock=10)
    a_cart()
    add("c1", "SHOE", 3)

    assert remove("c1", "SHOE")
    assert not remove_again_as_read(mongo_db)

    cart = mongo_db.carts.find_one({"_id": "c1"})
    assert (cart["items"], cart["stock_back"]) == ([], [])
    inv = mongo_db.inventories.find_one({"_id": "SHOE"})
    assert inv["takes"] == []  # the take's entry went with the line (forget)
    assert conserved("SHOE") == {"SHOE": (10, 0, 0)}


def remove_again_as_read(mongo_db) -> bool:
    """A second remove, with the line as it was read before the first."""
    entry = line_stock.back_entry("SHOE", free=3, now=T0)
    query = {"_id": "c1", "items": {"$elemMatch": {"sku": "SHOE", "quantity": 3}}}
    return line_stock.give(
        cart_id="c1",
        entries=[entry],
        write=lambda push: (
            mongo_db.carts.update_one(
                query, {"$pull": {"items": {"sku": "SHOE"}}, **push}
            ).modified_count
        ),
    )


def test_a_complete_sells_every_line_in_the_write_that_ends_the_cart(mongo_db):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    a_cart()
    add("c1", "SHOE", 2)
    add("c1", "HAT", 1)

    assert complete("c1")

    cart = mongo_db.carts.find_one({"_id": "c1"})
    assert (cart["state"], cart["stock_back"]) == (COMPLETE, [])
    assert conserved("SHOE", "HAT") == {"SHOE": (8, 0, 2), "HAT": (9, 0, 1)}


# --- A crash at each point, then the recovery -------------------------------------


def crash_at(point, work):
    faults.arm(point, "exit")
    work()


def setup_line():
    a_cart()
    add("c1", "SHOE", 2)
    add("c1", "HAT", 1)


# point: (set-up, the crashing work, (free, sold) of SHOE in the end)
SCENARIOS = {
    "stock.take.after_counter": (a_cart, lambda: add("c1", "SHOE", 3), (10, 0)),
    "stock.take.after_hold": (a_cart, lambda: add("c1", "SHOE", 3), (7, 0)),
    "stock.give.after_hold": (setup_line, lambda: remove("c1", "SHOE"), (10, 0)),
    "stock.give.after_counter": (setup_line, lambda: remove("c1", "SHOE"), (10, 0)),
    "stock.give.after_finish": (setup_line, lambda: complete("c1"), (8, 2)),
    "complete, stock.give.after_hold": (setup_line, lambda: complete("c1"), (8, 2)),
    "complete, stock.give.after_counter": (setup_line, lambda: complete("c1"), (8, 2)),
}


def left_behind(mongo_db) -> int:
    journal = sum(
        len(doc.get("takes") or []) + len(doc.get("gives") or [])
        for doc in mongo_db.inventories.find()
    )
    return journal + mongo_db.carts.count_documents({"stock_back.0": {"$exists": True}})


@pytest.mark.parametrize("case", sorted(SCENARIOS))
def test_a_crash_between_counter_and_cart_conserves_units_and_is_recovered(
    case, mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    setup, work, (free, sold) = SCENARIOS[case]
    setup()
    point = case.split(", ")[-1]

    code = run_until_crash(
        crash_at, (point, work), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    assert left_behind(mongo_db) >= 1
    conserved("SHOE", "HAT")  # the move in flight is counted where it is
    line_stock.recover(before=SOON)

    assert not any(doc.get("takes") for doc in mongo_db.inventories.find())
    assert mongo_db.carts.count_documents({"stock_back.0": {"$exists": True}}) == 0
    assert all(
        g.get("by") == counters.RECOVERY
        for doc in mongo_db.inventories.find()
        for g in doc.get("gives") or []
    )
    shoe = conserved("SHOE", "HAT")["SHOE"]
    assert (shoe[0], shoe[2]) == (free, sold)


def test_a_take_of_a_new_cart_s_first_line_is_fenced_by_a_tombstone(mongo_db):
    """The counter took units for a cart not inserted yet, and the writer
    stalled: the recovery inserts the cart as a tombstone fencing the move
    and gives the units back; the writer's late insert then fails."""
    from pymongo.errors import DuplicateKeyError

    make_product(sku="SHOE", stock=10)
    op = counters.take("SHOE", "SHOE|c9", 3, T0)

    line_stock.recover(before=SOON)

    assert stock_level(sku="SHOE").free == 10
    tomb = mongo_db.carts.find_one({"_id": "c9"})
    assert (tomb["state"], tomb["stock_void"], tomb["owner"]) == (EXPIRED, [op], "")
    _, son = cart_document(
        "anon:late", "c9", T0, {"items": [line_stock.new_line(line("SHOE", 3), op)]}
    )
    with pytest.raises(DuplicateKeyError):
        mongo_db.carts.insert_one(son)
    assert conserved("SHOE") == {"SHOE": (10, 0, 0)}


def test_a_take_recorded_just_before_the_fence_is_kept(mongo_db, monkeypatch):
    """The writer records its take between the recovery's read and its
    fence: the re-read after the fence sees it, and the units stay held."""
    make_product(sku="SHOE", stock=10)
    a_cart()
    op = counters.take("SHOE", "SHOE|c1", 3, T0)
    fence = line_stock._fence_take

    def record_then_fence(cart_id, op_, at):
        guard, update = line_stock.pushed(line("SHOE", 3), op)
        carts().update_one({"_id": "c1", **guard}, update)
        fence(cart_id, op_, at)

    monkeypatch.setattr(line_stock, "_fence_take", record_then_fence)
    line_stock.recover(before=SOON)

    assert conserved("SHOE") == {"SHOE": (7, 3, 0)}
    assert mongo_db.inventories.find_one({"_id": "SHOE"})["takes"] == []


def test_a_fenced_take_cannot_be_recorded_late(mongo_db):
    make_product(sku="SHOE", stock=10)
    a_cart()
    op = counters.take("SHOE", "SHOE|c1", 3, T0)

    line_stock.recover(before=SOON)
    guard, update = line_stock.pushed(line("SHOE", 3), op)
    late = carts().update_one({"_id": "c1", "state": ACTIVE, **guard}, update)

    assert late.modified_count == 0
    assert conserved("SHOE") == {"SHOE": (10, 0, 0)}


def test_a_give_back_whose_writer_resumes_after_the_recovery_counts_once(mongo_db):
    """The writer stalls after its cart write; the recovery fences the
    counter and applies the units; the writer's late step 2 is refused and
    it leaves the entry alone."""
    make_product(sku="SHOE", stock=10)
    a_cart()
    add("c1", "SHOE", 3)
    cart = mongo_db.carts.find_one({"_id": "c1"})
    (held,) = cart["items"]
    entry = line_stock.back_entry("SHOE", free=3, forget=held["applied"], now=T0)
    mongo_db.carts.update_one(
        {"_id": "c1"},
        {"$pull": {"items": {"sku": "SHOE"}}, "$push": {"stock_back": entry}},
    )

    line_stock.recover(before=SOON)
    late = counters.give(
        [("SHOE", "SHOE|c1", line_stock._counted(entry), entry["forget"])]
    )

    assert late == []
    assert conserved("SHOE") == {"SHOE": (10, 0, 0)}


# --- A login's transfer -----------------------------------------------------------


def move(source: str, target: str, key: str = "SHOE"):
    """The source's line of ``key`` handed to the target (which lists none)."""
    cart = carts().find_one({"_id": source})
    (found,) = [x for x in cart["items"] if x["sku"] == key]
    units = found["quantity"]

    def unlist(push):
        query = {
            "_id": source,
            "items": {"$elemMatch": {"sku": key, "quantity": units}},
        }
        update = line_stock.merged({"$pull": {"items": {"sku": key}}}, push)
        return carts().update_one(query, update).modified_count

    def record(op, moved_in):
        guard, update = line_stock.pushed(line(key, units), op)
        query = {"_id": target, "state": ACTIVE, **guard}
        return (
            carts()
            .update_one(query, line_stock.merged(update, moved_in))
            .modified_count
        )

    return line_stock.transfer(
        key=key,
        source_id=source,
        target_id=target,
        units=units,
        applied=found.get("applied") or [],
        unlist=unlist,
        record=record,
        now=T0,
    )


def setup_two_carts():
    a_cart("anon")
    add("anon", "SHOE", 3)
    a_cart("account")


def test_a_transfer_hands_the_units_over_with_nothing_free_between(mongo_db):
    make_product(sku="SHOE", stock=10)
    setup_two_carts()

    assert move("anon", "account")

    anon, account = (mongo_db.carts.find_one({"_id": c}) for c in ("anon", "account"))
    assert (anon["items"], anon["stock_back"]) == ([], [])
    assert [x["quantity"] for x in account["items"]] == [3]
    assert account["moved_in"] == []
    assert mongo_db.inventories.find_one({"_id": "SHOE"})["takes"] == []
    assert conserved("SHOE") == {"SHOE": (7, 3, 0)}


def test_a_transfer_the_target_refuses_frees_the_units(mongo_db):
    make_product(sku="SHOE", stock=10)
    setup_two_carts()
    mongo_db.carts.update_one({"_id": "account"}, {"$set": {"state": COMPLETE}})

    assert not move("anon", "account")

    anon = mongo_db.carts.find_one({"_id": "anon"})
    assert (anon["items"], anon["stock_back"]) == ([], [])
    assert conserved("SHOE") == {"SHOE": (10, 0, 0)}


# point: SHOE's (free, held) once recovered
TRANSFER_CRASHES = {
    "stock.transfer.after_source": (10, 0),  # the target is fenced, units free
    "stock.transfer.after_target": (7, 3),  # the target has them
    "stock.transfer.after_finish": (7, 3),
}


@pytest.mark.parametrize("point", sorted(TRANSFER_CRASHES))
def test_a_crash_in_a_transfer_conserves_units_and_is_recovered(
    point, mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    setup_two_carts()

    code = run_until_crash(
        crash_at,
        (point, lambda: move("anon", "account")),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )

    assert code == faults.EXIT_CODE
    conserved("SHOE")
    line_stock.recover(before=SOON)

    free, held, _ = conserved("SHOE")["SHOE"]
    assert (free, held) == TRANSFER_CRASHES[point]
    for doc in mongo_db.carts.find():
        assert (doc.get("stock_back") or [], doc.get("moved_in") or []) == ([], [])


def test_a_transfer_whose_target_gave_the_units_back_before_the_recovery(
    mongo_uri, mongo_db
):
    """A login stops after the target recorded the units; the account then
    removes the line (its units go free). The target's ``moved_in`` still
    proves the transfer applied: the recovery finishes the source and
    never frees the units a second time."""
    make_product(sku="SHOE", stock=10)
    setup_two_carts()
    code = run_until_crash(
        crash_at,
        ("stock.transfer.after_target", lambda: move("anon", "account")),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    assert remove("account", "SHOE")

    line_stock.recover(before=SOON)

    assert conserved("SHOE") == {"SHOE": (10, 0, 0)}
    for doc in mongo_db.carts.find():
        assert (doc.get("stock_back") or [], doc.get("moved_in") or []) == ([], [])
