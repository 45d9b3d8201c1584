"""Recently viewed (item and home pages), the per-day counts and the
conversion funnel on the staff dashboard."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pymongo import monitoring

from activity import kinds, periods
from activity.selectors import funnel, recently_viewed_ids
from activity.services.insight import item_days_count
from activity.services.partitions import activity_write
from activity.services.writer import flush
from activity.tasks import count_item_days
from staff.roles import ADMINISTRATOR, create_staff
from tests.activity.conftest import logged

PASSWORD = "a-long-test-password"


def section(html: str, title: str) -> str:
    return html.split(title, 1)[1].split("</section>", 1)[0]


def test_recently_viewed_lists_the_shoppers_items_last_first(client, catalog):
    for item in ("1", "2", "3", "2"):
        client.get(f"/p/{item}/")
    Client().get("/p/5/")  # someone else
    flush()

    home = client.get("/").content.decode()
    item = client.get("/p/4/").content.decode()

    shown = section(home, "Recently viewed")
    assert shown.index('data-item="2"') < shown.index('data-item="3"')
    assert shown.index('data-item="3"') < shown.index('data-item="1"')
    assert shown.count('data-item="2"') == 1
    assert 'data-item="5"' not in shown
    # The item page leaves out the item itself.
    assert 'data-item="4"' not in section(item, "Recently viewed")


def test_a_new_shopper_sees_no_recently_viewed(client, catalog):
    assert "Recently viewed" not in client.get("/").content.decode()


class Reads(monitoring.CommandListener):
    """The collections the code under test reads (finds and aggregates)."""

    def __init__(self):
        self.collections: list[str] = []

    def started(self, event):
        if event.command_name in ("find", "aggregate"):
            self.collections.append(event.command[event.command_name])

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_a_first_product_page_looks_up_no_cart_and_no_past_views(
    client, catalog, listen
):
    """The page gives a new visitor a token (its view is logged): nothing can
    be filed under it yet, so neither the cart badge nor "Recently viewed"
    asks. The visitor's next page asks for both and shows them."""
    reads = listen(Reads()).collections

    first = client.get("/p/1/")

    assert first.status_code == 200 and first.wsgi_request.session.session_key
    assert "carts" not in reads
    assert not [name for name in reads if periods.parse(name)]
    flush()
    reads.clear()
    second = client.get("/p/2/").content.decode()
    assert "carts" in reads and [name for name in reads if periods.parse(name)]
    assert 'data-item="1"' in section(second, "Recently viewed")


def test_recently_viewed_is_bounded_in_time_and_count(mongo_db):
    now = timezone.now()
    old = now - timedelta(days=15)
    activity_write(
        [kinds.view(user="u", ts=old, item="gone")]
        + [
            kinds.view(user="u", ts=now - timedelta(minutes=k), item=str(k))
            for k in range(9)
        ]
    )

    assert recently_viewed_ids(user="u", now=now) == ["0", "1", "2", "3", "4", "5"]


def test_per_day_counts_feed_the_funnel(mongo_db):
    now = timezone.now()
    today = timezone.localdate(now)
    events = [kinds.view(user=f"u{k}", ts=now, item="1") for k in range(4)]
    events += [kinds.view(user="u", ts=now, item="2")]
    events += [kinds.cart(user="u", ts=now, item="1", sku="1-6-red", qty=3)]
    events += [kinds.cart(user="u", ts=now, item="1", sku="1-6-red", qty=-1)]
    events += [
        kinds.order(order_id="o", user="u", ts=now, number="MQ-1", lines=[
            {"item": "1", "sku": "1-6-red", "qty": 2},
            {"item": "1", "sku": "1-7-red", "qty": 1},
            {"item": "2", "sku": "2-6-black", "qty": 1},
            {"session": "s", "qty": 2},
        ])
    ]  # fmt: skip
    activity_write(events)

    assert count_item_days(now=now) == 2
    assert count_item_days(now=now) == 2  # recounted, never added twice
    assert item_days_count(day=today - timedelta(days=3)) == 0

    shown = funnel(now=now)
    assert (shown.total.view, shown.total.add, shown.total.order) == (5, 1, 2)
    assert [(r.item, r.view, r.add, r.order) for r in shown.items] == [
        ("1", 4, 1, 1),
        ("2", 1, 0, 1),
    ]
    assert (shown.total.add_rate, shown.total.order_rate) == (20, 200)


def test_the_staff_dashboard_shows_the_funnel(db, mongo_db, catalog):
    shopper = Client()
    shopper.get("/p/1/")
    shopper.post("/cart/add/", {"sku": "1-6-red", "quantity": "1"})
    flush()
    count_item_days()
    create_staff(email="admin@example.com", role=ADMINISTRATOR, password=PASSWORD)
    admin = Client()
    assert admin.login(username="admin@example.com", password=PASSWORD)

    html = admin.get(reverse("staff:dashboard")).content.decode()

    shown = section(html, "Conversion, last 7 days")
    assert '<strong data-funnel="view">1</strong>' in shown
    assert '<strong data-funnel="add">1</strong>' in shown
    assert 'data-item="1"' in shown
    assert "<td>Evening Platform Pumps</td>" in shown
    assert len(logged(mongo_db)) == 2


def test_the_funnel_is_staff_only(db, client):
    """It is part of the dashboard: the dashboard's permission guards it."""
    url = reverse("staff:dashboard")
    assert client.get(url).status_code == 302  # to the login page
    get_user_model().objects.create_user("pat", "pat@example.com", PASSWORD)
    assert client.login(username="pat", password=PASSWORD)
    response = client.get(url)
    assert response.status_code == 403
    assert "Conversion" not in response.content.decode()
