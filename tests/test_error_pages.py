"""The 404 and 500 pages are Marquee's, the favicon is served, and every
shopper's page links to the stores."""

import re

import pytest
from django.test import Client

from tests.shop.factories import make_product


@pytest.mark.django_db
def test_an_unknown_address_gets_the_styled_404_page(client, mongo_db):
    response = client.get("/no-such-page/")

    assert response.status_code == 404
    html = response.content.decode()
    assert "We could not find that page" in html
    assert 'href="/static/css/marquee.css"' in html
    assert 'href="/stores/"' in html and 'href="/"' in html


@pytest.mark.django_db
def test_a_missing_product_gets_the_same_404_page(client, mongo_db):
    response = client.get("/cart/add/?sku=NOPE")

    assert response.status_code == 404
    assert "We could not find that page" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.urls("tests.error_urls")
def test_a_failing_page_gets_the_styled_500_page(mongo_db):
    client = Client(raise_request_exception=False)

    response = client.get("/boom/")

    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html
    assert 'href="/static/css/marquee.css"' in html
    assert "a bug" not in html and "Traceback" not in html


@pytest.mark.django_db
def test_the_favicon_is_linked_and_served(client, mongo_db):
    html = client.get("/").content.decode()

    assert '<link rel="icon" href="/static/favicon.svg"' in html
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/favicon.svg"
    svg = b"".join(client.get("/static/favicon.svg").streaming_content)
    assert svg.startswith(b"<svg")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/", "/shows/", "/cart/", "/stores/", "/no-such-page/", "/cart/add/"]
)
def test_every_shoppers_page_links_to_the_stores(client, mongo_db, path):
    make_product(sku="SNKR-1")
    query = "?sku=SNKR-1" if path == "/cart/add/" else ""

    html = client.get(path + query).content.decode()

    nav = re.search(r'<nav class="site-nav".*?</nav>', html, re.S).group(0)
    assert nav.count('href="/stores/"') == 1
