"""Seats in Chromium: hold by mouse and by keyboard, see another shopper's
hold appear, lose a race, check out, see the tickets, cancel the order."""

import re

import pytest
from playwright.sync_api import expect

from shop.services.tickets import cart_hold_seats
from tests.booking.factories import sold_to
from tests.browser.test_cart_checkout import fill_checkout
from tests.browser.test_seat_map import map_ready
from tests.shop.factories import GOOD_CARD, make_show

pytestmark = pytest.mark.browser

# The seat map polls every 3 s while the tab is visible.
REFRESH_SECONDS = 3
REDRAW_WITHIN_MS = (2 * REFRESH_SECONDS + 4) * 1000


def seat(page, key: str):
    return page.locator(f"#seat-{key}")


def sold(mongo_db, show) -> list:
    return sorted(sold_to(show))


def test_hold_by_mouse_and_keyboard_check_out_see_the_tickets_and_cancel(
    page, screenshot, mongo_db
):
    show = make_show()
    page.goto(f"/sessions/{show}/")

    # Mouse: the seat flips at once, before the server has answered.
    waiting = []
    page.route("**/cart/tickets/*/hold/", lambda route: waiting.append(route))
    seat(page, "0-0").click()
    expect(seat(page, "0-0")).to_have_class(re.compile(r"\bseat-mine\b.*seat-pending"))
    assert len(waiting) == 1 and mongo_db.carts.count_documents({}) == 0
    waiting[0].continue_()
    page.unroute("**/cart/tickets/*/hold/")
    expect(page.locator("#toasts .toast").last).to_contain_text(
        "Row A, seat 1: held for you."
    )
    expect(seat(page, "0-0")).to_have_attribute(
        "aria-label", "Row A, seat 1, Stalls, £35, held by you"
    )
    expect(seat(page, "0-0")).not_to_have_class(re.compile("seat-pending"))

    # Keyboard: the grid is one tab stop; arrows move, Enter holds.
    map_ready(page)
    seat(page, "0-0").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    expect(seat(page, "0-1")).to_have_attribute(
        "aria-label", "Row A, seat 2, Stalls, £35, held by you"
    )
    expect(page.locator("#cart-badge .badge-count")).to_have_text("2")
    # The cart's hold countdown, beside the seats, counting down.
    countdown = page.locator("#seat-map #countdown")
    expect(countdown).to_have_text(re.compile(r"^(2\d|30):[0-5]\d$"))
    screenshot(page, "seat-map-own-seats")

    page.get_by_role("link", name="Go to your cart").click()
    expect(page.locator(".ticket-line h3")).to_have_text("Hamlet")
    expect(page.locator(".ticket-seat")).to_have_count(2)
    expect(page.locator("#cart-total")).to_have_text("£70.00")
    screenshot(page, "cart-with-tickets")

    page.get_by_role("link", name="Check out").click()
    # Tickets only: nothing to deliver, no address asked.
    expect(page.locator("#no-delivery")).to_be_visible()
    expect(page.get_by_label("Full name")).to_have_count(0)
    fill_checkout(page, GOOD_CARD, address=False)
    page.get_by_role("button", name="Pay £70.00").click()
    expect(page.get_by_role("heading", name="Your tickets")).to_be_visible()
    expect(page.locator(".ticket-code")).to_have_count(2)
    expect(page.locator(".ticket").first).to_contain_text("Row A, seat 1")
    screenshot(page, "order-tickets")
    assert sold(mongo_db, show) == [(0, 0), (0, 1)]

    page.locator(".order-cancel summary").click()
    page.get_by_role("button", name=re.compile(r"Cancel order MQ-\d+")).click()
    expect(page.locator(".order-state")).to_contain_text("Canceled and refunded")
    expect(page.locator(".ticket-code")).to_have_count(0)
    assert sold(mongo_db, show) == []
    assert mongo_db.orders.find_one()["state"] == "refunded"


def test_a_seat_taken_in_another_browser_shows_up_within_the_refresh_interval(
    new_page, screenshot
):
    show = make_show()
    mine, theirs = new_page(), new_page()
    mine.goto(f"/sessions/{show}/")
    theirs.goto(f"/sessions/{show}/")

    seat(theirs, "0-4").click()
    expect(seat(theirs, "0-4")).to_have_attribute(
        "aria-label", re.compile("held by you$")
    )

    # No reload: the open map polls (its declared interval) and redraws. The
    # wait allows two intervals and a loaded machine's render; a map that
    # did not poll would never show the seat taken.
    expect(mine.locator("#seat-map")).to_have_attribute(
        "hx-trigger", re.compile(rf"^every {REFRESH_SECONDS}s\b")
    )
    expect(seat(mine, "0-4")).to_have_attribute(
        "aria-label",
        "Row A, seat 4, Stalls, £35, taken",
        timeout=REDRAW_WITHIN_MS,
    )
    expect(seat(mine, "0-4")).to_have_attribute("aria-disabled", "true")
    expect(mine.locator('.seat-list button[value="0-4"]')).to_have_count(0)
    expect(mine.locator('.seat-list button[value="0-5"]')).to_have_count(1)
    screenshot(mine, "seat-taken-elsewhere")
    screenshot(theirs, "seat-held-here")


def test_the_list_of_seats_keeps_its_focus_and_stays_open_across_a_redraw(
    new_page,
):
    show = make_show()
    mine, theirs = new_page(), new_page()
    mine.goto(f"/sessions/{show}/")
    theirs.goto(f"/sessions/{show}/")
    mine.locator(".seat-list summary").click()
    kept = mine.locator("#list-seat-0-6")
    kept.focus()

    seat(theirs, "0-4").click()  # the map changes: every open map redraws

    expect(mine.locator('.seat-list button[value="0-4"]')).to_have_count(
        0, timeout=REDRAW_WITHIN_MS
    )
    expect(mine.locator("details.seat-list")).to_have_attribute("open", "")
    expect(kept).to_be_focused()


def test_a_lost_race_says_just_taken_and_redraws_the_map(page, screenshot, mongo_db):
    show = make_show()
    page.goto(f"/sessions/{show}/")
    # Keep this map stale: its refreshes are held back, so it still shows the
    # seat free when another shopper takes it (the race, forced).
    page.route("**/map/**", lambda route: route.abort())
    cart_hold_seats(owner="anon:quicker", session_id=show, seats=((0, 2),))

    seat(page, "0-2").click()

    expect(page.locator("#toasts .toast").last).to_contain_text(
        "Row A, seat 3 was just taken. Please choose another seat."
    )
    expect(seat(page, "0-2")).to_have_attribute(
        "aria-label", "Row A, seat 3, Stalls, £35, taken"
    )
    screenshot(page, "just-taken")
    assert mongo_db.carts.count_documents({}) == 1  # the quicker shopper's only


def test_best_available_holds_seats_together_from_the_button(
    page, screenshot, mongo_db
):
    show = make_show()
    page.goto(f"/sessions/{show}/")

    form = page.locator("form.best-available")
    form.get_by_label("Seats").select_option("3")
    form.get_by_label("Zone").select_option("circle")
    form.get_by_role("button", name="Find seats together").click()

    expect(page.locator("#toasts .toast").last).to_contain_text("We found Row C")
    expect(page.locator("#seat-map button.seat-mine")).to_have_count(3)
    expect(page.locator(".my-seats li")).to_have_count(3)
    screenshot(page, "best-available")
    (cart,) = mongo_db.carts.find()
    assert len(cart["tickets"][0]["seats"]) == 3
