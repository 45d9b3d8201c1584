"""The seat map in Chromium: drawn as a grid, usable from the keyboard."""

import pytest
from playwright.sync_api import expect

from booking import services
from tests.booking.factories import make_session, make_theater

pytestmark = pytest.mark.browser


def focused(page) -> dict:
    return page.evaluate(
        """() => {
            const el = document.activeElement;
            return {id: el.id, label: el.getAttribute('aria-label'),
                    tabIndex: el.tabIndex};
        }"""
    )


def map_ready(page) -> None:
    """Wait for static/js/seatmap.js to have set up the drawn grid (its
    roving tab stop and keys): htmx announces a swapped map a moment after
    the new seats are in the page, and only then is the grid set up."""
    expect(page.locator("#seat-map [data-seat-grid][data-ready]")).to_have_count(1)


def tab_stops(page) -> int:
    return page.locator('#seat-map button.seat[tabindex="0"]').count()


def test_arrow_keys_move_focus_between_seats_skipping_aisles(page, screenshot):
    session_id = make_session(make_theater())
    services.seats_hold(session_id=session_id, cart_id="someone", seats=[(0, 1)])

    page.goto(f"/sessions/{session_id}/")
    first = page.locator("#seat-0-0")
    first.focus()

    assert focused(page)["label"] == "Row A, seat 1, Stalls, £35, available"
    assert tab_stops(page) == 1  # the grid is one tab stop (roving tabindex)

    page.keyboard.press("ArrowRight")  # onto a taken seat: still reachable
    assert focused(page) == {
        "id": "seat-0-1",
        "label": "Row A, seat 2, Stalls, £35, taken",
        "tabIndex": 0,
    }
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # over the aisle at column 3
    assert focused(page)["id"] == "seat-0-4"
    assert tab_stops(page) == 1

    page.keyboard.press("ArrowDown")  # row B is ragged: nearest seat below
    assert focused(page)["id"] == "seat-1-3"
    page.keyboard.press("ArrowDown")
    assert focused(page)["id"] == "seat-2-3"
    page.keyboard.press("End")
    assert focused(page)["label"] == (
        "Row C, seat 8, Circle, £20.50, restricted view, available"
    )
    page.keyboard.press("Home")
    assert focused(page)["label"] == (
        "Row C, seat 1, Circle, £20.50, wheelchair space, available"
    )
    page.keyboard.press("ArrowUp")  # (1, 0) is the stage edge: B1 is nearest
    assert focused(page)["id"] == "seat-1-1"
    page.keyboard.press("ArrowLeft")  # nothing further left in row B
    assert focused(page)["id"] == "seat-1-1"

    # Tabbing out and back returns to the seat that had the tab stop.
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert focused(page)["id"] == "seat-1-1"
    screenshot(page, "seat-map")


def test_the_map_refresh_shows_another_carts_hold_and_keeps_focus(page):
    session_id = make_session(make_theater())
    page.goto(f"/sessions/{session_id}/")
    page.locator("#seat-0-5").focus()

    services.seats_hold(session_id=session_id, cart_id="someone", seats=[(0, 6)])

    # The map polls every 3 s while visible; wait for the redraw (bounded).
    page.wait_for_selector(
        '#seat-0-6[aria-label="Row A, seat 6, Stalls, £35, taken"]', timeout=10_000
    )
    map_ready(page)
    assert focused(page)["id"] == "seat-0-5"
    assert tab_stops(page) == 1
    page.keyboard.press("ArrowRight")
    assert focused(page)["id"] == "seat-0-6"


def test_the_demo_halls_draw_their_shapes(page, screenshot):
    import io

    from booking import demo, selectors

    demo.load(items=0, seed=7, out=io.StringIO())
    firsts = {}
    for listing in selectors.upcoming_sessions():
        for day in listing.dates:
            for performance in day.performances:
                firsts.setdefault(performance.theater, performance.session_id)

    for theater, expected_seats in [
        ("The Royal", 600),
        ("The Horseshoe", None),
        ("Studio 3", 96),
    ]:
        page.goto(f"/sessions/{firsts[theater]}/")
        seats = page.locator("#seat-map button.seat").count()
        gaps = page.locator("#seat-map .cell.gap").count()
        if expected_seats:
            assert seats == expected_seats
        assert seats > 90 and (gaps > 0) == (theater != "Studio 3")
        screenshot(page, theater.lower().replace(" ", "-"))
