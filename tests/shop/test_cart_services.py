"""The seed's cart operations, in its own terms, on the real database."""

from datetime import timedelta
from decimal import Decimal

import pytest
from pymongo import monitoring

from catalog.errors import (
    InvalidQuantity,
    NotForSale,
    NotStocked,
    OutOfStock,
    UnknownSku,
)
from shop import faults
from shop.documents import ACTIVE, CANCELED, EXPIRED, Cart
from shop.errors import (
    CartExpired,
    CartNotFound,
    ExtensionsUsed,
    LineNotInCart,
    QuantityTooLarge,
)
from shop.selectors.invariants import invariant_problems
from shop.services.carts import (
    MAX_EXTENSIONS,
    cart_add,
    cart_add_item,
    cart_clear,
    cart_extend_hold,
    cart_merge,
    cart_remove_item,
    cart_set_quantity,
)
from shop.services.common import load_cart
from shop.services.expiry import cart_expire, carts_expire
from tests.shop.factories import make_product
from tests.stock import held_by

ALICE = "anon:alice"
BOB = "anon:bob"


def stock(mongo_db, sku):
    return mongo_db.inventories.find_one({"_id": sku})["quantity"]


def cart_doc(mongo_db, cart_id):
    return mongo_db.carts.find_one({"_id": cart_id})


def lines(mongo_db, cart_id):
    return {i["sku"]: i["quantity"] for i in cart_doc(mongo_db, cart_id)["items"]}


def test_a_first_add_makes_its_cart_with_the_line_once_the_units_are_held(
    mongo_db, now
):
    """A shopper without a cart: a refused add leaves no cart or claim
    behind; an add that holds makes the cart born with its line (one write,
    no empty cart first)."""
    make_product(sku="LAST", stock=1)

    with pytest.raises(OutOfStock):
        cart_add_item(owner=ALICE, sku="LAST", quantity=2, now=now)
    assert mongo_db.carts.count_documents({}) == 0
    assert mongo_db.cart_owners.count_documents({}) == 0

    cart = cart_add_item(owner=ALICE, sku="LAST", quantity=1, now=now)

    assert [(line.sku, line.quantity) for line in cart.items] == [("LAST", 1)]
    assert lines(mongo_db, cart.cart_id) == {"LAST": 1}
    assert mongo_db.cart_owners.find_one({"_id": ALICE})["cart_id"] == cart.cart_id
    assert invariant_problems() == []


@pytest.mark.parametrize("owner", [None, ""])
def test_an_add_without_a_shopper_identity_holds_nothing(mongo_db, now, owner):
    make_product(sku="ANON", stock=3)

    with pytest.raises(CartNotFound):
        cart_add_item(owner=owner, sku="ANON", quantity=1, now=now)

    assert stock(mongo_db, "ANON") == 3
    assert not mongo_db.inventories.find_one({"_id": "ANON"}).get("takes")
    assert mongo_db.carts.count_documents({}) == 0
    assert invariant_problems() == []


def test_add_reserves_then_records_the_line_with_the_catalog_price(
    mongo_db, product, now
):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    assert stock(mongo_db, product) == 98
    assert held_by(cart.cart_id, product) == 2
    doc = cart_doc(mongo_db, cart.cart_id)
    assert doc["state"] == ACTIVE
    (line,) = doc["items"]
    assert (line["sku"], line["quantity"], line["name"]) == (product, 2, "JC Sneaker")
    assert line["unit_price"].to_decimal() == Decimal("100.00")
    assert doc["expires_at"] == now + timedelta(minutes=30)
    assert invariant_problems() == []


def as_shown(cart) -> dict:
    """What a page shows of a cart: its lines, state and hold."""
    son = cart.to_mongo().to_dict()
    return {k: son.get(k) for k in ("_id", "state", "items", "expires_at")}


def stored(mongo_db, cart_id):
    return load_cart(cart_doc(mongo_db, cart_id))


def test_an_add_returns_the_cart_as_stored_after_it_on_every_path(mongo_db, now):
    """What ``cart_add`` says (the cart, its units for the badge, the
    line's item) is the cart as stored after each add: the first (the cart
    made with its line), a new line (the cart as read plus the pushed line,
    not read back), more of a line (grown), with the hold moved on."""
    make_product(sku="TEE", stock=10)
    make_product(sku="CAP", stock=10)

    steps = [("TEE", 2, now), ("CAP", 1, now + timedelta(minutes=5))]
    steps.append(("TEE", 3, now + timedelta(minutes=9)))
    for (sku, quantity, at), units in zip(steps, (2, 3, 6), strict=True):
        added = cart_add(owner=ALICE, sku=sku, quantity=quantity, now=at)

        assert (added.item_id, added.units) == (f"item-{sku}", units)
        assert as_shown(added.cart) == as_shown(stored(mongo_db, added.cart_id))
        assert added.cart.expires_at == at + timedelta(minutes=30)
    assert invariant_problems() == []


def test_an_add_to_a_cart_builds_no_cart_document(mongo_db, now, builds):
    """The add reads the live cart as stored (its id, lines' keys and
    count) and answers its units from it: building the ``Cart`` of every
    add's read cost a tenth of a cart flow's CPU (bench/RESULTS.md)."""
    make_product(sku="TEE", stock=10)
    make_product(sku="CAP", stock=10)
    cart_add(owner=ALICE, sku="TEE", quantity=1, now=now)
    built = builds(Cart)

    added = cart_add(owner=ALICE, sku="CAP", quantity=2, now=now)

    assert (added.units, built) == (3, [])
    assert lines(mongo_db, added.cart_id) == {"TEE": 1, "CAP": 2}


def test_add_with_too_little_stock_rolls_back_and_says_how_many_are_left(mongo_db, now):
    sku = make_product(sku="LAST-3", stock=3)

    with pytest.raises(OutOfStock) as refused:
        cart_add_item(owner=ALICE, sku=sku, quantity=4, now=now)

    assert "only 3 left" in refused.value.message
    assert stock(mongo_db, sku) == 3
    assert not mongo_db.inventories.find_one({"_id": sku}).get("takes")
    assert all(not c["items"] for c in mongo_db.carts.find())


def test_adding_the_same_sku_again_grows_the_line_and_the_hold(mongo_db, product, now):
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    cart = cart_add_item(owner=ALICE, sku=product, quantity=3, now=now)

    assert lines(mongo_db, cart.cart_id) == {product: 5}
    assert held_by(cart.cart_id, product) == 5
    assert stock(mongo_db, product) == 95


def test_quantity_change_2_to_4_moves_stock_98_to_96(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    assert stock(mongo_db, product) == 98

    cart_set_quantity(owner=ALICE, sku=product, quantity=4, now=now)

    assert stock(mongo_db, product) == 96
    assert lines(mongo_db, cart.cart_id) == {product: 4}
    assert held_by(cart.cart_id, product) == 4


def test_quantity_decrease_gives_units_back(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=5, now=now)

    cart_set_quantity(owner=ALICE, sku=product, quantity=1, now=now)

    assert stock(mongo_db, product) == 99
    assert lines(mongo_db, cart.cart_id) == {product: 1}
    assert invariant_problems() == []


def test_impossible_quantity_change_is_rolled_back(mongo_db, now):
    sku = make_product(sku="FEW-5", stock=5)
    cart = cart_add_item(owner=ALICE, sku=sku, quantity=2, now=now)

    with pytest.raises(OutOfStock):
        cart_set_quantity(owner=ALICE, sku=sku, quantity=6, now=now)

    assert stock(mongo_db, sku) == 3
    assert lines(mongo_db, cart.cart_id) == {sku: 2}
    assert held_by(cart.cart_id, sku) == 2


def test_quantity_zero_removes_the_line(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    cart_set_quantity(owner=ALICE, sku=product, quantity=0, now=now)

    assert lines(mongo_db, cart.cart_id) == {}
    assert stock(mongo_db, product) == 100


def test_remove_restores_stock(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=3, now=now)

    cart_remove_item(owner=ALICE, sku=product, now=now)

    assert stock(mongo_db, product) == 100
    assert held_by(cart.cart_id, product) == 0
    assert lines(mongo_db, cart.cart_id) == {}


def test_clear_gives_back_every_line(mongo_db, product, now):
    other = make_product(sku="HAT-1")
    cart_add_item(owner=ALICE, sku=product, quantity=3, now=now)
    cart = cart_add_item(owner=ALICE, sku=other, quantity=1, now=now)

    cart_clear(owner=ALICE, now=now)

    assert (stock(mongo_db, product), stock(mongo_db, other)) == (100, 100)
    assert lines(mongo_db, cart.cart_id) == {}
    assert cart_doc(mongo_db, cart.cart_id)["state"] == ACTIVE


def test_clear_gives_back_a_line_added_after_it_read_the_cart(
    mongo_db, product, now, monkeypatch
):
    """The clear's update is guarded on the lines as read: a line added in
    between makes it read again, so that line's units go back too."""
    from shop.services import carts
    from shop.services import lines as cart_lines

    other = make_product(sku="HAT-1")
    cart_add_item(owner=ALICE, sku=product, quantity=3, now=now)
    as_read = cart_lines.live_son(ALICE, now)
    cart = cart_add_item(owner=ALICE, sku=other, quantity=1, now=now)
    monkeypatch.setattr(carts, "live_son", lambda owner, now: as_read)

    cart_clear(owner=ALICE, now=now)

    assert (stock(mongo_db, product), stock(mongo_db, other)) == (100, 100)
    assert lines(mongo_db, cart.cart_id) == {}
    assert held_by(cart.cart_id, other) == 0
    assert invariant_problems() == []


def test_expiry_returns_stock_and_marks_the_cart_expired(mongo_db, product, now, later):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    assert not cart_expire(cart_id=cart.cart_id, now=now)  # still within its hold

    assert cart_expire(cart_id=cart.cart_id, now=later)

    assert stock(mongo_db, product) == 100
    doc = cart_doc(mongo_db, cart.cart_id)
    assert doc["state"] == EXPIRED
    assert "live_owner" not in doc
    # The lines stay as history: the expired-cart page lists what went back.
    assert lines(mongo_db, cart.cart_id) == {product: 2}
    assert not cart_expire(cart_id=cart.cart_id, now=later)
    assert invariant_problems() == []


def test_expiry_resumes_a_cart_left_expiring(mongo_db, product, now, later):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    mongo_db.carts.update_one({"_id": cart.cart_id}, {"$set": {"state": "expiring"}})

    assert carts_expire(now=now) == 1

    assert stock(mongo_db, product) == 100
    assert cart_doc(mongo_db, cart.cart_id)["state"] == EXPIRED


def test_the_expiry_job_expires_only_carts_past_their_hold(
    mongo_db, product, now, later
):
    old = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    fresh = cart_add_item(owner=BOB, sku=product, quantity=1, now=later)

    assert carts_expire(now=later) == 1

    assert cart_doc(mongo_db, old.cart_id)["state"] == EXPIRED
    assert cart_doc(mongo_db, fresh.cart_id)["state"] == ACTIVE
    assert stock(mongo_db, product) == 99


def test_short_stock_first_expires_stale_carts_holding_it_then_retries(
    mongo_db, now, later
):
    sku = make_product(sku="LAST-1", stock=1)
    stale = cart_add_item(owner=ALICE, sku=sku, quantity=1, now=now)

    cart = cart_add_item(owner=BOB, sku=sku, quantity=1, now=later)

    assert cart_doc(mongo_db, stale.cart_id)["state"] == EXPIRED
    assert held_by(cart.cart_id, sku) == 1
    assert stock(mongo_db, sku) == 0
    assert invariant_problems() == []


def test_short_stock_held_by_live_carts_is_refused(mongo_db, now):
    sku = make_product(sku="LAST-1", stock=1)
    cart_add_item(owner=ALICE, sku=sku, quantity=1, now=now)

    with pytest.raises(OutOfStock) as refused:
        cart_add_item(owner=BOB, sku=sku, quantity=1, now=now + timedelta(minutes=5))

    assert "sold out" in refused.value.message


class CartFinds(monitoring.CommandListener):
    """The finds the code under test sends to the carts."""

    def __init__(self):
        self.finds = []

    def started(self, event):
        if event.command_name == "find" and event.command["find"] == "carts":
            self.finds.append(
                {
                    k: event.command[k]
                    for k in ("find", "filter", "hint")
                    if k in event.command
                }
            )

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_a_refused_add_reads_the_carts_past_their_hold_not_the_live_holders(
    mongo_db, listen, now
):
    """A sold-out SKU's live holders are not read again on each refused add:
    the lookup of the stale holders examines the carts past their hold (here
    one, of another SKU), not the 20 carts holding the SKU. A read of every
    holder per refused add made a flash sale's cost grow with its holders."""
    sku = make_product(sku="RUSH", stock=20)
    other = make_product(sku="CALM", stock=5)
    cart_add_item(
        owner="anon:early", sku=other, quantity=1, now=now - timedelta(hours=3)
    )
    for n in range(20):
        cart_add_item(owner=f"anon:holder-{n}", sku=sku, quantity=1, now=now)
    seen = listen(CartFinds())

    with pytest.raises(OutOfStock):
        cart_add_item(owner=BOB, sku=sku, quantity=1, now=now)

    # Every read of the carts the refused add sent (its own live cart, none;
    # the stale holders), replayed under explain.
    assert len(seen.finds) >= 2
    examined = [
        mongo_db.command("explain", find, verbosity="executionStats")["executionStats"]
        for find in seen.finds
    ]
    assert sum(stats["totalDocsExamined"] for stats in examined) <= 1


def test_a_shopper_returning_after_the_hold_gets_a_new_cart(
    mongo_db, product, now, later
):
    old = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    new = cart_add_item(owner=ALICE, sku=product, quantity=1, now=later)

    assert new.cart_id != old.cart_id
    assert cart_doc(mongo_db, old.cart_id)["state"] == EXPIRED
    assert stock(mongo_db, product) == 99


def test_a_claim_whose_cart_was_never_made_gets_that_cart(mongo_db, product, now):
    """A claimant that stopped between its claim and its insert (or has not
    inserted yet): the owner's next request makes the claimed cart and
    carries on with it, never locked out, never with two carts."""
    mongo_db.cart_owners.insert_one({"_id": ALICE, "cart_id": "claimed", "at": now})

    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    assert cart.cart_id == "claimed"
    assert lines(mongo_db, "claimed") == {product: 2}
    assert mongo_db.carts.count_documents({"live_owner": ALICE}) == 1
    assert invariant_problems() == []


def test_a_claim_older_than_a_hold_whose_cart_is_gone_is_dropped(
    mongo_db, product, now, later
):
    """Its cart was purged (a crash had kept the claim): the id is never
    used again, it may be an old order's."""
    mongo_db.cart_owners.insert_one({"_id": ALICE, "cart_id": "purged", "at": now})

    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=later)

    assert cart.cart_id != "purged"
    assert mongo_db.carts.count_documents({"_id": "purged"}) == 0
    claim = mongo_db.cart_owners.find_one({"_id": ALICE})
    assert claim["cart_id"] == cart.cart_id


def test_a_claimant_whose_cart_another_request_made_uses_that_cart(
    mongo_db, product, now, monkeypatch
):
    """Two first adds of one shopper: the second meets the first's claim
    before its insert and makes the cart; the first's insert then finds it
    there and its line goes onto it. One cart with both lines."""
    other = make_product(sku="HAT-1")
    point = faults.point

    def second_request_meanwhile(name):
        if name == "new_cart.after_claim":
            monkeypatch.setattr(faults, "point", point)
            cart_add_item(owner=ALICE, sku=other, quantity=1, now=now)
        point(name)

    monkeypatch.setattr(faults, "point", second_request_meanwhile)

    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    assert lines(mongo_db, cart.cart_id) == {product: 2, other: 1}
    assert mongo_db.carts.count_documents({"owner": ALICE}) == 1
    assert mongo_db.cart_owners.find_one({"_id": ALICE})["cart_id"] == cart.cart_id
    assert invariant_problems() == []


def test_changing_a_stale_cart_is_refused_as_expired(mongo_db, product, now, later):
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    with pytest.raises(CartExpired):
        cart_set_quantity(owner=ALICE, sku=product, quantity=3, now=later)

    assert stock(mongo_db, product) == 100


def test_every_change_pushes_the_hold_forward(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    step = now + timedelta(minutes=20)

    cart_set_quantity(owner=ALICE, sku=product, quantity=2, now=step)

    assert cart_doc(mongo_db, cart.cart_id)["expires_at"] == step + timedelta(
        minutes=30
    )


def test_extending_the_hold_adds_to_the_current_expiry_and_is_bounded(
    mongo_db, product, now
):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    assert cart.expires_at == now + timedelta(minutes=30)

    # Pressed right after the change, and again a little later: each adds a
    # whole hold to the expiry, none is wasted restarting from "now".
    for n in range(1, MAX_EXTENSIONS + 1):
        at = now + timedelta(minutes=10 * n)
        extended = cart_extend_hold(owner=ALICE, now=at)
        assert extended.expires_at == now + timedelta(minutes=30 * (n + 1))
        assert extended.extensions == n

    with pytest.raises(ExtensionsUsed):
        cart_extend_hold(owner=ALICE, now=now + timedelta(minutes=45))
    assert cart_doc(mongo_db, cart.cart_id)["extensions"] == MAX_EXTENSIONS


def test_a_change_never_shortens_a_hold_the_shopper_extended(mongo_db, product, now):
    other = make_product(sku="OTHER-1")
    cart = cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart_extend_hold(owner=ALICE, now=now)
    extended_end = now + timedelta(minutes=60)

    added = cart_add_item(
        owner=ALICE, sku=other, quantity=1, now=now + timedelta(minutes=5)
    )
    assert added.expires_at == extended_end  # the cart as the add returns it
    cart_set_quantity(
        owner=ALICE, sku=product, quantity=2, now=now + timedelta(minutes=6)
    )
    cart_add_item(owner=ALICE, sku=other, quantity=1, now=now + timedelta(minutes=7))
    cart_remove_item(owner=ALICE, sku=other, now=now + timedelta(minutes=8))
    assert cart_doc(mongo_db, cart.cart_id)["expires_at"] == extended_end

    # A change late in the extended hold restarts it from then: later still.
    late = now + timedelta(minutes=45)
    cart_set_quantity(owner=ALICE, sku=product, quantity=1, now=late)
    assert cart_doc(mongo_db, cart.cart_id)["expires_at"] == late + timedelta(
        minutes=30
    )
    assert cart_doc(mongo_db, cart.cart_id)["extensions"] == 1


def test_the_extension_message_says_how_many_are_left(mongo_db, product, now):
    from shop.errors import hold_extended

    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    extended = cart_extend_hold(owner=ALICE, now=now)

    assert hold_extended(extended).endswith(": 2 more extensions left.")
    extended = cart_extend_hold(owner=ALICE, now=now)
    assert hold_extended(extended).endswith(": 1 more extension left.")
    extended = cart_extend_hold(owner=ALICE, now=now)
    assert hold_extended(extended).endswith(": that was the last extension.")


def test_extending_a_cart_past_its_hold_is_refused(mongo_db, product, now, later):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)

    with pytest.raises(CartExpired):
        cart_extend_hold(owner=ALICE, now=later)


@pytest.mark.parametrize(
    ("quantity", "error"),
    [
        (0, InvalidQuantity),
        (-1, InvalidQuantity),
        (10**9, QuantityTooLarge),
        ("1e3", InvalidQuantity),
        ("abc", InvalidQuantity),
        ({"$gt": 0}, InvalidQuantity),
        (True, InvalidQuantity),
    ],
)
def test_add_refuses_bad_quantities_and_changes_nothing(
    mongo_db, product, now, quantity, error
):
    with pytest.raises(error):
        cart_add_item(owner=ALICE, sku=product, quantity=quantity, now=now)

    assert stock(mongo_db, product) == 100
    assert mongo_db.carts.count_documents({}) == 0


def test_a_line_cannot_grow_past_the_limit(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=60, now=now)

    with pytest.raises(QuantityTooLarge):
        cart_add_item(owner=ALICE, sku=product, quantity=40, now=now)

    assert lines(mongo_db, cart.cart_id) == {product: 60}
    assert stock(mongo_db, product) == 40


def test_unknown_unpriced_or_unstocked_skus_are_refused(mongo_db, now):
    make_product(sku="NOSTOCK", stock=None)
    make_product(sku="NOPRICE")
    mongo_db.prices.delete_one({"_id": "NOPRICE_online"})

    with pytest.raises(UnknownSku):
        cart_add_item(owner=ALICE, sku="GHOST", quantity=1, now=now)
    with pytest.raises(NotForSale):
        cart_add_item(owner=ALICE, sku="NOPRICE", quantity=1, now=now)
    with pytest.raises(NotStocked):
        cart_add_item(owner=ALICE, sku="NOSTOCK", quantity=1, now=now)

    assert all(not c["items"] for c in mongo_db.carts.find())


def test_nobody_changes_a_line_in_someone_elses_cart(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    with pytest.raises(LineNotInCart):
        cart_set_quantity(owner=BOB, sku=product, quantity=5, now=now)
    with pytest.raises(LineNotInCart):
        cart_remove_item(owner=BOB, sku=product, now=now)
    assert cart_clear(owner=BOB, now=now) is None

    assert lines(mongo_db, cart.cart_id) == {product: 2}
    assert stock(mongo_db, product) == 98


def test_login_hands_the_anonymous_cart_to_the_account(mongo_db, product, now):
    anon = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    merged = cart_merge(from_owner=ALICE, to_owner="user:7", now=now)

    assert merged.cart_id == anon.cart_id
    doc = cart_doc(mongo_db, anon.cart_id)
    assert (doc["owner"], doc["live_owner"]) == ("user:7", "user:7")
    assert held_by(anon.cart_id, product) == 2


def test_login_merges_into_an_existing_account_cart_keeping_every_unit(
    mongo_db, product, now
):
    hat = make_product(sku="HAT-1")
    account = cart_add_item(owner="user:7", sku=product, quantity=1, now=now)
    anon = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    cart_add_item(owner=ALICE, sku=hat, quantity=3, now=now)

    cart_merge(from_owner=ALICE, to_owner="user:7", now=now)

    assert lines(mongo_db, account.cart_id) == {product: 3, hat: 3}
    assert held_by(account.cart_id, hat) == 3
    assert held_by(account.cart_id, product) == 3
    assert cart_doc(mongo_db, anon.cart_id)["state"] == CANCELED
    assert (stock(mongo_db, product), stock(mongo_db, hat)) == (97, 97)
    assert invariant_problems() == []


def test_a_merge_reports_what_could_not_come_along(mongo_db, product, now):
    from shop.services.carts import cart_merge_report

    hat = make_product(sku="HAT-1", title="Felt hat")
    account = cart_add_item(owner="user:7", sku=product, quantity=98, now=now)
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)  # over the 99 cap
    cart_add_item(owner=ALICE, sku=hat, quantity=1, now=now)

    merged = cart_merge_report(from_owner=ALICE, to_owner="user:7", now=now)

    assert merged.cart.cart_id == account.cart_id
    assert lines(mongo_db, account.cart_id) == {product: 99, hat: 1}
    (name,) = merged.short
    assert name == mongo_db.carts.find_one({"_id": account.cart_id})["items"][0]["name"]
    assert invariant_problems() == []
    everything = cart_merge_report(from_owner="anon:none", to_owner="user:7", now=now)
    assert everything.short == []


def test_staff_live_carts_list_exactly_the_carts_that_still_hold(
    mongo_db, product, now, later
):
    from shop.documents import PENDING
    from staff.selectors.carts import live_carts

    live = cart_add_item(owner=ALICE, sku=product, quantity=1, now=later)
    run_out = cart_add_item(owner=BOB, sku=product, quantity=1, now=now)
    paying = cart_add_item(owner="anon:carol", sku=product, quantity=1, now=now)
    # In checkout: live past its hold time (the checkout's lease decides).
    mongo_db.carts.update_one({"_id": paying.cart_id}, {"$set": {"state": PENDING}})

    listed = {cart["id"]: cart for cart in live_carts(now=later)}

    assert set(listed) == {live.cart_id, paying.cart_id}
    assert run_out.cart_id not in listed
    assert listed[paying.cart_id]["minutes_left"] == 0
    assert listed[live.cart_id]["minutes_left"] > 0


def test_staff_live_carts_come_soonest_to_end_first_across_the_windows(
    mongo_db, product, now
):
    """Read window by window of their end: the order and the limit hold
    across windows, and carts in checkout take their place by their end."""
    from shop.documents import PENDING
    from shop.services.common import hold_time
    from staff.selectors.carts import live_carts

    hold = hold_time()
    ends = {"anon:20m": 20 * 60, "anon:3m": 180, "anon:40s": 40, "anon:10s": 10}
    made = {}
    for owner, left in ends.items():
        made[owner] = cart_add_item(
            owner=owner,
            sku=product,
            quantity=1,
            now=now - hold + timedelta(seconds=left),
        ).cart_id
    paying = cart_add_item(owner="anon:paying", sku=product, quantity=1, now=now)
    mongo_db.carts.update_one(
        {"_id": paying.cart_id},
        {"$set": {"state": PENDING, "expires_at": now + timedelta(seconds=100)}},
    )

    first = [cart["id"] for cart in live_carts(now=now, limit=4)]
    every = [cart["id"] for cart in live_carts(now=now)]

    order = [made["anon:10s"], made["anon:40s"], paying.cart_id, made["anon:3m"]]
    assert first == order
    assert every == [*order, made["anon:20m"]]
