"""Response headers: a Content-Security-Policy with no inline or eval'd
script (and pages that need none), no-store on private pages, a
Permissions-Policy."""

import re

import pytest
from django.test import Client

from tests.accounts.test_emails import buy_seats
from tests.shop.factories import make_product, make_show


@pytest.fixture
def show():
    return make_show()


def csp(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {
        part.split()[0]: part.split()[1:]
        for part in (p.strip() for p in policy.split(";"))
        if part
    }


def inline_scripts(html: str) -> list[str]:
    """<script> elements with a body, and on* handler attributes."""
    bodies = [
        m.group(0)
        for m in re.finditer(r"<script\b[^>]*>(.*?)</script>", html, re.S)
        if m.group(1).strip()
    ]
    handlers = re.findall(r"<[^>]+\son[a-z]+\s*=", html)
    return bodies + handlers


def test_every_page_has_a_strict_script_policy(client, ada, show):
    make_product(sku="SNKR-42")
    client.force_login(ada)
    pages = [
        "/",
        "/p/item-SNKR-42/",
        f"/sessions/{show}/",
        "/cart/",
        "/orders/",
        "/accounts/",
        "/accounts/password/change/",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        policy = csp(response)
        assert policy["script-src"] == ["'self'"], path
        assert policy["object-src"] == ["'none'"]
        assert policy["frame-ancestors"] == ["'none'"]
        assert "'unsafe-eval'" not in response["Content-Security-Policy"]
        html = response.content.decode()
        assert inline_scripts(html) == [], path
        assert '"allowEval": false' in html  # htmx never evals
        assert "camera=()" in response["Permissions-Policy"]


def test_the_seat_map_polls_without_a_filter_htmx_would_eval(client, show):
    html = client.get(f"/sessions/{show}/").content.decode()

    assert 'hx-trigger="every 3s, seatmap-visible from:document"' in html
    assert "visibilityState" not in html


def test_private_pages_are_never_stored(client, ada, mongo_db, show):
    order, link = buy_seats(client, mongo_db, show, seats=("0-0",))
    client.post(f"/cart/tickets/{show}/hold/", {"seat": "0-1"})
    private = [
        "/cart/",
        "/checkout/",
        link,
        f"{link}tickets.pdf",
        "/accounts/login/",
        "/accounts/signup/",
        "/accounts/password/reset/",
    ]
    for path in private:
        response = client.get(path)
        assert response.status_code == 200, path
        assert "no-store" in response["Cache-Control"], path
    client.force_login(ada)
    for path in ("/orders/", "/accounts/", "/accounts/password/change/"):
        response = client.get(path)
        assert "no-store" in response["Cache-Control"], path


def test_public_pages_may_be_cached(client, show):
    for path in ("/", f"/sessions/{show}/"):
        assert "no-store" not in Client().get(path).get("Cache-Control", "")
