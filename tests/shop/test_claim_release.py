"""What a paid checkout leaves for a moment later, in batches
(shop.services.tidy): its owner's claim released, its lines' give-backs
finished (the cart's ``stock_back`` entries pulled).

The suite's other tests write them at once (``SHOP_SETTLE_SYNC``); these
run the batch as ``serve`` does, flushed only when a test says so. Until
the batch runs, the claim names a cart that has ended: the owner's next
cart must not wait for it, and the batch must never take a newer claim;
and the cart shows give-backs its counters have applied: counted once, and
finished by the reconciler if the batch is lost.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.selectors.stock import stock_level
from shop.documents import Cart
from shop.kinds import line_stock
from shop.selectors.invariants import invariant_problems
from shop.services import settle, tidy
from shop.services.carts import cart_add_item
from tests.staff.conftest import pay

# A cart with a give-back whose last step has not run.
IN_FLIGHT = {"stock_back.0": {"$exists": True}}
ALICE = "user:alice"
BOB = "user:bob"
CAROL = "user:carol"
DAVE = "user:dave"


@pytest.fixture
def batch(settings):
    settings.SHOP_SETTLE_SYNC = False
    settings.SHOP_SETTLE_SECONDS = 3600
    settings.SHOP_SETTLE_BATCH = 1000
    tidy.discard()
    settle.reset()
    yield tidy.writer()
    tidy.discard()
    # The payments queued for announcing too (the same setting): not these
    # tests' subject.
    settle.settler().discard()
    settle.reset()


@pytest.fixture
def product():
    from tests.shop.factories import make_product

    return make_product(sku="SNKR-42", title="JC Sneaker", price="100.00", stock=50)


def claim_of(mongo_db, owner):
    found = mongo_db.cart_owners.find_one({"_id": owner})
    return None if found is None else found["cart_id"]


def test_paid_carts_claims_wait_for_one_batch(batch, mongo_db, product):
    alice = pay(ALICE, sku="SNKR-42")
    bob = pay(BOB, sku="SNKR-42")
    # Ended, still claimed: nothing released yet.
    assert claim_of(mongo_db, ALICE) == alice.cart_id
    assert claim_of(mongo_db, BOB) == bob.cart_id
    assert batch.stats().queued == 4  # each: its claim, its give-backs' last step

    assert tidy.flush() == 4
    assert mongo_db.cart_owners.count_documents({}) == 0
    assert mongo_db.carts.count_documents(IN_FLIGHT) == 0


def test_a_paid_carts_give_backs_wait_for_the_batch_counted_once(
    batch, mongo_db, product
):
    order = pay(ALICE, sku="SNKR-42", quantity=2)
    # Sold by the complete write into the counter, which recorded the move:
    # sold, never held as well, while the cart's entry waits to be pulled.
    [entry] = mongo_db.carts.find_one({"_id": order.cart_id})["stock_back"]
    assert (entry["sold"], entry["free"]) == (2, 0)
    gives = mongo_db.inventories.find_one({"_id": "SNKR-42"})["gives"]
    assert [g["op"] for g in gives] == [entry["op"]]
    level = stock_level(sku="SNKR-42")
    assert (level.free, level.held, level.sold) == (48, 0, 2)
    assert invariant_problems() == []

    tidy.flush()
    assert mongo_db.carts.count_documents(IN_FLIGHT) == 0
    # The counter's next write drops the finished move's journal entry.
    cart_add_item(owner=BOB, sku="SNKR-42", quantity=1)
    assert mongo_db.inventories.find_one({"_id": "SNKR-42"})["gives"] == []
    assert invariant_problems() == []


def test_give_backs_of_a_lost_batch_are_finished_by_the_reconciler(
    batch, mongo_db, product
):
    order = pay(ALICE, sku="SNKR-42", quantity=2)
    assert tidy.discard() == 2  # the process died with its batch

    later = timezone.now() + timedelta(hours=1)
    assert line_stock.recover(before=later) == 1
    assert mongo_db.carts.count_documents({"_id": order.cart_id, **IN_FLIGHT}) == 0
    assert mongo_db.inventories.find_one({"_id": "SNKR-42"})["gives"] == []
    level = stock_level(sku="SNKR-42")
    assert (level.free, level.held, level.sold) == (48, 0, 2)
    assert invariant_problems() == []


def test_an_owner_starts_a_new_cart_before_the_batch_runs(batch, mongo_db, product):
    first = pay(ALICE, sku="SNKR-42")
    cart = cart_add_item(owner=ALICE, sku="SNKR-42", quantity=1)

    assert cart.cart_id != first.cart_id
    assert claim_of(mongo_db, ALICE) == cart.cart_id
    # The batch, late, leaves the new claim alone: the owner keeps one live
    # cart, and the next add finds it.
    tidy.flush()
    assert claim_of(mongo_db, ALICE) == cart.cart_id
    again = cart_add_item(owner=ALICE, sku="SNKR-42", quantity=1)
    assert again.cart_id == cart.cart_id
    assert Cart.objects(live_owner=ALICE).count() == 1


def test_the_batch_takes_only_claims_of_ended_carts(batch, mongo_db, product):
    """Owners ``$in`` and carts ``$in`` match across pairs; only a claim a
    crash left on an ended cart can be met that way, and it is stale."""
    alice = pay(ALICE, sku="SNKR-42")
    pay(BOB, sku="SNKR-42")
    pay(CAROL, sku="SNKR-42")
    # Bob has a live cart again: his claim names it, not a listed cart.
    bobs_new = cart_add_item(owner=BOB, sku="SNKR-42", quantity=1)
    # A crash left Carol's claim on Alice's ended cart: a listed owner and a
    # listed cart, not a listed pair. Dave, not in the batch, has one too.
    mongo_db.cart_owners.update_one(
        {"_id": CAROL}, {"$set": {"cart_id": alice.cart_id}}
    )
    mongo_db.cart_owners.insert_one(
        {"_id": DAVE, "cart_id": alice.cart_id, "at": timezone.now()}
    )

    tidy.flush()

    assert claim_of(mongo_db, ALICE) is None
    assert claim_of(mongo_db, CAROL) is None  # across the pairs: stale
    assert claim_of(mongo_db, BOB) == bobs_new.cart_id  # live: kept
    # Not a listed owner: left for Dave's next claim, which deletes it.
    assert claim_of(mongo_db, DAVE) == alice.cart_id


def test_a_full_queue_releases_at_once(settings, mongo_db, product):
    settings.SHOP_SETTLE_SYNC = False
    settings.SHOP_SETTLE_SECONDS = 3600
    tidy.discard()
    settle.reset()
    try:
        writer = tidy.writer()
        # A queue of one, full: the next put is refused.
        writer._queue.maxsize = 1  # noqa: SLF001
        writer.put(("claim", ("user:nobody", "no-cart")))
        pay(ALICE, sku="SNKR-42")
        assert claim_of(mongo_db, ALICE) is None
        assert mongo_db.carts.count_documents(IN_FLIGHT) == 0
        assert writer.stats().dropped == 2  # the give-backs' step and the claim
    finally:
        tidy.discard()
        settle.settler().discard()
        settle.reset()
