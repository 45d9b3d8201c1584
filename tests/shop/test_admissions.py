"""Admission at the door: a paid ticket admits once, to its own performance;
refunded, unpaid, unknown and other performances' codes are refused, each
with its own message; an undo lets the ticket admit again."""

import pytest
from django.utils import timezone

from shop.documents import Cart, Order
from shop.errors import (
    TicketAlreadyAdmitted,
    TicketForAnotherPerformance,
    TicketNotAdmitted,
    TicketRefunded,
    TicketUnpaid,
    UnknownTicket,
)
from shop.selectors.tickets import session_tickets, ticket_figures
from shop.services.admissions import (
    ticket_admission_undo,
    ticket_admit,
    ticket_code_of,
)
from shop.services.checkout import cart_checkout
from shop.services.orders import order_cancel
from shop.services.tickets import cart_hold_seats
from tests.shop.factories import SHIPPING, card, make_show


def paid(owner, session, seats, *, number=None):
    now = timezone.now()
    cart_hold_seats(owner=owner, session_id=session, seats=tuple(seats), now=now)
    cart = Cart.objects(live_owner=owner).first()
    return cart_checkout(
        owner=owner,
        cart_id=cart.cart_id,
        email="door@example.com",
        shipping=SHIPPING,
        card=card(),
        now=now,
    )


@pytest.fixture
def show():
    return make_show()


def test_a_paid_ticket_admits_once_then_says_when_and_by_whom(show):
    order = paid("anon:a", show, [(0, 0)])
    code = order.codes[0]
    at = timezone.now()

    admission = ticket_admit(code=code.lower(), session_id=show, by="kim", now=at)

    assert admission.seat == "Row A, seat 1"
    assert admission.name == SHIPPING["name"]
    assert admission.show == "Hamlet" and admission.number == order.number
    assert admission.admitted_by == "kim"
    with pytest.raises(TicketAlreadyAdmitted) as second:
        ticket_admit(code=code, session_id=show, by="lee")
    when = timezone.localtime(admission.admitted_at).strftime("%H:%M")
    assert second.value.message == f"Already admitted at {when} by kim."
    line = Order.objects.get(number=order.number).lines[0]
    assert line.admitted_by == "kim"  # the second scan changed nothing


def test_each_refusal_has_its_own_message(show, mongo_db):
    other = make_show(show="Macbeth", hall="Other Hall")
    order = paid("anon:a", show, [(0, 0), (0, 1)])
    elsewhere = paid("anon:b", other, [(0, 0)])
    refunded = paid("anon:c", show, [(0, 2)])
    order_cancel(number=refunded.number, staff=True)
    mongo_db.orders.update_one(
        {"number": order.number}, {"$set": {"state": "pending_payment"}}
    )

    refusals = {}
    for name, code in [
        ("unknown", "ZZZZ-ZZZZ-ZZZZ"),
        ("garbage", "not a code"),
        ("elsewhere", elsewhere.codes[0]),
        ("refunded", refunded.codes[0]),
        ("unpaid", order.codes[0]),
    ]:
        with pytest.raises(Exception) as refused:
            ticket_admit(code=code, session_id=show, by="kim")
        refusals[name] = refused.value
    assert isinstance(refusals["unknown"], UnknownTicket)
    assert isinstance(refusals["garbage"], UnknownTicket)
    assert isinstance(refusals["elsewhere"], TicketForAnotherPerformance)
    assert "Macbeth" in refusals["elsewhere"].message
    assert isinstance(refusals["refunded"], TicketRefunded)
    assert isinstance(refusals["unpaid"], TicketUnpaid)
    assert len({r.message for r in refusals.values()} - {UnknownTicket.message}) == 3


def test_undo_lets_the_ticket_admit_again_and_counts_follow(show):
    order = paid("anon:a", show, [(0, 0), (0, 1)])
    first, second = order.codes
    with pytest.raises(TicketNotAdmitted):
        ticket_admission_undo(code=first, session_id=show)

    ticket_admit(code=first, session_id=show, by="kim")
    assert ticket_figures(session_ids=[show])[show].admitted == 1
    undone = ticket_admission_undo(code=first, session_id=show)
    assert undone.admitted_by == "kim"
    figures = ticket_figures(session_ids=[show])[show]
    assert (figures.tickets, figures.admitted) == (2, 0)
    assert figures.revenue == order.total

    ticket_admit(code=first, session_id=show, by="lee")
    ticket_admit(code=second, session_id=show, by="lee")
    assert ticket_figures(session_ids=[show])[show].admitted == 2
    sold = session_tickets(session_id=show)
    assert [(t.row, t.col, t.number) for t in sold] == [
        (0, 0, order.number),
        (0, 1, order.number),
    ]
    assert all(t.admitted_by == "lee" for t in sold)


def test_a_refunded_order_no_longer_counts_and_no_longer_admits(show):
    order = paid("anon:a", show, [(0, 0)])
    ticket_admit(code=order.codes[0], session_id=show, by="kim")
    order_cancel(number=order.number, staff=True)
    assert ticket_figures(session_ids=[show])[show].tickets == 0
    with pytest.raises(TicketRefunded):
        ticket_admission_undo(code=order.codes[0], session_id=show)


def test_codes_are_read_however_they_are_typed():
    assert ticket_code_of(" abcd efgh-jklm ") == "ABCD-EFGH-JKLM"
    assert ticket_code_of("abc") is None
    assert ticket_code_of("") is None


def test_in_an_order_of_goods_and_tickets_each_code_admits_its_own_ticket(show):
    from shop.services.carts import cart_add_item
    from tests.shop.factories import make_product

    product = make_product(sku="MUG-1", stock=10)
    now = timezone.now()
    # Goods come first among an order's lines, before the tickets.
    cart_add_item(owner="anon:m", sku=product, quantity=1, now=now)
    order = paid("anon:m", show, [(0, 0), (0, 1)])
    first, second = order.codes

    assert ticket_admit(code=second, session_id=show, by="kim").seat == "Row A, seat 2"

    lines = Order.coll().find_one({"_id": order.pk})["lines"]
    admitted = {line.get("code"): line.get("admitted_at") for line in lines}
    assert admitted[second] is not None and admitted[first] is None
    assert "admitted_at" not in lines[0] or lines[0]["admitted_at"] is None
    with pytest.raises(TicketAlreadyAdmitted):
        ticket_admit(code=second, session_id=show, by="lee")
    assert ticket_admit(code=first, session_id=show, by="lee").seat == "Row A, seat 1"

    ticket_admission_undo(code=first, session_id=show)
    lines = Order.coll().find_one({"_id": order.pk})["lines"]
    admitted = {line.get("code"): line.get("admitted_at") for line in lines}
    assert admitted[first] is None and admitted[second] is not None
