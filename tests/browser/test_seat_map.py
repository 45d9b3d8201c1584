"""The seat map in Chromium: drawn as a grid, usable from the keyboard."""

import pytest
from playwright.sync_api import expect

from booking import services
from tests.booking.factories import make_session, make_theater, wide_layout

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 740}


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


# Where a seat's badges (the ✓ of a seat held by you, a flag's ♿, C or R:
# its ::before and ::after) are drawn, in the page's coordinates, from
# their used offsets in the seat's padding box.
BADGES = """(seat) => {
  const box = seat.getBoundingClientRect();
  const found = {};
  for (const which of ['::before', '::after']) {
    const s = getComputedStyle(seat, which);
    if (s.content === 'none' || s.display === 'none') continue;
    const edges = (a, b) => s.boxSizing === 'border-box' ? 0
      : ['border' + a + 'Width', 'border' + b + 'Width', 'padding' + a, 'padding' + b]
          .reduce((sum, name) => sum + parseFloat(s[name]), 0);
    found[which] = {
      x: box.left + seat.clientLeft + parseFloat(s.left),
      y: box.top + seat.clientTop + parseFloat(s.top),
      width: parseFloat(s.width) + edges('Left', 'Right'),
      height: parseFloat(s.height) + edges('Top', 'Bottom'),
    };
  }
  return found;
}"""


def test_a_seats_badges_overhang_it_but_take_no_clicks(page):
    """A held seat's ✓ and a flag's badge sit on the seat's corners and
    stick out past its edges: a pointer there hits what is under them (the
    next seat, or the aisle), not the seat they belong to, so each seat's
    target is its own box (WCAG 2.5.8)."""
    session_id = make_session(make_theater())
    page.goto(f"/sessions/{session_id}/")
    mine = page.locator("#seat-2-7")  # C8, restricted view
    mine.click()
    expect(page.locator("#seat-2-7.seat-mine:not(.seat-pending)")).to_have_count(1)

    seat = mine.bounding_box()
    badges = mine.evaluate(BADGES)
    assert set(badges) == {"::before", "::after"}  # the ✓ and the R
    # A point of each round badge past the seat's edge: above the ✓ (top
    # right), below the R (bottom left).
    for which, outward in (("::before", -1), ("::after", 1)):
        badge = badges[which]
        x = badge["x"] + badge["width"] / 2
        y = badge["y"] + badge["height"] / 2 + outward * 0.35 * badge["height"]
        assert not (seat["y"] <= y <= seat["y"] + seat["height"]), (which, y, seat)
        hit = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).id || 'not a seat'", [x, y]
        )
        assert hit != "seat-2-7", which


def overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


# Each seat's box, the box of its number (the text's own), and its badges.
SEATS = (
    """(seats) => seats.map((seat) => {
  const box = seat.getBoundingClientRect();
  const words = document.createRange();
  words.selectNodeContents(seat);
  const text = words.getBoundingClientRect();
  return {id: seat.id, width: box.width, height: box.height,
          text: {x: text.left, y: text.top, width: text.width, height: text.height},
          badges: ("""
    + BADGES
    + """)(seat)};
})"""
)


def test_on_a_phone_the_seats_badges_leave_every_number_clear(page):
    """A hall 30 seats wide on a phone: its seats are as small as they get,
    no smaller than 24 px (WCAG 2.5.8's target, met by size), and no badge
    (the ✓ of a seat held by you, a flag's ♿, C or R) covers the number
    of its seat or of any other, nor another seat's badge."""
    session_id = make_session(make_theater("Wide Hall", layout=wide_layout()))
    page.set_viewport_size(PHONE)
    page.goto(f"/sessions/{session_id}/")
    # Held by you: a seat with a flag (A1, restricted view), one without
    # below it and A2's flag (B1), the wheelchair space and companion at the
    # back.
    for key in ("0-0", "1-0", "5-0", "5-1"):
        page.locator(f"#seat-{key}").click()
        held = page.locator(f"#seat-{key}.seat-mine:not(.seat-pending)")
        expect(held).to_have_count(1)

    seats = page.locator("#seat-map button.seat").evaluate_all(SEATS)
    assert len(seats) == 180
    assert {(s["width"], s["height"]) for s in seats} == {(24, 24)}
    badges = [(s["id"], b) for s in seats for b in s["badges"].values()]
    assert len(badges) == 4 + 6 + 4  # 4 ✓, 6 R, 2 ♿ and 2 C
    covered = [
        (owner, seat["id"])
        for owner, badge in badges
        for seat in seats
        if overlap(badge, seat["text"])
    ]
    assert covered == []
    crowded = [
        (one, other)
        for i, (one, badge) in enumerate(badges)
        for other, next_badge in badges[i + 1 :]
        if overlap(badge, next_badge)
    ]
    assert crowded == []


def test_the_key_draws_the_badges_as_the_map_does(page):
    """The key's "Held by you" shows the ✓ a held seat has, and each flag's
    sample is the badge the seats carry: same disc, letter and colours."""
    session_id = make_session(make_theater("Wide Hall", layout=wide_layout()))
    page.set_viewport_size(PHONE)
    page.goto(f"/sessions/{session_id}/")
    page.locator("#seat-0-4").click()
    expect(page.locator("#seat-0-4.seat-mine:not(.seat-pending)")).to_have_count(1)

    def look(selector: str, which: str) -> dict:
        return page.locator(selector).first.evaluate(
            """(element, which) => {
                const s = getComputedStyle(element, which);
                const keys = ['content', 'display', 'width', 'height', 'fontSize',
                  'borderRadius', 'backgroundColor', 'color', 'borderTopWidth',
                  'borderTopColor', 'borderTopStyle'];
                return Object.fromEntries(keys.map((key) => [key, s[key]]));
            }""",
            which,
        )

    key = "#seat-map .legend-states .seat-sample"
    samples = [
        (f"{key}.seat-mine", "#seat-map .seat-grid .seat-mine", "::before"),
        (f"{key}.seat-wheelchair", "#seat-map .seat-grid .seat-wheelchair", "::after"),
        (f"{key}.seat-companion", "#seat-map .seat-grid .seat-companion", "::after"),
        (f"{key}.seat-restricted", "#seat-map .seat-grid .seat-restricted", "::after"),
    ]
    for sample, seat, which in samples:
        drawn = look(seat, which)
        assert drawn["content"] != "none", seat
        assert look(sample, which) == drawn, sample
