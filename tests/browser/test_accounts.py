"""Accounts in Chromium: sign up, buy a ticket, log out, log back in, find
the order under My orders and download its PDF; no page breaks its
Content-Security-Policy."""

import re

import pytest
from playwright.sync_api import expect
from pypdf import PdfReader

from tests.accounts.test_emails import decoded_qr_codes
from tests.browser.test_cart_checkout import fill_checkout
from tests.shop.factories import GOOD_CARD, make_show

pytestmark = pytest.mark.browser

EMAIL = "grace@example.com"
PASSWORD = "correct-horse-battery-9"


@pytest.fixture
def mail_to_files(settings, tmp_path):
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = tmp_path / "mail"
    settings.MAIL_SYNC = True
    return tmp_path / "mail"


def test_sign_up_buy_log_out_log_in_and_download_the_tickets(
    page, screenshot, mongo_db, mail_to_files, tmp_path
):
    show = make_show(show="Hamlet", hall="The Globe")
    violations = []
    page.on(
        "console",
        lambda msg: (
            violations.append(msg.text)
            if "Content Security Policy" in msg.text or "Refused to" in msg.text
            else None
        ),
    )

    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    screenshot(page, "sign-up")
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator("#toasts")).to_contain_text("your account is ready")
    expect(page.get_by_role("link", name=EMAIL)).to_be_visible()

    page.goto(f"/sessions/{show}/")
    page.locator("#seat-0-0").click()
    expect(page.locator("#seat-0-0")).to_have_attribute(
        "aria-label", re.compile("held by you")
    )
    page.goto("/checkout/")
    expect(page.get_by_label("Email")).to_have_value(EMAIL)
    fill_checkout(page, GOOD_CARD, address=False)  # tickets only: no address
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_role("button", name="Pay £35.00").click()
    expect(page.get_by_role("heading", name="Your tickets")).to_be_visible()
    code = page.locator(".ticket-code").first.inner_text()
    expect(page.locator(".ticket-qr svg")).to_have_count(1)
    number = re.search(r"MQ-\d+", page.locator("h1").inner_text())[0]
    screenshot(page, "order-with-qr")

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("#toasts")).to_contain_text("You are logged out")
    expect(page.get_by_role("link", name="Log in")).to_be_visible()

    page.get_by_role("link", name="Log in").click()
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="My orders")).to_be_visible()
    screenshot(page, "my-orders")
    page.get_by_role("link", name=number).click()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download tickets (PDF)").click()
    path = tmp_path / "tickets.pdf"
    download.value.save_as(path)

    pdf = path.read_bytes()
    assert decoded_qr_codes(pdf) == [[code]]
    assert "Hamlet" in PdfReader(path).pages[0].extract_text()
    assert any(p.read_bytes().count(code.encode()) for p in mail_to_files.iterdir())
    assert violations == []


# Each field a person types into in the page's main form: its name and its
# autocomplete token.
FIELDS = """() => [...document.querySelectorAll(
    'main form input:not([type=hidden]), main form select, main form textarea')]
  .map((field) => [field.name, field.getAttribute('autocomplete')])"""


def test_logging_in_asks_no_puzzle_and_takes_pasted_passwords(page):
    """WCAG 3.3.8: signing up, logging in and changing the password ask for
    the email and passwords only (no puzzle, no code to copy), a password
    can be pasted in every field that asks for one, and each field says
    what it is for, so a password manager fills it."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    def paste(label: str, text: str) -> None:
        page.evaluate("(text) => navigator.clipboard.writeText(text)", text)
        page.get_by_label(label, exact=True).focus()
        page.keyboard.press("Control+V")
        expect(page.get_by_label(label, exact=True)).to_have_value(text)

    page.goto("/accounts/signup/")
    assert page.evaluate(FIELDS) == [
        ["email", "email"],
        ["password1", "new-password"],
        ["password2", "new-password"],
    ]
    page.get_by_label("Email").fill(EMAIL)
    paste("Password", PASSWORD)
    paste("Password again", PASSWORD)
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator("#toasts .toast-success")).to_contain_text("Welcome")
    page.get_by_role("button", name="Log out").click()

    page.goto("/accounts/login/")
    assert page.evaluate(FIELDS) == [
        ["username", "email"],
        ["password", "current-password"],
    ]
    page.get_by_label("Email").fill(EMAIL)
    paste("Password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="My orders")).to_be_visible()

    page.goto("/accounts/password/change/")
    assert page.evaluate(FIELDS) == [
        ["old_password", "current-password"],
        ["new_password1", "new-password"],
        ["new_password2", "new-password"],
    ]
    paste("Old password", PASSWORD)
    paste("New password", "a-new-horse-battery-10")
    paste("New password confirmation", "a-new-horse-battery-10")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("heading", name="Your password is changed")).to_be_visible()
