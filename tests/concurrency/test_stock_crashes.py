"""Crash injection between the documents of a stock hold (catalog.faults).

A move of units is a write on the counter (``Inventory``) and one on the
cart's hold (``StockHoldDoc``). For every point between them, a real child
process runs the real shop service and ``os._exit``s there. Right after the
crash conservation already holds (the move in flight is counted where it
is); then the reconciler and the expiry job run and every invariant must
hold, nothing left in flight, every unit back on the shelf or sold.
"""

import pytest

from catalog import faults as stock_faults
from catalog.selectors.stock import stock_journal, stock_level, stock_problems
from catalog.services import counters
from catalog.services.counters import RECOVERY
from catalog.services.stock import _finish_back, _hold_gets, _recover_back
from shop import faults
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
    return moves + mongo_db.stock_holds.count_documents(IN_FLIGHT)


IN_FLIGHT = {"$or": [{"back.0": {"$exists": True}}, {"moved_in.0": {"$exists": True}}]}


# Each point once more where the give-back moves several holds in one
# statement: a paid checkout of two lines (``_holds_give_statement``).
CASES = {
    **{point: (point, *scenario) for point, scenario in SCENARIOS.items()},
    **{
        f"two-line checkout, {point}": (point, setup_cart, checkout, 3)
        for point in ("stock.give.after_hold", "stock.give.after_counter")
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_crash_between_counter_and_hold_conserves_units_and_is_repaired(
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
    assert [stock_journal(sku=s).in_flight for s in ("SHOE", "HAT")] == [0, 0]
    assert mongo_db.stock_holds.count_documents(IN_FLIGHT) == 0
    for sku in ("SHOE", "HAT"):
        level = stock_level(sku=sku)
        assert level.held == 0
        assert level.free + level.sold == 10
    assert sum(stock_level(sku=s).sold for s in ("SHOE", "HAT")) == sold_in_the_end


def test_a_take_the_reconciler_undid_cannot_be_applied_by_a_stalled_writer(
    mongo_uri, mongo_db
):
    """A writer that stalls past the grace between the counter and the hold
    finds its move fenced: the units it took went back once, and its late
    write to the hold changes nothing (no unit in two places)."""
    make_product(sku="SHOE", stock=10)
    point = "stock.take.after_counter"
    code = run_until_crash(
        crash_at,
        (
            point,
            lambda _: cart_add_item(owner=ALICE, sku="SHOE", quantity=3, now=T0),
            None,
        ),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    (move,) = mongo_db.inventories.find_one({"_id": "SHOE"})["takes"]
    cart_id = move["hold"].rsplit("|", 1)[1]

    reservations_reconcile(now=SOON)
    late = _hold_gets("SHOE", cart_id, move["op"], move["units"], T0, None)

    assert late is False
    assert stock_level(sku="SHOE").free == 10
    assert stock_level(sku="SHOE").held == 0
    assert stock_problems() == []


def crash_in_a_release(mongo_uri, mongo_db):
    """A release stopped after its hold's write: (the hold, its back entry)."""
    cart_id = setup_cart()
    code = run_until_crash(
        crash_at,
        ("stock.give.after_hold", SCENARIOS["stock.give.after_hold"][1], None),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    hold = mongo_db.stock_holds.find_one({"_id": f"SHOE|{cart_id}"})
    return hold, hold["back"][0]


def test_a_give_back_the_reconciler_applied_is_refused_to_a_stalled_writer(
    mongo_uri, mongo_db
):
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    hold, entry = crash_in_a_release(mongo_uri, mongo_db)

    reservations_reconcile(now=SOON)
    late = counters.give([("SHOE", hold["_id"], entry, [])])

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
    hold, entry = crash_in_a_release(mongo_uri, mongo_db)
    # The writer's steps 2 and 3, late (step 2 drops the take entries the
    # hold applied, as the writer's would).
    assert counters.give([("SHOE", hold["_id"], entry, hold["applied"])])
    _finish_back(hold["_id"], entry["op"])

    _recover_back(hold, entry)  # what the reconciler read before

    level = stock_level(sku="SHOE")
    assert (level.free, level.held) == (10, 0)
    assert stock_problems() == []


def fence_shoe_at(mongo_db, cart_id):
    """A fault point at which the writer stalls after its holds' step and a
    recovery writes its first step for this cart's SHOE move: a fence on
    SHOE's counter (what ``_recover_give`` pushes)."""

    def stall_then_fence(name):
        if name == "stock.give.after_hold":
            hold = mongo_db.stock_holds.find_one({"_id": f"SHOE|{cart_id}"})
            (entry,) = hold["back"]
            fence = {"op": entry["op"], "hold": hold["_id"], "at": entry["at"]}
            mongo_db.inventories.update_one(
                {"_id": "SHOE", "gives.op": {"$ne": entry["op"]}},
                {"$push": {"gives": {**fence, "by": RECOVERY, "fence": True}}},
            )

    return stall_then_fence


def test_a_writer_refused_by_a_recovery_s_fence_leaves_the_move_to_it(
    mongo_db, monkeypatch
):
    """The writer stalls after its hold's step; a recovery fences the
    counter and, before it reads the hold again, the writer resumes: its
    step 2 is refused, so it must leave the ``back`` entry for the recovery
    (the recovery applies only while the entry is there) and never take the
    fence for an entry of its own. The units go back once, and the fence
    stays through the writer's next write to the counter."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()

    monkeypatch.setattr(stock_faults, "point", fence_shoe_at(mongo_db, cart_id))
    cart_remove_item(owner=ALICE, sku="SHOE", now=T0)
    monkeypatch.undo()

    assert mongo_db.stock_holds.count_documents({"back.0": {"$exists": True}}) == 1
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
    """A checkout commits two SKUs with one statement per step. The writer
    stalls after the holds' step and a recovery fences SHOE's counter: the
    statement that counts both SKUs applies HAT's move and not SHOE's (each
    counter's own op decides, never another's), the writer finishes only
    HAT's hold, and the recovery sells SHOE's units, once."""
    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()

    monkeypatch.setattr(stock_faults, "point", fence_shoe_at(mongo_db, cart_id))
    checkout(cart_id)
    monkeypatch.undo()

    hat, shoe = stock_level(sku="HAT"), stock_level(sku="SHOE")
    assert (hat.free, hat.held, hat.sold) == (9, 0, 1)  # applied and finished
    assert (shoe.sold, shoe.free) == (0, 8)  # refused: in flight, counted held
    assert mongo_db.stock_holds.count_documents({"_id": f"HAT|{cart_id}"}) == 0
    assert mongo_db.stock_holds.count_documents({"back.0": {"$exists": True}}) == 1
    assert stock_problems() == []

    reservations_reconcile(now=SOON)

    shoe = stock_level(sku="SHOE")
    assert (shoe.free, shoe.held, shoe.sold) == (8, 0, 2)
    assert mongo_db.stock_holds.count_documents({}) == 0
    assert stock_problems() == []
    assert invariant_problems() == []


@pytest.mark.django_db
def test_a_transfer_whose_target_sold_its_units_before_the_recovery_stays_done(
    mongo_uri, mongo_db
):
    """A login stops after the account's hold got the anonymous cart's HAT,
    before the source finished. Before the reconciler comes, the account
    adds HAT (its line adopts the hold) and checks out: the target's hold is
    emptied. Its ``moved_in`` keeps it, so the recovery still reads that the
    transfer applied and finishes the source, never handing the units back
    to it: a unit sold once, never free as well."""
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
    cart = cart_add_item(owner=ACCOUNT, sku="HAT", quantity=1, now=T0)
    cart_checkout(
        owner=ACCOUNT,
        cart_id=cart.cart_id,
        email="account@example.com",
        shipping=SHIPPING,
        card=card(),
        now=T0,
    )

    for moment in (SOON, MUCH_LATER):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)

    hat = stock_level(sku="HAT")
    assert (hat.free, hat.held, hat.sold) == (9, 0, 1)
    assert mongo_db.stock_holds.count_documents(IN_FLIGHT) == 0
    assert stock_problems() == []
    assert invariant_problems() == []
