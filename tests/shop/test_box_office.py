"""A box-office sale: blocked seats sold by staff to a named customer through
a staff cart and the shop's own checkout, paid at the counter."""

import pytest
from django.core import mail
from django.urls import reverse

from booking.errors import InvalidSeats, SessionClosed
from booking.selectors import session_counts
from booking.services.blocks import seats_block
from shop.documents import Cart, Order
from shop.errors import CustomerInvalid, NotHouseSeats
from shop.selectors.invariants import invariant_problems
from shop.services.admissions import ticket_admit
from shop.services.box_office import box_office_sell
from shop.services.orders import order_cancel
from shop.services.tickets import cart_hold_seats
from tests.booking.factories import move_to_the_past, seat_states
from tests.shop.factories import make_show
from tests.staff.conftest import pay

HOUSE = [(1, 1), (1, 2)]


@pytest.fixture
def show():
    session_id = make_show()
    seats_block(session_id=session_id, seats=HOUSE, reason="House seats", by="ann")
    return session_id


@pytest.fixture(autouse=True)
def mail_now(settings):
    settings.MAIL_SYNC = True  # the order's email task runs in the sale
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def sell(show, seats=HOUSE, **customer):
    fields = {"name": "Grace Hopper", "email": "Grace@Example.com", "phone": ""}
    return box_office_sell(
        session_id=show, seats=seats, by="staff:box@example.com", **fields | customer
    )


def test_a_sale_is_a_paid_order_for_the_customer_paid_at_the_box_office(show):
    order = sell(show, phone="+44 20 7946 0000")

    assert order.state == "paid"
    assert (order.customer_name, order.email) == ("Grace Hopper", "grace@example.com")
    assert order.customer_phone == "+44 20 7946 0000"
    assert order.payment_method == "box_office"
    assert order.payment_provider == "box_office"
    assert [a.card for a in order.attempts] == ["Box office"]
    assert order.owner.startswith("boxoffice:")
    assert [line.ticket.label for line in order.lines] == [
        "Row B, seat 1",
        "Row B, seat 2",
    ]
    assert len(set(order.codes)) == 2
    states = seat_states(show)
    assert [states[s] for s in HOUSE] == [("sold", order.cart_id)] * 2
    counts = session_counts(session_id=show)
    assert (counts.blocked, counts.held, counts.sold) == (0, 0, 2)
    assert Cart.objects.get(cart_id=order.cart_id).state == "complete"
    admission = ticket_admit(code=order.codes[0], session_id=show, by="door")
    assert admission.number == order.number
    assert invariant_problems() == []


def test_the_customer_gets_the_confirmation_with_the_tickets(show):
    order = sell(show)

    (message,) = mail.outbox
    assert message.to == ["grace@example.com"]
    assert order.number in message.subject
    assert all(code in message.body for code in order.codes)
    (attachment,) = message.attachments
    assert attachment[0] == f"marquee-{order.number}-tickets.pdf"


def test_the_emailed_link_opens_the_order_and_its_tickets_without_logging_in(
    show, client
):
    order = sell(show)
    link = reverse("shop:order_link", args=[order.number, order.token])

    page = client.get(link)
    pdf = client.get(reverse("shop:order_link_pdf", args=[order.number, order.token]))

    assert link in mail.outbox[0].body
    assert page.status_code == 200
    assert all(code in page.content.decode() for code in order.codes)
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"


def test_each_sale_has_its_own_cart_and_numbering_continues(show):
    before = pay("anon:shopper", session=show, seats=[(2, 0)])
    first = sell(show, seats=[(1, 1)])
    second = sell(show, seats=[(1, 2)], name="Alan Turing")

    numbers = [int(o.number.split("-")[1]) for o in (before, first, second)]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3
    assert first.cart_id != second.cart_id and first.owner != second.owner
    assert invariant_problems() == []


def test_a_refund_puts_the_seats_on_sale_and_gives_the_money_back_at_the_counter(
    show, mongo_db
):
    order = sell(show)

    refunded = order_cancel(number=order.number, staff=True)

    assert refunded.state == "refunded"
    states = seat_states(show)
    assert [states[s] for s in HOUSE] == [("free", None)] * 2
    refund = mongo_db.box_office_payments.find_one({"kind": "refund"})
    assert refund["charge_reference"] == order.payment_reference
    assert str(refund["amount"]) == str(order.total)
    assert invariant_problems() == []


@pytest.mark.parametrize("seats", [[(2, 0)], [(1, 1), (2, 1)]])
def test_a_free_seat_is_refused_and_nothing_is_sold(show, seats, mongo_db):
    with pytest.raises(NotHouseSeats) as refused:
        sell(show, seats=seats)

    assert "not blocked (free)" in refused.value.message
    states = seat_states(show)
    assert states[(1, 1)] == ("blocked", None)
    assert (states[(2, 0)], states[(2, 1)]) == (("free", None), ("free", None))
    assert mongo_db.orders.count_documents({}) == 0
    assert invariant_problems() == []


def test_held_or_sold_seats_are_refused(show, mongo_db):
    cart_hold_seats(owner="anon:holder", session_id=show, seats=((2, 0),))
    pay("anon:buyer", session=show, seats=[(2, 1)])
    sold = sell(show, seats=[(1, 1)])

    said = {}
    for seats in ([(2, 0)], [(2, 1)], [(1, 1)], [(2, 0), (2, 2)]):
        with pytest.raises(NotHouseSeats) as refused:
            sell(show, seats=seats)
        said[tuple(seats)] = refused.value.message.split(".")[0]

    assert said == {
        ((2, 0),): "Row C, seat 1 is not blocked (held in a cart)",
        ((2, 1),): "Row C, seat 2 is not blocked (sold)",
        ((1, 1),): "Row B, seat 1 is not blocked (sold)",
        ((2, 0), (2, 2)): (
            "Row C, seat 1; Row C, seat 3 are not blocked (held in a cart or free)"
        ),
    }
    assert mongo_db.orders.count_documents({}) == 2
    assert seat_states(show)[(1, 1)] == ("sold", sold.cart_id)
    assert invariant_problems() == []


@pytest.mark.parametrize(
    "customer, error",
    [
        ({"email": "not-an-email"}, CustomerInvalid),
        ({"email": ""}, CustomerInvalid),
        ({"name": "  "}, CustomerInvalid),
        ({"phone": "call me maybe"}, CustomerInvalid),
        ({"seats": []}, InvalidSeats),
    ],
)
def test_bad_input_is_refused_and_the_seats_stay_blocked(
    show, customer, error, mongo_db
):
    with pytest.raises(error):
        sell(show, **customer)

    assert session_counts(session_id=show).blocked == 2
    assert mongo_db.carts.count_documents({}) == 0
    assert mail.outbox == []


def test_a_performance_that_has_started_sells_nothing(show, mongo_db):
    move_to_the_past(mongo_db, show)

    with pytest.raises(SessionClosed):
        sell(show)

    assert session_counts(session_id=show).blocked == 2
    assert Order.objects.count() == 0


def test_the_customer_claims_a_box_office_order_by_its_email(show):
    from shop.services.order_owners import orders_attach, orders_attach_by_email

    order = sell(show)
    # Only the email proves it: the sale's owner is no shopper's browser.
    assert orders_attach(from_owner=order.owner, to_owner="user:7") == 0

    assert orders_attach_by_email(email="grace@example.com", to_owner="user:7") == 1

    assert Order.objects.get(number=order.number).owner == "user:7"
    # Attached once: a second claim finds nothing left to attach.
    assert orders_attach_by_email(email="grace@example.com", to_owner="user:8") == 0
