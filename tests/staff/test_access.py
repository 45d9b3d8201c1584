"""Who may open each staff page and send each staff POST.

Anonymous -> login page with next; a shopper -> 403; each role -> 200 (or
the action's answer) or 403, as staff.roles grants. Every POST is also sent
without its CSRF token and refused.
"""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from staff.roles import ADMINISTRATOR, BOX_OFFICE, SHOP_MANAGER
from tests.staff.conftest import PASSWORD, ROLE_EMAILS, pay

ANON, SHOPPER = "anonymous", "shopper"
EVERYONE = (ANON, SHOPPER, BOX_OFFICE, SHOP_MANAGER, ADMINISTRATOR)
STAFF = {BOX_OFFICE, SHOP_MANAGER, ADMINISTRATOR}


@pytest.fixture
def world(db, staff_users, shopper, product, show):
    """One order of each kind, one live cart, one scheduled job."""
    from django_q.models import Schedule

    from shop.documents import Cart
    from shop.services.carts import cart_add_item

    now = timezone.now()
    goods = pay("anon:g", sku=product, now=now)
    tickets = pay("anon:t", session=show, seats=[(0, 0)], now=now)
    cart_add_item(owner="anon:live", sku=product, quantity=1, now=now)
    cart = Cart.objects(live_owner="anon:live").first()
    job = Schedule.objects.create(
        name="expire_carts", func="shop.tasks.expire_carts", minutes=1
    )
    return {
        "goods": goods.number,
        "tickets": tickets.number,
        "cart": cart.cart_id,
        "job": job.pk,
    }


def client_for(who) -> Client:
    client = Client(enforce_csrf_checks=True)
    if who == SHOPPER:
        assert client.login(username="shopper@example.com", password=PASSWORD)
    elif who != ANON:
        assert client.login(username=ROLE_EMAILS[who], password=PASSWORD)
    return client


# (url name, args from the world, roles allowed)
PAGES = [
    ("staff:dashboard", (), STAFF),
    ("staff:orders", (), STAFF),
    ("staff:order", ("goods",), STAFF),
    ("staff:order", ("tickets",), STAFF),
    ("staff:carts", (), STAFF),
    ("staff:jobs", (), {ADMINISTRATOR}),
]
POSTS = [
    ("staff:order_refund", ("tickets",), {BOX_OFFICE, ADMINISTRATOR}),
    ("staff:order_refund", ("goods",), {SHOP_MANAGER, ADMINISTRATOR}),
    ("staff:cart_release", ("cart",), STAFF),
    ("staff:job_run", ("job",), {ADMINISTRATOR}),
]


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
    response = _csrf_post(client, target, {"reason": "permission matrix"})
    audit = mongo_db.audit.count_documents({"actor": {"$regex": "^staff:"}})
    if who == ANON:
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
        assert audit == 0
    elif who in allowed:
        assert response.status_code == 302  # done, back to the page
        assert audit >= 1
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
