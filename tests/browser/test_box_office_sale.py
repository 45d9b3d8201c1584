"""The box office in Chromium: block a seat, sell it to a named customer from
the staff seat map, see it sold there and the order in the staff orders."""

import re
import shutil

import pytest
from django.conf import settings
from django.core import mail
from playwright.sync_api import expect

from staff.roles import BOX_OFFICE, create_staff
from tests.shop.factories import make_show

pytestmark = pytest.mark.browser

DOCS = settings.BASE_DIR / "docs/screenshots"


@pytest.fixture(autouse=True)
def mail_now(settings):
    settings.MAIL_SYNC = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def test_box_office_blocks_a_seat_and_sells_it_to_a_named_customer(page, screenshot):
    show = make_show()
    create_staff(email="box@example.com", role=BOX_OFFICE, password="box-office-pw-1")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/staff/box-office/{show}/")
    page.get_by_label("Email").fill("box@example.com")
    page.get_by_label("Password").fill("box-office-pw-1")
    page.get_by_role("button", name="Log in").click()

    page.get_by_label("Choose Row B, seat 2, free").check()
    page.get_by_label("Reason (for blocking)").fill("House seats")
    page.get_by_role("button", name="Block chosen seats", exact=True).click()
    expect(page.locator("#toasts")).to_contain_text("Blocked: Row B, seat 2")

    page.get_by_label("Choose Row B, seat 2, blocked: House seats").check()
    page.get_by_label("Customer's name").fill("Grace Hopper")
    page.get_by_label("Customer's email").fill("grace@example.com")
    page.get_by_label("Phone (optional)").fill("020 7946 0000")
    page.get_by_role("button", name="Sell chosen seats").press("Enter")

    expect(page.locator("#toasts")).to_contain_text("Sold to Grace Hopper: order MQ-")
    seat = page.locator("#seat-1-2")
    expect(seat).to_have_attribute(
        "aria-label", re.compile(r"^Row B, seat 2, sold, order MQ-\d+$")
    )
    number = seat.get_attribute("aria-label").rsplit(" ", 1)[1]
    sold = page.locator("section", has=page.locator("#sold-h"))
    expect(sold.get_by_role("link", name=number)).to_be_visible()
    shot = screenshot(page, "staff-box-office-sale")
    DOCS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS / "staff-box-office-sale.png")

    page.get_by_role("link", name="Orders", exact=True).click()
    row = page.get_by_role("row", name=re.compile(number))
    expect(row).to_contain_text("grace@example.com")
    expect(row).to_contain_text("Grace Hopper, box office")
    row.get_by_role("link", name=number).click()
    expect(page.locator("#order-state")).to_have_text("paid")
    expect(page.locator("#box-office-sale")).to_contain_text(
        "Sold at the box office to Grace Hopper (020 7946 0000)"
    )
    expect(page.get_by_text("Box office", exact=False).first).to_be_visible()
    assert [m.to for m in mail.outbox] == [["grace@example.com"]]
