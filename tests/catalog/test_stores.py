"""Stores near a shopper with a SKU in stock, and where a typed place is."""

import pytest

from catalog.errors import UnknownSku
from catalog.selectors.stores import (
    location_lookup,
    stores_list,
    stores_near_with_stock,
)
from catalog.services.store_stock import store_stock_set
from tests.catalog.conftest import sku_of

LEEDS = (-1.5437, 53.7997)
RED_6 = sku_of("1", "6", "red")
RED_7 = sku_of("1", "7", "red")


@pytest.fixture
def stocked(small_catalog, stores):
    # Leeds holds the 6 red but has run out; Bradford, York and London hold
    # some. Only London holds the 7 red.
    for store_id, qty in [("leeds", 0), ("bradford", 3), ("york", 2), ("london", 5)]:
        store_stock_set(store_id=store_id, sku=RED_6, quantity=qty)
    store_stock_set(store_id="london", sku=RED_7, quantity=1)
    store_stock_set(store_id="leeds", sku=RED_7, quantity=0)
    return small_catalog


def test_nearest_stores_in_stock_come_nearest_first(stocked):
    found = stores_near_with_stock(sku=RED_6, lng=LEEDS[0], lat=LEEDS[1])

    assert [s.store_id for s in found] == ["bradford", "york", "london"]
    assert [s.quantity for s in found] == [3, 2, 5]
    distances = [s.distance_km for s in found]
    assert distances == sorted(distances)
    assert 10 < distances[0] < 20  # Leeds to Bradford is about 14 km
    assert 250 < distances[-1] < 300  # and to London about 270 km


def test_a_store_without_the_sku_in_stock_is_left_out(stocked):
    found = stores_near_with_stock(sku=RED_7, lng=LEEDS[0], lat=LEEDS[1])

    # Leeds has a line for the 7 red, at zero; York holds the 6 red, not the 7.
    assert [s.store_id for s in found] == ["london"]


def test_in_stock_and_sku_must_hold_on_the_same_stock_line(stocked):
    # York: the 6 red at 2, the 7 red absent. Setting the 7 red to 0 gives a
    # document with a line "7 red" and a line with quantity > 0: without
    # $elemMatch those two different lines would match together.
    store_stock_set(store_id="york", sku=RED_7, quantity=0)

    found = stores_near_with_stock(sku=RED_7, lng=LEEDS[0], lat=LEEDS[1])

    assert [s.store_id for s in found] == ["london"]


def test_the_limit_keeps_the_nearest(stocked):
    found = stores_near_with_stock(sku=RED_6, lng=LEEDS[0], lat=LEEDS[1], limit=2)

    assert [s.store_id for s in found] == ["bradford", "york"]


def test_seen_from_london_the_order_reverses(stocked):
    found = stores_near_with_stock(sku=RED_6, lng=-0.1276, lat=51.5072)

    assert [s.store_id for s in found] == ["london", "bradford", "york"]


def test_unknown_sku_is_refused(stocked):
    with pytest.raises(UnknownSku):
        stores_near_with_stock(sku="nope", lng=0.0, lat=51.0)


@pytest.mark.parametrize(
    ("typed", "label", "city"),
    [
        ("LS1 6HD", "LS1 6HD", "Leeds"),
        ("ls1 6hd", "LS1 6HD", "Leeds"),
        ("  yo1   9ql ", "YO1 9QL", "York"),
        ("BD1", "BD1", "Bradford"),
        ("york", "York", "York"),
        ("LONDON", "London", "London"),
    ],
)
def test_a_zip_outward_code_or_city_gives_its_stores_location(
    stores, typed, label, city
):
    location = location_lookup(text=typed)

    store = next(s for s in stores_list() if s.city == city)
    assert (location.lng, location.lat) == (store.lng, store.lat)
    assert location.label == label


def km_between(lat1, lng1, lat2, lng2) -> float:
    """Great-circle distance (haversine), for checking positions."""
    from math import asin, cos, radians, sin, sqrt

    dlat, dlng = radians(lat2 - lat1), radians(lng2 - lng1)
    h = (
        sin(dlat / 2) ** 2
        + cos(radians(lat1)) * cos(radians(lat2)) * sin(dlng / 2) ** 2
    )
    return 2 * 6371 * asin(sqrt(h))


@pytest.mark.parametrize(
    ("typed", "label", "where"),
    [
        # Buckingham Palace's postcode: its district's middle, Westminster.
        ("SW1A 1AA", "SW1A 1AA", (51.501, -0.142)),
        ("sw1a1aa", "SW1A 1AA", (51.501, -0.142)),
        ("LS2 9JT", "LS2 9JT", (53.806, -1.553)),  # the University of Leeds
        ("EH1", "EH1", (55.950, -3.190)),
        ("Edinburgh", "Edinburgh", (55.953, -3.189)),
        ("glasgow", "Glasgow", (55.861, -4.251)),
        ("  Cardiff ", "Cardiff", (51.481, -3.179)),
        ("Belfast", "Belfast", (54.597, -5.930)),
    ],
)
def test_any_uk_postcode_district_or_town_is_placed_offline(
    stores, typed, label, where
):
    location = location_lookup(text=typed)

    assert location is not None, typed
    assert location.label == label
    assert km_between(location.lat, location.lng, *where) < 3


def test_every_district_and_town_of_the_shipped_dataset_is_in_the_uk():
    from catalog.places import _places

    districts, towns = _places()
    assert len(districts) > 2500 and len(towns) > 4000
    for place in [*districts.values(), *towns.values()]:
        assert 49.8 < place.lat < 61 and -8.7 < place.lng < 2, place


@pytest.mark.parametrize(
    "typed", ["", "Atlantis", ".*", "L.", "(", "^Leeds", "Leed", "ZZ9 9ZZ", "SW1A 1A"]
)
def test_unknown_or_pattern_like_places_are_not_found(stores, typed):
    assert location_lookup(text=typed) is None


def test_store_list_is_grouped_by_region(stores):
    assert [s.store_id for s in stores_list()] == [
        "bradford",
        "leeds",
        "york",
        "london",
    ]
