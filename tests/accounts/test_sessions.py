"""Sessions live on the server: a cookie is only a random key, forged or
tampered ones are strangers, logging in rotates the key and logging out
ends the session; what a session holds is checked before it is used."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.core import signing
from django.test import Client
from django.utils import timezone

from accounts.sessions import SessionStore
from config.secret import DEV_SECRET_KEY
from shop.services.carts import cart_add_item
from tests.accounts.conftest import PASSWORD
from tests.accounts.test_accounts import buy
from tests.shop.factories import make_product

COOKIE = settings.SESSION_COOKIE_NAME


@pytest.fixture
def product():
    return make_product(sku="SNKR-42", title="JC Sneaker")


def forged_cookie(data: dict) -> str:
    """What an attacker could sign with the key once public in the
    repository, as the signed-cookie sessions Marquee used to trust."""
    return signing.dumps(
        data,
        key=DEV_SECRET_KEY,
        salt="django.contrib.sessions.backends.signed_cookies",
        compress=True,
    )


def test_a_forged_session_cookie_is_a_stranger_never_a_500(client, product):
    cart_add_item(owner="anon:victim", sku=product, quantity=3)
    client.cookies[COOKIE] = forged_cookie({"shop_owner": "victim"})

    page = client.get("/cart/")

    assert page.status_code == 200
    assert "JC Sneaker" not in page.content.decode()
    assert "shop_owner" not in client.session


def test_a_tampered_session_key_is_a_stranger(client, product):
    client.post("/cart/add/", {"sku": product, "quantity": "1"})
    key = client.cookies[COOKIE].value
    stranger = Client()
    stranger.cookies[COOKIE] = key[:-4] + ("aaaa" if key[-4:] != "aaaa" else "bbbb")

    page = stranger.get("/cart/")

    assert page.status_code == 200
    assert "JC Sneaker" in client.get("/cart/").content.decode()
    assert "JC Sneaker" not in page.content.decode()


@pytest.mark.parametrize(
    "location",
    [
        "here",
        {"lng": "east", "lat": 1, "label": "x"},
        {"lat": 51.5},
        {"lng": 999, "lat": 51.5, "label": "nowhere"},
        {"lng": float("nan"), "lat": 0, "label": "x"},
        [1, 2, 3],
    ],
)
def test_a_malformed_location_in_the_session_is_forgotten_not_a_500(
    client, product, location
):
    session = SessionStore()
    session["location"] = location
    session["store_id"] = {"not": "a string"}
    session.create()
    client.cookies[COOKIE] = session.session_key

    page = client.get(f"/p/item-{product}/")

    assert page.status_code == 200
    assert "location" not in SessionStore(session.session_key).load()


def test_logging_in_rotates_the_session_key(client, ada, product):
    client.post("/cart/add/", {"sku": product, "quantity": "1"})
    before = client.cookies[COOKIE].value

    client.post("/accounts/login/", {"username": ada.email, "password": PASSWORD})

    after = client.cookies[COOKIE].value
    assert after != before
    assert not SessionStore().exists(before)
    assert "JC Sneaker" in client.get("/cart/").content.decode()


def test_after_logout_the_old_cookie_shows_nothing_private(client, ada, mongo_db):
    make_product(sku="SNKR-42")
    client.post("/accounts/login/", {"username": ada.email, "password": PASSWORD})
    order = buy(client, mongo_db, email=ada.email)
    copied = client.cookies[COOKIE].value
    assert order["number"] in client.get("/orders/").content.decode()

    client.post("/accounts/logout/")

    thief = Client()
    thief.cookies[COOKIE] = copied
    orders = thief.get("/orders/")
    one = thief.get(f"/orders/{order['number']}/")
    account = thief.get("/accounts/")
    assert orders.status_code == one.status_code == account.status_code == 302
    assert all(
        r["Location"].startswith("/accounts/login/") for r in (orders, one, account)
    )
    home = thief.get("/").content.decode()
    assert ada.email not in home and order["number"] not in home
    assert not SessionStore().exists(copied)


def test_a_staff_login_lasts_a_working_day_a_shoppers_two_weeks(client, ada, settings):
    from staff.roles import BOX_OFFICE, create_staff

    settings.STAFF_SESSION_HOURS = 12
    create_staff(email="clerk@example.com", role=BOX_OFFICE, password=PASSWORD)
    clerk = Client()

    clerk.post(
        "/accounts/login/", {"username": "clerk@example.com", "password": PASSWORD}
    )
    client.post("/accounts/login/", {"username": ada.email, "password": PASSWORD})

    assert clerk.cookies[COOKIE]["max-age"] == 12 * 3600
    assert client.cookies[COOKIE]["max-age"] == settings.SESSION_COOKIE_AGE
    staff_session = SessionStore(session_key=clerk.cookies[COOKIE].value)
    assert staff_session.get_expiry_age() == 12 * 3600


def test_the_sessions_of_djangos_own_table_move_tagged_with_their_account(ada):
    """accounts/migrations/0002: changing the engine logs nobody out and
    loses no anonymous cart."""
    from importlib import import_module

    from django.apps import apps
    from django.contrib.auth import SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore as DjangosStore
    from django.contrib.sessions.models import Session

    from accounts.models import BrowserSession

    moving = import_module("accounts.migrations.0002_move_sessions")
    logged_in, anonymous, expired = DjangosStore(), DjangosStore(), DjangosStore()
    logged_in[SESSION_KEY] = str(ada.pk)
    anonymous["shop_owner"] = "someone"
    expired[SESSION_KEY] = str(ada.pk)
    expired.set_expiry(-1)
    for session in (logged_in, anonymous, expired):
        session.save()

    moving.forwards(apps, None)

    moved = {s.session_key: s for s in BrowserSession.objects.all()}
    assert set(moved) == {logged_in.session_key, anonymous.session_key}
    assert moved[logged_in.session_key].account_id == ada.pk
    assert moved[anonymous.session_key].account_id is None
    assert SessionStore(anonymous.session_key).load() == {"shop_owner": "someone"}
    assert not Session.objects.exists()


def test_the_daily_job_deletes_expired_sessions_and_keeps_live_ones(
    client, ada, product
):
    """Every visitor's session is a row: the job keeps the table to the
    browsers that can still use theirs."""
    from accounts.models import BrowserSession
    from accounts.tasks import SCHEDULES, clear_sessions

    client.post("/accounts/login/", {"username": ada.email, "password": PASSWORD})
    live = client.cookies[COOKIE].value
    stranger = Client()
    stranger.post("/cart/add/", {"sku": product, "quantity": "1"})
    gone = stranger.cookies[COOKIE].value
    BrowserSession.objects.filter(session_key=gone).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )

    clear_sessions()
    clear_sessions()  # safe to run twice

    assert set(BrowserSession.objects.values_list("session_key", flat=True)) == {live}
    assert client.get("/accounts/").status_code == 200
    assert ("clear_sessions", "accounts.tasks.clear_sessions", 24 * 60) in {
        (job.name, job.func, job.minutes) for job in SCHEDULES
    }
