"""The staff pages: search, filters, paging, refund, release, jobs, audit."""

import re
from datetime import timedelta

import pytest
from bson import ObjectId
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from shop.documents import EXPIRED, PAID, REFUNDED
from shop.services.carts import cart_add_item
from shop.services.expiry import carts_expire
from staff.roles import ADMINISTRATOR, BOX_OFFICE, SHOP_MANAGER
from staff.selectors.counters import counter_problems
from staff.selectors.orders import order_search
from tests.staff.conftest import PASSWORD, ROLE_EMAILS, pay


def login(role) -> Client:
    client = Client()
    assert client.login(username=ROLE_EMAILS[role], password=PASSWORD)
    return client


@pytest.fixture
def admin(staff_users):
    return login(ADMINISTRATOR)


def test_the_dashboard_shows_the_counters_charts_and_recent_activity(
    admin, product, show
):
    order = pay("anon:ann", sku=product, session=show, seats=[(0, 0)])
    cart_add_item(owner="anon:live", sku=product, quantity=2, now=timezone.now())

    page = admin.get(reverse("staff:dashboard")).content.decode()

    assert page.count('role="img"') == 5  # five charts, each an accessible SVG
    assert page.count("<desc id=") == 5 and page.count("Data table:") == 5
    assert f"£{order.total}" in page  # revenue today
    assert re.search(r"<dt>Units held</dt><dd>2</dd>", page)
    assert "Hamlet" in page and "JC Sneaker" in page  # top products
    assert f">{order.number}</a>" in page  # recent activity
    assert "order paid" in page


def test_needs_attention_lists_low_stock_and_full_performances(admin, mongo_db, show):
    from tests.shop.factories import make_product

    make_product(sku="RARE-1", title="Rare", stock=2)
    # 16 of 17 seats sold: the session's counters as checkouts leave them.
    mongo_db.sessions.update_one(
        {"_id": ObjectId(show)}, {"$set": {"seatsAvailable": 1, "sold": 16}}
    )
    page = admin.get(reverse("staff:dashboard")).content.decode()
    assert "SKU RARE-1: 2 left" in page
    assert "Hamlet" in page and "94% sold or held" in page


def test_search_finds_an_order_by_number_email_and_ticket_code(admin, product, show):
    goods = pay("anon:ann", sku=product)
    tickets = pay("anon:bob", session=show, seats=[(0, 0)])
    code = tickets.codes[0]

    for query, expected in [
        (goods.number, goods.number),
        (goods.number.lower(), goods.number),
        (goods.number.removeprefix("MQ-"), goods.number),  # read out by phone
        ("#" + goods.number.replace("-", ""), goods.number),
        ("BOB@example.com", tickets.number),
        (code, tickets.number),
        (code.replace("-", "").lower(), tickets.number),
    ]:
        page = admin.get(reverse("staff:orders"), {"q": query}).content.decode()
        found = re.findall(r">(MQ-\d+)</a>", page)
        assert found == [expected], query
    page = admin.get(reverse("staff:orders"), {"q": "nothing like it"})
    assert b"No order matches." in page.content


def test_filters_and_pages(admin, product, show):
    now = timezone.now()
    numbers = [pay(f"anon:p{i}", sku=product, now=now).number for i in range(3)]
    old = pay("anon:old", session=show, seats=[(0, 0)], now=now - timedelta(days=40))

    assert [o["number"] for o in order_search(kind="tickets").orders] == [old.number]
    assert len(order_search(kind="goods").orders) == 3
    first = order_search(size=2)
    second = order_search(size=2, after=first.next_cursor)
    seen = [o["number"] for o in first.orders + second.orders]
    assert seen == [*reversed(numbers), old.number]
    assert second.next_cursor is None
    since = (now - timedelta(days=1)).date().isoformat()
    page = admin.get(reverse("staff:orders"), {"since": since}).content.decode()
    assert old.number not in page and numbers[0] in page
    page = admin.get(reverse("staff:orders"), {"state": "refunded"}).content.decode()
    assert "No order matches." in page
    # The "Older orders" link carries the filters and the cursor.
    admin_page = admin.get(reverse("staff:orders"), {"kind": "goods"})
    assert admin_page.status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        {"state": "lost"},
        {"since": "yesterday"},
        {"since": "2030-02-01", "until": "2030-01-01"},
        {"after": "not-a-cursor"},
        {"after": "2030-99-99T00:00:00|0123456789abcdef01234567"},
        # A cursor without its offset cannot be compared with the orders'.
        {"after": "2024-01-01|0123456789abcdef01234567"},
        {
            "after": "2024-01-01T10:00:00|0123456789abcdef01234567",
            "until": "2024-01-02",
        },
        # Dates whose day either side leaves the calendar, and such cursors.
        {"after": "0001-01-01T00:00:00+00:00|0123456789abcdef01234567"},
        {"after": "9999-12-31T23:59:59+00:00|0123456789abcdef01234567"},
        {"until": "9999-12-31"},
        {"until": "0001-01-01"},
        {"since": "0001-01-01"},
        {"q": "x" * 500},
    ],
)
def test_bad_filters_get_a_clear_400(admin, params):
    response = admin.get(reverse("staff:orders"), params)
    assert response.status_code == 400
    assert b"errorlist" in response.content


def test_refund_with_a_reason_puts_the_seats_back_and_records_the_timeline(
    mongo_db, staff_users, show
):
    order = pay("anon:ann", session=show, seats=[(0, 0), (0, 1)])
    before = mongo_db.sessions.find_one({"_id": ObjectId(show)})["seatsAvailable"]
    client = login(BOX_OFFICE)
    url = reverse("staff:order_refund", args=[order.number])

    missing = client.post(url, {"reason": "   "})
    assert missing.status_code == 400
    assert b"Give a reason" in missing.content
    assert mongo_db.orders.find_one({"_id": order.pk})["state"] == PAID

    done = client.post(url, {"reason": "Show moved, customer asked"})
    assert done.status_code == 302

    raw = mongo_db.orders.find_one({"_id": order.pk})
    assert raw["state"] == REFUNDED and raw["canceled_by"] == "staff"
    after = mongo_db.sessions.find_one({"_id": ObjectId(show)})["seatsAvailable"]
    assert after == before + 2
    page = client.get(reverse("staff:order", args=[order.number])).content.decode()
    assert "order refunded" in page and "Show moved, customer asked" in page
    entries = list(
        mongo_db.audit.find({"object_id": order.number}).sort([("at", 1), ("_id", 1)])
    )
    assert "order created" in page  # from the order: the trail records changes
    assert [(e["before"], e["after"]) for e in entries] == [
        ("pending_payment", "paid"),
        (None, None),  # the staff request itself
        ("paid", "refunding"),
        ("refunding", "refunded"),
    ]
    assert entries[0]["actor"] == "shopper"
    assert {e["actor"] for e in entries[1:]} == {"staff:box@example.com"}
    assert {e["reason"] for e in entries[1:]} == {"Show moved, customer asked"}
    assert counter_problems() == []


def test_a_shop_manager_may_not_refund_tickets(mongo_db, staff_users, show):
    order = pay("anon:ann", session=show, seats=[(0, 0)])
    client = login(SHOP_MANAGER)
    page = client.get(reverse("staff:order", args=[order.number]))
    assert b"Your role may not refund this order." in page.content
    response = client.post(
        reverse("staff:order_refund", args=[order.number]), {"reason": "try"}
    )
    assert response.status_code == 403
    assert mongo_db.orders.find_one({"_id": order.pk})["state"] == PAID


def test_refunding_an_unknown_or_unpaid_order(admin, mongo_db, product):
    response = admin.post(reverse("staff:order_refund", args=["MQ-1"]), {"reason": "x"})
    assert response.status_code == 404
    order = pay("anon:ann", sku=product)
    mongo_db.orders.update_one({"_id": order.pk}, {"$set": {"state": "canceled"}})
    response = admin.post(
        reverse("staff:order_refund", args=[order.number]), {"reason": "x"}
    )
    # Canceled already: refused, nothing refunded and nothing recorded.
    assert response.status_code == 409
    assert "This order is canceled: there is nothing to refund." in (
        response.content.decode()
    )
    assert mongo_db.orders.find_one({"_id": order.pk})["state"] == "canceled"
    assert mongo_db.audit.count_documents({"object_id": order.number}) == 1  # paid


def test_a_refund_sent_twice_refunds_once_and_is_recorded_once(
    admin, mongo_db, product
):
    order = pay("anon:ann", sku=product)
    url = reverse("staff:order_refund", args=[order.number])

    assert admin.post(url, {"reason": "customer asked"}).status_code == 302
    again = admin.post(url, {"reason": "customer asked"})

    assert again.status_code == 409
    assert "This order is refunded: there is nothing to refund." in (
        again.content.decode()
    )
    assert mongo_db.orders.find_one({"_id": order.pk})["state"] == "refunded"
    requests = {"object_id": order.number, "action": "staff refund requested"}
    assert mongo_db.audit.count_documents(requests) == 1


def test_release_a_live_cart_returns_its_units_and_seats(
    mongo_db, staff_users, product, show
):
    from shop.services.tickets import cart_hold_seats

    now = timezone.now()
    cart_add_item(owner="anon:ann", sku=product, quantity=3, now=now)
    cart_hold_seats(owner="anon:ann", session_id=show, seats=((0, 0),), now=now)
    cart = mongo_db.carts.find_one({"live_owner": "anon:ann"})
    free = mongo_db.inventories.find_one({"_id": product})["quantity"]
    client = login(SHOP_MANAGER)
    page = client.get(reverse("staff:carts")).content.decode()
    assert cart["_id"] in page and "3 × JC Sneaker" in page and "Row A, seat 1" in page

    url = reverse("staff:cart_release", args=[cart["_id"]])
    client.post(url, {"reason": ""})  # refused: no reason
    assert mongo_db.carts.find_one({"_id": cart["_id"]})["state"] == "active"

    client.post(url, {"reason": "Abandoned at the counter"})

    assert mongo_db.carts.find_one({"_id": cart["_id"]})["state"] == EXPIRED
    assert mongo_db.inventories.find_one({"_id": product})["quantity"] == free + 3
    session = mongo_db.sessions.find_one({"_id": ObjectId(show)})
    assert session["seats"][0][0] == 0 and session["held"] == 0
    entries = list(
        mongo_db.audit.find({"object_id": cart["_id"]}).sort([("at", 1), ("_id", 1)])
    )
    assert [e["action"] for e in entries] == ["cart expired", "staff released cart"]
    assert {e["actor"] for e in entries} == {"staff:shop@example.com"}
    assert {e["reason"] for e in entries} == {"Abandoned at the counter"}
    # Released twice: a clear message, nothing more changes, and the trail
    # does not claim a second release.
    again = client.post(url, {"reason": "again"}, follow=True)
    assert b"no longer active" in again.content
    assert mongo_db.audit.count_documents({"object_id": cart["_id"]}) == 2


def test_an_expiry_by_the_job_names_the_job(mongo_db, product):
    from staff.services.audit import acting_as

    now = timezone.now()
    cart_add_item(owner="anon:ann", sku=product, quantity=1, now=now)
    with acting_as("job:expire_carts"):
        assert carts_expire(now=now + timedelta(hours=2)) == 1
    entry = mongo_db.audit.find_one({"action": "cart expired"})
    assert entry["actor"] == "job:expire_carts"


def test_the_job_page_lists_schedules_and_runs_one_now(admin, mongo_db):
    from django_q.models import OrmQ

    call_command("setup_schedules", verbosity=0)
    page = admin.get(reverse("staff:jobs")).content.decode()
    assert "expire_carts" in page and "reconcile_reservations" in page
    from django_q.models import Schedule

    job = Schedule.objects.get(name="expire_carts")
    queued = OrmQ.objects.count()

    admin.post(reverse("staff:job_run", args=[job.pk]))

    assert OrmQ.objects.count() == queued + 1
    assert mongo_db.audit.find_one({"action": "staff ran job"})["object_id"] == (
        "expire_carts"
    )
    assert admin.post(reverse("staff:job_run", args=[9999])).status_code == 302
    assert OrmQ.objects.count() == queued + 1
    page = admin.get(reverse("staff:jobs")).content.decode()
    assert "staff ran job" in page and "by staff:admin@example.com" in page


def test_createstaff_makes_an_account_in_a_role(db, capsys):
    call_command("createstaff", email="New@Example.com", role="box-office")
    out = capsys.readouterr().out
    password = re.search(r"password: (\S+)", out).group(1)
    client = Client()
    assert client.login(username="new@example.com", password=password)
    assert client.get(reverse("staff:dashboard")).status_code == 200
    assert client.get(reverse("staff:jobs")).status_code == 403
    with pytest.raises(CommandError, match="unknown role"):
        call_command("createstaff", email="x@example.com", role="janitor")
    with pytest.raises(CommandError, match="not an email"):
        call_command("createstaff", email="nobody", role="administrator")


@pytest.mark.parametrize(
    "weak, says",
    [
        ("short1", "too short"),
        ("password123", "too common"),
        ("12345678901", "numeric"),
    ],
)
def test_createstaff_refuses_a_password_a_signup_would_refuse(db, weak, says):
    with pytest.raises(CommandError, match=says):
        call_command(
            "createstaff", email="weak@example.com", role="box-office", password=weak
        )
    assert not get_user_model().objects.filter(username="weak@example.com").exists()
    call_command(
        "createstaff",
        email="weak@example.com",
        role="box-office",
        password="a-long-staff-password",
    )
    assert Client().login(username="weak@example.com", password="a-long-staff-password")


def test_createstaff_moves_an_account_to_a_role_keeping_its_password(db, capsys):
    """Moving Ada to another role must not lock her out; a password is set
    only when one is given (a reset)."""
    call_command(
        "createstaff",
        email="ada@example.com",
        role="box-office",
        password="ada-long-pw-1",
    )
    call_command("createstaff", email="Ada@Example.com", role="shop-manager")

    assert "password:" not in capsys.readouterr().out.split("(Box office)")[1]
    client = Client()
    assert client.login(username="ada@example.com", password="ada-long-pw-1")
    assert client.get(reverse("staff:stock")).status_code == 200
    assert client.get(reverse("staff:performances")).status_code == 403

    call_command(
        "createstaff",
        email="ada@example.com",
        role="shop-manager",
        password="ada-long-pw-2",
    )
    assert Client().login(username="ada@example.com", password="ada-long-pw-2")


def test_deactivatestaff_logs_an_account_out_for_good_until_made_staff_again(
    db, capsys
):
    # Another Administrator: the last one is never deactivated.
    call_command("createstaff", email="boss@example.com", role="administrator")
    call_command(
        "createstaff",
        email="leaver@example.com",
        role="administrator",
        password="leaver-pw-123",
    )
    browser = Client()
    assert browser.login(username="leaver@example.com", password="leaver-pw-123")

    call_command("deactivatestaff", email="Leaver@Example.com")

    assert "leaver@example.com deactivated" in capsys.readouterr().out
    page = browser.get(reverse("staff:jobs"))  # the browser still logged in
    assert page.status_code == 302 and "/accounts/login/" in page["Location"]
    assert not Client().login(username="leaver@example.com", password="leaver-pw-123")
    with pytest.raises(CommandError, match="no staff account"):
        call_command("deactivatestaff", email="nobody@example.com")

    call_command("createstaff", email="leaver@example.com", role="box-office")
    assert browser.login(username="leaver@example.com", password="leaver-pw-123")
    assert browser.get(reverse("staff:performances")).status_code == 200
    assert browser.get(reverse("staff:jobs")).status_code == 403


def test_the_demo_creates_one_staff_account_and_prints_it_once(db):
    import io

    from staff import demo

    first, second = io.StringIO(), io.StringIO()
    demo.load(out=first)
    demo.load(out=second)

    match = re.search(r"(staff@marquee\.example) / (\S+)", first.getvalue())
    assert match and second.getvalue() == ""
    client = Client()
    assert client.login(username=match.group(1), password=match.group(2))
    assert client.get(reverse("staff:jobs")).status_code == 200  # Administrator


def test_roles_are_idempotent(db):
    from django.contrib.auth.models import Group

    from staff.roles import ROLES, ensure_roles

    ensure_roles()
    ensure_roles()
    assert set(Group.objects.values_list("name", flat=True)) >= set(ROLES)
    admin = Group.objects.get(name=ADMINISTRATOR)
    assert admin.permissions.filter(codename="manage_staff").exists()
    box = Group.objects.get(name=BOX_OFFICE)
    assert not box.permissions.filter(codename="refund_goods_orders").exists()


def test_a_scheduled_job_is_the_actor_of_what_it_changes(mongo_db, product):
    """django-q's pre_execute names the job; its state changes carry it."""
    import contextvars

    from django_q.signals import post_execute_in_worker, pre_execute

    now = timezone.now()
    cart_add_item(owner="anon:ann", sku=product, quantity=1, now=now)

    def worker_runs_the_job():
        pre_execute.send(
            sender="django_q",
            func=carts_expire,
            task={"group": "expire_carts", "func": "shop.tasks.expire_carts"},
        )
        expired = carts_expire(now=now + timedelta(hours=2))
        post_execute_in_worker.send(sender="django_q", func=carts_expire, task={})
        return expired

    assert contextvars.copy_context().run(worker_runs_the_job) == 1
    entry = mongo_db.audit.find_one({"action": "cart expired"})
    assert entry["actor"] == "job:expire_carts"
    from staff.services.audit import current_actor

    assert current_actor() == ("shopper", "")
    # In-process (sync mode), the task's end gives the default actor back.
    worker_runs_the_job()
    assert current_actor() == ("shopper", "")


def test_needs_attention_lists_stuck_checkouts_refunds_and_unfinished_orders(
    mongo_db, product
):
    from staff.selectors.dashboard import dashboard

    now = timezone.now()
    stuck_at = now - timedelta(minutes=30)
    paid = pay("anon:paid", sku=product, now=now)
    refunding = pay("anon:refund", sku=product, now=now)
    cart_add_item(owner="anon:stuck", sku=product, quantity=1, now=now)
    stuck = mongo_db.carts.find_one({"live_owner": "anon:stuck"})
    # What a process that died half-way leaves behind.
    mongo_db.carts.update_one(
        {"_id": stuck["_id"]}, {"$set": {"state": "pending", "checkout_at": stuck_at}}
    )
    mongo_db.carts.update_one(
        {"_id": paid.cart_id}, {"$set": {"state": "pending", "checkout_at": now}}
    )
    mongo_db.orders.update_one(
        {"_id": refunding.pk},
        {"$set": {"state": "refunding", "canceled_at": stuck_at}},
    )

    d = dashboard(now=now)

    texts = [a.text for a in d.attention]
    assert f"Checkout stuck in pending: cart {stuck['_id']}" in texts
    assert f"Refund not finished: order {refunding.number}" in texts
    assert f"Order {paid.number} is paid but its cart is not complete" in texts
    assert d.live["checkouts"] == 2 and d.live["units_held"] == 2


def test_live_figures_count_what_the_holding_carts_hold(mongo_db, product, show):
    """Active carts within their hold and carts in checkout, summed by the
    server; a cart past its hold is not counted."""
    from shop.services.tickets import cart_hold_seats
    from staff.selectors.dashboard import dashboard

    now = timezone.now()
    cart_add_item(owner="anon:a", sku=product, quantity=2, now=now)
    cart_hold_seats(owner="anon:a", session_id=show, seats=((0, 0), (0, 1)), now=now)
    cart_add_item(owner="anon:b", sku=product, quantity=3, now=now)
    paying = cart_add_item(owner="anon:c", sku=product, quantity=1, now=now)
    mongo_db.carts.update_one(
        {"_id": paying.cart_id}, {"$set": {"state": "pending", "checkout_at": now}}
    )
    cart_add_item(
        owner="anon:gone", sku=product, quantity=4, now=now - timedelta(hours=2)
    )

    live = dashboard(now=now).live

    assert live == {"active_carts": 2, "checkouts": 1, "units_held": 6, "seats_held": 2}


def test_recent_activity_is_the_newest_of_the_last_month_across_windows(mongo_db):
    """Read window by window back from now: the newest first, as many as
    asked, whichever windows they fall in; nothing older than a month."""
    from staff.selectors.dashboard import recent_audit

    now = timezone.now().replace(microsecond=0)
    ago = {"10m": 10, "2h": 120, "3d": 3 * 1440, "20d": 20 * 1440, "40d": 40 * 1440}
    mongo_db.audit.insert_many(
        {
            "at": now - timedelta(minutes=minutes),
            "actor": "staff",
            "action": "stock adjusted",
            "object_kind": "sku",
            "object_id": name,
        }
        for name, minutes in ago.items()
    )

    def names(limit):
        return [entry["object_id"] for entry in recent_audit(now, limit=limit)]

    assert names(1) == ["10m"]
    assert names(3) == ["10m", "2h", "3d"]
    assert names(10) == ["10m", "2h", "3d", "20d"]


def test_an_order_state_reads_as_words_in_the_list_and_the_filter():
    from django.template import Context, Template

    from shop.documents import order_state_label
    from staff.forms import OrderFilterForm

    assert order_state_label("pending_payment") == "pending payment"
    assert order_state_label("paid") == "paid"
    shown = Template("{% load staff_tags %}{{ s|state_label }}")
    assert shown.render(Context({"s": "pending_payment"})) == "pending payment"
    choices = dict(OrderFilterForm().fields["state"].choices)
    assert choices["pending_payment"] == "pending payment"
