"""The storefront at desktop width and on a phone (390 x 844), in Chromium.

Browse, an item with its availability and the stores near a place, a cart
with a product and tickets, checkout with its countdown, the paid order
(Back does not show the form again) and the seat map's coloured key. The
screenshots go to docs/screenshots/ (the README shows some of them).
"""

import re
import shutil

import pytest
from django.conf import settings
from playwright.sync_api import expect

from catalog.services.stock import stock_restock
from tests.booking.factories import make_session, make_theater
from tests.browser.test_cart_checkout import fill_checkout
from tests.browser.test_catalog import catalog  # noqa: F401 (a fixture)
from tests.catalog.conftest import sku_of
from tests.shop.factories import GOOD_CARD

pytestmark = pytest.mark.browser

DOCS = settings.BASE_DIR / "docs/screenshots"
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
GREY = "rgb(204, 204, 204)"


def keep(screenshot, page, name: str, width: str) -> None:
    shot = screenshot(page, f"{width}-{name}")
    DOCS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS / f"storefront-{width}-{name}.png")


def fits_the_width(page) -> None:
    """Nothing sticks out sideways; the header's links are all on screen."""
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for link in (
        "#cart-badge",
        ".site-account a[href*=login]",
        ".site-nav >> text=Stores",
    ):
        box = page.locator(link).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width


def overlaps(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_storefront_at_desktop_and_phone_width(
    width,
    catalog,  # noqa: F811 (the fixture imported above)
    page,
    screenshot,
    mongo_db,  # noqa: F811
):
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    stock_restock(sku=sku_of("1", "6", "red"), quantity=20, note="in")
    stock_restock(sku=sku_of("1", "7", "red"), quantity=2, note="in")
    session_id = make_session(make_theater())
    # A long title beside its dates, as on the demo's "What's on".
    make_session(
        make_theater("Studio"), show="The Horse and His Boy: a play in two acts"
    )

    # Browse: products first; on a phone the filters are a closed drawer.
    page.goto("/c/Shoes/")
    first_card = page.locator(".grid .card").first
    expect(first_card).to_be_visible()
    assert first_card.bounding_box()["y"] < WIDTHS[width][1]
    facets = page.locator("aside.facets")
    fits_the_width(page)
    keep(screenshot, page, "browse", width)
    if width == "phone":
        expect(facets).to_be_hidden()
        page.get_by_text("Filters", exact=True).click()
    expect(facets).to_be_visible()
    fits_the_width(page)

    # The item: each variant's availability, the stores near a typed postcode.
    page.goto(f"/p/1/?sku={sku_of('1', '7', 'red')}")
    expect(page.locator("[data-availability]")).to_have_text("Only 2 left")
    page.goto(f"/p/1/?sku={sku_of('1', '7', 'black')}")
    expect(page.locator("[data-availability]")).to_have_text("Sold out")
    expect(page.locator("form.add-to-cart button")).to_be_disabled()
    page.goto(f"/p/1/?sku={sku_of('1', '6', 'red')}")
    page.fill('input[name="place"]', "LS2 9JT")
    page.get_by_role("button", name="Find stores").click()
    expect(page.locator("#nearby-title")).to_contain_text("nearest to LS2 9JT")
    expect(page.locator('[data-store="bradford"] .distance')).to_have_text(
        re.compile(r"^1\d\.\d km away$")
    )
    fits_the_width(page)
    keep(screenshot, page, "item", width)
    page.get_by_role("button", name="Add to cart").click()
    expect(page.locator("#cart-badge .badge-count")).to_have_text("1")

    # The seat map: each zone's swatch in its own colour; two seats held.
    # What's on: each show's dates and times.
    page.goto("/shows/")
    expect(page.locator(".performance").first).to_be_visible()
    fits_the_width(page)

    page.goto(f"/sessions/{session_id}/")
    swatches = page.locator(".legend-zones .swatch")
    colours = [
        swatches.nth(i).evaluate("el => getComputedStyle(el).backgroundColor")
        for i in range(swatches.count())
    ]
    assert colours == ["rgb(47, 109, 181)", "rgb(181, 84, 47)"]
    assert GREY not in colours
    page.locator("#seat-0-0").click()
    expect(page.locator(".my-seats")).to_contain_text("Row A, seat 1")
    fits_the_width(page)
    keep(screenshot, page, "seat-map", width)

    # The cart: a toast never sits over the totals.
    page.goto("/cart/")
    page.get_by_role("button", name="Hold them longer").click()
    toast = page.locator("#toasts .toast").last
    expect(toast).to_contain_text("more extensions left")
    total = page.locator("#cart-total").bounding_box()
    assert not overlaps(toast.bounding_box(), total)
    fits_the_width(page)
    keep(screenshot, page, "cart", width)

    # Checkout: a countdown; paying lands on the order; Back shows no form.
    page.get_by_role("link", name="Check out").click()
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^\d+:\d\d$"))
    fill_checkout(page, GOOD_CARD)
    fits_the_width(page)
    keep(screenshot, page, "checkout", width)
    page.get_by_role("button", name=re.compile(r"^Pay £")).click()
    expect(page.locator(".order-state")).to_contain_text("Paid")
    fits_the_width(page)  # its long secret address wraps
    keep(screenshot, page, "order", width)
    page.go_back()
    expect(page).to_have_url(re.compile(r"/cart/$"))
    expect(page.get_by_role("button", name=re.compile(r"^Pay £"))).to_have_count(0)
    assert mongo_db.orders.count_documents({"state": "paid"}) == 1
