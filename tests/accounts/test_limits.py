"""Abuse limits: the per-order caps (seats of a performance, units of a
line, lines of a cart), the hold and add throttle (429), and the login
lockout (django-axes)."""

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from accounts.throttle import hit
from booking.selectors import staff_seat_map
from shop import faults
from shop.errors import QuantityTooLarge, TooManyLines, TooManySeats
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item
from shop.services.tickets import cart_hold_best_available, cart_hold_seats
from tests.accounts.conftest import PASSWORD
from tests.shop.factories import make_product, make_show

ALICE = "anon:alice"
# Ten seats of the small hall (row A's six, row C's first four), and more.
TEN = ((0, 0), (0, 1), (0, 2), (0, 4), (0, 5), (0, 6), (2, 0), (2, 1), (2, 2), (2, 3))
ELEVENTH = (2, 4)


@pytest.fixture
def show():
    return make_show()


def held_by(mongo_db, show) -> dict:
    """(row, col) -> cart id of every held seat, as booking tells staff."""
    seat_map = staff_seat_map(session_id=show)
    return {
        (seat.row, seat.col): seat.cart_id
        for row in seat_map.rows
        for seat in row
        if seat.state == "held"
    }


def listed(mongo_db, owner=ALICE) -> list:
    cart = mongo_db.carts.find_one({"live_owner": owner})
    return [(s["row"], s["col"]) for line in cart["tickets"] for s in line["seats"]]


# --- caps ------------------------------------------------------------------------


def test_the_eleventh_seat_of_a_performance_in_one_order_is_refused(mongo_db, show):
    cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[:6])
    cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[6:])

    with pytest.raises(TooManySeats, match="at most 10 seats"):
        cart_hold_seats(owner=ALICE, session_id=show, seats=(ELEVENTH,))

    assert sorted(listed(mongo_db)) == sorted(TEN)
    assert ELEVENTH not in held_by(mongo_db, show)
    assert len(held_by(mongo_db, show)) == 10
    assert invariant_problems() == []


def test_best_available_past_the_cap_is_refused_and_takes_nothing(mongo_db, show):
    cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[:8])

    with pytest.raises(TooManySeats):
        cart_hold_best_available(owner=ALICE, session_id=show, count=3)

    assert len(held_by(mongo_db, show)) == 8
    cart_hold_best_available(owner=ALICE, session_id=show, count=2)
    assert len(listed(mongo_db)) == 10


def test_the_cap_is_a_setting(mongo_db, show, settings):
    settings.MAX_SEATS_PER_PERFORMANCE = 2

    with pytest.raises(TooManySeats, match="at most 2 seats"):
        cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[:3])

    assert held_by(mongo_db, show) == {}
    assert mongo_db.carts.count_documents({}) == 0


def test_two_holds_of_one_shopper_in_between_each_other_stay_under_the_cap(
    mongo_db, show, monkeypatch
):
    """A second hold lands between the first's seats and its cart write
    (forced with the fault point there): the cart write, guarded on the line
    as read, refuses the first and its seats go back."""
    cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[:4])
    point = faults.point
    done = []

    def meanwhile(name):
        if name == "tickets.after_hold" and not done:
            done.append(True)
            cart_hold_seats(owner=ALICE, session_id=show, seats=(ELEVENTH, (2, 5)))
        point(name)

    monkeypatch.setattr(faults, "point", meanwhile)

    with pytest.raises(TooManySeats):
        cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[4:])

    assert sorted(listed(mongo_db)) == sorted([*TEN[:4], ELEVENTH, (2, 5)])
    assert sorted(held_by(mongo_db, show)) == sorted(listed(mongo_db))
    assert invariant_problems() == []


def test_an_eleventh_seat_over_http_says_why(client, mongo_db, show):
    for row, col in TEN:
        client.post(f"/cart/tickets/{show}/hold/", {"seat": f"{row}-{col}"})

    response = client.post(f"/cart/tickets/{show}/hold/", {"seat": "2-4"})

    assert response.status_code == 409
    assert "at most 10 seats" in response.content.decode()


def test_units_of_a_line_are_capped(mongo_db):
    sku = make_product(sku="SNKR-42", stock=500)
    cart_add_item(owner=ALICE, sku=sku, quantity=99)

    with pytest.raises(QuantityTooLarge):
        cart_add_item(owner=ALICE, sku=sku, quantity=1)


def test_lines_of_a_cart_are_capped(mongo_db, show, settings):
    settings.MAX_CART_LINES = 2
    for sku in ("A-1", "A-2", "A-3"):
        make_product(sku=sku)
    cart_add_item(owner=ALICE, sku="A-1", quantity=1)
    cart_add_item(owner=ALICE, sku="A-2", quantity=1)

    with pytest.raises(TooManyLines, match="at most 2"):
        cart_add_item(owner=ALICE, sku="A-3", quantity=1)
    with pytest.raises(TooManyLines):
        cart_hold_seats(owner=ALICE, session_id=show, seats=TEN[:1])

    cart_add_item(owner=ALICE, sku="A-1", quantity=1)  # more of a line: fine
    assert held_by(mongo_db, show) == {}
    cart = mongo_db.carts.find_one({"live_owner": ALICE})
    assert [(i["sku"], i["quantity"]) for i in cart["items"]] == [
        ("A-1", 2),
        ("A-2", 1),
    ]


# --- throttle ----------------------------------------------------------------------


@pytest.fixture
def one_window(monkeypatch):
    """The throttle counts in fixed windows of the real clock, so a test's
    requests that straddled a window's end would see the count start again.
    Its clock is pinned mid-window, a day ahead (the TTL index must not reap
    the counts while the test reads them)."""
    ahead = datetime.now(UTC) + timedelta(days=1)
    fixed = ahead.replace(second=30, microsecond=0)

    class Pinned(datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    monkeypatch.setattr("accounts.throttle.datetime", Pinned)


@pytest.mark.usefixtures("one_window")
def test_holds_over_the_session_limit_get_a_429_page(client, mongo_db, show, settings):
    settings.THROTTLE_PER_SESSION = 3
    seats = [f"{r}-{c}" for r, c in TEN]
    answers = [
        client.post(f"/cart/tickets/{show}/hold/", {"seat": seat}).status_code
        for seat in seats[:5]
    ]

    # The first hold makes the session; three more are counted against it.
    assert answers == [302, 302, 302, 302, 429]
    response = client.post(f"/cart/tickets/{show}/hold/", {"seat": seats[5]})
    assert response.status_code == 429
    # What is left of the window (the clock is pinned half-way through it).
    assert response["Retry-After"] == "30"
    assert "Too many requests" in response.content.decode()
    assert "try again in 30 seconds" in response.content.decode()
    assert len(held_by(mongo_db, show)) == 4


@pytest.mark.usefixtures("one_window")
def test_fresh_sessions_from_one_address_are_throttled_too(mongo_db, show, settings):
    settings.THROTTLE_PER_ADDRESS = 5
    answers = [
        Client().post(f"/cart/tickets/{show}/best/", {"count": "1"}).status_code
        for _ in range(7)
    ]

    assert answers == [302] * 5 + [429] * 2
    assert len(held_by(mongo_db, show)) == 5
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert other.post(f"/cart/tickets/{show}/best/", {"count": "1"}).status_code == 302


@pytest.mark.usefixtures("one_window")
def test_behind_a_proxy_a_forged_forwarded_for_does_not_dodge_the_limit(
    mongo_db, show, settings
):
    settings.THROTTLE_PER_ADDRESS = 3
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    # The client sends a new made-up address each time; the proxy appends
    # the one it saw (203.0.113.7), and that one is counted.
    answers = [
        Client(HTTP_X_FORWARDED_FOR=f"10.9.9.{n}, 203.0.113.7")
        .post(f"/cart/tickets/{show}/best/", {"count": "1"})
        .status_code
        for n in range(5)
    ]

    assert answers == [302] * 3 + [429] * 2
    other = Client(HTTP_X_FORWARDED_FOR="10.9.9.1, 198.51.100.2")
    assert other.post(f"/cart/tickets/{show}/best/", {"count": "1"}).status_code == 302


def test_pages_and_releases_are_not_throttled(client, show, settings):
    settings.THROTTLE_PER_ADDRESS = 1
    settings.THROTTLE_PER_SESSION = 1

    assert {client.get(f"/sessions/{show}/").status_code for _ in range(4)} == {200}


def test_the_counter_is_exact_under_concurrent_hits(mongo_db):
    now = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)

    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda _: hit("ip:x", limit=10, window=60, now=now), range(40))
        )

    assert answers.count(True) == 10
    assert hit("ip:x", limit=10, window=60, now=now + timedelta(seconds=30))


# --- login lockout -------------------------------------------------------------------


def login(client, email, password):
    return client.post("/accounts/login/", {"username": email, "password": password})


def test_ten_wrong_passwords_lock_the_account(ada):
    answers = [login(Client(), ada.email, "wrong-guess").status_code for _ in range(10)]

    locked = login(Client(), ada.email, PASSWORD)

    # The tenth failure locks: it and what follows get the locked page.
    assert answers == [200] * 9 + [429]
    assert locked.status_code == 429
    assert "Too many wrong passwords" in locked.content.decode()
    assert "for up to 15 minutes" in locked.content.decode()  # the default
    assert locked["Retry-After"] == "900"
    assert "reset the password" in locked.content.decode()


def test_a_wrong_password_says_so_in_the_forms_words(ada):
    wrong = login(Client(), ada.email, "wrong-guess").content.decode()
    assert "That email and password do not match an account." in wrong
    assert "correct username" not in wrong  # Django's words, not the form's


def test_a_success_before_the_limit_starts_the_count_again(ada):
    for _ in range(9):
        login(Client(), ada.email, "wrong-guess")
    assert login(Client(), ada.email, PASSWORD).status_code == 302

    for _ in range(9):
        login(Client(), ada.email, "wrong-guess")
    assert login(Client(), ada.email, PASSWORD).status_code == 302


@pytest.mark.usefixtures("one_window")
def test_an_htmx_hold_over_the_limit_gets_a_toast_where_messages_go(
    client, mongo_db, show, settings
):
    settings.THROTTLE_PER_SESSION = 1
    client.post(f"/cart/tickets/{show}/hold/", {"seat": "0-0"})
    client.post(f"/cart/tickets/{show}/hold/", {"seat": "0-1"})

    response = client.post(
        f"/cart/tickets/{show}/hold/", {"seat": "0-2"}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 429
    assert response["HX-Retarget"] == "#toasts"
    assert "Too many requests" in response.content.decode()
    assert len(held_by(mongo_db, show)) == 2
