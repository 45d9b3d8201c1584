"""Staff in Chromium, part 2: the box office schedules a performance and
admits tickets at the door (on a phone-sized screen) while the counter
moves; a shop manager receives stock and sees the low-stock alert clear;
an administrator adds and deactivates members of the staff by keyboard on
a phone."""

import re
import shutil
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import expect

from catalog.services.store_stock import store_stock_set
from catalog.services.stores import store_save
from shop.services.tickets import cart_hold_seats
from staff.roles import ADMINISTRATOR, BOX_OFFICE, SHOP_MANAGER, create_staff
from tests.shop.factories import make_product, make_show
from tests.staff.conftest import pay

pytestmark = pytest.mark.browser

DOCS = settings.BASE_DIR / "docs/screenshots"


def _sign_in(page, email, password, next_url):
    page.goto(next_url)
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def _keep(shot, name):
    DOCS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS / f"{name}.png")


def test_box_office_schedules_a_performance_and_admits_a_ticket(page, screenshot):
    show = make_show()
    order = pay("anon:ann", session=show, seats=[(0, 0), (0, 1)])
    cart_hold_seats(
        owner="anon:bob", session_id=show, seats=((2, 3), (2, 4)), now=timezone.now()
    )
    create_staff(email="box@example.com", role=BOX_OFFICE, password="box-office-pw-1")
    _sign_in(page, "box@example.com", "box-office-pw-1", "/staff/")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.get_by_role("link", name="Box office").click()
    expect(page.get_by_role("heading", name="Performances")).to_be_visible()
    page.get_by_role("link", name="Schedule a performance").click()
    start = timezone.localtime(timezone.now() + timedelta(days=60)).replace(
        hour=19, minute=30
    )
    page.get_by_label("Show").fill("Twelfth Night")
    page.get_by_label("Starts").fill(start.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Ends").fill(
        (start + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    )
    page.get_by_label("Price, Stalls (£)").fill("42")
    page.get_by_label("Price, Circle (£)").fill("18.50")
    page.get_by_role("button", name="Put on sale").click()

    expect(page.get_by_role("heading", name="Twelfth Night")).to_be_visible()
    expect(page.locator("#toasts")).to_contain_text("Twelfth Night is on sale")
    expect(page.locator("#seat-0-0")).to_have_attribute(
        "aria-label", "Row A, seat 1, free"
    )
    page.get_by_role("link", name="Performances").click()
    expect(page.get_by_role("link", name="Twelfth Night")).to_be_visible()
    _keep(screenshot(page, "staff-performances"), "staff-performances")

    page.goto(f"/staff/box-office/{show}/")
    expect(page.locator("#seat-0-0")).to_have_attribute(
        "aria-label", f"Row A, seat 1, sold, order {order.number}"
    )
    expect(page.locator("#seat-2-3")).to_have_attribute(
        "aria-label", re.compile(r"^Row C, seat 4, held by cart \S+ until \d\d:\d\d$")
    )
    page.get_by_label("Choose Row B, seat 2, free").check()
    page.get_by_label("Choose Row B, seat 3, free").check()
    page.get_by_label("Reason (for blocking)").fill("House seats")
    page.get_by_role("button", name="Block chosen seats", exact=True).click()
    expect(page.locator("#toasts")).to_contain_text("Blocked: Row B, seat 2")
    expect(
        page.get_by_role("cell", name="Row B, seat 2, blocked: House seats")
    ).to_be_visible()
    _keep(screenshot(page, "staff-seat-map"), "staff-seat-map")

    # The door, on a phone.
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("link", name=re.compile(r"^Check-in")).click()
    counter = page.locator("#admitted-counter")
    expect(counter).to_have_text(re.compile(r"Admitted\s+0\s+of\s+2"))
    page.get_by_label("Ticket code").fill(order.codes[0].replace("-", " ").lower())
    page.get_by_role("button", name="Admit").click()
    expect(page.locator(".scan-ok")).to_contain_text("Row A, seat 1")
    expect(page.locator(".scan-ok")).to_contain_text("Ada Lovelace")
    expect(counter).to_have_text(re.compile(r"Admitted\s+1\s+of\s+2"))
    # Said aloud by the region that stays on the page, and the field keeps
    # its focus for the next scan.
    outcome = page.locator("#scan-outcome")
    expect(outcome).to_have_text(re.compile(r"^Admit\. Row A, seat 1, "))
    expect(outcome).to_have_attribute("aria-live", "assertive")
    expect(page.get_by_label("Ticket code")).to_be_focused()
    _keep(screenshot(page, "staff-check-in"), "staff-check-in")

    page.get_by_label("Ticket code").fill(order.codes[0])
    page.get_by_label("Ticket code").press("Enter")
    expect(page.locator(".scan-refused")).to_contain_text(
        "Already admitted at", timeout=10_000
    )
    expect(page.locator(".scan-refused")).to_contain_text("by box@example.com")
    expect(outcome).to_have_text(re.compile(r"^Do not admit\. Already admitted at"))
    expect(counter).to_have_text(re.compile(r"Admitted\s+1\s+of\s+2"))


def test_shop_manager_receives_stock_and_the_low_stock_alert_clears(page, screenshot):
    make_product(sku="SCARF-1", title="Wool scarf", price="25.00", stock=2)
    make_product(sku="SNKR-1", title="JC Sneaker", price="89.00", stock=40)
    store_save(store_id="soho", name="Soho", group="g1", lng=-0.13, lat=51.51)
    store_stock_set(store_id="soho", sku="SNKR-1", quantity=7)
    create_staff(email="shop@example.com", role=SHOP_MANAGER, password="shop-pw-12345")
    _sign_in(page, "shop@example.com", "shop-pw-12345", "/staff/")
    page.set_viewport_size({"width": 1280, "height": 900})

    attention = page.locator(".attention")
    expect(attention).to_contain_text("SKU SCARF-1: 2 left")
    page.get_by_role("link", name="Stock", exact=True).click()
    _keep(screenshot(page, "staff-stock"), "staff-stock")
    page.get_by_role("link", name="Low stock").click()
    page.get_by_role("link", name="SCARF-1").click()

    expect(page.locator("#level-free")).to_have_text("2")
    page.get_by_label("Units received").fill("12")
    page.get_by_label("Note (delivery, supplier)").fill("Delivery 4471")
    page.get_by_role("button", name="Receive").click()
    expect(page.locator("#toasts")).to_contain_text("Received 12 units of SCARF-1")
    expect(page.locator("#level-free")).to_have_text("14")
    _keep(screenshot(page, "staff-stock-sku"), "staff-stock-sku")

    page.goto("/staff/stock/low")
    expect(page.locator("#no-low-stock")).to_be_visible()
    page.get_by_role("link", name="Dashboard").click()
    expect(page.get_by_role("heading", name="Needs attention")).to_be_visible()
    needs_attention = page.locator("section", has=page.locator("#attention-h"))
    expect(needs_attention).not_to_contain_text("SCARF-1")
    recent = page.locator("section", has=page.locator("#recent-h"))
    expect(recent).to_contain_text("stock received")
    expect(recent).to_contain_text("Delivery 4471")


def test_an_administrator_adds_and_deactivates_members_by_keyboard_on_a_phone(
    page, screenshot
):
    create_staff(email="admin@example.com", role=ADMINISTRATOR, password="admin-pw-123")
    clerk = create_staff(
        email="clerk@example.com", role=BOX_OFFICE, password="clerk-pw-123"
    )
    page.set_viewport_size({"width": 375, "height": 740})
    _sign_in(page, "admin@example.com", "admin-pw-123", "/staff/")
    page.get_by_role("link", name="Staff", exact=True).click()
    expect(page.get_by_role("heading", name="Staff", exact=True)).to_be_visible()

    page.get_by_label("Email").focus()
    page.keyboard.type("grace@example.com")
    page.keyboard.press("Tab")  # the role: Box office, then one down
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    page.keyboard.type("new hire")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # Add and send the email

    expect(page.locator("#toasts")).to_contain_text(
        "grace@example.com added as Shop manager"
    )
    members = page.locator("#members")
    expect(members).to_contain_text("grace@example.com")
    row = page.locator(f"#member-{clerk.pk}")
    row.locator("summary").focus()
    page.keyboard.press("Enter")  # opens the member's forms
    reason = row.get_by_label("Reason for deactivating")
    expect(reason).to_be_visible()
    reason.focus()
    page.keyboard.type("left for another theater")
    page.keyboard.press("Enter")

    expect(page.locator("#toasts")).to_contain_text("clerk@example.com is deactivated")
    expect(page.locator("#former")).to_contain_text("clerk@example.com")
    expect(members).not_to_contain_text("clerk@example.com")
    expect(page.locator("section", has=page.locator("#team-audit-h"))).to_contain_text(
        "left for another theater"
    )
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 375
    _keep(screenshot(page, "staff-team"), "staff-team")
