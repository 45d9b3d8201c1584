"""Crash injection between the counter and the cart of a stock move
(catalog.faults, at the steps of shop.kinds.line_stock).

A move of units is a write on the counter (``Inventory``) and one on the
cart (its line, or its ``stock_back``). For every point between them, a real
child process runs the real shop service and ``os._exit``s there. Right after the
crash conservation already holds (the move in flight is counted where it
is); then the reconciler and the expiry job run and every invariant must
hold, nothing left in flight, every unit back on the shelf or sold.
"""

import pytest

from catalog import faults as stock_faults
from catalog.documents import hold_id
from catalog.selectors.stock import stock_level
from catalog.services import counters
from catalog.services.counters import RECOVERY
from shop import faults
from shop.kinds import line_stock
from shop.selectors.invariants import invariant_problems
from shop.services.carts import (
    cart_add_item,
    cart_merge,
    cart_remove_item,
    cart_set_quantity,
)
from shop.services.checkout import cart_checkout
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile
from tests.concurrency.cart_processes import run_until_crash
from tests.concurrency.test_crash_recovery import (
    ACCOUNT,
    ALICE,
    MUCH_LATER,
    SOON,
    T0,
    crash_at,
    setup_anonymous_and_account,
    setup_cart,
)
from tests.concurrency.test_crash_recovery import _checkout as checkout
from tests.shop.factories import SHIPPING, card, make_product
from tests.stock import stock_problems

pytestmark = pytest.mark.concurrency

# point: (set-up returning an argument, the crashing work, units sold in the end)
SCENARIOS = {
    "stock.take.after_counter": (
        lambda: None,
        lambda _: cart_add_item(owner=ALICE, sku="SHOE", quantity=3, now=T0),
        0,
    ),
    "stock.take.after_hold": (
        setup_cart,
        lambda _: cart_set_quantity(owner=ALICE, sku="SHOE", quantity=5, now=T0),
        0,
    ),
    "stock.give.after_hold": (
        setup_cart,
        lambda _: cart_remove_item(owner=ALICE, sku="SHOE", now=T0),
        0,
    ),
    "stock.give.after_counter": (
        setup_cart,
        lambda _: cart_set_quantity(owner=ALICE, sku="SHOE", quantity=1, now=T0),
        0,
    ),
    # The commit of a paid checkout: recovery finishes the sale.
    "stock.give.after_finish": (setup_cart, checkout, 3),
    "stock.transfer.after_source": (
        setup_anonymous_and_account,
        lambda _: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
    ),
    "stock.transfer.after_target": (
        setup_anonymous_and_account,
        lambda _: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
    ),
    "stock.transfer.after_finish": (
        setup_anonymous_and_account,
        lambda _: cart_merge(from_owner=ALICE, to_owner=ACCOUNT, now=T0),
        0,
    ),
}


def test_every_stock_fault_point_has_a_crash_scenario():
    assert sorted(SCENARIOS) == sorted(stock_faults.POINTS)


def left_behind(mongo_db) -> int:
    """Journal entries on the counters (a move in flight, or a finished one
    whose entry the crashed process would have dropped with its next write)
    and ``back`` or ``moved_in`` entries on the holds."""
    moves = sum(
        len(doc.get("takes") or []) + len(doc.get("gives") or [])
        for doc in mongo_db.inventories.find()
    )
    return moves + mongo_db.carts.count_documents(IN_FLIGHT)


IN_FLIGHT = {
    "$or": [{"stock_back.0": {"$exists": True}}, {"moved_in.0": {"$exists": True}}]
}


# Each point once more where the give-back moves several lines in one write:
# a paid checkout of two lines (the complete write).
CASES = {
    **{point: (point, *scenario) for point, scenario in SCENARIOS.items()},
    **{
        f"two-line checkout, {point}": (point, setup_cart, checkout, 3)
        for point in ("stock.give.after_hold", "stock.give.after_counter")
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_crash_between_counter_and_cart_conserves_units_and_is_repaired(
    case, mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    point, setup, work, sold_in_the_end = CASES[case]
    arg = setup()

    code = run_until_crash(
        crash_at, (point, work, arg), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    assert left_behind(mongo_db) >= 1  # the crash left an entry behind...
    assert stock_problems() == []  # ...and its units are counted where they are
    for moment in (SOON, MUCH_LATER):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)
        assert invariant_problems() == [], moment
    # Nothing in flight: the reconciler finished or undid the crashed move
    # (only the fences of recovered moves may stay, until the cleanup).
    assert not any(doc.get("takes") for doc in mongo_db.inventories.find())
    assert mongo_db.carts.count_documents(IN_FLIGHT) == 0
    held = line_stock.held_units()
    for sku in ("SHOE", "HAT"):
        level = stock_level(sku=sku)
        assert (level.held, held[sku]) == (0, 0)
        assert level.free + level.sold == 10
    assert sum(stock_level(sku=s).sold for s in ("SHOE", "HAT")) == sold_in_the_end


def test_a_take_the_reconciler_undid_cannot_be_recorded_by_a_stalled_writer(
    mongo_uri, mongo_db
):
    """A writer that stalls past the grace between the counter and the cart
    finds its move fenced: the units it took went back once, and its late
    write to the cart changes nothing (no unit in two places)."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()
    point = "stock.take.after_counter"
    code = run_until_crash(
        crash_at,
        (
            point,
            lambda _: cart_set_quantity(owner=ALICE, sku="SHOE", quantity=5, now=T0),
            None,
        ),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    (move,) = [
        m
        for m in mongo_db.inventories.find_one({"_id": "SHOE"})["takes"]
        if m["units"] == 3
    ]

    reservations_reconcile(now=SOON)
    guard, update = line_stock.grown("SHOE", 2, 3, move["op"])
    late = mongo_db.carts.update_one({"_id": cart_id, **guard}, update)

    assert late.modified_count == 0
    level = stock_level(sku="SHOE")
    assert (level.free, level.held) == (8, 2)
    assert stock_problems() == []


def crash_in_a_release(mongo_uri, mongo_db):
    """A release stopped after its cart's write: (the cart id, its entry)."""
    cart_id = setup_cart()
    code = run_until_crash(
        crash_at,
        ("stock.give.after_hold", SCENARIOS["stock.give.after_hold"][1], None),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    (entry,) = mongo_db.carts.find_one({"_id": cart_id})["stock_back"]
    return cart_id, entry


def test_a_give_back_the_reconciler_applied_is_refused_to_a_stalled_writer(
    mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id, entry = crash_in_a_release(mongo_uri, mongo_db)

    reservations_reconcile(now=SOON)
    late = counters.give([("SHOE", hold_id("SHOE", cart_id), counted(entry), [])])

    assert late == []
    level = stock_level(sku="SHOE")
    assert (level.free, level.held) == (10, 0)
    assert stock_problems() == []


def test_a_recovery_that_read_the_hold_before_the_writer_finished_adds_nothing(
    mongo_uri, mongo_db
):
    """The writer resumes and finishes every step between the reconciler's
    read of the hold and its own writes: the units go back once."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id, entry = crash_in_a_release(mongo_uri, mongo_db)
    # The writer's steps 2 and 3, late (step 2 drops the take entries the
    # line applied, as the writer's would).
    moves = [("SHOE", hold_id("SHOE", cart_id), counted(entry), entry["forget"])]
    assert counters.give(moves)
    line_stock.finish_back(cart_id, [("SHOE", entry["op"])])

    line_stock._recover_back(cart_id, entry)  # what the reconciler read before

    level = stock_level(sku="SHOE")
    assert (level.free, level.held) == (10, 0)
    assert stock_problems() == []


def counted(entry: dict) -> dict:
    """What a counter's step 2 reads of a cart's ``stock_back`` entry."""
    return {k: entry[k] for k in ("op", "free", "sold", "at")}


def fence_shoe_at(mongo_db, cart_id):
    """A fault point at which the writer stalls after its cart's step and a
    recovery writes its first step for this cart's SHOE move: a fence on
    SHOE's counter (what ``counters.fence_give`` pushes)."""

    def stall_then_fence(name):
        if name == "stock.give.after_hold":
            cart = mongo_db.carts.find_one({"_id": cart_id})
            (entry,) = [e for e in cart["stock_back"] if e["sku"] == "SHOE"]
            hid = hold_id("SHOE", cart_id)
            fence = {"op": entry["op"], "hold": hid, "at": entry["at"]}
            mongo_db.inventories.update_one(
                {"_id": "SHOE", "gives.op": {"$ne": entry["op"]}},
                {"$push": {"gives": {**fence, "by": RECOVERY, "fence": True}}},
            )

    return stall_then_fence


def test_a_writer_refused_by_a_recovery_s_fence_leaves_the_move_to_it(
    mongo_db, monkeypatch
):
    """The writer stalls after its cart's step; a recovery fences the
    counter and, before it reads the cart again, the writer resumes: its
    step 2 is refused, so it must leave the ``stock_back`` entry for the recovery
    (the recovery applies only while the entry is there) and never take the
    fence for an entry of its own. The units go back once, and the fence
    stays through the writer's next write to the counter."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()

    monkeypatch.setattr(stock_faults, "point", fence_shoe_at(mongo_db, cart_id))
    cart_remove_item(owner=ALICE, sku="SHOE", now=T0)
    monkeypatch.undo()

    assert mongo_db.carts.count_documents({"stock_back.0": {"$exists": True}}) == 1
    reservations_reconcile(now=SOON)
    cart_add_item(owner=ALICE, sku="SHOE", quantity=1, now=SOON)

    level = stock_level(sku="SHOE")
    assert (level.free, level.held, level.sold) == (9, 1, 0)
    fences = mongo_db.inventories.find_one({"_id": "SHOE"})["gives"]
    assert [(g["by"], g["fence"]) for g in fences] == [(RECOVERY, False)]
    assert stock_problems() == []


def test_a_fence_on_one_counter_of_a_checkout_leaves_the_others_applied(
    mongo_db, monkeypatch
):
    """A checkout sells two SKUs: the complete write, then one statement for
    the counters. The writer stalls after the complete write and a recovery
    fences SHOE's counter: the statement that counts both SKUs applies HAT's
    move and not SHOE's (each counter's own op decides, never another's),
    the writer finishes only HAT's entry, and the recovery sells SHOE's
    units, once."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()

    monkeypatch.setattr(stock_faults, "point", fence_shoe_at(mongo_db, cart_id))
    checkout(cart_id)
    monkeypatch.undo()

    hat, shoe = stock_level(sku="HAT"), stock_level(sku="SHOE")
    assert (hat.free, hat.held, hat.sold) == (9, 0, 1)  # applied and finished
    assert (shoe.sold, shoe.free) == (0, 8)  # refused: in flight, counted held
    (entry,) = mongo_db.carts.find_one({"_id": cart_id})["stock_back"]
    assert entry["sku"] == "SHOE"
    assert stock_problems() == []

    reservations_reconcile(now=SOON)

    shoe = stock_level(sku="SHOE")
    assert (shoe.free, shoe.held, shoe.sold) == (8, 0, 2)
    assert mongo_db.carts.count_documents(IN_FLIGHT) == 0
    assert stock_problems() == []
    assert invariant_problems() == []


def sell_account(cart_id):
    cart_checkout(
        owner=ACCOUNT,
        cart_id=cart_id,
        email="account@example.com",
        shipping=SHIPPING,
        card=card(),
        now=T0,
    )


# What the account does with the moved line before the reconciler comes:
# (the action, SHOE's (free, sold) in the end).
AFTER_THE_MOVE = {
    "removes it": (
        lambda _: cart_remove_item(owner=ACCOUNT, sku="SHOE", now=T0),
        (10, 0),
    ),
    "buys it": (sell_account, (7, 3)),
}


@pytest.mark.django_db
@pytest.mark.parametrize("action", sorted(AFTER_THE_MOVE))
def test_a_transfer_whose_target_gave_its_units_on_before_the_recovery_stays_done(
    action, mongo_uri, mongo_db
):
    """A login stops after the account's cart recorded the anonymous cart's
    SHOE (its line grows from 1 to 3), before the source finished. Before
    the reconciler comes, the account removes the line, or buys it: either
    way its give-back finishes, and a removed line no longer lists the move.
    The target's ``moved_in`` keeps the proof, so the recovery still reads
    that the transfer applied and finishes the source, never freeing the
    units a second time: no unit free twice, or sold and free."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    setup_anonymous_and_account()
    code = run_until_crash(
        crash_at,
        (
            "stock.transfer.after_target",
            SCENARIOS["stock.transfer.after_target"][1],
            None,
        ),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    (account,) = mongo_db.carts.find({"owner": ACCOUNT})
    assert [(x["sku"], x["quantity"]) for x in account["items"]] == [("SHOE", 3)]
    work, (free, sold) = AFTER_THE_MOVE[action]
    work(account["_id"])

    for moment in (SOON, MUCH_LATER):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)

    shoe, hat = stock_level(sku="SHOE"), stock_level(sku="HAT")
    assert (shoe.free, shoe.held, shoe.sold) == (free, 0, sold)
    assert (hat.free, hat.held, hat.sold) == (10, 0, 0)  # the anonymous cart's
    assert mongo_db.carts.count_documents(IN_FLIGHT) == 0
    assert stock_problems() == []
    assert invariant_problems() == []
