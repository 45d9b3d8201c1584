"""The seat map page through Django's test client: drawn by the shop, with
the shopper's seats, where clicks post and the cart's countdown."""

import re

import pytest
from bson import ObjectId
from django_htmx.middleware import HtmxDetails

from booking import services
from booking.values import readable_ink
from shop.views.seats import render_seat_map
from tests.booking.factories import make_session, make_theater, move_to_the_past

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def session_id(mongo_db):
    return make_session(make_theater())


def test_seat_map_page_renders_accessible_seats_gaps_and_the_legend(client, session_id):
    services.seats_hold(session_id=session_id, cart_id="x", seats=[(0, 1)])

    response = client.get(f"/sessions/{session_id}/")

    html = response.content.decode()
    assert response.status_code == 200
    assert 'role="grid"' in html
    assert 'aria-label="Row A, seat 1, Stalls, £35, available"' in html
    assert 'aria-label="Row A, seat 2, Stalls, £35, taken"' in html
    assert (
        'aria-label="Row C, seat 1, Circle, £20.50, wheelchair space, available"'
        in html
    )
    # (0, 3) is an aisle and (1, 0) the stage edge: gap cells, no buttons.
    assert len(re.findall(r'<span class="cell gap" role="gridcell"></span>', html)) == 2
    assert 'id="seat-0-3"' not in html and 'id="seat-1-0"' not in html
    assert "Stalls <strong>£35</strong>" in html
    assert "Circle <strong>£20.50</strong>" in html
    assert "List of available seats (16)" in html
    assert '<script src="/static/js/seatmap.js" defer></script>' in html
    assert 'hx-trigger="every 3s, seatmap-visible from:document"' in html


def test_seat_map_posts_clicks_to_the_shop_and_shows_the_shoppers_seats(
    client, session_id
):
    client.post(f"/cart/tickets/{session_id}/hold/", {"seat": "0-0"}, **HTMX)

    html = client.get(f"/sessions/{session_id}/").content.decode()

    assert f'hx-post="/cart/tickets/{session_id}/hold/"' in html
    assert f'action="/cart/tickets/{session_id}/hold/"' in html
    assert f'action="/cart/tickets/{session_id}/best/"' in html
    assert 'type="submit" name="seat" value="0-1"' in html
    # The shopper's own seat releases it.
    assert 'aria-label="Row A, seat 1, Stalls, £35, held by you"' in html
    assert f'formaction="/cart/tickets/{session_id}/release/"' in html
    assert "Total <strong>£35</strong>" in html


def test_seat_map_of_a_past_session_refuses_holds(client, mongo_db, session_id):
    move_to_the_past(mongo_db, session_id)

    html = client.get(f"/sessions/{session_id}/").content.decode()

    assert "This performance has already started" in html
    assert 'type="submit" name="seat"' not in html
    assert 'class="primary" disabled' in html


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(f"/sessions/{ObjectId()}/", id="unknown"),
        pytest.param(f"/sessions/{ObjectId()}/map/", id="unknown-map"),
        "/sessions/not-an-id/",
        "/sessions/%7B%22$ne%22:null%7D/",
    ],
)
def test_unknown_sessions_are_404(client, mongo_db, path):
    assert client.get(path).status_code == 404


def test_htmx_gets_the_seat_map_partial_only(client, session_id):
    response = client.get(f"/sessions/{session_id}/", headers={"HX-Request": "true"})

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="seat-map"')
    assert "<html" not in html


def test_map_refresh_answers_204_until_the_seats_change(client, session_id):
    url = f"/sessions/{session_id}/map/"
    first = client.get(url, headers={"HX-Request": "true"})
    version = int(re.search(r'data-version="(\d+)"', first.content.decode())[1])

    unchanged = client.get(f"{url}?since={version}")
    services.seats_hold(session_id=session_id, cart_id="x", seats=[(0, 0)])
    changed = client.get(f"{url}?since={version}")

    assert unchanged.status_code == 204
    assert changed.status_code == 200
    assert 'aria-label="Row A, seat 1, Stalls, £35, taken"' in changed.content.decode()
    assert f'data-version="{version + 1}"' in changed.content.decode()


@pytest.mark.parametrize("query", ["since[$ne]=1", "since=-1", "since=abc"])
def test_map_refresh_ignores_a_malformed_version(client, session_id, query):
    response = client.get(f"/sessions/{session_id}/map/?{query}")

    assert response.status_code == 200
    assert '<section id="seat-map"' in response.content.decode()


def test_the_seat_map_page_refuses_posts(client, session_id):
    assert client.post(f"/sessions/{session_id}/").status_code == 405


def test_render_seat_map_sends_a_message_as_a_toast_with_the_partial(rf, session_id):
    request = rf.post("/cart/seats/hold/", headers={"HX-Request": "true"})
    request.htmx = HtmxDetails(request)

    response = render_seat_map(
        request,
        session_id=session_id,
        message="Row A, seat 1 was just taken. Please choose another seat.",
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="seat-map"')
    assert '<div hx-swap-oob="beforeend:#toasts">' in html
    assert "Row A, seat 1 was just taken." in html


def test_the_price_key_gives_each_zone_its_own_colour(client, session_id):
    html = client.get(f"/sessions/{session_id}/").content.decode()

    swatches = re.findall(
        r'<span class="swatch" style="--zone: ([^"]+)" data-zone="([^"]+)"', html
    )
    assert [zone for _, zone in swatches] == ["stalls", "circle"]
    colours = [colour for colour, _ in swatches]
    assert len(set(colours)) == 2 and all(c.startswith("#") for c in colours)
    # The rule that paints it reads the zone's colour, not the grey default.
    css = open("static/css/marquee.css").read()
    assert ".legend-zones .swatch { --swatch: var(--zone);" in css


def test_the_best_available_form_keeps_its_choice_after_each_action(client, session_id):
    best = f"/cart/tickets/{session_id}/best/"
    chosen = {"count": "3", "zone": "circle"}

    answer = client.post(best, chosen, **HTMX).content.decode()
    # A poll and a click carry the choice along (hx-include) and keep it.
    poll = client.get(f"/sessions/{session_id}/map/", chosen, **HTMX).content.decode()
    plain = client.post(best, {"count": "1", "zone": "stalls"})

    for html in (answer, poll):
        assert '<option value="3" selected>' in html
        assert '<option value="circle" selected>' in html
        assert 'hx-include="#best-available select"' in html
    assert plain["Location"] == f"/sessions/{session_id}/?count=1&zone=stalls"
    page = client.get(plain["Location"]).content.decode()
    assert '<option value="1" selected>' in page
    assert '<option value="stalls" selected>' in page


def test_each_seat_number_is_drawn_in_the_ink_readable_on_its_zone(client, session_id):
    html = client.get(f"/sessions/{session_id}/").content.decode()

    styles = set(re.findall(r'class="seat seat-free[^"]*" style="([^"]+)"', html))
    assert styles
    for style in styles:
        zone, ink = re.fullmatch(r"--zone: (#\w+); --zone-ink: (#\w+)", style).groups()
        assert ink == readable_ink(zone)


@pytest.mark.parametrize(
    "zone, ink",
    [
        ("#7a1f3d", "#ffffff"),  # dark: white
        ("#2f6db5", "#ffffff"),
        ("#ffe066", "#1d1b22"),  # light: the page's ink
        ("#cccccc", "#1d1b22"),
        ("not a colour", "#ffffff"),
    ],
)
def test_readable_ink_picks_the_colour_with_more_contrast(zone, ink):
    assert readable_ink(zone) == ink
