"""Tickets through checkout, orders, cancellation, reconciliation and checks.

The article's operations in its own terms: checkout keeps the seats taken and
removes the reservation; a canceled order puts its seats back on sale.
"""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from bson import Decimal128, ObjectId
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from booking import services as booking
from booking.selectors import reservations_index, session_invariant_violations
from catalog.selectors.stock import stock_level
from shop.documents import COMPLETE, PAID, PENDING, REFUNDED, REFUNDING
from shop.errors import (
    LineUnavailable,
    OrderNotCancelable,
    OrderNotFound,
    PaymentFailed,
    PricesChanged,
)
from shop.kinds.tickets import CODE_ALPHABET
from shop.selectors.invariants import invariant_problems
from shop.selectors.orders import order_tickets, owner_may_cancel
from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout
from shop.services.orders import CANCEL_GRACE, order_cancel, orders_cancel_recover
from shop.services.reconcile import RECONCILE_GRACE, reservations_reconcile
from shop.services.tickets import cart_hold_seats
from tests.booking.factories import SMALL_SEATS, holders, move_to_the_past, sold_to
from tests.shop.factories import DECLINED_CARD, SHIPPING, card, make_show

ALICE, BOB = "anon:alice", "anon:bob"
CODE = re.compile(
    rf"^[{CODE_ALPHABET}]{{4}}-[{CODE_ALPHABET}]{{4}}-[{CODE_ALPHABET}]{{4}}$"
)


@pytest.fixture
def show():
    return make_show()


def session(mongo_db, session_id):
    return mongo_db.sessions.find_one({"_id": ObjectId(session_id)})


def hold(owner, show, seats, now):
    cart_hold_seats(owner=owner, session_id=show, seats=seats, now=now)


def checkout(mongo_db, owner, now, number=None):
    cart = mongo_db.carts.find_one({"owner": owner, "live_owner": owner})
    return cart_checkout(
        owner=owner,
        cart_id=cart["_id"],
        email="ada@example.com",
        shipping=SHIPPING,
        card=card(number) if number else card(),
        now=now,
    )


def assert_clean():
    assert invariant_problems() == []
    assert session_invariant_violations() == []


# --- checkout ---------------------------------------------------------------------


def test_checkout_keeps_the_seats_taken_and_removes_the_reservation(
    mongo_db, show, product, now
):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    hold(ALICE, show, ((0, 0), (2, 3)), now)

    order = checkout(mongo_db, ALICE, now)

    assert order.state == PAID
    assert order.total == Decimal("155.50")
    doc = session(mongo_db, show)
    assert doc["held"] == 0
    assert sorted(sold_to(show)) == [(0, 0), (2, 3)]
    assert doc["seats"][0][0] < 0 and doc["seats"][2][3] < 0  # sold: -tag
    assert doc["seatsAvailable"] == SMALL_SEATS - 2
    assert mongo_db.carts.find_one({"_id": order.cart_id})["state"] == COMPLETE
    tickets = [line for line in order.lines if line.kind == "ticket"]
    assert [(t.ticket.label, t.ticket.zone_name, t.unit_price) for t in tickets] == [
        ("Row A, seat 1", "Stalls", Decimal("35.00")),
        ("Row C, seat 4", "Circle", Decimal("20.50")),
    ]
    assert all(
        t.ticket.show == "Hamlet" and t.ticket.theater == "Test Hall" for t in tickets
    )
    assert all(CODE.match(t.code) for t in tickets)
    assert len({t.code for t in tickets}) == 2
    assert sorted(order.codes) == sorted(t.code for t in tickets)
    (group,) = order_tickets(order)
    assert group.show == "Hamlet" and len(group.lines) == 2
    assert_clean()


def test_an_order_without_tickets_has_no_codes_field(mongo_db, product, now):
    cart_add_item(owner=ALICE, sku=product, quantity=1, now=now)
    cart_add_item(owner=BOB, sku=product, quantity=1, now=now)

    first = checkout(mongo_db, ALICE, now)
    second = checkout(mongo_db, BOB, now)  # no clash in the unique index

    assert "codes" not in mongo_db.orders.find_one({"_id": first.pk})
    assert second.state == PAID


def test_ticket_codes_are_unique_across_orders(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    order = checkout(mongo_db, ALICE, now)

    with pytest.raises(Exception, match="duplicate key"):
        mongo_db.orders.insert_one(
            {"number": "MQ-1", "cart_id": "x", "codes": order.codes}
        )


def test_a_declined_card_keeps_the_seats_held_for_another_try(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)

    with pytest.raises(PaymentFailed):
        checkout(mongo_db, ALICE, now, number=DECLINED_CARD)

    doc = session(mongo_db, show)
    assert list(holders(show)) == [(0, 0)]
    assert doc["sold"] == 0
    assert checkout(mongo_db, ALICE, now).state == PAID
    assert_clean()


def test_a_changed_seat_price_is_shown_before_paying(mongo_db, show, now):
    hold(ALICE, show, ((0, 0), (2, 3)), now)
    mongo_db.sessions.update_one(
        {"_id": ObjectId(show)}, {"$set": {"prices.stalls": Decimal128("40.00")}}
    )

    with pytest.raises(
        PricesChanged, match=r"Row A, seat 1 for Hamlet now £40.00 \(was £35.00\)"
    ):
        checkout(mongo_db, ALICE, now)

    cart = mongo_db.carts.find_one({"owner": ALICE})
    assert cart["state"] == "active"
    prices = [s["price"].to_decimal() for s in cart["tickets"][0]["seats"]]
    assert prices == [Decimal("40.00"), Decimal("20.50")]
    assert checkout(mongo_db, ALICE, now).total == Decimal("60.50")


def test_seats_of_a_performance_that_started_cannot_be_paid_for(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    move_to_the_past(mongo_db, show)

    with pytest.raises(LineUnavailable, match="already started"):
        checkout(mongo_db, ALICE, now)

    assert mongo_db.carts.find_one({"owner": ALICE})["state"] == "active"
    assert session(mongo_db, show)["sold"] == 0


def test_checkout_holds_a_listed_seat_again_if_its_hold_was_lost(mongo_db, show, now):
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    cart_id = mongo_db.carts.find_one({"owner": ALICE})["_id"]
    booking.seats_release(session_id=show, cart_id=cart_id, seats=[(0, 1)])

    order = checkout(mongo_db, ALICE, now)

    assert order.state == PAID
    assert sorted(sold_to(show)) == [
        (0, 0),
        (0, 1),
    ]
    assert_clean()


def line_tags(mongo_db, owner) -> dict[tuple, int | None]:
    cart = mongo_db.carts.find_one({"owner": owner, "live_owner": owner})
    (line,) = cart["tickets"]
    return {(s["row"], s["col"]): s.get("tag") for s in line["seats"]}


def carried(mongo_db, show, seats) -> dict[tuple, int]:
    state = session(mongo_db, show)["seats"]
    return {(r, c): state[r][c] for r, c in seats}


def test_the_line_records_the_tag_each_seat_carries_and_checkout_sells_by_it(
    mongo_db, show, now
):
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    hold(ALICE, show, ((2, 3),), now)  # a second hold: another tag

    tags = line_tags(mongo_db, ALICE)
    assert tags == carried(mongo_db, show, tags)
    assert tags[(0, 0)] == tags[(0, 1)] != tags[(2, 3)]
    order = checkout(mongo_db, ALICE, now)

    assert order.state == PAID
    assert carried(mongo_db, show, tags) == {s: -t for s, t in tags.items()}
    assert_clean()


def test_checkout_of_seats_carrying_their_lines_tags_reads_no_seat_holds(
    monkeypatch, mongo_db, show, now
):
    import booking.selectors
    from booking.services import holds as hold_records

    hold(ALICE, show, ((0, 0), (0, 1)), now)

    def no_read(*args, **kwargs):
        raise AssertionError("the cart's SeatHolds was read")

    monkeypatch.setattr(booking.selectors, "_holds", no_read)
    monkeypatch.setattr(hold_records, "read", no_read)
    order = checkout(mongo_db, ALICE, now)
    monkeypatch.undo()

    assert order.state == PAID
    assert sorted(sold_to(show)) == [(0, 0), (0, 1)]
    assert_clean()


def test_a_line_recorded_without_tags_checks_out_as_before(mongo_db, show, now):
    """A cart from before lines kept their seats' tags: checkout asks the
    cart's SeatHolds which seats are its own."""
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    mongo_db.carts.update_one(
        {"owner": ALICE},
        {"$unset": {"tickets.0.seats.0.tag": "", "tickets.0.seats.1.tag": ""}},
    )
    assert set(line_tags(mongo_db, ALICE).values()) == {None}

    order = checkout(mongo_db, ALICE, now)

    assert order.state == PAID
    assert sorted(sold_to(show)) == [(0, 0), (0, 1)]
    assert_clean()


def test_a_line_moved_at_login_carries_its_new_tags_and_checks_out(mongo_db, show, now):
    from shop.services.carts import cart_merge

    account = "user:ada"
    hold(account, show, ((0, 0),), now)
    hold(ALICE, show, ((0, 5), (0, 6)), now)
    before = line_tags(mongo_db, ALICE)

    cart_merge(from_owner=ALICE, to_owner=account, now=now)

    tags = line_tags(mongo_db, account)
    assert tags == carried(mongo_db, show, tags)
    assert tags[(0, 5)] != before[(0, 5)]  # handed over: the account's tag
    assert checkout(mongo_db, account, now).state == PAID
    assert sorted(sold_to(show)) == [(0, 0), (0, 5), (0, 6)]
    assert_clean()


def test_checkout_refuses_when_a_lost_seat_went_to_someone_else(mongo_db, show, now):
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    cart_id = mongo_db.carts.find_one({"owner": ALICE})["_id"]
    booking.seats_release(session_id=show, cart_id=cart_id, seats=[(0, 1)])
    hold(BOB, show, ((0, 1),), now)

    with pytest.raises(Exception, match="Row A, seat 2 was just taken"):
        checkout(mongo_db, ALICE, now)

    assert mongo_db.orders.count_documents({"state": PAID}) == 0
    assert mongo_db.carts.find_one({"owner": ALICE})["state"] == "active"


# --- canceling ---------------------------------------------------------------------


@pytest.fixture
def paid(mongo_db, show, product, now):
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    return checkout(mongo_db, ALICE, now)


def test_canceling_a_paid_order_refunds_it_and_puts_seats_and_goods_back(
    mongo_db, show, product, paid, now
):
    assert owner_may_cancel(paid, now=now)

    order = order_cancel(number=paid.number, owner=ALICE, now=now)

    assert order.state == REFUNDED
    assert order.canceled_by == "owner" and order.refunded_at == now
    assert all(line.returned_at == now for line in order.lines)
    doc = session(mongo_db, show)
    assert doc["sold"] == 0 and doc["held"] == 0
    assert doc["seats"][0][:2] == [0, 0]
    assert doc["seatsAvailable"] == SMALL_SEATS
    level = stock_level(sku=product)
    assert (level.free, level.held, level.sold) == (100, 0, 0)
    refund = mongo_db.test_gateway_refunds.find_one()
    assert refund["_id"] == f"{paid.payment_reference}-refund"
    assert refund["amount"].to_decimal() == paid.total
    assert refund["charge_reference"] == paid.payment_reference
    assert not owner_may_cancel(order, now=now)
    assert_clean()


def test_the_returned_seats_can_be_held_by_someone_else(mongo_db, show, paid, now):
    order_cancel(number=paid.number, owner=ALICE, now=now)

    held = cart_hold_seats(owner=BOB, session_id=show, seats=((0, 0),), now=now)

    assert held.positions == ((0, 0),)
    assert_clean()


def test_canceling_twice_refunds_and_returns_once(mongo_db, show, product, paid, now):
    order_cancel(number=paid.number, owner=ALICE, now=now)
    again = order_cancel(
        number=paid.number, owner=ALICE, now=now + timedelta(minutes=1)
    )

    assert again.state == REFUNDED and again.refunded_at == now
    assert mongo_db.test_gateway_refunds.count_documents({}) == 1
    assert stock_level(sku=product).free == 100
    assert session(mongo_db, show)["seatsAvailable"] == SMALL_SEATS
    assert_clean()


def test_a_refund_a_restored_backup_rolled_back_is_not_paid_twice(mongo_db, paid, now):
    # Refunded; then the order is restored as the backup had it (paid), and
    # canceled again. The provider, outside the database, kept the refund
    # (the test gateway's collection stands for it).
    backup = mongo_db.orders.find_one({"_id": paid.pk})
    order_cancel(number=paid.number, owner=ALICE, now=now)
    mongo_db.orders.replace_one({"_id": paid.pk}, backup)

    again = order_cancel(number=paid.number, owner=ALICE, now=now)

    assert again.state == REFUNDED
    assert mongo_db.test_gateway_refunds.count_documents({}) == 1


def test_the_order_link_token_also_lets_its_holder_cancel(mongo_db, paid, now):
    order = order_cancel(number=paid.number, token=paid.token, now=now)

    assert order.state == REFUNDED


@pytest.mark.parametrize(
    "proof",
    [
        {"owner": BOB},
        {"token": "x" * 32},
        {},
        {"owner": {"$ne": None}},
        {"token": {"$ne": None}},
        {"staff": "yes"},
    ],
)
def test_someone_elses_order_cannot_be_canceled_and_nothing_changes(
    mongo_db, show, paid, now, proof
):
    with pytest.raises(OrderNotFound):
        order_cancel(number=paid.number, now=now, **proof)

    assert mongo_db.orders.find_one({"_id": paid.pk})["state"] == PAID
    assert session(mongo_db, show)["sold"] == 2
    assert mongo_db.test_gateway_refunds.count_documents({}) == 0


def test_an_unknown_order_number_is_not_found(mongo_db, now):
    for number in ("MQ-999999", "", None, {"$ne": ""}):
        with pytest.raises(OrderNotFound):
            order_cancel(number=number, owner=ALICE, now=now)


def test_the_owner_cannot_cancel_once_the_performance_has_started(
    mongo_db, show, paid, now
):
    start = session(mongo_db, show)["start"]

    with pytest.raises(OrderNotCancelable, match="has started"):
        order_cancel(number=paid.number, owner=ALICE, now=start)

    assert not owner_may_cancel(paid, now=start)
    assert mongo_db.orders.find_one({"_id": paid.pk})["state"] == PAID


def test_staff_may_cancel_after_the_start(mongo_db, show, paid, now):
    start = session(mongo_db, show)["start"]

    order = order_cancel(number=paid.number, staff=True, now=start + timedelta(hours=1))

    assert order.state == REFUNDED and order.canceled_by == "staff"
    assert session(mongo_db, show)["sold"] == 0
    assert_clean()


def test_an_unpaid_order_is_not_canceled_by_its_owner(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    with pytest.raises(PaymentFailed):
        checkout(mongo_db, ALICE, now, number=DECLINED_CARD)
    number = mongo_db.orders.find_one()["number"]

    with pytest.raises(OrderNotCancelable, match="not paid"):
        order_cancel(number=number, owner=ALICE, now=now)


def test_a_cancellation_stopped_half_way_is_finished_by_the_reconciler(
    mongo_db, show, product, paid, now
):
    # Flipped to refunding, then the process died (no refund, nothing back).
    mongo_db.orders.update_one(
        {"_id": paid.pk},
        {
            "$set": {
                "state": REFUNDING,
                "canceled_at": now,
                "canceled_by": "owner",
                "refund_reference": f"{paid.payment_reference}-refund",
            }
        },
    )
    assert invariant_problems() == []  # its seats still count as sold
    assert orders_cancel_recover(now=now) == 0  # within the grace period

    report = reservations_reconcile(now=now + CANCEL_GRACE + timedelta(seconds=1))

    assert report.canceled == 1
    assert mongo_db.orders.find_one({"_id": paid.pk})["state"] == REFUNDED
    assert session(mongo_db, show)["sold"] == 0
    assert stock_level(sku=product).sold == 0
    assert_clean()


# --- reconciliation and the invariant check ---------------------------------------


def test_the_reconciler_returns_seats_no_cart_lists_and_keeps_listed_ones(
    mongo_db, show, now
):
    hold(ALICE, show, ((0, 0),), now)
    cart_id = mongo_db.carts.find_one({"owner": ALICE})["_id"]
    # Crash leftovers: an unlisted seat of a live cart, one of no cart at all.
    booking.seats_hold(session_id=show, cart_id=cart_id, seats=[(0, 1)])
    booking.seats_hold(session_id=show, cart_id="gone", seats=[(0, 2)])
    assert {p.message for p in invariant_problems()} == {
        f"cart {cart_id} holds ((0, 0), (0, 1)) but lists ((0, 0),)",
        "held by missing cart gone",
    }

    report = reservations_reconcile(now=now + RECONCILE_GRACE + timedelta(minutes=1))

    assert report.released + report.fitted >= 2
    held = holders(show)
    assert held == {(0, 0): cart_id}
    assert_clean()


def test_the_reconciler_takes_a_listed_seat_again_if_it_is_free(mongo_db, show, now):
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    cart_id = mongo_db.carts.find_one({"owner": ALICE})["_id"]
    booking.seats_release(session_id=show, cart_id=cart_id, seats=[(0, 1)])

    reservations_reconcile(now=now + RECONCILE_GRACE + timedelta(minutes=1))

    held = set(holders(show))
    assert held == {(0, 0), (0, 1)}
    assert_clean()


def test_a_seat_held_again_after_the_reconciler_read_it_is_not_released(
    mongo_db, show, now
):
    booking.seats_hold(session_id=show, cart_id="gone", seats=[(0, 1)])
    from shop.kinds import TICKETS

    (stale,) = list(TICKETS.holds(before=None))
    # Meanwhile the orphan was released and a live cart took the seat (a
    # millisecond later at least: stamps are kept to the millisecond).
    booking.seats_release(session_id=show, cart_id="gone")
    while timezone.now() < stale.at + timedelta(milliseconds=2):
        pass
    booking.seats_hold(session_id=show, cart_id="gone", seats=[(0, 1)])

    assert TICKETS.release_hold(hold=stale) is False
    assert list(holders(show).values()) == ["gone"]


def test_the_reconciler_confirms_listed_seats_by_stamping_them(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    later = now + RECONCILE_GRACE + timedelta(minutes=5)

    report = reservations_reconcile(now=later)

    assert report.refreshed == 1
    (ref,) = reservations_index()
    assert ref.stamps == (later,)


def test_check_invariants_passes_with_tickets_held_sold_and_returned(
    mongo_db, show, paid, now, capsys
):
    hold(BOB, show, ((2, 2),), now)

    call_command("check_invariants")

    assert "every invariant holds" in capsys.readouterr().out


def test_check_invariants_names_a_seat_sold_in_two_paid_orders(
    mongo_db, show, paid, now
):
    twin = mongo_db.orders.find_one({"_id": paid.pk})
    twin.pop("_id")
    twin.pop("codes")
    twin.update(number="MQ-999999", cart_id="twin")
    mongo_db.orders.insert_one(twin)

    messages = [p.message for p in invariant_problems()]

    assert any("seat (0, 0) is in orders" in m for m in messages)
    with pytest.raises(CommandError, match=show):
        call_command("check_invariants")


def test_check_invariants_names_a_seat_listed_by_two_carts(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    hold(BOB, show, ((0, 1),), now)
    alice = mongo_db.carts.find_one({"owner": ALICE})
    mongo_db.carts.update_one(
        {"owner": BOB}, {"$push": {"tickets.0.seats": alice["tickets"][0]["seats"][0]}}
    )

    messages = [p.message for p in invariant_problems()]

    assert any("seat (0, 0) is in carts" in m for m in messages)


def test_check_invariants_names_a_seat_a_cart_lists_without_holding_it(
    mongo_db, show, now
):
    hold(ALICE, show, ((0, 0), (0, 1)), now)
    cart_id = mongo_db.carts.find_one({"owner": ALICE})["_id"]
    booking.seats_release(session_id=show, cart_id=cart_id, seats=[(0, 1)])
    hold(BOB, show, ((0, 1),), now)

    messages = [p.message for p in invariant_problems()]

    assert f"cart {cart_id} lists seat (0, 1) but does not hold it" in messages


def test_check_invariants_names_a_session_whose_counter_is_off(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    mongo_db.sessions.update_one(
        {"_id": ObjectId(show)}, {"$inc": {"seatsAvailable": 1}}
    )

    problems = invariant_problems()

    assert [p.key for p in problems] == [show]
    assert "seatsAvailable" in problems[0].message


def test_check_invariants_names_a_paid_seat_the_session_has_not_sold(
    mongo_db, show, paid, now
):
    booking.seats_return(session_id=show, cart_id=paid.cart_id, seats=[(0, 1)])

    messages = [p.message for p in invariant_problems()]

    assert any(
        "Row A, seat 2 is in a paid order but not sold here" in m for m in messages
    )


def test_a_pending_checkouts_seats_are_not_reconciled_away(mongo_db, show, now):
    hold(ALICE, show, ((0, 0),), now)
    mongo_db.carts.update_one(
        {"owner": ALICE},
        {"$set": {"state": PENDING, "checkout_at": now + timedelta(minutes=30)}},
    )

    reservations_reconcile(now=now + timedelta(minutes=35))

    assert session(mongo_db, show)["held"] == 1
