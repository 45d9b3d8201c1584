"""A staff member in Chromium: signs in, sees the dashboard and its charts,
finds an order by ticket code, refunds it with a reason, sees the timeline
entry and the seats back on sale."""

import shutil
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import expect

from staff.roles import BOX_OFFICE, create_staff
from tests.shop.factories import make_product, make_show
from tests.staff.conftest import pay

pytestmark = pytest.mark.browser

DOCS_SCREENSHOT = settings.BASE_DIR / "docs/screenshots/staff-dashboard.png"


def _some_sales(show):
    """A month of orders for the charts, then today's ticket order."""
    now = timezone.now()
    sneaker = make_product(sku="SNKR-1", title="JC Sneaker", price="89.00", stock=500)
    scarf = make_product(sku="SCARF-1", title="Wool scarf", price="25.00", stock=500)
    for day in range(0, 30, 2):
        for i in range(1 + day % 5):
            sku = sneaker if i % 2 else scarf
            when = now - timedelta(days=day, hours=i % 6)
            pay(f"anon:d{day}i{i}", sku=sku, quantity=1 + i % 3, now=when)
    return pay("anon:ann", session=show, seats=[(0, 0), (0, 1)], now=now)


def test_staff_sign_in_find_by_ticket_code_refund_and_see_the_seats_back(
    page, screenshot, mongo_db
):
    show = make_show()
    order = _some_sales(show)
    create_staff(email="box@example.com", role=BOX_OFFICE, password="box-office-pw-1")

    page.goto("/staff/")
    expect(page).to_have_url("/accounts/login/?next=/staff/")
    page.get_by_label("Email").fill("box@example.com")
    page.get_by_label("Password").fill("box-office-pw-1")
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("heading", name="Dashboard", exact=True)).to_be_visible()
    charts = page.get_by_role("img")
    expect(charts).to_have_count(5)
    revenue = page.get_by_role("img", name="Revenue per day, last 30 days")
    expect(revenue).to_be_visible()
    expect(page.get_by_role("heading", name="Needs attention")).to_be_visible()
    page.set_viewport_size({"width": 1280, "height": 900})
    shot = screenshot(page, "staff-dashboard")
    DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS_SCREENSHOT)

    page.get_by_role("link", name="Orders", exact=True).click()
    code = order.codes[0]
    page.get_by_label("Order number, email or ticket code").fill(code.lower())
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name=order.number).click()
    expect(page.get_by_role("heading", name=f"Order {order.number}")).to_be_visible()
    expect(page.locator("#order-state")).to_have_text("paid")

    page.get_by_label("Reason (kept in the audit trail)").fill("Customer is ill")
    page.get_by_role("button", name="Cancel and refund").click()

    expect(page.locator("#toasts")).to_contain_text("canceled and refunded")
    expect(page.locator("#order-state")).to_have_text("refunded")
    timeline = page.locator(".audit")
    expect(timeline).to_contain_text("order refunded")
    expect(timeline).to_contain_text("by staff:box@example.com")
    expect(timeline).to_contain_text("Customer is ill")
    screenshot(page, "staff-order-refunded")

    page.goto(f"/sessions/{show}/")
    for key, label in (("0-0", "Row A, seat 1"), ("0-1", "Row A, seat 2")):
        expect(page.locator(f"#seat-{key}")).to_have_attribute(
            "aria-label", f"{label}, Stalls, £35, available"
        )


def test_enter_in_the_sale_fields_sells_and_a_refusal_keeps_what_was_typed(
    page, mongo_db
):
    """One form holds the seat map's actions (the ticked seats go with each):
    Enter in the customer's fields sells, never blocks; a refused sale
    draws the map again with the seats still ticked and the fields filled."""
    from booking.services.blocks import seats_block

    show = make_show()
    seats_block(session_id=show, seats=[(1, 1), (1, 2)], reason="House", by="ann")
    create_staff(email="box@example.com", role=BOX_OFFICE, password="box-office-pw-1")
    page.goto(f"/staff/box-office/{show}/")
    page.get_by_label("Email").fill("box@example.com")
    page.get_by_label("Password").fill("box-office-pw-1")
    page.get_by_role("button", name="Log in").click()

    # From the keyboard, the map's seats can be skipped to its actions.
    page.get_by_role("link", name="Skip past the seats to the actions").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Reason (for blocking)")).to_be_focused()

    page.locator('input[name="seat"][value="1-2"]').check()
    page.locator('input[name="seat"][value="2-0"]').check()  # free: not for sale here
    page.get_by_label("Customer's name").fill("Grace Hopper")
    page.get_by_label("Customer's email").fill("grace@example.com")
    page.get_by_label("Customer's email").press("Enter")

    expect(page.locator("#toasts")).to_contain_text("is not blocked (free)")
    expect(page.get_by_label("Customer's name")).to_have_value("Grace Hopper")
    expect(page.get_by_label("Customer's email")).to_have_value("grace@example.com")
    expect(page.locator('input[name="seat"][value="1-2"]')).to_be_checked()
    page.locator('input[name="seat"][value="2-0"]').uncheck()
    page.locator('input[name="seat"][value="1-1"]').check()
    page.get_by_label("Customer's name").press("Enter")

    expect(page.locator("#toasts")).to_contain_text("Sold to Grace Hopper")
    assert mongo_db.orders.count_documents({"customer_name": "Grace Hopper"}) == 1
    assert mongo_db.sessions.find_one()["blocked"] == 0
