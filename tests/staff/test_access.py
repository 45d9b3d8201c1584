"""Who may open each staff page and send each staff POST.

Anonymous -> login page with next; a shopper -> 403; each role -> 200 (or
the action's answer) or 403, as staff.roles grants. Every POST is also sent
without its CSRF token and refused.
"""

import uuid

import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse
from django.utils import timezone

from staff.roles import ADMINISTRATOR, BOX_OFFICE, SHOP_MANAGER
from tests.staff.conftest import PASSWORD, ROLE_EMAILS, pay

ANON, SHOPPER = "anonymous", "shopper"
# Staff (is_staff) with no role yet: may open nothing.
ROLELESS = "staff without a role"
ROLELESS_EMAIL = "new.hire@example.com"
EVERYONE = (ANON, SHOPPER, ROLELESS, BOX_OFFICE, SHOP_MANAGER, ADMINISTRATOR)
STAFF = {BOX_OFFICE, SHOP_MANAGER, ADMINISTRATOR}
BOX = {BOX_OFFICE, ADMINISTRATOR}
SHOP = {SHOP_MANAGER, ADMINISTRATOR}


@pytest.fixture
def world(db, staff_users, shopper, product, show):
    """One order of each kind (and one of both), one live cart, one
    scheduled job; a staff account without a role."""
    from django.contrib.auth import get_user_model
    from django_q.models import Schedule

    from shop.documents import Cart
    from shop.services.carts import cart_add_item

    now = timezone.now()
    goods = pay("anon:g", sku=product, now=now)
    tickets = pay("anon:t", session=show, seats=[(0, 0)], now=now)
    mixed = pay("anon:m", sku=product, session=show, seats=[(0, 1)], now=now)
    roleless = get_user_model().objects.create_user(
        ROLELESS_EMAIL, ROLELESS_EMAIL, PASSWORD, is_staff=True
    )
    cart_add_item(owner="anon:live", sku=product, quantity=1, now=now)
    cart = Cart.objects(live_owner="anon:live").first()
    job = Schedule.objects.create(
        name="expire_carts", func="shop.tasks.expire_carts", minutes=1
    )
    from catalog.services.stores import store_save

    store_save(store_id="store1", name="Soho", group="g1", lng=-0.13, lat=51.51)
    ticket_cart = "anon:held"
    from shop.services.tickets import cart_hold_seats

    cart_hold_seats(owner=ticket_cart, session_id=show, seats=((0, 5),), now=now)
    held = Cart.objects(live_owner=ticket_cart).first()
    from booking.documents import Session
    from staff.roles import create_staff, deactivate_staff

    # The Staff page's rows: one invited (no password yet), one who left.
    invited = create_staff(email="invited@example.com", role=BOX_OFFICE)
    create_staff(email="gone@example.com", role=BOX_OFFICE, password=PASSWORD)
    former = deactivate_staff(email="gone@example.com")

    return {
        "goods": goods.number,
        "tickets": tickets.number,
        "mixed": mixed.number,
        "cart": cart.cart_id,
        "job": job.pk,
        "session": show,
        "held_cart": held.cart_id,
        "sku": product,
        "theater": str(Session.objects.get(id=show).theater_id),
        "code": tickets.codes[0],
        "member": staff_users[BOX_OFFICE].pk,
        "invited": invited.pk,
        "former": former.pk,
        "roleless": roleless.pk,
    }


def client_for(who) -> Client:
    client = Client(enforce_csrf_checks=True)
    if who == SHOPPER:
        assert client.login(username="shopper@example.com", password=PASSWORD)
    elif who == ROLELESS:
        assert client.login(username=ROLELESS_EMAIL, password=PASSWORD)
    elif who != ANON:
        assert client.login(username=ROLE_EMAILS[who], password=PASSWORD)
    return client


# (url name, args from the world, roles allowed)
PAGES = [
    ("staff:dashboard", (), STAFF),
    ("staff:orders", (), STAFF),
    ("staff:order", ("goods",), STAFF),
    ("staff:order", ("tickets",), STAFF),
    ("staff:order", ("mixed",), STAFF),
    ("staff:carts", (), STAFF),
    ("staff:jobs", (), {ADMINISTRATOR}),
    ("staff:performances", (), BOX),
    ("staff:schedule", (), BOX),
    ("staff:seat_map", ("session",), BOX),
    ("staff:check_in", ("session",), BOX),
    ("staff:check_in_counter", ("session",), BOX),
    ("staff:stock", (), SHOP),
    ("staff:low_stock", (), SHOP),
    ("staff:stock_sku", ("sku",), SHOP),
    ("staff:team", (), {ADMINISTRATOR}),
]
POSTS = [
    ("staff:order_refund", ("tickets",), {BOX_OFFICE, ADMINISTRATOR}),
    ("staff:order_refund", ("goods",), {SHOP_MANAGER, ADMINISTRATOR}),
    # Tickets and goods: the role needs both refund permissions.
    ("staff:order_refund", ("mixed",), {ADMINISTRATOR}),
    ("staff:cart_release", ("cart",), STAFF),
    ("staff:job_run", ("job",), {ADMINISTRATOR}),
    ("staff:seat_map_release", ("session", "held_cart"), BOX),
    ("staff:seat_map_block", ("session",), BOX),
    ("staff:seat_map_unblock", ("session",), BOX),
    ("staff:seat_map_sell", ("session",), BOX),
    ("staff:check_in", ("session",), BOX),
    ("staff:check_in_undo", ("session",), BOX),
    ("staff:schedule", (), BOX),
    ("staff:stock_receive", ("sku",), SHOP),
    ("staff:stock_adjust", ("sku",), SHOP),
    ("staff:stock_threshold", ("sku",), SHOP),
    ("staff:stock_store", ("sku",), SHOP),
    ("staff:team_add", (), {ADMINISTRATOR}),
    ("staff:team_role", ("member",), {ADMINISTRATOR}),
    ("staff:team_deactivate", ("member",), {ADMINISTRATOR}),
    ("staff:team_reactivate", ("former",), {ADMINISTRATOR}),
    ("staff:team_invite", ("invited",), {ADMINISTRATOR}),
    # The Staff page's row of an account with staff access but no role.
    ("staff:team_role", ("roleless",), {ADMINISTRATOR}),
    ("staff:team_deactivate", ("roleless",), {ADMINISTRATOR}),
]
# What each POST sends: enough for the action to be done (and audited).
POST_DATA = {
    "staff:check_in": lambda w: {"code": w["code"]},
    "staff:check_in_undo": lambda w: {"code": w["code"]},
    "staff:schedule": lambda w: {
        "theater": w["theater"],
        "show": "Matrix",
        "start": "2031-03-01T19:30",
        "end": "2031-03-01T22:00",
        "price_stalls": "30",
        "price_circle": "20",
        "key": "k" * 32,
    },
    "staff:seat_map_block": lambda w: {"seat": "1-1"},
    "staff:seat_map_unblock": lambda w: {"seat": "1-1"},
    "staff:seat_map_sell": lambda w: {
        "seat": "1-1",
        "name": "Grace Hopper",
        "email": "grace@example.com",
    },
    "staff:stock_receive": lambda w: {"quantity": "3", "key": uuid.uuid4().hex},
    "staff:stock_adjust": lambda w: {
        "kind": "damaged",
        "delta": "-1",
        "note": "x",
        "key": uuid.uuid4().hex,
    },
    "staff:stock_threshold": lambda w: {"threshold": "7"},
    "staff:stock_store": lambda w: {"store": "store1", "quantity": "4"},
    "staff:team_add": lambda w: {
        "email": "new.member@example.com",
        "role": "box-office",
    },
    "staff:team_role": lambda w: {"role": "shop-manager"},
    "staff:team_reactivate": lambda w: {"role": "box-office"},
}


def admit(world):
    from shop.services.admissions import ticket_admit

    ticket_admit(code=world["code"], session_id=world["session"], by="someone")


def block(world):
    from booking.services.blocks import seats_block

    seats_block(session_id=world["session"], seats=[(1, 1)], reason="x", by="x")


def url(world, name, args):
    return reverse(name, args=[world[a] for a in args])


@pytest.mark.parametrize("who", EVERYONE)
@pytest.mark.parametrize(("name", "args", "allowed"), PAGES)
def test_pages(world, who, name, args, allowed):
    target = url(world, name, args)
    response = client_for(who).get(target)
    if who == ANON:
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={target}"
    elif who in allowed:
        assert response.status_code == 200
    else:
        assert response.status_code == 403
        assert b"You may not open this page" in response.content  # our page


def _csrf_post(client, target, data):
    """POST as a browser does: the token from a page's cookie."""
    client.get("/accounts/login/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    return client.post(target, {**data, "csrfmiddlewaretoken": token})


@pytest.mark.parametrize("who", EVERYONE)
@pytest.mark.parametrize(("name", "args", "allowed"), POSTS)
def test_posts(mongo_db, world, who, name, args, allowed):
    target = url(world, name, args)
    client = client_for(who)
    if name == "staff:check_in_undo" and who in allowed:
        admit(world)
    if name in ("staff:seat_map_unblock", "staff:seat_map_sell"):
        block(world)
    data = {"reason": "permission matrix", **POST_DATA.get(name, dict)(world)}
    response = _csrf_post(client, target, data)
    audit = mongo_db.audit.count_documents({"actor": {"$regex": "^staff:"}})
    if who == ANON:
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
        assert audit == 0
    elif who in allowed:
        # Done: back to the page (the check-in page answers a scan itself).
        assert response.status_code == (200 if name == "staff:check_in" else 302)
        assert audit >= 1, response.content[:500]
    else:
        assert response.status_code == 403
        assert audit == 0  # nothing was done


@pytest.mark.parametrize(("name", "args", "allowed"), POSTS)
def test_every_post_needs_its_csrf_token(mongo_db, world, name, args, allowed):
    client = client_for(ADMINISTRATOR)
    response = client.post(url(world, name, args), {"reason": "no token"})
    assert response.status_code == 403
    assert mongo_db.audit.count_documents({"actor": {"$regex": "^staff:"}}) == 0


def test_an_inactive_or_demoted_account_is_refused(world, staff_users):
    user = staff_users[ADMINISTRATOR]
    client = client_for(ADMINISTRATOR)
    user.is_staff = False
    user.save()
    assert client.get(reverse("staff:dashboard")).status_code == 403


def _routes(resolver, prefix="", namespace=""):
    """(route, name, view) of every URL the project answers, includes
    walked (a route's name with its namespaces)."""
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            inner = (
                f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            )
            yield from _routes(pattern, prefix + str(pattern.pattern), inner)
        else:
            name = namespace + (pattern.name or "")
            yield prefix + str(pattern.pattern), name, pattern.callback


def test_every_back_office_url_checks_a_permission_and_is_in_these_tables():
    """Every route under /staff/, and every route to a staff view wherever
    it is mounted, carries ``staff_permission`` and is in the tables above
    (so each role is tried on it): a back-office page added without the
    check, in staff/urls.py or in any other urls module, fails here."""
    back_office = [
        (route, name, view)
        for route, name, view in _routes(get_resolver())
        if route.startswith("staff/") or view.__module__.split(".")[0] == "staff"
    ]
    unchecked = [
        route
        for route, _, view in back_office
        if not getattr(view, "staff_permissions", ())
    ]
    assert unchecked == []
    assert {name for _, name, _ in back_office} == {
        name for name, _, _ in PAGES + POSTS
    }


def test_a_form_sent_after_the_session_ended_comes_back_to_its_page(mongo_db, world):
    """Logged out meanwhile: the POST changes nothing, and logging in leads
    back to the page the form was on (its action answers no GET), never to
    a blank 405."""
    page = reverse("staff:seat_map", args=[world["session"]])
    action = reverse("staff:seat_map_block", args=[world["session"]])
    client = Client()
    client.get("/accounts/login/")
    token = client.cookies["csrftoken"].value
    data = {"seat": "1-1", "reason": "late", "csrfmiddlewaretoken": token}

    sent = client.post(action, data, HTTP_REFERER=f"http://testserver{page}")
    elsewhere = client.post(action, data, HTTP_REFERER="https://evil.example/x")
    # A path of this host that a browser would read as another host's.
    sneaky = client.post(action, data, HTTP_REFERER="http://testserver//evil.example/")

    assert sent["Location"] == f"/accounts/login/?next={page}"
    dashboard = reverse("staff:dashboard")
    assert elsewhere["Location"] == f"/accounts/login/?next={dashboard}"
    assert sneaky["Location"] == f"/accounts/login/?next={dashboard}"
    assert mongo_db.audit.count_documents({"actor": {"$regex": "^staff:"}}) == 0
    box = client_for(BOX_OFFICE)
    assert box.get(page).status_code == 200
