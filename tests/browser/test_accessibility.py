"""Every kind of page, the shopper's and the staff's, checked by axe-core (the
copy the axe-playwright-python package carries) in Chromium, with real data
on it: no violation of WCAG 2.2 level A or AA (axe's 2.2 rule is target
size, 2.5.8, off unless its tag is asked for). The shopper's pages are
checked at a desktop's width and at a phone's.

axe finds what a machine can (names, labels, contrast, structure, ARIA);
keyboard use and focus are the other browser tests' (test_seat_map,
test_toasts)."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from booking import services
from catalog.services.summaries import summary_rebuild
from staff.roles import (
    ADMINISTRATOR,
    BOX_OFFICE,
    SHOP_MANAGER,
    create_staff,
    deactivate_staff,
)
from tests.booking.factories import small_layout, wide_layout
from tests.browser.test_cart_checkout import add_from_its_page, fill_checkout
from tests.shop.factories import DECLINED_CARD, GOOD_CARD, make_product, make_show
from tests.staff.conftest import pay

pytestmark = pytest.mark.browser

WCAG_A_AA = {
    "runOnly": {
        "type": "tag",
        "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"],
    }
}
PHONE = {"width": 375, "height": 740}
STAFF_EMAIL, STAFF_PASSWORD = "admin@example.com", "admin-pw-123"


def violations(page) -> list[str]:
    """axe's violations on the page as it is now, one readable line each.

    axe is not sure a control out of the tab order (tabindex -1) is a
    target, so a small one is "incomplete", not a violation. Every such
    control here is one a pointer hits (the seat map's seats, all but the
    one tab stop of its roving tabindex), so those doubts count too."""
    response = Axe().run(page, options=WCAG_A_AA).response
    found = response["violations"] + [
        doubt for doubt in response["incomplete"] if doubt["id"] == "target-size"
    ]
    return [
        f"{v['id']} ({v['impact']}): {v['help']}; "
        + ", ".join(str(node["target"]) for node in v["nodes"][:5])
        for v in found
    ]


def test_axe_reports_what_is_planted_in_a_page(page):
    """The check below could pass by not running at all: it must see these."""
    page.goto("/accounts/login/")
    page.evaluate(
        """() => document.querySelector('main').insertAdjacentHTML('beforeend',
        '<img src="x.png"><input type="text">'
        + '<p style="color:#777;background:#888">faint</p>'
        + '<p><button aria-label="a" style="width:10px;height:10px;padding:0">'
        + '</button><button aria-label="b" style="width:10px;height:10px;padding:0">'
        + '</button></p>')"""
    )

    found = {line.split(" ")[0] for line in violations(page)}

    assert found == {"image-alt", "label", "color-contrast", "target-size"}


def test_every_kind_of_page_has_no_wcag_a_or_aa_violation(new_page):
    sku = make_product(sku="SNKR-1", title="JC Sneaker", price="89.00", stock=50)
    summary_rebuild(item_id=f"item-{sku}")
    # A hall with a walkway: a row of no seat on both seat maps.
    hall = small_layout()
    show = make_show(layout=[*hall[:2], [None] * 4, hall[2]])
    paid = pay("anon:ann", sku=sku, session=show, seats=[(0, 0)])
    # A hall 30 seats wide, as the demo's largest: on a phone its seats are
    # as small as they get. Flagged seats among them, one taken.
    big_hall = make_show(hall="Wide Hall", layout=wide_layout())
    services.seats_hold(session_id=big_hall, cart_id="someone", seats=[(0, 1)])
    create_staff(email=STAFF_EMAIL, role=ADMINISTRATOR, password=STAFF_PASSWORD)
    # The Staff page with a member to change, one invited, one who left,
    # and one with staff access but no role (as createsuperuser makes it).
    create_staff(email="clerk@example.com", role=BOX_OFFICE, password="clerk-pw-123")
    create_staff(email="invited@example.com", role=SHOP_MANAGER)
    create_staff(email="gone@example.com", role=BOX_OFFICE, password="gone-pw-123")
    deactivate_staff(email="gone@example.com")
    get_user_model().objects.create_superuser(
        "root@example.com", "root@example.com", "root-pw-123"
    )
    found: dict[str, list[str]] = {}

    def check(page, url: str, label: str = "") -> None:
        if url:
            page.goto(url)
        found[f"{label or url} at {page.viewport_size['width']}px"] = violations(page)

    shopper = new_page()
    browsing = ["/", "/c/Shoes/", f"/p/item-{sku}/", f"/sessions/{show}/", "/stores/"]
    browsing += [f"/sessions/{big_hall}/"]
    browsing += ["/accounts/login/", "/accounts/signup/"]
    for url in browsing:
        check(shopper, url)
    # The keyboard's first stop skips the header's links to the content.
    shopper.goto("/")
    shopper.keyboard.press("Tab")
    skip = shopper.locator(":focus")
    expect(skip).to_have_text("Skip to the content")
    expect(skip).to_be_in_viewport()
    shopper.keyboard.press("Enter")
    assert shopper.evaluate("location.hash") == "#main"
    # A cart of goods and seats, its checkout, and the order page after paying.
    shopper.goto(f"/p/item-{sku}/")
    shopper.get_by_role("button", name="Add to cart").first.click()
    expect(shopper.locator("#cart-badge .badge-count")).to_have_text("1")
    shopper.goto(f"/sessions/{show}/")
    shopper.locator("#seat-0-2").click()
    expect(shopper.locator("#cart-badge .badge-count")).to_have_text("2")
    for url in ["/cart/", "/checkout/"]:
        check(shopper, url)
    shopper.set_viewport_size(PHONE)
    for url in browsing + ["/cart/", "/checkout/"]:
        check(shopper, url)
    fill_checkout(shopper, GOOD_CARD)
    shopper.get_by_role("button", name="Pay £124.00").click()
    expect(shopper.get_by_role("heading", name="Your tickets")).to_be_visible()
    check(shopper, "", "the order page")
    shopper.set_viewport_size({"width": 1280, "height": 900})
    check(shopper, "", "the order page")

    staff = new_page()
    staff.goto("/accounts/login/")
    staff.get_by_label("Email").fill(STAFF_EMAIL)
    staff.get_by_label("Password").fill(STAFF_PASSWORD)
    staff.get_by_role("button", name="Log in").click()
    expect(staff.get_by_role("heading", name="My orders")).to_be_visible()
    for url in [
        "/orders/",
        "/staff/",
        "/staff/orders/",
        f"/staff/orders/{paid.number}/",
        "/staff/carts/",
        "/staff/jobs/",
        "/staff/box-office/",
        "/staff/box-office/schedule",
        f"/staff/box-office/{show}/",
        f"/staff/box-office/{big_hall}/",
        f"/staff/box-office/{show}/check-in",
        "/staff/stock/",
        "/staff/stock/low",
        f"/staff/stock/{sku}/",
        "/staff/team/",
    ]:
        check(staff, url)
    # The Staff page with each member's forms shown (each is in a closed
    # <details> until its Change is opened).
    staff.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    check(staff, "", "the Staff page, every member's forms open")
    # The door's check-in, on the phone or tablet an usher holds, and the
    # pages a manager opens on a phone: nothing sticks out sideways.
    staff.set_viewport_size(PHONE)
    for url in [
        f"/staff/box-office/{show}/check-in",
        f"/staff/box-office/{big_hall}/",
        "/staff/",
        f"/staff/orders/{paid.number}/",
        f"/staff/stock/{sku}/",
        "/staff/team/",
    ]:
        check(staff, url)
        wide = staff.evaluate("document.documentElement.scrollWidth")
        assert wide <= PHONE["width"], (url, wide)

    assert len(found) == 44
    assert {page: lines for page, lines in found.items() if lines} == {}


def test_the_declined_cards_page_has_no_wcag_a_or_aa_violation(page, settings):
    """The 429 page of the decline limit (accounts/declines.py), reached as a
    shopper does: a declined card, then paying again."""
    settings.DECLINES_PER_SESSION = 1
    make_product(sku="SNKR-1", title="JC Sneaker", price="89.00", stock=5)
    add_from_its_page(page, "SNKR-1", 1, "1", via="/p/item-SNKR-1/?sku=SNKR-1")
    page.goto("/checkout/")
    fill_checkout(page, DECLINED_CARD)
    page.get_by_role("button", name="Pay £89.00").click()
    expect(page.get_by_text("Your card was declined.")).to_be_visible()
    fill_checkout(page, GOOD_CARD)
    page.get_by_role("button", name="Pay £89.00").click()

    expect(page.get_by_role("heading", name="Too many declined cards")).to_be_visible()
    assert violations(page) == []
    page.set_viewport_size(PHONE)
    assert violations(page) == []
