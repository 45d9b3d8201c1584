"""The catalog's pages through Django's test client: states in the URL, bad input."""

import re

import pytest
from django.test import Client

from tests.catalog.conftest import sku_of

HTMX = {"HTTP_HX_REQUEST": "true"}


def titles(response) -> list[str]:
    return re.findall(r'<h3 class="card-title">([^<]+)</h3>', response.content.decode())


def checked(response) -> set[tuple[str, str]]:
    html = response.content.decode()
    return set(re.findall(r'name="(\w+)" value="([^"]+)" checked', html))


@pytest.fixture
def shop(small_catalog, stores):
    return small_catalog


def test_home_is_the_browse_page_of_everything(shop, client):
    response = client.get("/")

    assert response.status_code == 200
    assert len(titles(response)) == 6
    html = response.content.decode()
    assert "Departments" in html and "/c/Shoes/" in html
    assert '<svg class="thumb"' in html
    assert "£49.00" in html


def test_department_page_with_a_facet_shows_only_matching_cards(shop, client):
    response = client.get("/c/Shoes/?brand=Aurelia")

    assert response.status_code == 200
    assert sorted(titles(response)) == ["Classic Court Pumps", "Evening Platform Pumps"]
    assert checked(response) == {("brand", "Aurelia")}
    html = response.content.decode()
    assert "Brand: Aurelia" in html  # the chip
    assert 'href="/c/Shoes/"' in html  # its removal and "clear all"


def test_category_path_and_sort_are_in_the_url(shop, client):
    response = client.get("/c/Shoes/Women/?sort=price_desc")

    assert titles(response) == [
        "Suede Ankle Boots",
        "Evening Platform Pumps",
        "Classic Court Pumps",
    ]


def test_an_htmx_request_gets_only_the_browse_fragment(shop, client):
    response = client.get("/c/Shoes/?size=7", **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="browse"')
    assert "<html" not in html
    assert "HX-Request" in response["Vary"]


def test_a_history_restore_gets_the_whole_page(shop, client):
    response = client.get(
        "/c/Shoes/?size=7", HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HTMX
    )

    assert "<html" in response.content.decode()


def test_next_page_link_carries_the_keyset_cursor(shop, client):
    first = client.get("/?sort=price_asc&per_page=2")
    link = re.search(r'rel="next" href="([^"]+)"', first.content.decode()).group(1)

    assert "at=4900" in link and "after=1" in link
    second = client.get(link.replace("&amp;", "&"))
    assert titles(second) == ["Trail Runner", "Leather Loafers"]


@pytest.mark.parametrize(
    "path", ["/c/Hats/", "/c/Shoes/Hats/", "/c/Shoes//Women/", "/c/" + "x" * 100 + "/"]
)
def test_unknown_or_malformed_departments_are_not_found(shop, client, path):
    assert client.get(path).status_code == 404


def test_a_message_of_a_variant_change_joins_the_pages_live_toasts(shop, client):
    session = client.session
    session["store_id"] = "closed-since"  # chosen, then the store closed
    session.save()

    html = client.get(f"/p/1/?sku={sku_of('1', '7', 'black')}", **HTMX).content.decode()

    # Added into the live region the page loaded with, not swapped over it
    # (a region swapped in whole is not announced).
    toast = re.search(r'<div hx-swap-oob="beforeend:#toasts">(.*?)</div></div>', html)
    assert "no longer available" in toast.group(1)
    assert 'id="toasts"' not in html


@pytest.mark.parametrize(
    "query",
    [
        "brand[$ne]=x",
        "brand%5B%24ne%5D=x",
        "brand__ne=Aurelia",
        "$where=1",
        "department[$gt]=",
        "sort[$ne]=1",
        "unknown=1",
    ],
)
def test_operator_shaped_parameters_are_ignored(shop, client, query):
    response = client.get(f"/?{query}")

    assert response.status_code == 200
    assert len(titles(response)) == 6


def test_a_value_that_looks_like_an_operator_is_just_a_value(shop, client):
    response = client.get("/?brand=%7B%22%24ne%22%3A%22x%22%7D")  # {"$ne":"x"}

    assert response.status_code == 200
    assert titles(response) == []


@pytest.mark.parametrize(
    "query",
    [
        "per_page=100000",
        "per_page=0",
        "per_page=-1",
        "per_page=abc",
        "min_price=abc",
        "max_price=1e9999",
        "min_price=-5",
        "min_price=NaN",
        "price=cheap",
        "sort=%24natural",
        "at=1&after=%24gt",
        "at=abc&after=1",
        "at=5",
        # Positions the pages never write: out of the calendar, beyond a
        # float's exact integers, not whole, or not finite.
        "sort=newest&at=9999999999999999&after=1",
        "sort=price_asc&at=1e19&after=1",
        "sort=price_desc&at=-1e19&after=1",
        "sort=price_asc&at=4900.5&after=1",
        "at=1e308&after=1",
        "at=1e999&after=1",
        "q=" + "x" * 300,
        "&".join(f"brand=b{n}" for n in range(25)),
        "size=%00",
    ],
)
def test_malformed_parameters_are_a_clean_400_with_the_rest_applied(
    shop, client, query
):
    response = client.get(f"/c/Shoes/?{query}")

    assert response.status_code == 400
    html = response.content.decode()
    assert "were not understood" in html
    assert len(titles(response)) == 5  # everything else still shown


@pytest.mark.parametrize(
    "cursor",
    [
        "sort=newest&at=9999999999999999&after=1",
        "sort=newest&at=1e300&after=1",
        "sort=price_asc&at=1e19&after=1",
        "at=1e308&after=1",
    ],
)
def test_a_search_with_a_position_out_of_range_is_a_400_not_a_crash(
    shop, client, cursor
):
    # Words: the database serves the page, where such a value would
    # overflow the query.
    response = client.get(f"/c/Shoes/?q=boots&{cursor}")

    assert response.status_code == 400
    assert "were not understood" in response.content.decode()


def test_a_filter_not_understood_is_shown_to_htmx_too(shop, client):
    """htmx swaps no 4xx: its request gets the redrawn results and the
    message with a 200, where a browser without it gets the 400."""
    response = client.get("/c/Shoes/?min_price=50&max_price=10", HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    assert "The maximum is below the minimum" in response.content.decode()


def test_a_price_range_upside_down_keeps_only_its_valid_bound(shop, client):
    response = client.get("/c/Shoes/?min_price=50&max_price=10")

    assert response.status_code == 400
    assert sorted(titles(response)) == [
        "Leather Loafers",
        "Suede Ankle Boots",
        "Trail Runner",
    ]


def test_a_search_with_no_hits_in_a_real_department_is_an_empty_page(shop, client):
    response = client.get("/c/Shoes/Women/?q=teapot&min_price=1")

    assert response.status_code == 200
    assert "Nothing matches" in response.content.decode()


def test_a_regex_in_the_search_box_is_searched_for_literally(shop, client):
    response = client.get("/?q=.*")

    assert response.status_code == 200
    assert titles(response) == []
    assert "Nothing matches" in response.content.decode()


# --- the item page ---------------------------------------------------------


def test_item_page_shows_variants_and_the_first_ones_online_price(shop, client):
    response = client.get("/p/1/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Evening Platform Pumps" in html
    assert html.count('class="variant') >= 3
    assert "£49.00" in html and "online price" in html
    sku = sku_of("1", "6", "red")
    assert f'<div id="add-to-cart" data-sku="{sku}">' in html
    assert f'<input type="hidden" name="sku" value="{sku}">' in html


def test_choosing_a_variant_with_htmx_renders_only_the_variant_panel(shop, client):
    sku = sku_of("1", "7", "black")
    response = client.get(f"/p/1/?sku={sku}", **HTMX)

    html = response.content.decode()
    assert html.lstrip().startswith('<div id="variant-panel"')
    assert f'data-sku="{sku}" aria-current="true"' in html


@pytest.mark.parametrize(
    "path",
    [
        "/p/999/",
        "/p/1/?sku=nope",
        f"/p/1/?sku={sku_of('2', '6', 'black')}",  # another item's SKU
        "/p/1/?sku=%24ne",
        "/p/1/?sku=" + "9" * 200,
    ],
)
def test_unknown_items_and_skus_are_not_found(shop, client, path):
    assert client.get(path).status_code == 404


def test_a_chosen_store_prices_the_page_and_is_remembered(shop, client):
    from decimal import Decimal

    from catalog.services.products import price_set

    price_set(item_id="1", scope="sg-north", amount=Decimal("44.00"))
    response = client.post("/store/", {"store_id": "york", "next": "/p/1/"})

    assert response.status_code == 302 and response["Location"] == "/p/1/"
    html = client.get("/p/1/").content.decode()
    assert "£44.00" in html and "at York Coney Street" in html
    client.post("/store/", {"store_id": "", "next": "/p/1/"})
    assert "£49.00" in client.get("/p/1/").content.decode()


def test_an_unknown_store_is_not_found_and_not_remembered(shop, client):
    response = client.post("/store/", {"store_id": "atlantis", "next": "/p/1/"})

    assert response.status_code == 404
    assert "online price" in client.get("/p/1/").content.decode()


def test_a_remembered_store_that_closed_falls_back_to_online(shop, client):
    client.post("/store/", {"store_id": "york", "next": "/p/1/"})
    shop.stores.delete_one({"store_id": "york"})

    html = client.get("/p/1/").content.decode()

    assert "online price" in html and "£49.00" in html
    assert "Your store is no longer available" in html


def test_store_choice_needs_the_csrf_token(shop):
    client = Client(enforce_csrf_checks=True)

    response = client.post("/store/", {"store_id": "york"})

    assert response.status_code == 403


def test_a_typed_town_lists_the_nearest_stores_with_stock(shop, client):
    from catalog.services.store_stock import store_stock_set

    sku = sku_of("1", "6", "red")
    for store_id, qty in [("leeds", 0), ("bradford", 3), ("york", 2), ("london", 5)]:
        store_stock_set(store_id=store_id, sku=sku, quantity=qty)

    response = client.post("/location/", {"place": "leeds", "next": "/p/1/"})
    html = client.get("/p/1/").content.decode()

    assert response.status_code == 302
    assert re.findall(r'data-store="(\w+)"', html) == ["bradford", "york", "london"]
    assert "In stock in stores, nearest to Leeds" in html
    # Each store says how far; London is not "near" Leeds, but it is listed.
    assert re.search(r'data-store="bradford">.*?1\d\.\d km away', html)
    assert re.search(r'data-store="london">.*?2\d\d km away', html)
    assert "data-far" not in html


def test_a_far_place_says_how_far_the_nearest_store_is(shop, client):
    from catalog.services.store_stock import store_stock_set

    sku = sku_of("1", "6", "red")
    store_stock_set(store_id="london", sku=sku, quantity=5)

    client.post("/location/", {"place": "Edinburgh", "next": "/p/1/"})
    html = client.get("/p/1/").content.decode()

    far = re.search(r"<p class=\"notice\" data-far>(.*?)</p>", html).group(1)
    assert far.startswith("No store near Edinburgh has this in stock")
    assert re.search(r"the nearest is .*, [45]\d\d km away\.$", far)


def test_a_shared_browser_position_is_used_as_is(shop, client):
    response = client.post(
        "/location/", {"lat": "51.5", "lng": "-0.12", "next": "/p/1/"}
    )

    assert response.status_code == 302
    assert "nearest to your location" in client.get("/p/1/").content.decode()


@pytest.mark.parametrize(
    "data",
    [
        {"lat": "abc", "lng": "1"},
        {"lat": "91", "lng": "1"},
        {"lat": "10", "lng": "-181"},
        {"lat": "nan", "lng": "1"},
        {"lat": "10"},
        {},
        {"place": "x" * 500},
    ],
)
def test_malformed_positions_are_a_clean_400(shop, client, data):
    response = client.post("/location/", {**data, "next": "/p/1/"})

    assert response.status_code == 400
    assert (
        "near" not in client.get("/p/1/").content.decode().split("nearby-title")[1][:40]
    )


def test_an_unknown_place_says_so_and_keeps_no_location(shop, client):
    response = client.post(
        "/location/", {"place": "Atlantis", "next": "/p/1/"}, follow=True
    )

    html = response.content.decode()
    assert "We have no store near “Atlantis”" in html
    assert "Tell us where you are" in html


def test_next_never_leaves_the_site(shop, client):
    response = client.post(
        "/store/", {"store_id": "york", "next": "https://evil.example/"}
    )

    assert response["Location"] == "/"


def test_store_list_groups_stores_by_region(shop, client):
    html = client.get("/stores/").content.decode()

    assert html.index("Bradford Centre") < html.index("London Oxford St")
    assert "Shop here" in html


def test_each_variant_says_what_the_add_would_find(shop, client):
    from catalog.services.stock import stock_restock
    from shop.services.carts import cart_add_item

    stock_restock(sku=sku_of("1", "6", "red"), quantity=10, note="in")
    stock_restock(sku=sku_of("1", "7", "red"), quantity=3, note="in")
    # 7 black: never stocked. Someone holds one of the three 7 red.
    cart_add_item(owner="anon:other", sku=sku_of("1", "7", "red"), quantity=1)

    def panel(sku):
        html = client.get(f"/p/1/?sku={sku}").content.decode()
        said = re.search(r"data-availability>([^<]*)<", html).group(1)
        button = re.search(r'<button type="submit" class="button primary"[^>]*>', html)
        return html, said, button.group(0)

    html, said, button = panel(sku_of("1", "6", "red"))
    assert said == "In stock" and "disabled" not in button
    html, said, button = panel(sku_of("1", "7", "red"))
    assert said == "Only 2 left" and "disabled" not in button
    assert 'max="2"' in html
    html, said, button = panel(sku_of("1", "7", "black"))
    assert said == "Sold out" and "disabled" in button
    assert ">Sold out</button>" in html
    # Every option says its own availability to a screen reader.
    assert 'title="Sold out" data-sku="1-7-black"' in html
    assert 'title="Only 2 left" data-sku="1-7-red"' in html
    assert 'class="variant selected sold-out"' in html


def test_the_place_suggestions_name_each_town_once(shop, client):
    from catalog.documents import Address
    from catalog.services.stores import store_save

    store_save(
        store_id="london-2",
        name="Marquee Soho",
        group="g",
        lng=-0.13,
        lat=51.51,
        address=Address(line1="2 Dean St", city="London", zip="W1D 3RB", country="GB"),
    )

    html = client.get("/p/1/").content.decode()
    places = re.search(r'<datalist id="store-places">(.*?)</datalist>', html).group(1)
    options = re.findall(r'<option value="([^"]+)">', places)

    assert options.count("London") == 1
    assert "W1D 3RB" in options
    assert len(options) == len(set(options))
