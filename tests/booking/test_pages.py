"""The box office's own pages through Django's test client, and its seat
map partial on its own (the seat map page is the shop's: tests/shop)."""

from datetime import timedelta

from django.template.loader import render_to_string

from booking import selectors, services
from tests.booking.factories import make_session, make_theater


def test_whats_on_lists_upcoming_sessions_with_seats_left(client, mongo_db):
    hall = make_theater()
    session_id = make_session(hall, show="Hamlet", starts_in=timedelta(days=1))
    make_session(hall, show="Uncle Vanya", starts_in=timedelta(days=2))
    services.seats_hold(session_id=session_id, cart_id="x", seats=[(0, 0)])

    response = client.get("/shows/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "<h2" in html and "Hamlet" in html and "Uncle Vanya" in html
    assert f'href="/sessions/{session_id}/"' in html
    assert "16 seats left" in html
    assert "from £20.50" in html
    assert '<a href="/shows/">Shows</a>' in html  # the nav link


def test_whats_on_says_so_when_nothing_is_on(client, mongo_db):
    response = client.get("/shows/")

    assert "Nothing is on sale right now" in response.content.decode()


def test_the_seat_map_partial_without_action_urls_is_for_viewing_only(session_id):
    seat_map = selectors.seat_map(session_id=session_id, cart_id=None)

    html = render_to_string("booking/session.html#seat-map", {"map": seat_map})

    assert html.lstrip().startswith('<section id="seat-map"')
    assert 'type="submit" name="seat"' not in html
    assert 'id="seat-0-0" class="seat seat-free"' in html


def test_box_office_pages_refuse_posts(client, mongo_db):
    assert client.post("/shows/").status_code == 405
