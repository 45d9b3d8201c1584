"""Selling blocked seats from the staff seat map: one POST, a paid order for
the named customer, seen on the map and in the staff orders pages; refusals
are clear and sell nothing; only the box office may sell."""

import html
import re

import pytest
from bson import ObjectId
from django.contrib.messages import get_messages
from django.core import mail
from django.test import Client
from django.urls import reverse

from accounts.declines import count_decline, declines_exhausted
from booking.services.blocks import seats_block
from shop.documents import Order
from shop.selectors.invariants import invariant_problems
from shop.services.tickets import cart_hold_seats
from staff.roles import BOX_OFFICE, SHOP_MANAGER
from tests.booking.factories import move_to_the_past, seat_states
from tests.staff.conftest import PASSWORD, ROLE_EMAILS

CUSTOMER = {"name": "Grace Hopper", "email": "grace@example.com", "phone": ""}


@pytest.fixture(autouse=True)
def mail_now(settings):
    settings.MAIL_SYNC = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


@pytest.fixture
def house(show):
    seats_block(session_id=show, seats=[(1, 1), (1, 2)], reason="House", by="ann")
    return show


def login(role) -> Client:
    client = Client()
    assert client.login(username=ROLE_EMAILS[role], password=PASSWORD)
    return client


@pytest.fixture
def box(staff_users):
    return login(BOX_OFFICE)


def sell(client, show, **data):
    return client.post(
        reverse("staff:seat_map_sell", args=[show]),
        {"seat": ["1-1", "1-2"], **CUSTOMER, **data},
    )


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_box_office_sells_blocked_seats_to_a_named_customer(box, house, mongo_db):
    response = sell(box, house, phone="020 7946 0000")

    assert response.status_code == 302
    assert response["Location"] == reverse("staff:seat_map", args=[house])
    order = Order.objects.get(customer_name="Grace Hopper")
    assert said(response) == [
        f"Sold to Grace Hopper: order {order.number}, tickets sent to "
        "grace@example.com."
    ]
    assert (order.state, order.payment_method) == ("paid", "box_office")
    assert mail.outbox[0].to == ["grace@example.com"]
    states = seat_states(house)
    assert states[(1, 1)] == states[(1, 2)] == ("sold", order.cart_id)
    page = box.get(reverse("staff:seat_map", args=[house])).content.decode()
    assert reverse("staff:order", args=[order.number]) in page
    listing = box.get(reverse("staff:orders")).content.decode()
    assert order.number in listing and "Grace Hopper, box office" in listing
    detail = box.get(reverse("staff:order", args=[order.number])).content.decode()
    assert "Sold at the box office to <strong>Grace Hopper</strong>" in detail
    assert "020 7946 0000" in detail and "Box office" in detail
    entry = mongo_db.audit.find_one({"action": "seats sold at the box office"})
    assert entry["actor"] == "staff:box@example.com"
    assert entry["details"]["order"] == order.number
    paid = mongo_db.audit.find_one({"object_id": order.number, "after": "paid"})
    assert paid["actor"] == "staff:box@example.com"
    assert invariant_problems() == []


def test_a_box_office_order_is_refunded_from_its_staff_page(box, house):
    sell(box, house)
    order = Order.objects.get(customer_name="Grace Hopper")

    response = box.post(
        reverse("staff:order_refund", args=[order.number]),
        {"reason": "customer cannot come"},
    )

    assert response.status_code == 302
    assert Order.objects.get(pk=order.pk).state == "refunded"
    assert seat_states(house)[(1, 1)] == ("free", None)
    assert invariant_problems() == []


@pytest.mark.parametrize(
    "data, message",
    [
        ({"seat": []}, "Tick the seats first."),
        ({"email": "grace"}, "That email address is not valid"),
        ({"email": ""}, "Give the customer's email"),
        ({"name": ""}, "Give the customer's name."),
        ({"seat": ["2-0"]}, "Row C, seat 1 is not blocked (free)."),
        ({"seat": ["x-1"]}, "is not a seat of this map"),
        ({"seat": ["9-9"]}, "There is no seat at row 10, column 10"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message_and_sells_nothing(
    box, house, data, message, mongo_db
):
    response = sell(box, house, **data)

    # The map again, with the refusal and everything typed still there.
    assert response.status_code in (400, 409)
    (text,) = said(response)
    assert message in text
    page = html.unescape(response.content.decode())
    assert message in page
    for field in ("name", "email", "phone"):
        typed = data.get(field, CUSTOMER.get(field, ""))
        kept = rf'<input[^>]* name="{field}"[^>]* value="{re.escape(typed)}"'
        assert re.search(kept, page), field
    for seat in data.get("seat", ["1-1", "1-2"]):
        if re.fullmatch(r"\d+-\d+", seat) and seat != "9-9":
            assert f'value="{seat}" aria-label' in page  # still ticked
            assert re.search(rf'value="{seat}"[^>]* checked', page), seat
    assert mongo_db.orders.count_documents({}) == 0
    assert mongo_db.sessions.find_one({"_id": ObjectId(house)})["blocked"] == 2
    assert mail.outbox == []


def test_a_held_seat_and_a_started_performance_are_refused(box, house, mongo_db):
    cart_hold_seats(owner="anon:holder", session_id=house, seats=((2, 0),))
    held = sell(box, house, seat=["2-0"])
    move_to_the_past(mongo_db, house)
    closed = sell(box, house)

    assert "Row C, seat 1 is not blocked (held in a cart)" in said(held)[0]
    assert said(closed)[-1] == (
        "This performance has already started; its seats are no longer on sale."
    )
    assert mongo_db.orders.count_documents({}) == 0
    assert seat_states(house)[(2, 0)][0] == "held"
    assert seat_states(house)[(1, 1)] == ("blocked", None)


@pytest.mark.parametrize("who", ["anonymous", "shopper", SHOP_MANAGER])
def test_only_the_box_office_may_sell(staff_users, shopper, house, who, mongo_db):
    client = Client()
    if who == "shopper":
        assert client.login(username="shopper@example.com", password=PASSWORD)
    elif who != "anonymous":
        client = login(who)

    response = sell(client, house)

    assert response.status_code == (302 if who == "anonymous" else 403)
    if who == "anonymous":
        assert response["Location"].startswith("/accounts/login/")
    assert mongo_db.orders.count_documents({}) == 0
    assert seat_states(house)[(1, 1)] == ("blocked", None)


def test_a_sale_without_its_csrf_token_is_refused(staff_users, house, mongo_db):
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=ROLE_EMAILS[BOX_OFFICE], password=PASSWORD)

    response = sell(client, house)

    assert response.status_code == 403
    assert mongo_db.orders.count_documents({}) == 0


def test_a_sale_is_a_post_only(box, house):
    response = box.get(reverse("staff:seat_map_sell", args=[house]))

    assert response.status_code == 405


def test_a_sale_at_the_counter_is_not_held_back_by_declined_cards(
    box, house, mongo_db, settings, rf
):
    """The decline limit (accounts/declines.py) is the shop's checkout's:
    the box office's address at its limit still sells."""
    settings.DECLINES_PER_ADDRESS = 1
    count_decline(rf.post("/checkout/", REMOTE_ADDR="127.0.0.1"))
    assert declines_exhausted(rf.post("/checkout/", REMOTE_ADDR="127.0.0.1"))

    response = sell(box, house)

    assert response.status_code == 302
    assert Order.objects.get(customer_name="Grace Hopper").state == "paid"
