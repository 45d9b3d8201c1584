"""A shopper in Chromium: add two items, change a quantity, watch the hold
countdown, pay with a declined card and then a good one, see the order."""

import re

from playwright.sync_api import expect

from catalog.selectors.stock import stock_level
from tests.shop.factories import DECLINED_CARD, GOOD_CARD, make_product


def add_from_its_page(page, sku: str, quantity: int, badge: str, *, via: str):
    page.goto(via)
    url = page.url
    form = page.locator("form.add-to-cart")
    form.locator("input[name=quantity]").fill(str(quantity))
    form.get_by_role("button", name="Add to cart").click()
    # htmx: the badge and a toast update, the page does not reload.
    expect(page.locator("#cart-badge .badge-count")).to_have_text(badge)
    expect(page.locator("#toasts .toast").last).to_contain_text("Added to your cart.")
    assert page.url == url


def fill_checkout(page, card: str, *, address: bool = True):
    page.get_by_label("Email").fill("ada@example.com")
    if address:
        fill_address(page)
    page.get_by_label("Card number").fill(card)
    page.get_by_label("Expiry (MM/YY)").fill("12/39")
    page.get_by_label("Security code").fill("123")


def fill_address(page):
    page.get_by_label("Full name").fill("Ada Lovelace")
    page.get_by_label("Address", exact=True).fill("12 St James's Square")
    page.get_by_label("Town or city").fill("London")
    page.get_by_label("Postcode").fill("SW1Y 4JH")


def test_a_shopper_fills_a_cart_and_pays_after_a_declined_card(
    page, screenshot, mongo_db
):
    make_product(sku="SNKR-42", title="JC Sneaker", price="100.00")
    make_product(sku="HAT-1", title="Wool Hat", price="15.50", stock=4)

    # One from the catalogue's item page, one from the add page (no-JS path).
    add_from_its_page(page, "SNKR-42", 1, "1", via="/p/item-SNKR-42/?sku=SNKR-42")
    screenshot(page, "added-first")
    add_from_its_page(page, "HAT-1", 2, "3", via="/cart/add/?sku=HAT-1")

    page.get_by_role("link", name=re.compile("Cart")).click()
    expect(page).to_have_url(re.compile("/cart/$"))
    expect(page.locator("#cart-total")).to_have_text("£131.00")
    expect(page.locator("tr[data-sku=HAT-1] .stock-warning")).to_have_text(
        "Only 2 more available"
    )

    # Change a quantity in place: the summary and the badge follow.
    quantity = page.get_by_label("Quantity of JC Sneaker")
    quantity.fill("3")
    quantity.press("Tab")
    expect(page.locator("#cart-total")).to_have_text("£331.00")
    expect(page.locator("#cart-badge .badge-count")).to_have_text("5")
    expect(page.locator("tr[data-sku=SNKR-42] .line-total")).to_have_text("£300.00")

    # The hold countdown runs from the server's figure.
    countdown = page.locator("#countdown")
    expect(countdown).to_have_text(re.compile(r"^(2\d|30):[0-5]\d$"))
    first = countdown.inner_text()
    page.wait_for_function(
        "first => document.querySelector('#countdown').textContent !== first",
        arg=first,
        timeout=5_000,
    )
    screenshot(page, "cart")

    page.get_by_role("link", name="Check out").click()
    expect(page.locator("#checkout-total")).to_have_text("£331.00")
    fill_checkout(page, DECLINED_CARD)
    page.get_by_role("button", name="Pay £331.00").click()
    expect(page.locator("#id_card_number_error")).to_contain_text(
        "Your card was declined."
    )
    screenshot(page, "declined")
    assert mongo_db.carts.find_one()["state"] == "active"
    assert stock_level(sku="SNKR-42").held == 3

    # The typed address survives the decline; the card is typed again (no
    # card detail is kept between the two pages).
    expect(page.get_by_label("Town or city")).to_have_value("London")
    expect(page.get_by_label("Card number")).to_have_value("")
    page.get_by_label("Card number").fill(GOOD_CARD)
    page.get_by_label("Expiry (MM/YY)").fill("12/39")
    page.get_by_label("Security code").fill("123")
    page.get_by_role("button", name="Pay £331.00").click()

    expect(
        page.get_by_role("heading", name=re.compile(r"Order MQ-\d+"))
    ).to_be_visible()
    expect(page.locator(".order-state")).to_contain_text("Paid")
    expect(page.locator("#order-total")).to_have_text("£331.00")
    expect(page.locator("#cart-badge .badge-count")).to_have_text("0")
    screenshot(page, "order")

    order = mongo_db.orders.find_one()
    assert order["state"] == "paid"
    assert page.url.endswith(f"/orders/{order['number']}/{order['token']}/")
    assert (stock_level(sku="SNKR-42").sold, stock_level(sku="HAT-1").sold) == (3, 2)
