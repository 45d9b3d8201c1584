"""Each kind of activity is logged by the page that does it, with its
fields and nothing sensitive."""

import pytest
from django.contrib.auth import get_user_model

from activity import kinds
from activity.services.partitions import INDEXES
from shop.identity import SESSION_KEY
from shop.services import settle
from tests.activity.conftest import logged
from tests.booking.factories import make_session, make_theater
from tests.catalog.conftest import STORES
from tests.shop.test_views import checkout_data

HTMX = {"HTTP_HX_REQUEST": "true"}


def shopper_key(client) -> str:
    return kinds.shopper(f"anon:{client.session[SESSION_KEY]}")


@pytest.fixture
def leeds(mongo_db):
    from catalog.documents import Address
    from catalog.services.stores import store_save

    store_id, name, group, lng, lat, zip_code, city = STORES[0]
    store_save(
        store_id=store_id,
        name=name,
        group=group,
        lng=lng,
        lat=lat,
        region="north",
        address=Address(line1="1 High St", city=city, zip=zip_code, country="GB"),
    )
    return store_id


def test_an_item_page_logs_a_view_with_the_shopper_sku_and_store(
    client, mongo_db, catalog, leeds
):
    client.post("/store/", {"store_id": leeds, "next": "/"})
    client.post("/location/", {"lat": "53.79971", "lng": "-1.54372", "next": "/"})

    assert client.get("/p/2/?sku=2-8-tan").status_code == 200

    [view] = logged(mongo_db)
    assert view["type"] == kinds.VIEW
    assert view["user"] == shopper_key(client)
    assert (view["item"], view["sku"], view["store"]) == ("2", "2-8-tan", "leeds")
    assert view["geo"] == [-1.5, 53.8]  # about 10 km, never the exact spot
    assert set(view) == {"_id", "type", "user", "ts", "item", "sku", "store", "geo"}


def test_an_htmx_variant_swap_is_not_a_second_view(client, mongo_db, catalog):
    client.get("/p/2/")
    client.get("/p/2/?sku=2-8-tan", **HTMX)

    assert [e["type"] for e in logged(mongo_db)] == [kinds.VIEW]


def test_a_search_logs_its_text_and_result_count(client, mongo_db, catalog):
    client.get("/p/1/")  # the shopper is known from here on

    client.get("/", {"q": "  Pumps "})
    client.get("/")  # browsing without a search logs nothing

    view, search = logged(mongo_db)
    assert search["type"] == kinds.SEARCH
    assert (search["q"], search["n"]) == ("Pumps", 2)
    assert search["user"] == view["user"]
    assert set(search) == {"_id", "type", "user", "ts", "q", "n"}


def test_cart_adds_and_removes_log_item_sku_and_units(client, mongo_db, catalog):
    client.post("/cart/add/", {"sku": "4-8-red", "quantity": "2"})
    client.post("/cart/update/", {"sku": "4-8-red", "quantity": "5"})
    client.post("/cart/update/", {"sku": "4-8-red", "quantity": "1"})
    client.post("/cart/remove/", {"sku": "4-8-red"})
    client.post("/cart/add/", {"sku": "4-8-red", "quantity": "0"})  # refused

    found = logged(mongo_db)
    assert [(e["type"], e["item"], e["sku"], e["qty"]) for e in found] == [
        (kinds.CART_ADD, "4", "4-8-red", 2),
        (kinds.CART_ADD, "4", "4-8-red", 3),
        (kinds.CART_REMOVE, "4", "4-8-red", 4),
        (kinds.CART_REMOVE, "4", "4-8-red", 1),
    ]
    assert {e["user"] for e in found} == {shopper_key(client)}
    assert set(found[0]) == {"_id", "type", "user", "ts", "item", "sku", "qty"}


def test_seat_holds_and_releases_log_the_performance_and_seats(client, mongo_db):
    session_id = make_session(make_theater())

    client.post(f"/cart/tickets/{session_id}/hold/", {"seat": ["0-0", "0-1"]})
    client.post(f"/cart/tickets/{session_id}/release/", {"seat": "0-1"})
    client.post(f"/cart/tickets/{session_id}/hold/", {"seat": "0-0"})  # refused

    hold, release = logged(mongo_db)
    assert (hold["type"], hold["session"], len(hold["seats"])) == (
        kinds.SEAT_HOLD,
        session_id,
        2,
    )
    assert release["type"] == kinds.SEAT_RELEASE
    assert release["seats"] == [hold["seats"][1]]
    assert hold["user"] == release["user"] == shopper_key(client)
    assert set(hold) == {"_id", "type", "user", "ts", "session", "seats"}


def test_a_paid_order_logs_its_lines_once_and_nothing_sensitive(
    client, mongo_db, catalog
):
    client.post("/cart/add/", {"sku": "1-6-red", "quantity": "2"})
    client.post("/cart/add/", {"sku": "1-7-red", "quantity": "1"})
    client.post("/cart/add/", {"sku": "5-9-tan", "quantity": "1"})
    cart_id = mongo_db.carts.find_one()["_id"]
    assert client.post("/checkout/", checkout_data(cart_id)).status_code == 302
    order = mongo_db.orders.find_one()
    # The reconciler finishing the same checkout announces it again.
    settle.later(order)

    [paid] = logged(mongo_db, type=kinds.ORDER)
    assert paid["_id"] == f"order:{order['_id']}"
    assert paid["order"] == order["number"]
    assert paid["ts"] == order["paid_at"]
    assert paid["user"] == shopper_key(client)
    assert sorted(paid["lines"], key=lambda x: x["sku"]) == [
        {"item": "1", "sku": "1-6-red", "qty": 2},
        {"item": "1", "sku": "1-7-red", "qty": 1},
        {"item": "5", "sku": "5-9-tan", "qty": 1},
    ]
    assert paid["items"] == ["1", "5"]
    everything = repr(logged(mongo_db))
    token = client.session[SESSION_KEY]
    for secret in ("ada@example.com", "Lovelace", "4242", "SW1Y", token):
        assert secret not in everything


def test_the_first_write_of_a_period_creates_it_with_its_indexes(
    client, mongo_db, catalog
):
    client.get("/p/3/")
    [view] = logged(mongo_db)

    [name] = [n for n in mongo_db.list_collection_names() if n.startswith("activity_w")]
    keys = [info["key"] for info in mongo_db[name].index_information().values()]
    for index in INDEXES:
        assert index in keys


def test_a_users_activity_goes_with_the_account(client, db, mongo_db, catalog):
    user = get_user_model().objects.create_user("kim", "kim@example.com", "pw-long-1")
    other = get_user_model().objects.create_user("lee", "lee@example.com", "pw-long-2")
    client.force_login(user)
    client.get("/p/1/")
    client.post("/cart/add/", {"sku": "1-6-red", "quantity": "1"})
    client.force_login(other)
    client.get("/p/2/")
    users = {e["user"] for e in logged(mongo_db)}
    assert users == {f"user:{user.pk}", f"user:{other.pk}"}

    user.delete()

    assert {e["user"] for e in logged(mongo_db)} == {f"user:{other.pk}"}


def test_removing_seats_from_the_cart_page_logs_a_release(client, mongo_db):
    session_id = make_session(make_theater())
    client.post(f"/cart/tickets/{session_id}/hold/", {"seat": ["0-0", "0-1"]})

    client.post("/cart/tickets/remove/", {"session": session_id})
    client.post("/cart/tickets/remove/", {"session": session_id})  # none left

    hold, release = logged(mongo_db)
    assert release["type"] == kinds.SEAT_RELEASE
    assert sorted(release["seats"]) == sorted(hold["seats"])
