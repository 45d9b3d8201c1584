"""Seats over HTTP: the seat map's hold, release and best-available posts,
the cart page's tickets, the order page's tickets and its cancel button."""

import re
from datetime import timedelta

import pytest
from bson import ObjectId
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from booking import services as booking
from tests.booking.factories import SMALL_SEATS, holders, move_to_the_past
from tests.shop.factories import make_show
from tests.shop.test_views import checkout_data

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def show():
    return make_show()


def url(show, action):
    return f"/cart/tickets/{show}/{action}/"


def session(mongo_db, show):
    return mongo_db.sessions.find_one({"_id": ObjectId(show)})


def held(mongo_db, show) -> dict:
    return holders(show)


def listed(mongo_db) -> list:
    return [
        (line["session_id"], s["key"])
        for cart in mongo_db.carts.find()
        for line in cart.get("tickets", [])
        for s in line["seats"]
    ]


# --- the seat map page ---------------------------------------------------------------


def test_the_seat_map_posts_clicks_to_the_shop(client, show):
    html = client.get(f"/sessions/{show}/").content.decode()

    assert f'hx-post="{url(show, "hold")}"' in html
    assert f'action="{url(show, "best")}"' in html
    assert 'type="submit" name="seat" value="0-0"' in html


def test_clicking_a_free_seat_with_htmx_holds_it_and_redraws_the_map(
    client, mongo_db, show
):
    response = client.post(url(show, "hold"), {"seat": "0-1"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="seat-map"')
    assert 'aria-label="Row A, seat 2, Stalls, £35, held by you"' in html
    assert "Row A, seat 2: held for you." in html
    # The cart's hold, beside the seats (the same countdown as the cart's).
    assert re.search(r'id="countdown">(30:00|29:5\d)<', html)
    assert re.search(r'id="cart-badge"[^>]*hx-swap-oob="true"', html)
    (cart,) = mongo_db.carts.find()
    assert held(mongo_db, show) == {(0, 1): cart["_id"]}
    assert listed(mongo_db) == [(show, "0-1")]


def test_clicking_ones_own_seat_releases_it(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": "0-1"}, **HTMX)

    response = client.post(url(show, "release"), {"seat": "0-1"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'aria-label="Row A, seat 2, Stalls, £35, available"' in html
    assert "Row A, seat 2: released." in html
    assert held(mongo_db, show) == {}
    assert listed(mongo_db) == []


def test_a_lost_race_says_just_taken_and_redraws_the_map_with_200(
    client, mongo_db, show
):
    booking.seats_hold(session_id=show, cart_id="b" * 32, seats=[(0, 1)])
    Client().post(url(show, "hold"), {"seat": "0-2"})  # someone's live cart

    response = client.post(url(show, "hold"), {"seat": "0-1"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "Row A, seat 2 was just taken. Please choose another seat." in html
    assert 'aria-label="Row A, seat 2, Stalls, £35, taken"' in html
    assert mongo_db.carts.count_documents({}) == 1  # only the other shopper's


def test_without_js_a_hold_redirects_back_to_the_map_showing_the_seat(
    client, mongo_db, show
):
    response = client.post(url(show, "hold"), {"seat": "0-1"})

    assert response.status_code == 302
    assert response["Location"] == f"/sessions/{show}/"
    page = client.get(response["Location"]).content.decode()
    assert "Row A, seat 2: held for you." in page
    assert 'aria-label="Row A, seat 2, Stalls, £35, held by you"' in page


def test_without_js_a_refusal_redraws_the_page_with_its_status(client, show):
    booking.seats_hold(session_id=show, cart_id="someone", seats=[(0, 1)])

    response = client.post(url(show, "hold"), {"seat": "0-1"})

    assert response.status_code == 409
    html = response.content.decode()
    assert "Row A, seat 2 was just taken" in html
    assert "<!doctype html>" in html


def test_best_available_with_htmx_holds_a_block_in_the_zone(client, mongo_db, show):
    response = client.post(url(show, "best"), {"count": "3", "zone": "circle"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "We found Row C, seat" in html
    seats = held(mongo_db, show)
    assert len(seats) == 3 and {r for r, _ in seats} == {2}
    assert len(listed(mongo_db)) == 3


BAD_HOLDS = [
    ({"seat": "0-3"}, "no seat at row 1, column 4", 400),  # the aisle
    ({"seat": "9-9"}, "no seat at row 10, column 10", 400),  # off the map
    ({"seat": "-1-2"}, "Seats are given as row and column numbers", 400),
    ({"seat": "a-b"}, "Seats are given as row and column numbers", 400),
    ({"seat": "1.5-2"}, "Seats are given as row and column numbers", 400),
    ({"seat": '{"$ne": null}'}, "Seats are given as row and column numbers", 400),
    ({"seat[$ne]": "x"}, "Choose at least one seat.", 400),
    ({"seat__ne": "0-1"}, "Choose at least one seat.", 400),
    ({}, "Choose at least one seat.", 400),
    ({"seat": ""}, "Choose at least one seat.", 400),
    (
        {"seat": ",".join(f"{r}-{c}" for r in range(25) for c in range(20))},
        "at most 10",
        400,
    ),
    ({"seat": ["0-0", "0-0"]}, "chosen twice", 400),
]


@pytest.mark.parametrize(("data", "message", "status"), BAD_HOLDS)
@pytest.mark.parametrize("htmx", [False, True])
def test_bad_seats_get_a_clear_error_and_change_nothing(
    client, mongo_db, show, data, message, status, htmx
):
    response = client.post(url(show, "hold"), data, **(HTMX if htmx else {}))

    assert response.status_code == (200 if htmx else status)
    assert message in response.content.decode()
    assert mongo_db.carts.count_documents({}) == 0
    doc = session(mongo_db, show)
    assert doc["held"] == 0 and doc["seatsAvailable"] == SMALL_SEATS


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"count": "0", "zone": "stalls"}, "between 1 and 10"),
        ({"count": "500", "zone": "stalls"}, "between 1 and 10"),
        ({"count": "-2", "zone": "stalls"}, "between 1 and 10"),
        ({"count": "two", "zone": "stalls"}, "between 1 and 10"),
        ({"count": '{"$gt": 0}'}, "between 1 and 10"),
        ({"count": "2", "zone": "balcony"}, "no such price zone"),
        ({"count": "2", "zone": '{"$ne": ""}'}, "no such price zone"),
        ({"count[$gt]": "0"}, "how many seats"),
    ],
)
def test_bad_best_available_requests_change_nothing(
    client, mongo_db, show, data, message
):
    response = client.post(url(show, "best"), data, **HTMX)

    assert response.status_code == 200
    assert message in response.content.decode()
    assert session(mongo_db, show)["held"] == 0
    assert mongo_db.carts.count_documents({}) == 0


@pytest.mark.parametrize("action", ["hold", "release", "best"])
def test_an_unknown_session_is_404(client, mongo_db, action):
    data = {"seat": "0-1", "count": "2", "zone": "stalls"}

    assert client.post(url(ObjectId(), action), data).status_code == 404
    assert client.post(url(ObjectId(), action), data, **HTMX).status_code == 404
    assert client.post(f"/cart/tickets/not-an-id/{action}/", data).status_code == 404
    assert mongo_db.carts.count_documents({}) == 0


@pytest.mark.parametrize("action", ["hold", "release", "best"])
def test_the_seat_endpoints_take_posts_only(client, show, action):
    assert client.get(url(show, action)).status_code == 405


def test_a_past_session_refuses_holds_over_http(client, mongo_db, show):
    move_to_the_past(mongo_db, show)

    page = client.post(url(show, "hold"), {"seat": "0-1"})
    partial = client.post(url(show, "best"), {"count": "2", "zone": "stalls"}, **HTMX)

    assert page.status_code == 409
    assert "already started" in page.content.decode()
    assert "already started" in partial.content.decode()
    assert session(mongo_db, show)["held"] == 0
    assert mongo_db.carts.count_documents({}) == 0


def test_someone_elses_seat_cannot_be_released_over_http(client, mongo_db, show):
    other = Client()
    other.post(url(show, "hold"), {"seat": "0-1"})
    client.post(url(show, "hold"), {"seat": "0-2"})
    before = session(mongo_db, show)

    response = client.post(url(show, "release"), {"seat": "0-1"}, **HTMX)

    assert "Those seats are not in your cart." in response.content.decode()
    assert session(mongo_db, show) == before


def test_a_post_without_csrf_is_refused_and_holds_nothing(mongo_db, show):
    strict = Client(enforce_csrf_checks=True)

    for action, data in [
        ("hold", {"seat": "0-1"}),
        ("best", {"count": "2", "zone": "stalls"}),
        ("release", {"seat": "0-1"}),
    ]:
        assert strict.post(url(show, action), data).status_code == 403
        assert strict.post(url(show, action), data, **HTMX).status_code == 403
    assert session(mongo_db, show)["held"] == 0
    assert mongo_db.carts.count_documents({}) == 0


def test_price_fields_in_a_hold_are_ignored(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": "0-1", "price": "0.01", "zone": "circle"})

    (cart,) = mongo_db.carts.find()
    assert str(cart["tickets"][0]["seats"][0]["price"]) == "35.00"


# --- the cart page ---------------------------------------------------------------


def test_the_cart_page_lists_tickets_with_seats_zones_prices_and_the_total(
    client, mongo_db, show
):
    client.post(url(show, "hold"), {"seat": ["0-0", "2-4"]})

    html = client.get("/cart/").content.decode()

    assert "Tickets" in html and "Hamlet" in html and "Test Hall" in html
    assert "Row A, seat 1" in html and "Row C, seat 5" in html
    assert "Stalls" in html and "Circle" in html
    assert "£35.00" in html and "£20.50" in html
    assert 'id="cart-total">£55.50<' in html
    assert 'id="countdown"' in html and "Hold them longer" in html
    assert re.search(r'class="badge-count"[^>]*>2<', html)
    assert f'href="/sessions/{show}/"' in html


def test_removing_one_seat_from_the_cart_page(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": ["0-0", "0-1"]})

    response = client.post(
        "/cart/tickets/remove/", {"session": show, "seat": "0-0"}, **HTMX
    )

    html = response.content.decode()
    assert 'id="cart-total">£35.00<' in html
    assert "Row A, seat 1<" not in html and "Row A, seat 2" in html
    assert set(held(mongo_db, show)) == {(0, 1)}


def test_removing_all_seats_of_a_performance_from_the_cart_page(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": ["0-0", "0-1"]})

    response = client.post("/cart/tickets/remove/", {"session": show})

    assert response.status_code == 302
    assert held(mongo_db, show) == {}
    assert listed(mongo_db) == []
    assert "Your cart is empty" in client.get("/cart/").content.decode()


@pytest.mark.parametrize(
    "data",
    [
        {"session": "nope", "seat": "0-0"},
        {"session": '{"$ne": null}'},
        {"session[$ne]": "x"},
        {"seat": "0-0"},
    ],
)
def test_bad_removals_change_nothing(client, mongo_db, show, data):
    client.post(url(show, "hold"), {"seat": "0-0"})

    response = client.post("/cart/tickets/remove/", data, **HTMX)

    assert "toast-error" in response.content.decode()
    assert set(held(mongo_db, show)) == {(0, 0)}


def test_the_expired_page_offers_to_choose_seats_again(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": "0-0"})
    past = timezone.now() - timedelta(minutes=1)
    mongo_db.carts.update_many({}, {"$set": {"expires_at": past}})

    response = client.get("/cart/")

    assert response.status_code == 302
    html = client.get(response["Location"]).content.decode()
    assert "1 seat for Hamlet" in html
    assert f'href="/sessions/{show}/"' in html


# --- checkout and the order page -------------------------------------------------


def pay(client, mongo_db):
    cart = mongo_db.carts.find_one({"state": "active"})
    return client.post("/checkout/", checkout_data(cart["_id"]))


def test_checking_out_tickets_shows_them_with_codes_on_the_order_page(
    client, mongo_db, show
):
    client.post(url(show, "hold"), {"seat": ["0-0", "0-1"]})

    response = pay(client, mongo_db)

    assert response.status_code == 302
    html = client.get(response["Location"]).content.decode()
    order = mongo_db.orders.find_one()
    assert "Your tickets" in html and "Hamlet" in html and "Test Hall" in html
    assert "Row A, seat 1" in html and "Row A, seat 2" in html
    for code in order["codes"]:
        assert f'<code class="ticket-code">{code}</code>' in html
    assert "Cancel this order" in html
    doc = session(mongo_db, show)
    assert doc["held"] == 0 and doc["sold"] == 2


def test_a_tickets_only_checkout_asks_no_delivery_address(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": ["0-0"]})
    cart = mongo_db.carts.find_one({"state": "active"})

    page = client.get("/checkout/").content.decode()

    assert "Delivery address" not in page and 'name="line1"' not in page
    assert "no address is needed" in page
    data = {
        key: value
        for key, value in checkout_data(cart["_id"]).items()
        if key not in ("name", "line1", "city", "postcode", "country")
    }
    response = client.post("/checkout/", data)
    assert response.status_code == 302
    order = mongo_db.orders.find_one()
    assert order["state"] == "paid" and order["shipping"] is None
    html = client.get(response["Location"]).content.decode()
    assert "Row A, seat 1" in html and "Delivery" not in html


def test_cancelling_through_the_order_link_refunds_and_frees_the_seats(
    client, mongo_db, show
):
    client.post(url(show, "hold"), {"seat": ["0-0", "0-1"]})
    link = pay(client, mongo_db)["Location"]

    response = client.post(f"{link}cancel/")

    assert response.status_code == 302 and response["Location"] == link
    html = client.get(link).content.decode()
    assert "Canceled and refunded" in html
    assert "is canceled and refunded" in html
    assert "Cancel this order" not in html
    assert '<code class="ticket-code">' not in html
    doc = session(mongo_db, show)
    assert doc["sold"] == 0 and doc["seatsAvailable"] == SMALL_SEATS
    # A second cancel is harmless.
    assert client.post(f"{link}cancel/").status_code == 302
    assert mongo_db.test_gateway_refunds.count_documents({}) == 1


@pytest.mark.django_db
def test_someone_elses_order_cannot_be_canceled_over_http(client, mongo_db, show):
    client.post(url(show, "hold"), {"seat": "0-0"})
    link = pay(client, mongo_db)["Location"]
    number = mongo_db.orders.find_one()["number"]
    stranger = Client()
    user = User.objects.create_user("mallory", password="pw-mallory-1")
    logged_in = Client()
    logged_in.force_login(user)

    assert stranger.post(f"/orders/{number}/{'x' * 32}/cancel/").status_code == 404
    assert stranger.post(f"/orders/{number}/cancel/").status_code == 302  # login
    assert logged_in.post(f"/orders/{number}/cancel/").status_code == 404
    assert logged_in.get(f"/orders/{number}/").status_code == 404
    assert Client(enforce_csrf_checks=True).post(f"{link}cancel/").status_code == 403
    assert mongo_db.orders.find_one()["state"] == "paid"
    assert session(mongo_db, show)["sold"] == 1


@pytest.mark.django_db
def test_a_logged_in_owner_cancels_from_my_orders(mongo_db, show):
    user = User.objects.create_user("ada", password="pw-ada-12345")
    client = Client()
    client.force_login(user)
    client.post(url(show, "hold"), {"seat": "0-0"})
    pay(client, mongo_db)
    number = mongo_db.orders.find_one()["number"]

    response = client.post(f"/orders/{number}/cancel/")

    assert response["Location"] == f"/orders/{number}/"
    assert mongo_db.orders.find_one()["state"] == "refunded"
    assert session(mongo_db, show)["sold"] == 0


def test_after_the_performance_starts_the_cancel_button_is_gone_and_refused(
    client, mongo_db, show
):
    client.post(url(show, "hold"), {"seat": "0-0"})
    link = pay(client, mongo_db)["Location"]
    move_to_the_past(mongo_db, show)
    mongo_db.orders.update_many(
        {}, {"$set": {"lines.0.ticket.start": session(mongo_db, show)["start"]}}
    )

    assert "Cancel this order" not in client.get(link).content.decode()
    response = client.post(f"{link}cancel/")
    assert (
        "can no longer be canceled" in client.get(response["Location"]).content.decode()
    )
    assert mongo_db.orders.find_one()["state"] == "paid"
