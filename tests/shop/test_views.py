"""The shop's pages over HTTP: htmx and full-page, bad input, other people's ids."""

import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from catalog.selectors.stock import stock_level
from shop.documents import ACTIVE, COMPLETE
from tests.shop.factories import DECLINED_CARD, GOOD_CARD, make_product

HTMX = {"HTTP_HX_REQUEST": "true"}


def the_cart(mongo_db):
    carts = list(mongo_db.carts.find())
    assert len(carts) == 1
    return carts[0]


def add(client, sku="SNKR-42", quantity="2", **extra):
    return client.post("/cart/add/", {"sku": sku, "quantity": quantity}, **extra)


def checkout_data(cart_id, card=GOOD_CARD, **changes):
    data = {
        "cart": cart_id,
        "email": "ada@example.com",
        "name": "Ada Lovelace",
        "line1": "12 St James's Square",
        "city": "London",
        "postcode": "SW1Y 4JH",
        "country": "GB",
        "card_number": card,
        "card_expiry": "12/39",
        "card_cvc": "123",
    }
    data.update(changes)
    return data


def test_an_empty_cart_page_and_a_zero_badge(client, mongo_db):
    response = client.get("/cart/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Your cart is empty" in html
    assert re.search(r'id="cart-badge".*?<span class="badge-count"[^>]*>0<', html, re.S)
    # Read as "Cart 0 items" (an aria-label on a plain span is not read).
    assert re.search(r'>0</span><span class="visually-hidden"> items</span></a>', html)
    assert mongo_db.carts.count_documents({}) == 0


def test_the_add_page_offers_the_sku_with_the_reusable_form(client, product):
    response = client.get("/cart/add/", {"sku": product})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Add JC Sneaker to your cart" in html
    assert "£100.00" in html
    assert 'action="/cart/add/"' in html and 'hx-post="/cart/add/"' in html
    assert f'name="sku" value="{product}"' in html


@pytest.mark.parametrize(
    "query", ["sku=GHOST", "sku=../../etc", "sku[$ne]=x", "sku__ne=x", "sku="]
)
def test_the_add_page_of_an_unknown_or_malformed_sku_is_not_found(
    client, product, query
):
    assert client.get(f"/cart/add/?{query}").status_code == 404


def test_adding_without_js_redirects_to_the_cart_showing_the_line(
    client, mongo_db, product
):
    response = add(client)

    assert response.status_code == 302
    assert response["Location"] == "/cart/"
    assert stock_level(sku=product).free == 98
    page = client.get("/cart/").content.decode()
    assert "JC Sneaker" in page
    assert 'id="cart-total">£200.00<' in page
    assert "Added to your cart." in page
    assert re.search(r'class="badge-count"[^>]*>2<', page)


def test_adding_with_htmx_answers_the_badge_out_of_band_and_a_toast(
    client, mongo_db, product
):
    response = add(client, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert '<a id="cart-badge"' in html and 'hx-swap-oob="true"' in html
    assert re.search(r'class="badge-count"[^>]*>2<', html)
    assert 'hx-swap-oob="beforeend:#toasts"' in html
    assert "Added to your cart." in html
    assert the_cart(mongo_db)["items"][0]["quantity"] == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"quantity": "0"}, "at least 1"),
        ({"quantity": "-1"}, "at least 1"),
        ({"quantity": str(10**9)}, "at most 99"),
        ({"quantity": "1e3"}, "whole number"),
        ({"quantity": "abc"}, "whole number"),
        ({"quantity": '{"$gt": 0}'}, "whole number"),
        ({"quantity[$gt]": "0"}, "required"),
        ({"sku": "GHOST"}, "does not exist"),
        ({"sku": '{"$ne": null}'}, "not a product code"),
        ({"sku": "x" * 65}, "not a product code"),
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_bad_add_input_gets_a_clear_error_and_changes_nothing(
    client, mongo_db, product, data, message, htmx
):
    fields = {"sku": product, "quantity": "1"}
    fields.update(data)
    if "quantity[$gt]" in data:
        del fields["quantity"]

    response = client.post("/cart/add/", fields, **(HTMX if htmx else {}))

    if htmx:
        assert response.status_code == 200
        assert message in response.content.decode()
        assert "toast-error" in response.content.decode()
    else:
        assert response.status_code == 302
        assert message in client.get(response["Location"]).content.decode()
    assert stock_level(sku=product).free == 100
    assert all(not c["items"] for c in mongo_db.carts.find())


def test_price_fields_in_the_request_are_ignored(client, mongo_db, product):
    client.post(
        "/cart/add/",
        {
            "sku": product,
            "quantity": "1",
            "unit_price": "0.01",
            "price": "0",
            "total": "0",
        },
    )

    line = the_cart(mongo_db)["items"][0]
    assert line["unit_price"].to_decimal() == Decimal("100.00")


def test_changing_a_quantity_in_place_returns_the_new_summary(
    client, mongo_db, product
):
    add(client)

    response = client.post("/cart/update/", {"sku": product, "quantity": "4"}, **HTMX)

    html = response.content.decode()
    assert '<section id="cart-summary"' in html
    assert 'id="cart-total">£400.00<' in html
    assert re.search(r'class="badge-count"[^>]*>4<', html)
    assert stock_level(sku=product).free == 96


def test_a_quantity_the_stock_cannot_cover_is_refused_in_place(client, mongo_db):
    sku = make_product(sku="FEW-3", title="Rare", stock=3)
    add(client, sku=sku, quantity="1")

    response = client.post("/cart/update/", {"sku": sku, "quantity": "5"}, **HTMX)

    html = response.content.decode()
    assert "only 2 left" in html
    assert 'value="1"' in html  # the input shows what the cart really holds
    assert "Only 2 more available" in html
    assert the_cart(mongo_db)["items"][0]["quantity"] == 1


def test_remove_clear_and_extend(client, mongo_db, product):
    make_product(sku="HAT-1", title="Hat")
    add(client)
    add(client, sku="HAT-1", quantity="1")

    client.post("/cart/remove/", {"sku": "HAT-1"})
    assert [i["sku"] for i in the_cart(mongo_db)["items"]] == [product]
    assert stock_level(sku="HAT-1").free == 100

    before = the_cart(mongo_db)["expires_at"]
    response = client.post("/cart/extend/", **HTMX)
    html = response.content.decode()
    assert "Your cart is now held until" in html and "2 more extensions left" in html
    assert "adds 30 minutes; 2 extensions left" in html
    assert the_cart(mongo_db)["extensions"] == 1
    assert the_cart(mongo_db)["expires_at"] == before + timedelta(minutes=30)
    client.post("/cart/extend/")
    client.post("/cart/extend/")
    page = client.get("/cart/").content.decode()
    assert "Hold them longer" not in page
    assert "You have used every extension" in page

    client.post("/cart/clear/")
    assert the_cart(mongo_db)["items"] == []
    assert stock_level(sku=product).free == 100


def test_nobody_can_change_someone_elses_cart(client, mongo_db, product):
    add(client)
    mallory = Client()

    response = mallory.post("/cart/update/", {"sku": product, "quantity": "9"})
    assert "not in your cart" in mallory.get(response["Location"]).content.decode()
    mallory.post("/cart/remove/", {"sku": product})
    mallory.post("/cart/clear/")

    assert the_cart(mongo_db)["items"][0]["quantity"] == 2
    assert stock_level(sku=product).free == 98


def test_every_shopper_post_without_its_csrf_token_is_refused_and_changes_nothing(
    mongo_db, product
):
    # A shopper with a paid order and a live cart; then a forged request
    # from another site carries the shopper's cookies but not the token.
    shopper = Client()
    add(shopper)
    shopper.post("/checkout/", checkout_data(the_cart(mongo_db)["_id"]))
    (order,) = mongo_db.orders.find()
    add(shopper, quantity="1")
    forged = Client(enforce_csrf_checks=True)
    forged.cookies = shopper.cookies

    def state():
        return (
            list(mongo_db.carts.find()),
            list(mongo_db.orders.find()),
            stock_level(sku=product).free,
            User.objects.count(),
            dict(shopper.session.items()),
        )

    before = state()
    live = next(c for c in before[0] if c["state"] == ACTIVE)["_id"]
    posts = {
        "/cart/add/": {"sku": product, "quantity": "1"},
        "/cart/update/": {"sku": product, "quantity": "5"},
        "/cart/remove/": {"sku": product},
        "/cart/clear/": {},
        "/cart/extend/": {},
        "/cart/tickets/remove/": {"session": "0" * 24},
        "/checkout/": checkout_data(live),
        f"/orders/{order['number']}/cancel/": {},
        "/location/": {"location": "London"},
        "/accounts/signup/": {
            "email": "eve@example.com",
            "password1": "a long new password 1",
            "password2": "a long new password 1",
        },
        "/accounts/claim/": {"email": "ada@example.com"},
    }
    for url, data in posts.items():
        response = forged.post(url, data)
        assert response.status_code == 403, url
        assert "CSRF" in response.content.decode(), url

    assert state() == before


def test_checkout_page_shows_the_form_for_the_shoppers_cart(client, mongo_db, product):
    add(client)

    response = client.get("/checkout/")

    html = response.content.decode()
    assert response.status_code == 200
    assert f'value="{the_cart(mongo_db)["_id"]}"' in html
    assert "Pay £200.00" in html


def test_checkout_field_errors_are_shown_in_place_and_change_nothing(
    client, mongo_db, product
):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]

    response = client.post(
        "/checkout/",
        checkout_data(cart_id, email="not-an-email", card="1234", card_expiry="13/99"),
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="id_email_error"' in html
    # The control names its error, so a screen reader reads them together.
    assert re.search(
        r'<input[^>]*aria-describedby="id_email_error"[^>]*id="id_email"', html
    )
    assert "That card number is not valid." in html
    assert "MM/YY" in html
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


@pytest.mark.parametrize(
    "card, changes, says",
    [
        # Characters str.isdigit accepts and int() or a card network does not.
        ("4242 4242 4242 424\u00b2", {}, "That card number is not valid."),
        ("\u0664\u0662" * 8, {}, "That card number is not valid."),
        (GOOD_CARD, {"card_expiry": "\u00b9\u00b2/39"}, "MM/YY"),
        (GOOD_CARD, {"card_expiry": "12/\u00b3\u2079"}, "MM/YY"),
        (GOOD_CARD, {"card_cvc": "\u00b2\u00b2\u00b2"}, "3 or 4 digits"),
    ],
)
def test_card_details_in_other_digits_are_a_field_error(
    client, mongo_db, product, card, changes, says
):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]

    response = client.post("/checkout/", checkout_data(cart_id, card=card, **changes))

    assert response.status_code == 400
    assert says in response.content.decode()
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_a_declined_card_then_a_good_one_pays_the_same_order(client, mongo_db, product):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]

    declined = client.post("/checkout/", checkout_data(cart_id, card=DECLINED_CARD))

    # Post, redirect, get: the form a POST answered is never in the history.
    assert declined.status_code == 302
    assert declined["Location"] == "/checkout/"
    html = client.get("/checkout/").content.decode()
    assert re.search(r'id="id_card_number_error".*Your card was declined', html, re.S)
    card = re.search(r'<input[^>]*name="card_number"[^>]*>', html).group(0)
    assert 'aria-describedby="id_card_number_error"' in card
    assert 'aria-invalid="true"' in card
    assert DECLINED_CARD not in html  # card details are never echoed back
    assert 'value="12 St James&#x27;s Square"' in html  # the address is kept
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert stock_level(sku=product).held == 2

    paid = client.post("/checkout/", checkout_data(cart_id))

    order = mongo_db.orders.find_one()
    assert paid.status_code == 302
    assert paid["Location"] == f"/orders/{order['number']}/{order['token']}/"
    page = client.get(paid["Location"]).content.decode()
    assert f"Order {order['number']}" in page and "Paid" in page
    assert f"Thank you! Order {order['number']} is paid." in page
    assert the_cart(mongo_db)["state"] == COMPLETE
    level = stock_level(sku=product)
    assert (level.held, level.sold) == (0, 2)

    # Back to the checkout page after paying: nothing to pay, no stale form.
    back = client.get("/checkout/")
    assert back["Location"] == "/cart/"
    again = client.post("/checkout/", checkout_data(cart_id))
    assert again["Location"] == paid["Location"]
    assert mongo_db.orders.count_documents({}) == 1
    assert stock_level(sku=product).sold == 2


@pytest.mark.parametrize(
    "country, typed, written",
    [("GB", "sw1y4jh", "SW1Y 4JH"), ("US", "10001", "10001"), ("FR", "75001", "75001")],
)
def test_a_postcode_is_written_as_its_country_writes_it(
    client, mongo_db, product, country, typed, written
):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]

    client.post("/checkout/", checkout_data(cart_id, country=country, postcode=typed))

    assert mongo_db.orders.find_one()["shipping"]["postcode"] == written


@pytest.mark.parametrize(
    "country, typed", [("GB", "!!!!"), ("GB", "12345"), ("US", "SW1Y 4JH")]
)
def test_a_postcode_its_country_does_not_write_is_refused(
    client, mongo_db, product, country, typed
):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]

    response = client.post(
        "/checkout/", checkout_data(cart_id, country=country, postcode=typed)
    )

    assert response.status_code == 400
    assert "That is not a postcode of" in html.unescape(response.content.decode())
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_a_tampered_cart_field_is_said_not_left_blank(client, mongo_db, product):
    add(client)

    response = client.post("/checkout/", checkout_data("x"))

    assert response.status_code == 400
    html = response.content.decode()
    assert "That cart is not yours." in html
    assert "Reload the cart and check out again." in html
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_the_checkout_page_is_never_cached_counts_down_and_names_autofill_fields(
    client, mongo_db, product
):
    add(client)

    response = client.get("/checkout/")

    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    assert re.search(r'class="hold" data-expires-in="1[78]\d\d"', html)
    assert 'id="countdown"' in html and "js/hold.js" in html
    for name, token in [
        ("email", "email"),
        ("name", "shipping name"),
        ("line1", "shipping address-line1"),
        ("city", "shipping address-level2"),
        ("postcode", "shipping postal-code"),
        ("country", "shipping country"),
        ("card_number", "cc-number"),
        ("card_expiry", "cc-exp"),
        ("card_cvc", "cc-csc"),
    ]:
        assert re.search(rf'<[^>]*autocomplete="{token}"[^>]*name="{name}"', html) or (
            re.search(rf'<[^>]*name="{name}"[^>]*autocomplete="{token}"', html)
        ), name


def test_goods_need_an_address_even_if_the_page_asked_for_none(mongo_db, product):
    from shop.errors import AddressNeeded
    from shop.services.carts import cart_add_item
    from shop.services.checkout import cart_checkout
    from tests.shop.factories import card

    cart = cart_add_item(owner="anon:ada", sku=product, quantity=1)

    with pytest.raises(AddressNeeded):
        cart_checkout(
            owner="anon:ada",
            cart_id=cart.cart_id,
            email="ada@example.com",
            shipping=None,
            card=card(),
        )
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert mongo_db.test_gateway_charges.count_documents({}) == 0


def test_checkout_of_someone_elses_cart_is_not_found(client, mongo_db, product):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]
    mallory = Client()
    make_product(sku="HAT-1")
    add(mallory, sku="HAT-1", quantity="1")

    response = mallory.post("/checkout/", checkout_data(cart_id))

    assert response.status_code == 404
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == ACTIVE
    assert mongo_db.orders.count_documents({}) == 0


def test_checkout_of_an_empty_cart_sends_back_to_the_cart(client, mongo_db, product):
    add(client)
    client.post("/cart/clear/")

    assert client.get("/checkout/")["Location"] == "/cart/"
    response = client.post(
        "/checkout/", checkout_data(the_cart(mongo_db)["_id"]), follow=True
    )

    assert response.redirect_chain == [("/cart/", 302)]
    assert "Your cart is empty" in response.content.decode()
    assert mongo_db.orders.count_documents({}) == 0


def test_an_expired_cart_shows_what_was_released(client, mongo_db, product):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]
    past = timezone.now() - timedelta(minutes=1)
    mongo_db.carts.update_one({"_id": cart_id}, {"$set": {"expires_at": past}})

    assert client.get("/cart/")["Location"] == "/cart/expired/"
    page = client.get("/cart/expired/").content.decode()
    assert "Your cart expired" in page
    assert "2 × JC Sneaker" in page
    assert f"/cart/add/?sku={product}" in page

    response = client.post("/checkout/", checkout_data(cart_id))
    assert response["Location"] == "/cart/expired/"
    assert the_cart(mongo_db)["state"] == "expired"
    assert stock_level(sku=product).free == 100


def test_an_order_link_needs_its_secret(client, mongo_db, product):
    add(client)
    client.post("/checkout/", checkout_data(the_cart(mongo_db)["_id"]))
    order = mongo_db.orders.find_one()
    other = Client()

    assert other.get(f"/orders/{order['number']}/{order['token']}/").status_code == 200
    assert other.get(f"/orders/{order['number']}/{'x' * 32}/").status_code == 404
    assert other.get(f"/orders/{order['number']}/").status_code == 302  # log in


@pytest.mark.django_db
def test_logged_in_shoppers_see_only_their_own_orders(client, mongo_db, product):
    ada = User.objects.create_user("ada", "ada@example.com", "pw-ada-123456")
    bob = User.objects.create_user("bob", "bob@example.com", "pw-bob-123456")
    client.force_login(ada)
    add(client)
    client.post("/checkout/", checkout_data(the_cart(mongo_db)["_id"]))
    order = mongo_db.orders.find_one()
    assert order["owner"] == f"user:{ada.pk}"

    assert order["number"] in client.get("/orders/").content.decode()
    assert client.get(f"/orders/{order['number']}/").status_code == 200

    other = Client()
    other.force_login(bob)
    assert order["number"] not in other.get("/orders/").content.decode()
    assert other.get(f"/orders/{order['number']}/").status_code == 404


@pytest.mark.django_db
def test_logging_in_keeps_the_anonymous_cart(client, mongo_db, product):
    ada = User.objects.create_user("ada", "ada@example.com", "pw-ada-123456")
    add(client)

    response = client.post(
        "/accounts/login/", {"username": "ada", "password": "pw-ada-123456"}
    )

    assert response.status_code == 302
    cart = the_cart(mongo_db)
    assert cart["owner"] == f"user:{ada.pk}"
    assert re.search(
        r'class="badge-count"[^>]*>2<', client.get("/cart/").content.decode()
    )


def test_an_address_is_given_whole_or_not_at_all(client, mongo_db, product):
    add(client)
    cart_id = the_cart(mongo_db)["_id"]

    half = client.post("/checkout/", checkout_data(cart_id, line1="", city=""))
    html = half.content.decode()
    assert half.status_code == 400
    assert 'id="id_line1_error"' in html and 'id="id_city_error"' in html
    assert "Delivery address" in html  # goods: the address fields are drawn

    none = {
        k: v
        for k, v in checkout_data(cart_id).items()
        if k not in ("name", "line1", "city", "postcode")
    }
    refused = client.post("/checkout/", none)
    assert refused["Location"] == "/checkout/"
    page = client.get("/checkout/").content.decode()
    assert "please give a delivery address" in page
    assert the_cart(mongo_db)["state"] == ACTIVE
    assert mongo_db.test_gateway_charges.count_documents({}) == 0
