"""A shopper in Chromium: what they viewed comes back under "Recently
viewed"; after paid orders pair two items, the hourly job runs and each
item's page offers the other, added in one click."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from activity.services.writer import flush
from activity.tasks import bought_together
from catalog.services.stock import stock_restock
from shop.services.carts import cart_add_item
from shop.services.checkout import cart_checkout
from tests.catalog.conftest import ITEMS, add_item, sku_of
from tests.shop.factories import SHIPPING, card

pytestmark = pytest.mark.browser


@pytest.fixture
def catalog(mongo_db):
    for row in ITEMS:
        add_item(*row)
        for size, colour in row[6]:
            stock_restock(sku=sku_of(row[0], size, colour), quantity=20, note="t")
    return mongo_db


def pay(owner: str, *skus: str) -> None:
    now = timezone.now()
    cart = None
    for sku in skus:
        cart = cart_add_item(owner=owner, sku=sku, quantity=1, now=now)
    cart_checkout(
        owner=owner,
        cart_id=cart.cart_id,
        email="buyer@example.com",
        shipping=SHIPPING,
        card=card(),
        now=now,
    )


def test_recently_viewed_items_come_back_on_the_home_page(catalog, page, screenshot):
    for item_id, title in (
        ("1", "Evening Platform Pumps"),
        ("4", "Trail Runner"),
        ("6", "Wool Coat"),
    ):
        page.goto(f"/p/{item_id}/")
        expect(page.locator("h1")).to_have_text(title)
    flush()  # what the writer's thread does within a second

    page.goto("/")

    strip = page.get_by_role("region", name="Recently viewed")
    expect(strip.get_by_role("link")).to_have_text(
        ["Wool Coat", "Trail Runner", "Evening Platform Pumps"]
    )
    screenshot(page, "home-recently-viewed")
    # Another shopper has seen nothing.
    other = page.context.browser.new_context(base_url=page.url.rsplit("/", 1)[0])
    fresh = other.new_page()
    fresh.goto("/")
    expect(fresh.get_by_role("region", name="Recently viewed")).to_have_count(0)
    other.close()


def test_after_orders_pair_two_items_each_page_offers_the_other(
    catalog, page, screenshot
):
    pay("anon:ann", sku_of("2", "6", "black"), sku_of("5", "9", "tan"))
    pay("anon:bob", sku_of("2", "8", "tan"), sku_of("5", "10", "black"))
    pay("anon:cat", sku_of("3", "6", "black"))
    flush()
    page.goto("/p/2/")
    expect(page.get_by_role("region", name="Often bought together")).to_have_count(0)

    bought_together()  # the hourly job
    page.reload()

    offered = page.get_by_role("region", name="Often bought together")
    expect(offered.get_by_role("link")).to_have_text(["Leather Loafers"])
    screenshot(page, "item-bought-together")
    offered.get_by_role("button", name="Add Leather Loafers to cart").click()
    expect(page.locator("#cart-badge .badge-count")).to_have_text("1")

    page.goto("/cart/")
    expect(page.locator(".cart-line")).to_have_count(1)
    # The cart suggests the partner of its line: item 2, item 5's partner.
    suggested = page.get_by_role("region", name="You might also like")
    expect(suggested.get_by_role("link")).to_have_text(["Suede Ankle Boots"])
