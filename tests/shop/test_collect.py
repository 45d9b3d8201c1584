"""Click & collect: a line reserves a store's stock on the online protocol,
is priced (and re-priced at checkout) at the store's price, and is covered
by expiry, reconcile, login merge and the invariants, per store."""

from datetime import timedelta
from decimal import Decimal

import pytest
from bson.decimal128 import Decimal128

from catalog.documents import hold_id
from catalog.errors import OutOfStock, UnknownStore
from catalog.selectors.stock import stock_level
from catalog.services import counters
from shop.documents import EXPIRED, PAID
from shop.errors import AddressNeeded, PricesChanged
from shop.selectors.invariants import invariant_problems
from shop.services.carts import (
    cart_add_item,
    cart_merge,
    cart_remove_item,
    cart_set_quantity,
)
from shop.services.checkout import cart_checkout
from shop.services.expiry import carts_expire
from shop.services.orders import order_cancel
from shop.services.reconcile import reservations_reconcile
from shop.services.tickets import cart_hold_seats
from tests.shop.factories import SHIPPING, card, make_show, make_store, stock_store
from tests.stock import held_by

ALICE = "anon:alice"


@pytest.fixture
def leeds(product):
    """Leeds stocks 3 of the product at its own price, £80.00 (online £100)."""
    make_store("leeds", "Leeds Briggate", lng=-1.5437, lat=53.7997)
    return stock_store(product, "leeds", quantity=3, price="80.00")


def _line(cart, key):
    return next(line for line in cart.items if line.sku == key)


def _checkout(cart_id, now, *, shipping=SHIPPING):
    return cart_checkout(
        owner=ALICE,
        cart_id=cart_id,
        email="ada@example.com",
        shipping=shipping,
        card=card(),
        now=now,
    )


def test_a_collect_line_holds_the_stores_stock_at_the_stores_price(product, leeds, now):
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=2, now=now
    )

    line = _line(cart, leeds)
    assert (line.store_id, line.store_name) == ("leeds", "Leeds Briggate")
    assert line.unit_price == Decimal("80.00")
    assert held_by(cart.cart_id, leeds) == 2
    assert (stock_level(sku=leeds).free, stock_level(sku=product).free) == (1, 100)
    assert invariant_problems() == []


def test_one_sku_delivered_and_collected_is_two_lines_priced_apart(
    mongo_db, product, leeds, now
):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=2, now=now
    )

    prices = {line.sku: line.unit_price for line in cart.items}
    assert prices == {product: Decimal("100.00"), leeds: Decimal("80.00")}

    order = _checkout(cart.cart_id, now)

    assert order.state == PAID and order.total == Decimal("260.00")
    where = {(line.key, line.store_name, line.line_total) for line in order.lines}
    assert where == {
        (product, None, Decimal("100.00")),
        (leeds, "Leeds Briggate", Decimal("160.00")),
    }
    assert (stock_level(sku=product).sold, stock_level(sku=leeds).sold) == (1, 2)
    assert invariant_problems() == []


def test_a_stores_last_units_refuse_more_naming_the_store(product, leeds, now):
    with pytest.raises(OutOfStock) as refused:
        cart_add_item(owner=ALICE, sku=product, store_id="leeds", quantity=4, now=now)

    assert "Leeds Briggate" in refused.value.message
    assert refused.value.available == 3
    assert stock_level(sku=leeds).free == 3


def test_a_store_that_does_not_stock_the_sku_is_out_of_stock_there(product, now):
    make_store("york", "York Coney Street", lng=-1.08, lat=53.96)

    with pytest.raises(OutOfStock) as refused:
        cart_add_item(owner=ALICE, sku=product, store_id="york", quantity=1, now=now)

    assert refused.value.available == 0
    assert "York Coney Street" in refused.value.message
    with pytest.raises(UnknownStore):
        cart_add_item(owner=ALICE, sku=product, store_id="atlantis", quantity=1)


def test_change_and_remove_act_on_the_collect_line_only(product, leeds, now):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart_add_item(owner=ALICE, sku=product, store_id="leeds", quantity=1, now=now)

    cart = cart_set_quantity(owner=ALICE, sku=leeds, quantity=3, now=now)
    assert _line(cart, leeds).quantity == 3 and _line(cart, product).quantity == 1
    with pytest.raises(OutOfStock):
        cart_set_quantity(owner=ALICE, sku=leeds, quantity=4, now=now)

    cart = cart_remove_item(owner=ALICE, sku=leeds, now=now)

    assert [line.sku for line in cart.items] == [product]
    assert stock_level(sku=leeds).free == 3
    assert stock_level(sku=product).held == 1
    assert invariant_problems() == []


def test_a_store_price_changed_before_checkout_is_shown_then_charged(
    mongo_db, product, leeds, now
):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=1, now=now
    )
    mongo_db.prices.update_one(
        {"_id": f"{product}_leeds"}, {"$set": {"amount": Decimal128("70.00")}}
    )

    with pytest.raises(PricesChanged) as refused:
        _checkout(cart.cart_id, now)

    # The collect line alone moved, and the shopper is told where.
    assert refused.value.changes == [
        "JC Sneaker now £70.00 (was £80.00) at Leeds Briggate"
    ]
    assert mongo_db.test_gateway_charges.count_documents({}) == 0
    assert stock_level(sku=leeds).held == 1

    order = _checkout(cart.cart_id, now)

    assert order.total == Decimal("170.00")


def test_a_store_price_removed_falls_back_to_the_next_price_that_applies(
    mongo_db, product, leeds, now
):
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=1, now=now
    )
    mongo_db.prices.delete_one({"_id": f"{product}_leeds"})

    with pytest.raises(PricesChanged):
        _checkout(cart.cart_id, now, shipping=None)

    assert _checkout(cart.cart_id, now, shipping=None).total == Decimal("100.00")


def test_collect_only_needs_no_address_but_delivery_does(product, leeds, now):
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=1, now=now
    )
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)

    with pytest.raises(AddressNeeded):
        _checkout(cart.cart_id, now, shipping=None)

    cart_remove_item(owner=ALICE, sku=product, now=now)
    order = _checkout(cart.cart_id, now, shipping=None)

    assert order.state == PAID and order.shipping is None
    assert order.lines[0].store_name == "Leeds Briggate"


def test_collect_and_tickets_need_no_address_either(product, leeds, now):
    cart_hold_seats(owner=ALICE, session_id=make_show(), seats=[(0, 1)], now=now)
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=1, now=now
    )

    order = _checkout(cart.cart_id, now, shipping=None)

    assert order.state == PAID and order.shipping is None
    assert sorted(line.kind for line in order.lines) == ["product", "ticket"]


def test_a_canceled_collect_order_puts_the_units_back_at_the_store(product, leeds, now):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=2, now=now
    )
    paid = _checkout(cart.cart_id, now)

    order_cancel(number=paid.number, owner=ALICE, now=now)

    store, online = stock_level(sku=leeds), stock_level(sku=product)
    assert (store.free, store.sold) == (3, 0)
    assert (online.free, online.sold) == (100, 0)
    assert invariant_problems() == []


def test_an_expired_collect_line_gives_the_store_its_units_back(
    mongo_db, product, leeds, now, later
):
    cart = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=3, now=now
    )

    assert carts_expire(now=later) == 1

    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == EXPIRED
    assert stock_level(sku=leeds).free == 3
    assert held_by(cart.cart_id, leeds) == 0
    assert invariant_problems() == []


def test_a_stores_last_unit_goes_to_a_new_cart_past_a_stale_one(
    product, leeds, now, later
):
    cart_add_item(owner=ALICE, sku=product, store_id="leeds", quantity=3, now=now)

    # No job ran: the add short of units expires the stale holder (§3.5).
    cart = cart_add_item(
        owner="anon:bob", sku=product, store_id="leeds", quantity=3, now=later
    )

    assert held_by(cart.cart_id, leeds) == 3
    assert invariant_problems(now=later) == []


def test_reconcile_returns_a_store_take_no_cart_recorded(product, leeds, now):
    """What a crash between the counter's take and the cart's write leaves:
    counted held while in flight, back on the shelf after the grace."""
    counters.take(leeds, hold_id(leeds, "ghost"), 2, now)
    assert stock_level(sku=leeds).free == 1
    assert invariant_problems() == []

    reservations_reconcile(now=now + timedelta(minutes=5))

    assert stock_level(sku=leeds).free == 3
    assert invariant_problems() == []


def test_invariants_name_the_store_whose_stock_broke(mongo_db, product, leeds, now):
    cart_add_item(owner=ALICE, sku=product, store_id="leeds", quantity=1, now=now)
    make_store("york", "York Coney Street", lng=-1.08, lat=53.96)
    stock_store(product, "york", quantity=5)
    mongo_db.inventories.update_one({"_id": leeds}, {"$inc": {"quantity": 1}})

    problems = [(p.kind, p.key) for p in invariant_problems()]

    assert problems == [("product", leeds)]
    assert "held 1" in str(invariant_problems()[0])


def test_login_moves_a_collect_line_with_its_hold(product, leeds, now):
    cart_add_item(owner="user:7", sku=product, quantity=1, now=now)
    anonymous = cart_add_item(
        owner=ALICE, sku=product, store_id="leeds", quantity=2, now=now
    )

    merged = cart_merge(from_owner=ALICE, to_owner="user:7", now=now)

    line = _line(merged, leeds)
    assert (line.quantity, line.store_name) == (2, "Leeds Briggate")
    assert held_by(merged.cart_id, leeds) == 2
    assert held_by(anonymous.cart_id, leeds) == 0
    assert invariant_problems() == []
