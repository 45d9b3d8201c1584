"""A shopper in Chromium: facets, back button, item page, variants, stores near."""

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from catalog.services.products import price_set
from catalog.services.store_stock import store_stock_set
from tests.catalog.conftest import ITEMS, STORES, add_item, sku_of

pytestmark = pytest.mark.browser


@pytest.fixture
def catalog(mongo_db):
    from catalog.documents import Address
    from catalog.services.stores import store_save

    for store_id, name, group, lng, lat, zip_code, city in STORES:
        store_save(
            store_id=store_id,
            name=name,
            group=group,
            lng=lng,
            lat=lat,
            region=group.removeprefix("sg-"),
            address=Address(city=city, zip=zip_code, country="GB"),
        )
    for row in ITEMS:
        add_item(*row)
    price_set(
        item_id="1", sku=sku_of("1", "7", "black"), scope="online", amount=Decimal("59")
    )
    for store_id, qty in [("leeds", 0), ("bradford", 3), ("york", 2), ("london", 5)]:
        store_stock_set(store_id=store_id, sku=sku_of("1", "6", "red"), quantity=qty)
    store_stock_set(store_id="london", sku=sku_of("1", "7", "black"), quantity=4)
    return mongo_db


def count_of(page, facet, value):
    return page.locator(
        f'[data-facet="{facet}"] label:has(input[value="{value}"]) [data-count]'
    )


def test_shopper_filters_goes_back_opens_an_item_and_switches_variant(
    catalog, page, screenshot
):
    page.goto("/c/Shoes/")
    expect(page.locator(".card")).to_have_count(5)
    expect(count_of(page, "size", "6")).to_have_text("3")
    screenshot(page, "1-department")

    # First facet: brand. The results and the other facets' counts change,
    # the brand counts do not (they ignore their own selection).
    page.check('input[name="brand"][value="Aurelia"]')
    page.wait_for_url("**/c/Shoes/?brand=Aurelia")
    expect(page.locator(".card")).to_have_count(2)
    expect(count_of(page, "size", "6")).to_have_text("2")
    expect(count_of(page, "brand", "Brixton")).to_have_text("2")

    # Second facet: colour, on top of the brand.
    page.check('input[name="colour"][value="black"]')
    page.wait_for_url("**/c/Shoes/?brand=Aurelia&colour=black")
    expect(page.locator(".card")).to_have_count(2)
    expect(count_of(page, "size", "7")).to_have_text("1")
    expect(count_of(page, "colour", "red")).to_have_text("2")
    expect(page.locator(".chip")).to_have_count(2)
    screenshot(page, "2-two-facets")

    # Back: the first facet's state, counts included.
    page.go_back()
    page.wait_for_url("**/c/Shoes/?brand=Aurelia")
    expect(page.locator('input[name="colour"][value="black"]')).not_to_be_checked()
    expect(page.locator('input[name="brand"][value="Aurelia"]')).to_be_checked()
    expect(count_of(page, "size", "7")).to_have_text("2")

    # Open an item.
    page.click("text=Evening Platform Pumps")
    page.wait_for_url("**/p/1/")
    expect(page.locator("[data-price]")).to_have_text("£49.00")

    # Say where we are: the nearest stores holding the 6 in red, nearest first.
    page.fill('input[name="place"]', "Leeds")
    page.click("text=Find stores")
    nearby = page.locator(".nearby-list li")
    expect(nearby).to_have_count(3)
    expect(nearby.first).to_contain_text("Bradford")
    screenshot(page, "3-item-near-leeds")

    # Switch variant: the price and the stores holding it change, in place.
    page.click('.variant[data-sku="1-7-black"]')
    page.wait_for_url("**/p/1/?sku=1-7-black")
    expect(page.locator("[data-price]")).to_have_text("£59.00")
    expect(nearby).to_have_count(1)
    expect(nearby.first).to_contain_text("London")
    expect(page.locator("#add-to-cart")).to_have_attribute("data-sku", "1-7-black")
    screenshot(page, "4-other-variant")


def test_pages_are_not_kept_in_local_storage_and_back_asks_the_server(catalog, page):
    """htmx would keep a copy of each page it pushes in localStorage, where
    it outlives a logout on a shared computer; Back must still work."""
    page.goto("/c/Shoes/")
    page.check('input[name="brand"][value="Aurelia"]')
    page.wait_for_url("**/c/Shoes/?brand=Aurelia")
    expect(page.locator(".card")).to_have_count(2)

    with page.expect_request(
        lambda r: r.headers.get("hx-history-restore-request") == "true"
    ):
        page.go_back()

    page.wait_for_url("**/c/Shoes/")
    expect(page.locator(".card")).to_have_count(5)
    expect(page.locator(".site-header")).to_have_count(1)
    kept = page.evaluate("() => Object.keys(window.localStorage)")
    assert not [key for key in kept if key.startswith("htmx")], kept


@pytest.mark.parametrize("width", [1280, 390])
def test_a_filter_ticked_by_keyboard_keeps_its_focus_and_the_count_is_said(
    catalog, page, width
):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/c/Shoes/")
    if width < 800:  # a phone: the filters are in a drawer, shut at first
        page.locator("#facet-drawer > summary").click()
    brand = page.locator('input[name="brand"][value="Aurelia"]')
    brand.focus()

    page.keyboard.press("Space")

    page.wait_for_url("**/c/Shoes/?brand=Aurelia")
    expect(page.locator(".card")).to_have_count(2)
    expect(brand).to_be_focused()
    expect(brand).to_be_checked()
    status = page.locator("#results-status")
    expect(status).to_have_text("2 products")
    expect(status).to_have_attribute("role", "status")


def test_a_message_after_the_back_button_is_read_and_can_be_dismissed(catalog, page):
    """The Back button after a variant switch puts back htmx's copy of the
    page (a new #toasts): its messages still get a Dismiss button and are
    read from the announcer."""
    from catalog.services.stock import stock_restock

    stock_restock(sku=sku_of("1", "6", "red"), quantity=5, note="initial")
    page.goto("/p/1/")
    page.click('.variant[data-sku="1-7-black"]')
    page.wait_for_url("**/p/1/?sku=1-7-black")
    page.go_back()
    page.wait_for_url("**/p/1/")
    expect(page.locator("#add-to-cart")).to_have_attribute("data-sku", "1-6-red")

    page.locator("form.add-to-cart").get_by_role("button", name="Add to cart").click()

    added = page.locator("#toasts .toast-success")
    said = added.inner_text().replace("\u00d7", "").strip()
    expect(page.locator("#toast-announcer")).to_have_text(said)
    added.get_by_role("button", name="Dismiss this message").click()
    expect(added).to_have_count(0)
