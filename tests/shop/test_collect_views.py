"""Click & collect over HTTP: the item page's two choices, the add without
JavaScript, the cart, checkout and order pages saying where to collect."""

import re

import pytest
from django.test import Client

from catalog.selectors.stock import stock_level
from tests.shop.factories import GOOD_CARD, make_store, stock_store


@pytest.fixture
def shop(product):
    """Leeds has 3 at £80.00; York, 37 km away, has none; online £100.00."""
    make_store("leeds", "Leeds Briggate", lng=-1.5437, lat=53.7997)
    make_store("york", "York Coney Street", lng=-1.0843, lat=53.959)
    stock_store(product, "leeds", quantity=3, price="80.00")
    stock_store(product, "york", quantity=0)
    return product


def choose(client, store_id):
    client.post("/store/", {"store_id": store_id, "next": "/"})


def item(client, sku):
    response = client.get(f"/p/item-{sku}/", {"sku": sku})
    assert response.status_code == 200
    return response.content.decode()


def section(html, fulfilment):
    found = re.search(
        rf'data-fulfilment="{fulfilment}".*?</section>', html, re.S
    ).group(0)
    return " ".join(re.sub(r"<[^>]+>", " ", found).split())


def test_a_chosen_store_offers_delivery_and_collect_each_with_its_stock(client, shop):
    choose(client, "leeds")

    html = item(client, shop)

    delivery, collect = section(html, "delivery"), section(html, "collect")
    assert "£100.00 online price" in delivery and "In stock online" in delivery
    assert "Collect at Leeds Briggate" in collect
    assert "£80.00 store price" in collect and "3 left at Leeds Briggate" in collect
    assert 'name="store_id" value="leeds"' in html
    assert "aria-label" in html or "<label" in html


def test_a_store_out_of_stock_names_the_nearest_that_has_it(client, shop):
    choose(client, "york")

    collect = section(item(client, shop), "collect")

    assert "Out of stock at York Coney Street" in collect
    assert re.search(r"nearest: Leeds Briggate, 3\d\.\d km", collect)
    assert "disabled" in re.search(
        r'data-fulfilment="collect".*?</section>', item(client, shop), re.S
    ).group(0)


def test_online_only_the_page_keeps_one_add(client, shop):
    html = item(client, shop)

    assert "data-fulfilment" not in html
    assert 'type="hidden" name="store_id"' not in html


def test_collect_and_delivery_added_without_javascript_show_in_the_cart(
    client, shop, mongo_db
):
    client.post("/cart/add/", {"sku": shop, "quantity": "1"})
    response = client.post(
        "/cart/add/", {"sku": shop, "quantity": "2", "store_id": "leeds"}
    )

    assert response.status_code == 302
    assert stock_level(sku=f"{shop}@leeds").held == 2
    html = client.get("/cart/").content.decode()
    assert "Collect at Leeds Briggate" in html and "Delivery" in html
    assert "£80.00" in html and "£100.00" in html
    # The collect line is changed by its own key, the delivery line untouched.
    client.post("/cart/update/", {"sku": f"{shop}@leeds", "quantity": "1"})
    (cart,) = mongo_db.carts.find()
    assert {i["sku"]: i["quantity"] for i in cart["items"]} == {
        shop: 1,
        f"{shop}@leeds": 1,
    }


def test_an_unknown_store_is_refused_clearly_and_changes_nothing(
    client, shop, mongo_db
):
    client.post("/cart/add/", {"sku": shop, "quantity": "1"})

    response = client.post(
        "/cart/add/",
        {"sku": shop, "quantity": "1", "store_id": "atlantis"},
        follow=True,
    )

    assert "That store does not exist." in response.content.decode()
    (cart,) = mongo_db.carts.find()
    assert [i["sku"] for i in cart["items"]] == [shop]
    bad = client.post("/cart/add/", {"sku": shop, "quantity": "1", "store_id": "a b"})
    assert bad.status_code in (302, 400)
    assert stock_level(sku=shop).held == 1


def test_adding_to_collect_needs_the_csrf_token(shop):
    strict = Client(enforce_csrf_checks=True)

    response = strict.post(
        "/cart/add/", {"sku": shop, "quantity": "1", "store_id": "leeds"}
    )

    assert response.status_code == 403
    assert stock_level(sku=f"{shop}@leeds").held == 0


def test_a_collect_only_checkout_asks_no_address_and_the_order_says_where(
    client, shop, mongo_db
):
    client.post("/cart/add/", {"sku": shop, "quantity": "2", "store_id": "leeds"})
    page = client.get("/checkout/").content.decode()
    assert 'name="line1"' not in page and "No delivery address needed" in page
    cart_id = mongo_db.carts.find_one()["_id"]

    response = client.post(
        "/checkout/",
        {
            "cart": cart_id,
            "email": "ada@example.com",
            "card_number": GOOD_CARD,
            "card_expiry": "12/39",
            "card_cvc": "123",
        },
        follow=True,
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "Collect at Leeds Briggate" in html
    assert "Delivery to" not in html
    # Where to collect: the store's place, from the catalog.
    points = re.search(r"data-collect-points>.*?</div>", html, re.S).group(0)
    assert "Leeds Briggate" in points and "LEEDS 1AA" in points
    assert "£160.00" in html
    assert stock_level(sku=f"{shop}@leeds").sold == 2


def test_a_delivery_line_still_asks_the_address(client, shop):
    client.post("/cart/add/", {"sku": shop, "quantity": "1", "store_id": "leeds"})
    client.post("/cart/add/", {"sku": shop, "quantity": "1"})

    page = client.get("/checkout/").content.decode()

    assert 'name="line1"' in page
