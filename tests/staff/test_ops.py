"""The box office and stock pages: what they show and what their actions do
(each audited); refusals are clear and change nothing."""

import html
import re
import uuid
from datetime import timedelta

import pytest
from bson import ObjectId
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from booking.documents import Session
from catalog.selectors.stock import stock_level
from catalog.services.stores import store_save
from catalog.services.summaries import summary_rebuild
from shop.services.carts import cart_add_item
from shop.services.orders import order_cancel
from shop.services.tickets import cart_hold_seats
from staff.roles import BOX_OFFICE, SHOP_MANAGER
from tests.shop.factories import make_product, make_show
from tests.staff.conftest import PASSWORD, ROLE_EMAILS, pay


def login(role) -> Client:
    client = Client()
    assert client.login(username=ROLE_EMAILS[role], password=PASSWORD)
    return client


@pytest.fixture
def box(staff_users):
    return login(BOX_OFFICE)


@pytest.fixture
def manager(staff_users):
    return login(SHOP_MANAGER)


def _local(moment) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M")


def _schedule(client, theater, start, hours=2, show="Twelfth Night", key=None):
    """The schedule form sent; ``key``: the one its page drew (a new page's
    when not given)."""
    return client.post(
        reverse("staff:schedule"),
        {
            "theater": theater,
            "show": show,
            "start": _local(start),
            "end": _local(start + timedelta(hours=hours)),
            "price_stalls": "42.50",
            "price_circle": "18",
            "key": key or uuid.uuid4().hex,
        },
    )


# --- Box office -------------------------------------------------------------------


def test_scheduling_puts_a_performance_on_sale_and_refuses_overlaps_and_the_past(
    box, show, mongo_db
):
    theater = str(Session.objects.get(id=show).theater_id)
    taken = Session.objects.get(id=show)
    form = box.get(reverse("staff:schedule"), {"theater": theater}).content.decode()
    assert "Price, Stalls (£)" in form and "Price, Circle (£)" in form

    start = timezone.now() + timedelta(days=3)
    response = _schedule(box, theater, start)
    assert response.status_code == 302
    new = mongo_db.sessions.find_one({"name": "Twelfth Night"})
    assert response["Location"] == reverse("staff:seat_map", args=[str(new["_id"])])
    assert str(new["prices"]["stalls"]) == "42.50"
    entry = mongo_db.audit.find_one({"action": "performance scheduled"})
    assert entry["actor"] == "staff:box@example.com"
    assert entry["object_id"] == str(new["_id"])

    clash = _schedule(box, theater, taken.start + timedelta(minutes=30))
    assert clash.status_code == 409
    assert "The theater is taken then: Hamlet plays" in clash.content.decode()
    past = _schedule(box, theater, timezone.now() - timedelta(days=1))
    assert past.status_code == 400
    assert "cannot start in the past" in past.content.decode()
    backwards = box.post(
        reverse("staff:schedule"),
        {"theater": theater, "show": "X", "start": _local(start), "end": _local(start)},
    )
    assert backwards.status_code == 400
    assert "must end after it starts" in backwards.content.decode()
    a_year = _schedule(box, theater, start + timedelta(days=30), hours=24 * 365)
    assert a_year.status_code == 400
    assert "at most 24 hours" in a_year.content.decode()
    assert mongo_db.sessions.count_documents({}) == 2  # nothing else was created


def test_a_schedule_form_sent_twice_schedules_once(box, show, mongo_db):
    """A double click, a retry, the Back button: the page's key makes the
    second send answer the first's performance; the form edited after
    going Back is refused, not answered with a performance it does not
    describe."""
    theater = str(Session.objects.get(id=show).theater_id)
    page = box.get(reverse("staff:schedule"), {"theater": theater}).content.decode()
    key = re.search(r'name="key" value="([0-9a-f]{32})"', page).group(1)
    start = timezone.now() + timedelta(days=4)

    first = _schedule(box, theater, start, key=key)
    again = _schedule(box, theater, start, key=key)

    assert first.status_code == again.status_code == 302
    assert again["Location"] == first["Location"]
    assert mongo_db.sessions.count_documents({"name": "Twelfth Night"}) == 1
    assert mongo_db.audit.count_documents({"action": "performance scheduled"}) == 1
    edited = _schedule(box, theater, start + timedelta(days=1), key=key)
    assert edited.status_code == 400
    assert "has scheduled Twelfth Night already" in edited.content.decode()
    assert mongo_db.sessions.count_documents({"name": "Twelfth Night"}) == 1


def test_choosing_another_theater_keeps_what_was_typed(box, show):
    theater = str(Session.objects.get(id=show).theater_id)
    page = box.post(
        reverse("staff:schedule"),
        {
            "theater": theater,
            "choose": "1",
            "show": "Medea",
            "start": "2031-05-02T19:30",
        },
    ).content.decode()
    assert 'value="Medea"' in page and 'value="2031-05-02T19:30"' in page


def test_the_performance_list_counts_seats_revenue_and_filters(box, show, product):
    order = pay("anon:ann", session=show, seats=[(0, 0), (0, 1)])
    cart_hold_seats(
        owner="anon:bob", session_id=show, seats=((1, 1),), now=timezone.now()
    )
    page = box.get(reverse("staff:performances")).content.decode()
    row = re.search(r"<tr>\s*<td><a href=[^>]+>Hamlet</a>.*?</tr>", page, re.S).group(0)
    cells = re.findall(r'<td class="money">([^<]+)</td>', row)
    assert cells[:4] == ["2", "1", "0", "14"]  # sold, held, blocked, free of 17
    assert f"£{order.total}" in row
    assert "18% sold or held" in row and "0 of 2 in" in row

    assert (
        "Hamlet"
        not in box.get(
            reverse("staff:performances"), {"show": "macbeth"}
        ).content.decode()
    )
    assert (
        "Hamlet"
        in box.get(reverse("staff:performances"), {"show": "HAMLET"}).content.decode()
    )
    assert (
        "Hamlet"
        not in box.get(reverse("staff:performances"), {"when": "past"}).content.decode()
    )


def test_the_staff_seat_map_shows_each_seat_and_releases_a_carts_hold(
    box, show, mongo_db
):
    order = pay("anon:ann", session=show, seats=[(0, 0)])
    cart_hold_seats(
        owner="anon:bob", session_id=show, seats=((1, 1),), now=timezone.now()
    )
    held_by = mongo_db.carts.find_one({"owner": "anon:bob"})["_id"]
    page = box.get(reverse("staff:seat_map", args=[show])).content.decode()

    assert f"Row A, seat 1, sold, order {order.number}" in page
    assert f"Row B, seat 1, held by cart {held_by} until" in page
    assert 'aria-label="Row A, seat 2, free"' in page
    assert "Free: 15" in page and "Held: 1" in page and "Sold: 1" in page

    release = reverse("staff:seat_map_release", args=[show, held_by])
    refused = box.post(release, {"reason": "   "})
    assert refused.status_code == 400  # refused, kept
    # The map's own form starts empty: a release's reason is not a block's.
    assert 'id="block-reason" name="reason" maxlength="200" value=""' in (
        refused.content.decode()
    )
    assert mongo_db.carts.find_one({"_id": held_by})["state"] == "active"
    box.post(release, {"reason": "phone call: customer left"})
    assert mongo_db.carts.find_one({"_id": held_by})["state"] == "expired"
    page = box.get(reverse("staff:seat_map", args=[show])).content.decode()
    assert 'aria-label="Row B, seat 1, free"' in page
    entry = mongo_db.audit.find_one({"action": "staff released cart"})
    assert entry["reason"] == "phone call: customer left"


def test_a_seat_map_releases_only_a_cart_holding_seats_of_its_performance(
    box, show, mongo_db
):
    macbeth = make_show(show="Macbeth", hall="Other Hall")
    cart_hold_seats(owner="anon:bob", session_id=macbeth, seats=((0, 0),))
    elsewhere = mongo_db.carts.find_one({"owner": "anon:bob"})["_id"]
    reason = {"reason": "stale page"}

    # From Hamlet's map, a cart that holds only Macbeth's seats: refused.
    wrong_map = reverse("staff:seat_map_release", args=[show, elsewhere])
    answer = box.post(wrong_map, reason, follow=True)
    assert "That cart holds no seat of this performance now." in answer.content.decode()
    assert mongo_db.carts.find_one({"_id": elsewhere})["state"] == "active"
    assert mongo_db.audit.count_documents({"action": "staff released cart"}) == 0

    # Not even a cart id (an edited URL): the same refusal.
    not_a_cart = reverse("staff:seat_map_release", args=[show, "not a cart"])
    answer = box.post(not_a_cart, reason, follow=True)
    assert "That cart holds no seat of this performance now." in answer.content.decode()

    # A performance that does not exist: nothing to release from.
    unknown = reverse("staff:seat_map_release", args=[str(ObjectId()), elsewhere])
    assert box.post(unknown, reason).status_code == 404
    undo = reverse("staff:check_in_undo", args=[str(ObjectId())])
    assert box.post(undo, {"code": "X" * 12, "reason": "r"}).status_code == 404
    assert mongo_db.carts.find_one({"_id": elsewhere})["state"] == "active"


def test_check_in_admits_once_counts_refuses_and_undoes(box, show, mongo_db):
    macbeth = make_show(show="Macbeth", hall="Other Hall")
    other = pay("anon:x", session=macbeth, seats=[(0, 0)])
    order = pay("anon:ann", session=show, seats=[(0, 0), (0, 1)])
    refunded = pay("anon:bob", session=show, seats=[(0, 2)])
    order_cancel(number=refunded.number, staff=True)
    url = reverse("staff:check_in", args=[show])

    first = box.post(url, {"code": order.codes[0].lower()})
    assert first.status_code == 200
    html = first.content.decode()
    assert "Admit" in html and "Row A, seat 1" in html and "Ada Lovelace" in html
    # The seat map says it as well as showing it green.
    seats = box.get(reverse("staff:seat_map", args=[show])).content.decode()
    assert f'aria-label="Row A, seat 1, sold, order {order.number}, admitted"' in seats
    assert f'aria-label="Row A, seat 2, sold, order {order.number}"' in seats
    assert "Admitted: 1" in seats
    assert re.search(r"Admitted <strong>1</strong> of <strong>2</strong>", html)

    again = box.post(url, {"code": order.codes[0]}, HTTP_HX_REQUEST="true")
    assert again.status_code == 200  # htmx swaps no 4xx
    assert 'id="scan"' in again.content.decode()
    assert "<html" not in again.content.decode()  # the partial only
    assert re.search(
        r"Already admitted at \d\d:\d\d by box@example.com", again.content.decode()
    )

    for code, status, words in [
        ("ZZZZ-ZZZZ-ZZZZ", 404, "No ticket has this code"),
        (other.codes[0], 409, "Wrong performance: this ticket is for Macbeth"),
        (refunded.codes[0], 409, "Refunded"),
        ("", 400, "Type or scan a ticket code"),
    ]:
        refused = box.post(url, {"code": code})
        assert refused.status_code == status
        assert words in refused.content.decode()
    counter = box.get(reverse("staff:check_in_counter", args=[show])).content.decode()
    assert re.search(r"Admitted <strong>1</strong> of <strong>2</strong>", counter)

    undo = box.post(
        reverse("staff:check_in_undo", args=[show]), {"code": order.codes[0]}
    )
    assert undo.status_code == 302
    counter = box.get(reverse("staff:check_in_counter", args=[show])).content.decode()
    assert re.search(r"Admitted <strong>0</strong> of <strong>2</strong>", counter)
    actions = [e["action"] for e in mongo_db.audit.find({"object_kind": "session"})]
    assert actions == ["ticket admitted", "admission undone"]
    assert box.post(url, {"code": order.codes[0]}).status_code == 200  # admits again


def test_a_missing_performance_is_404(box):
    missing = str(ObjectId())
    assert box.get(reverse("staff:seat_map", args=[missing])).status_code == 404
    assert box.get(reverse("staff:check_in", args=[missing])).status_code == 404
    assert box.get(reverse("staff:seat_map", args=["nope"])).status_code == 404


# --- Stock ------------------------------------------------------------------------


def test_receive_adjust_and_refuse_a_negative_free_stock(manager, product, mongo_db):
    sku_page = reverse("staff:stock_sku", args=[product])
    title = re.search(
        r"<title>(.*?)</title>", manager.get(sku_page).content.decode(), re.S
    )
    assert title.group(1) == f"{product} · Stock · Staff · Marquee"
    cart_add_item(owner="anon:a", sku=product, quantity=45, now=timezone.now())
    assert stock_level(sku=product).free == 5

    response = manager.post(
        reverse("staff:stock_adjust", args=[product]),
        {"kind": "damaged", "delta": "-6", "note": "flood", "key": key()},
        follow=True,
    )
    assert "only 5 units are free" in response.content.decode()
    assert stock_level(sku=product).free == 5  # nothing changed

    manager.post(
        reverse("staff:stock_adjust", args=[product]),
        {"kind": "damaged", "delta": "-2", "note": "scuffed", "key": key()},
    )
    manager.post(
        reverse("staff:stock_receive", args=[product]),
        {"quantity": "20", "note": "delivery 7", "key": key()},
    )
    level = stock_level(sku=product)
    assert (level.free, level.held, level.received) == (23, 45, 68)
    page = manager.get(sku_page).content.decode()
    assert "delivery 7" in page and "scuffed" in page and "(refused)" in page
    assert "by staff:shop@example.com" in page  # the SKU's audit trail
    actions = [e["action"] for e in mongo_db.audit.find({"object_kind": "sku"})]
    assert actions == ["stock adjusted (damaged)", "stock received"]
    received = mongo_db.audit.find_one({"action": "stock received"})
    assert (received["before"], received["after"]) == ("3 free", "23 free")

    bad = manager.post(
        reverse("staff:stock_adjust", args=[product]),
        {"kind": "damaged", "delta": "4", "note": "?", "key": key()},
        follow=True,
    )
    assert "Damaged units leave stock" in bad.content.decode()


def test_low_stock_page_and_dashboard_follow_thresholds_and_receipts(
    manager, product, settings
):
    settings.LOW_STOCK_THRESHOLD = 5
    manager.post(reverse("staff:stock_threshold", args=[product]), {"threshold": "60"})
    low = manager.get(reverse("staff:low_stock")).content.decode()
    assert f">{product}</a>" in low
    dashboard = manager.get(reverse("staff:dashboard")).content.decode()
    assert f"SKU {product}: 50 left (under 60)" in dashboard

    manager.post(
        reverse("staff:stock_receive", args=[product]),
        {"quantity": "15", "key": key()},
    )
    assert (
        "No SKU is low on stock"
        in manager.get(reverse("staff:low_stock")).content.decode()
    )
    dashboard = manager.get(reverse("staff:dashboard")).content.decode()
    assert f"SKU {product}:" not in dashboard


def test_stock_search_and_a_stores_count(manager, product, mongo_db):
    store_save(store_id="s1", name="Soho", group="g", lng=-0.13, lat=51.51)
    manager.post(
        reverse("staff:stock_store", args=[product]), {"store": "s1", "quantity": "9"}
    )
    summary_rebuild(item_id=f"item-{product}")
    page = manager.get(reverse("staff:stock"), {"q": "sneaker", "store": "s1"})
    html = page.content.decode()
    assert f">{product}</a>" in html and "JC Sneaker" in html
    assert re.search(r'<td class="money">9</td>', html)
    assert mongo_db.audit.find_one({"action": "store stock set"})["details"] == {
        "store": "s1"
    }
    none = manager.get(reverse("staff:stock"), {"q": "umbrella"}).content.decode()
    assert "No SKU matches" in none


def test_the_stock_list_says_when_there_is_more_and_shows_bad_filters(
    manager, mongo_db, monkeypatch, settings
):
    from catalog.selectors import stock_report
    from staff import views_stock

    for n in range(5):
        make_product(sku=f"TEE-{n}", stock=1)
    monkeypatch.setattr(stock_report, "PAGE", 2)
    first = manager.get(reverse("staff:stock"), {"q": "TEE"}).content.decode()
    assert re.findall(r">(TEE-\d)</a>", first) == ["TEE-0", "TEE-1"]
    following = re.search(r'rel="next" href="\?([^"]+)"', first).group(1)
    second = manager.get(reverse("staff:stock") + "?" + html.unescape(following))
    assert re.findall(r">(TEE-\d)</a>", second.content.decode()) == ["TEE-2", "TEE-3"]

    bad = manager.get(reverse("staff:stock"), {"store": "nowhere"})
    assert bad.status_code == 400
    assert "There is no such store" in bad.content.decode()
    long = manager.get(reverse("staff:stock"), {"q": "x" * 121})
    assert long.status_code == 400
    assert "at most 120 characters" in long.content.decode()

    settings.LOW_STOCK_THRESHOLD = 5
    monkeypatch.setattr(views_stock, "LOW_SHOWN", 3)
    low = manager.get(reverse("staff:low_stock")).content.decode()
    assert len(re.findall(r">(TEE-\d)</a>", low)) == 3
    assert 'id="more-low"' in low


def test_a_title_search_naming_too_many_products_says_so(
    manager, mongo_db, monkeypatch
):
    """A title search reads at most TITLED_MAX items; past that the page says
    it is cut short, and the products it lists are the first by item id."""
    from catalog.selectors import stock_report

    for n in range(3):
        make_product(sku=f"TEE-{n}", title="Cotton tee", stock=1)
        summary_rebuild(item_id=f"item-TEE-{n}")
    monkeypatch.setattr(stock_report, "TITLED_MAX", 2)

    cut = manager.get(reverse("staff:stock"), {"q": "cotton"}).content.decode()
    assert re.findall(r">(TEE-\d)</a>", cut) == ["TEE-0", "TEE-1"]
    assert 'id="titles-capped"' in cut and "more than 2 products" in cut

    whole = manager.get(reverse("staff:stock"), {"q": "TEE-2"}).content.decode()
    assert re.findall(r">(TEE-\d)</a>", whole) == ["TEE-2"]
    assert 'id="titles-capped"' not in whole


def test_an_unknown_sku_is_not_received_and_has_no_page(manager, mongo_db):
    response = manager.post(
        reverse("staff:stock_receive", args=["NO-SUCH"]),
        {"quantity": "5", "key": key()},
    )
    assert response.status_code == 404
    assert mongo_db.inventories.count_documents({"_id": "NO-SUCH"}) == 0
    assert manager.get(reverse("staff:stock_sku", args=["NO-SUCH"])).status_code == 404
    # A bad form for it too: a 404 at once, not a redirect to one.
    bad = manager.post(
        reverse("staff:stock_receive", args=["NO-SUCH"]),
        {"quantity": "x", "key": key()},
    )
    assert bad.status_code == 404


def test_a_stores_stock_is_counted_not_adjusted_through_the_skus_forms(
    manager, product, mongo_db
):
    store_save(store_id="s1", name="Soho", group="g", lng=-0.13, lat=51.51)
    manager.post(
        reverse("staff:stock_store", args=[product]), {"store": "s1", "quantity": "9"}
    )
    location = f"{product}@s1"  # the store's stock location: not a SKU
    ledger = mongo_db.stock_ledger.count_documents({})

    adjust = reverse("staff:stock_adjust", args=[location])
    write_off = {"kind": "damaged", "delta": "-5", "note": "x", "key": key()}
    threshold = reverse("staff:stock_threshold", args=[location])

    assert manager.post(adjust, write_off).status_code == 404
    assert manager.post(threshold, {"threshold": "3"}).status_code == 404
    assert mongo_db.inventories.find_one({"_id": location})["quantity"] == 9
    assert mongo_db.stock_ledger.count_documents({}) == ledger
    assert mongo_db.stock_thresholds.count_documents({}) == 0
    assert mongo_db.audit.count_documents({"object_id": location}) == 0


def key() -> str:
    """A stock form's request key, as its page draws a new one each time."""
    return uuid.uuid4().hex


def form_key(page: str, action: str) -> str:
    """The request key the page's form for ``action`` carries."""
    form = re.search(rf'action="{re.escape(action)}".*?</form>', page, re.S).group(0)
    return re.search(r'name="key" value="([0-9a-f]{32})"', form).group(1)


def test_a_stock_form_sent_twice_receives_once_and_is_audited_once(
    manager, product, mongo_db
):
    page = manager.get(reverse("staff:stock_sku", args=[product])).content.decode()
    receive = reverse("staff:stock_receive", args=[product])
    adjust = reverse("staff:stock_adjust", args=[product])
    sent = {"quantity": "20", "note": "delivery 8", "key": form_key(page, receive)}
    write_off = {"kind": "damaged", "delta": "-2", "note": "torn"}
    write_off["key"] = form_key(page, adjust)
    assert sent["key"] != write_off["key"]  # one key per form

    manager.post(receive, sent)
    again = manager.post(receive, sent, follow=True).content.decode()
    manager.post(adjust, write_off)
    manager.post(adjust, write_off)

    assert "the form was sent twice and counted once" in again
    level = stock_level(sku=product)
    assert (level.free, level.received) == (68, 68)
    assert mongo_db.stock_ledger.count_documents({"sku": product}) == 3
    actions = [e["action"] for e in mongo_db.audit.find({"object_kind": "sku"})]
    assert sorted(actions) == ["stock adjusted (damaged)", "stock received"]
    # The page drawn after the receipt carries a new key: a second delivery.
    page = manager.get(reverse("staff:stock_sku", args=[product])).content.decode()
    assert form_key(page, receive) != sent["key"]
    manager.post(receive, {**sent, "key": form_key(page, receive)})
    assert stock_level(sku=product).received == 88


def test_a_stock_form_without_its_key_or_reused_for_another_amount_changes_nothing(
    manager, product, mongo_db
):
    receive = reverse("staff:stock_receive", args=[product])
    stale = manager.post(receive, {"quantity": "5"}, follow=True).content.decode()
    assert "This form is out of date: reload the page" in stale
    used = key()
    manager.post(receive, {"quantity": "5", "key": used})
    other = manager.post(receive, {"quantity": "7", "key": used}, follow=True)
    assert "This form was already used for ledger entry 2" in other.content.decode()
    assert stock_level(sku=product).received == 55
    assert mongo_db.audit.count_documents({"action": "stock received"}) == 1


def test_a_receipt_whose_first_sending_died_is_audited_by_its_repeat(
    manager, product, mongo_db
):
    """The first sending wrote its ledger entry and died before applying or
    auditing it; the form sent again finishes it and audits it, once."""
    used = key()
    mongo_db.stock_ledger.insert_one(
        {
            "_id": f"{product}|{used}",
            "sku": product,
            "seq": 2,
            "quantity": 4,
            "kind": "receipt",
            "note": "delivery 9",
            "at": timezone.now(),
            "pending": True,
        }
    )
    receive = reverse("staff:stock_receive", args=[product])
    sent = {"quantity": "4", "note": "delivery 9", "key": used}

    again = manager.post(receive, sent, follow=True).content.decode()
    manager.post(receive, sent)

    assert "counted once" in again
    assert stock_level(sku=product).received == 54
    (audited,) = mongo_db.audit.find({"action": "stock received"})
    assert (audited["details"]["ledger"], audited["after"]) == (2, "54 free")
    assert audited["actor"] == "staff:shop@example.com"
    assert audited["reason"] == "delivery 9"


def test_an_orders_page_says_when_and_by_whom_each_ticket_was_admitted(box, show):
    order = pay("anon:ann", session=show, seats=[(0, 0), (0, 1)])
    box.post(reverse("staff:check_in", args=[show]), {"code": order.codes[1]})
    page = box.get(reverse("staff:order", args=[order.number])).content.decode()
    assert page.count("by box@example.com</td>") == 1


def test_a_nearly_full_performance_links_to_its_seat_map(box, show, mongo_db):
    mongo_db.sessions.update_one(
        {"_id": ObjectId(show)},
        {"$set": {"sold": 16, "seatsAvailable": 1}},  # the session's counters
    )
    page = box.get(reverse("staff:dashboard")).content.decode()
    seat_map = reverse("staff:seat_map", args=[show])
    assert re.search(rf'<a href="{seat_map}">Hamlet, [^<]*: 94% sold or held</a>', page)


def test_staff_block_seats_that_shoppers_then_cannot_take(box, show, mongo_db):
    block = reverse("staff:seat_map_block", args=[show])
    no_reason = box.post(block, {"seat": ["1-1", "1-2"]})
    assert no_reason.status_code == 400
    assert "Give a reason to block seats." in no_reason.content.decode()
    assert re.search(r'value="1-1"[^>]* checked', no_reason.content.decode())
    assert mongo_db.sessions.find_one({"_id": ObjectId(show)})["blocked"] == 0
    box.post(block, {"seat": ["1-1", "1-2"], "reason": "House seats"})

    page = box.get(reverse("staff:seat_map", args=[show])).content.decode()
    assert 'aria-label="Row B, seat 2, blocked: House seats"' in page
    assert "Blocked: 2" in page and "Free: 15" in page
    entry = mongo_db.audit.find_one({"action": "seats blocked"})
    assert entry["reason"] == "House seats" and entry["object_id"] == show
    assert entry["actor"] == "staff:box@example.com"

    shopper = Client()
    seats = shopper.get(reverse("shop:session", args=[show])).content.decode()
    button = re.search(r'<button id="seat-1-1"[^>]*>', seats).group(0)
    assert "seat-taken" in button and 'aria-disabled="true"' in button
    hold = reverse("shop:hold_seats", args=[show])
    refused = shopper.post(hold, {"seat": "1-1"})
    assert refused.status_code == 409
    assert mongo_db.sessions.find_one({"_id": ObjectId(show)})["held"] == 0

    box.post(reverse("staff:seat_map_unblock", args=[show]), {"seat": "1-1"})
    assert shopper.post(hold, {"seat": "1-1"}).status_code in (200, 302)
    doc = mongo_db.sessions.find_one({"_id": ObjectId(show)})
    assert (doc["blocked"], doc["held"]) == (1, 1)
    assert mongo_db.audit.count_documents({"action": "seats unblocked"}) == 1


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01"])
def test_a_performance_day_off_the_calendar_gets_a_clear_400(box, day):
    response = box.get(reverse("staff:performances"), {"day": day})
    assert response.status_code == 400
    assert "Choose a date between" in response.content.decode()


def test_a_performance_cannot_be_scheduled_off_the_calendar(box, show, mongo_db):
    theater = str(Session.objects.get(id=show).theater_id)
    far = box.post(
        reverse("staff:schedule"),
        {
            "theater": theater,
            "show": "X",
            "start": "9999-12-31T22:00",
            "end": "9999-12-31T23:00",
        },
    )
    assert far.status_code == 400
    assert "Choose a date between" in far.content.decode()
    assert mongo_db.sessions.count_documents({}) == 1


def test_too_many_seats_are_refused_whole_never_cut_short():
    from django.http import QueryDict

    from booking.checks import MAX_SEATS_PER_REQUEST
    from staff.forms import SeatsForm

    data = QueryDict(mutable=True)
    data.setlist(
        "seat", [f"{n // 100}-{n % 100}" for n in range(MAX_SEATS_PER_REQUEST + 1)]
    )
    data["reason"] = "House seats"
    form = SeatsForm(data, need_reason=True)
    assert not form.is_valid()
    assert f"at most {MAX_SEATS_PER_REQUEST} seats" in str(form.errors)
    data.setlist(
        "seat", [f"{n // 100}-{n % 100}" for n in range(MAX_SEATS_PER_REQUEST)]
    )
    form = SeatsForm(data, need_reason=True)
    assert form.is_valid() and len(form.cleaned_data["seats"]) == MAX_SEATS_PER_REQUEST


@pytest.mark.parametrize("key", ["\u00b2-3", "1-\u0663", "1", "-1-2"])
def test_a_seat_key_of_other_digits_is_refused_not_a_crash(box, show, key):
    block = reverse("staff:seat_map_block", args=[show])
    response = box.post(block, {"seat": [key], "reason": "House seats"})
    assert response.status_code == 400
    assert "is not a seat of this map" in response.content.decode()
    assert 'value="House seats"' in response.content.decode()


@pytest.mark.parametrize(
    "query, message",
    [
        ({"show": "x" * 161}, "at most 160 characters"),
        ({"theater": "bogus"}, "There is no such theater"),
        ({"when": "bogus"}, "Select a valid choice"),
    ],
)
def test_a_bad_performance_filter_says_what_is_wrong(box, show, query, message):
    response = box.get(reverse("staff:performances"), query)
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert message in page
    assert "performances match" not in page


def test_a_refused_stock_form_names_the_field_it_is_about(manager, product, mongo_db):
    from django.contrib.messages import get_messages

    response = manager.post(
        reverse("staff:stock_adjust", args=[product]),
        {"kind": "correction", "delta": "", "note": "count", "key": key()},
    )

    (said,) = [str(m) for m in get_messages(response.wsgi_request)]
    assert said == "Change in units (negative: fewer): This field is required."
    assert mongo_db.stock_ledger.count_documents({"kind": "correction"}) == 0


def test_a_threshold_is_audited_when_it_changes_not_when_sent_again(
    manager, product, mongo_db
):
    threshold = reverse("staff:stock_threshold", args=[product])

    manager.post(threshold, {"threshold": ""})  # the default already
    manager.post(threshold, {"threshold": "60"})
    manager.post(threshold, {"threshold": "60"})  # the same again
    manager.post(threshold, {"threshold": ""})  # back to the default

    entries = mongo_db.audit.find({"action": "low-stock threshold set"})
    assert [e["after"] for e in entries.sort([("at", 1), ("_id", 1)])] == [
        "60",
        "default",
    ]
