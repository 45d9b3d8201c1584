"""Click & collect in Chromium, at desktop width and on a phone (390 x 844):
the item page's two choices once a store is picked (with the nearest store
when it has none), a cart with a collect and a delivery line, checkout and
the order saying where to collect. Also without JavaScript. The screenshots
go to docs/screenshots/ (the README shows some of them)."""

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from catalog.services.products import price_set
from catalog.services.stock import stock_restock
from tests.browser.test_cart_checkout import fill_checkout
from tests.browser.test_catalog import catalog  # noqa: F401 (a fixture)
from tests.browser.test_storefront_widths import WIDTHS, fits_the_width, keep
from tests.catalog.conftest import sku_of
from tests.shop.factories import GOOD_CARD

pytestmark = pytest.mark.browser

RED_6 = sku_of("1", "6", "red")


@pytest.fixture
def shop(catalog):  # noqa: F811 (the fixture imported above)
    """Online: 20 at £49.00. York: 2 at its own £39.00. Leeds: none."""
    stock_restock(sku=RED_6, quantity=20, note="in")
    price_set(item_id="1", sku=RED_6, scope="york", amount=Decimal("39.00"))
    return catalog


def use_store(page, name: str) -> None:
    page.get_by_label("Shopping at").select_option(label=name)
    page.get_by_role("button", name="Use this store").click()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_collect_and_delivery_from_item_to_order(width, shop, page, screenshot):
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    page.goto(f"/p/1/?sku={RED_6}")

    # A store without it: out of stock there, the nearest one that has it.
    use_store(page, "Leeds Briggate")
    collect = page.locator('[data-fulfilment="collect"]')
    expect(collect.locator("[data-collect-availability]")).to_have_text(
        re.compile(r"^Out of stock at Leeds Briggate — nearest: Bradford Centre, ")
    )
    expect(collect.locator("button")).to_be_disabled()

    # York has two, at its own price; delivery keeps the online price.
    use_store(page, "York Coney Street")
    delivery = page.locator('[data-fulfilment="delivery"]')
    expect(delivery).to_contain_text("£49.00")
    expect(delivery).to_contain_text("In stock online")
    expect(collect).to_contain_text("£39.00")
    expect(collect).to_contain_text("2 left at York Coney Street")
    fits_the_width(page)
    keep(screenshot, page, "collect-item", width)
    collect.get_by_label("Quantity to collect").fill("2")
    page.get_by_role("button", name="Collect at York Coney Street").click()
    expect(page.locator("#cart-badge .badge-count")).to_have_text("2")
    page.get_by_role("button", name="Add for delivery").click()
    expect(page.locator("#cart-badge .badge-count")).to_have_text("3")

    # The cart: one line to collect, one delivered, each at its price.
    page.goto("/cart/")
    lines = page.locator("tr.cart-line")
    expect(lines).to_have_count(2)
    expect(page.locator(f'tr[data-sku="{RED_6}@york"]')).to_contain_text(
        "Collect at York Coney Street"
    )
    expect(page.locator(f'tr[data-sku="{RED_6}"]')).to_contain_text("Delivery")
    expect(page.locator("#cart-total")).to_have_text("£127.00")
    fits_the_width(page)
    keep(screenshot, page, "collect-cart", width)

    # Checkout: the delivered line needs an address; the order says where.
    page.get_by_role("link", name="Check out").click()
    expect(page.locator(".order-summary")).to_contain_text(
        "Collect at York Coney Street"
    )
    fill_checkout(page, GOOD_CARD)
    fits_the_width(page)
    keep(screenshot, page, "collect-checkout", width)
    page.get_by_role("button", name=re.compile(r"^Pay £")).click()
    expect(page.locator(".order-state")).to_contain_text("Paid")
    expect(page.locator('tr[data-collect="york"]')).to_contain_text(
        "Collect at York Coney Street"
    )
    keep(screenshot, page, "collect-order", width)


def test_collect_works_without_javascript(shop, browser, live_server):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"/p/1/?sku={RED_6}")
        use_store(page, "York Coney Street")
        page.goto(f"/p/1/?sku={RED_6}")

        page.get_by_role("button", name="Collect at York Coney Street").click()

        expect(page).to_have_url(re.compile(r"/cart/$"))
        expect(page.locator(f'tr[data-sku="{RED_6}@york"]')).to_contain_text(
            "Collect at York Coney Street"
        )
        expect(page.locator("#cart-total")).to_have_text("£39.00")
    finally:
        context.close()
