"""The limit on declined card payments (card testing, accounts/declines.py):
counted per session and per client address, checked before a checkout
charges; over it, 429 with Retry-After, no charge and the holds intact."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone
from pymongo import monitoring

from catalog.selectors.stock import stock_level
from shop.documents import ACTIVE, COMPLETE
from tests.shop.factories import DECLINED_CARD, ERROR_CARD, GOOD_CARD, make_product
from tests.shop.test_views import checkout_data

SKU = "SNKR-42"
WINDOW = 3600


class Clock:
    """The decline windows' clock, pinned mid-window a day ahead (the TTL
    index must not reap the counts while the test reads them); ``advance``
    moves it on."""

    def __init__(self):
        ahead = datetime.now(UTC) + timedelta(days=1)
        start = int(ahead.timestamp()) // WINDOW * WINDOW
        self.at = datetime.fromtimestamp(start + WINDOW // 2, UTC)

    def advance(self, seconds: int) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch, settings):
    settings.DECLINES_WINDOW_SECONDS = WINDOW
    pinned = Clock()

    class Pinned(datetime):
        @classmethod
        def now(cls, tz=None):
            return pinned.at

    monkeypatch.setattr("accounts.declines.datetime", Pinned)
    return pinned


@pytest.fixture
def product(mongo_db):
    return make_product(sku=SKU, stock=100)


def shopper(mongo_db, address="127.0.0.1", **kwargs) -> tuple[Client, str]:
    """A new session with two units in a cart of its own; (client, cart id)."""
    client = Client(REMOTE_ADDR=address, **kwargs)
    before = {c["_id"] for c in mongo_db.carts.find({}, {"_id": 1})}
    client.post("/cart/add/", {"sku": SKU, "quantity": "2"})
    (cart_id,) = {c["_id"] for c in mongo_db.carts.find({}, {"_id": 1})} - before
    return client, cart_id


def pay(client, cart_id, card=GOOD_CARD):
    return client.post("/checkout/", checkout_data(cart_id, card=card))


def charges(mongo_db) -> int:
    return mongo_db.test_gateway_charges.count_documents({})


def attempts(mongo_db, cart_id) -> list[str]:
    order = mongo_db.orders.find_one({"cart_id": cart_id}) or {}
    return [a["outcome"] for a in order.get("attempts", [])]


def decline_counts(mongo_db) -> dict:
    found = mongo_db.throttle_counts.find({"_id": {"$regex": "^declines:"}})
    return {doc["_id"].split("|")[0]: doc["n"] for doc in found}


@pytest.mark.usefixtures("clock")
def test_declines_over_the_session_limit_refuse_the_next_checkout(
    mongo_db, product, settings
):
    assert settings.DECLINES_PER_SESSION == 5  # the default
    client, cart_id = shopper(mongo_db)
    answers = [pay(client, cart_id, DECLINED_CARD) for _ in range(5)]
    assert [a["Location"] for a in answers] == ["/checkout/"] * 5
    cart = mongo_db.carts.find_one({"_id": cart_id})

    refused = pay(client, cart_id)  # a good card, too late

    assert refused.status_code == 429
    # What is left of the window (the clock is pinned half-way through it).
    assert refused["Retry-After"] == "1800"
    page = refused.content.decode()
    assert "Too many declined cards" in page
    assert "Your card was not charged" in page
    held_until = timezone.localtime(cart["expires_at"].replace(tzinfo=UTC))
    assert f"Your items are still held until {held_until:%H:%M}" in page
    assert "try again in 30 minutes" in page
    # No charge, no attempt recorded, and the cart and its holds as they were.
    assert charges(mongo_db) == 5
    assert attempts(mongo_db, cart_id) == ["declined"] * 5
    assert mongo_db.carts.find_one({"_id": cart_id}) == cart
    assert cart["state"] == ACTIVE
    assert stock_level(sku=SKU).held == 2
    # Refused, not counted: the session's window stays at its limit.
    assert pay(client, cart_id).status_code == 429
    assert (
        decline_counts(mongo_db)[f"declines:session:{client.session.session_key}"] == 5
    )


@pytest.mark.usefixtures("clock")
def test_fresh_sessions_from_one_address_are_counted_by_address(
    mongo_db, product, settings
):
    settings.DECLINES_PER_ADDRESS = 3
    for _ in range(3):
        client, cart_id = shopper(mongo_db)
        assert pay(client, cart_id, DECLINED_CARD)["Location"] == "/checkout/"

    client, cart_id = shopper(mongo_db)
    refused = pay(client, cart_id)

    assert refused.status_code == 429
    assert refused["Retry-After"] == "1800"
    assert charges(mongo_db) == 3
    assert attempts(mongo_db, cart_id) == []
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == ACTIVE
    assert stock_level(sku=SKU).held == 8
    # Another address is not held back by this one's declines.
    elsewhere, cart_id = shopper(mongo_db, address="10.0.0.9")
    assert pay(elsewhere, cart_id).status_code == 302
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == COMPLETE


@pytest.mark.usefixtures("clock")
def test_payments_and_provider_failures_are_not_counted(mongo_db, product, settings):
    settings.DECLINES_PER_SESSION = settings.DECLINES_PER_ADDRESS = 1
    client, cart_id = shopper(mongo_db)

    # The provider's own failure says nothing of the card: not counted.
    failed = pay(client, cart_id, ERROR_CARD)
    assert failed["Location"] == "/checkout/"
    assert decline_counts(mongo_db) == {}
    paid = pay(client, cart_id)
    assert paid.status_code == 302 and paid["Location"].startswith("/orders/")
    assert decline_counts(mongo_db) == {}

    # The same session and address may still pay again, and decline once.
    client.post("/cart/add/", {"sku": SKU, "quantity": "1"})
    cart_id = mongo_db.carts.find_one({"state": ACTIVE})["_id"]
    assert pay(client, cart_id, DECLINED_CARD)["Location"] == "/checkout/"
    assert pay(client, cart_id).status_code == 429


def test_the_shopper_may_try_again_once_the_window_has_passed(
    mongo_db, product, settings, clock
):
    settings.DECLINES_PER_SESSION = 2
    client, cart_id = shopper(mongo_db)
    pay(client, cart_id, DECLINED_CARD)
    pay(client, cart_id, DECLINED_CARD)
    clock.advance(WINDOW // 2 - 1)
    refused = pay(client, cart_id)
    assert (refused.status_code, refused["Retry-After"]) == (429, "1")

    clock.advance(1)  # the next window
    paid = pay(client, cart_id)

    assert paid.status_code == 302 and paid["Location"].startswith("/orders/")
    assert attempts(mongo_db, cart_id) == ["declined", "declined", "paid"]
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == COMPLETE


@pytest.mark.usefixtures("clock")
def test_a_checkout_without_its_csrf_token_is_refused_and_not_counted(
    mongo_db, product
):
    client, cart_id = shopper(mongo_db)
    # The same session's cookie, posted without the form's token.
    forged = Client(enforce_csrf_checks=True, REMOTE_ADDR="127.0.0.1")
    forged.cookies = client.cookies

    response = pay(forged, cart_id, DECLINED_CARD)

    assert response.status_code == 403
    assert charges(mongo_db) == 0
    assert decline_counts(mongo_db) == {}
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == ACTIVE


class Commands(monitoring.CommandListener):
    """The commands sent to the throttle's collection."""

    def __init__(self):
        self.sent: list[tuple[str, object]] = []

    def started(self, event):
        name = event.command_name
        if event.command.get(name) == "throttle_counts":
            self.sent.append((name, event.command.get("filter")))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


@pytest.mark.usefixtures("clock")
def test_the_check_is_one_read_by_id(mongo_db, product, listen):
    client, cart_id = shopper(mongo_db)
    commands = listen(Commands())

    assert pay(client, cart_id).status_code == 302

    assert [name for name, _ in commands.sent] == ["find"]
    assert list(commands.sent[0][1]) == ["_id"]


def test_a_decline_is_announced_with_the_request_alone(mongo_db, product):
    """``shop.events.card_declined`` carries what its comment says, the
    request: the decline limit counts its session and address, nothing
    else (no owner)."""
    from shop import events

    heard = []

    def listener(sender, **kwargs):
        heard.append(kwargs)

    events.card_declined.connect(listener, dispatch_uid="test.declines.heard")
    try:
        client, cart_id = shopper(mongo_db)
        pay(client, cart_id, DECLINED_CARD)
    finally:
        events.card_declined.disconnect(dispatch_uid="test.declines.heard")

    (announced,) = heard
    assert set(announced) == {"signal", "request"}
    assert announced["request"].path == "/checkout/"
