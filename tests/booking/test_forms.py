"""Request data becomes typed seats in forms.py, or a clear error."""

import pytest
from django.http import QueryDict

from booking.forms import BestAvailableForm, MapRefreshForm, ReleaseSeatsForm, SeatsForm


def query(text: str) -> QueryDict:
    return QueryDict(text)


@pytest.mark.parametrize(
    "data, seats",
    [
        ("seat=4-12", ((4, 12),)),
        ("seat=0-0&seat=0-1", ((0, 0), (0, 1))),
        ("seat=0-0,0-1, 2-3", ((0, 0), (0, 1), (2, 3))),
    ],
)
def test_seat_form_parses_repeated_and_comma_separated_seats(data, seats):
    form = SeatsForm(query(data))

    assert form.is_valid(), form.errors
    assert form.cleaned_data["seat"] == seats


@pytest.mark.parametrize(
    "data, message",
    [
        pytest.param("", "Choose at least one seat.", id="no-seats"),
        pytest.param("seat=", "Choose at least one seat.", id="empty"),
        pytest.param("seat=-1-2", 'like "4-12"', id="negative"),
        pytest.param("seat=a-b", 'like "4-12"', id="letters"),
        pytest.param("seat=4", 'like "4-12"', id="half-a-seat"),
        pytest.param("seat=1.5-2", 'like "4-12"', id="decimal"),
        pytest.param("seat=1234-1", 'like "4-12"', id="huge-index"),
        pytest.param("seat[$ne]=1-1", "Choose at least one seat.", id="operator-key"),
        pytest.param("seat__ne=1-1", "Choose at least one seat.", id="django-lookup"),
        pytest.param("seat={'$gt': ''}", 'like "4-12"', id="a-dict-as-text"),
        pytest.param(
            "seat=1-1&seat=1-1", "The same seat was chosen twice.", id="twice"
        ),
        pytest.param(
            "&".join(f"seat=0-{c}" for c in range(500)),
            "Choose at most 10 seats at a time.",
            id="500-seats",
        ),
    ],
)
def test_seat_form_rejects_bad_seats_with_a_clear_message(data, message):
    form = SeatsForm(query(data))

    assert not form.is_valid()
    assert message in form.errors["seat"][0]


def test_release_form_allows_no_seats_meaning_all_of_them():
    form = ReleaseSeatsForm(query(""))

    assert form.is_valid()
    assert form.cleaned_data["seat"] == ()


@pytest.mark.parametrize(
    "data, valid, cleaned",
    [
        ("count=3&zone=stalls", True, (3, "stalls")),
        ("count=2", True, (2, None)),
        ("count=0&zone=stalls", False, None),
        ("count=11", False, None),
        ("count=500", False, None),
        ("count=two", False, None),
        ("count=-1", False, None),
        ("count=2&zone[$ne]=x", True, (2, None)),
        ("count=2&zone=$where", False, None),
        ("count=2&zone=" + "z" * 40, False, None),
        ("", False, None),
    ],
)
def test_best_available_form(data, valid, cleaned):
    form = BestAvailableForm(query(data))

    assert form.is_valid() is valid, form.errors
    if valid:
        assert (form.cleaned_data["count"], form.cleaned_data["zone"]) == cleaned


@pytest.mark.parametrize(
    "data, since", [("since=4", 4), ("", None), ("since=-1", None), ("since=x", None)]
)
def test_map_refresh_form_reads_a_version_or_nothing(data, since):
    form = MapRefreshForm(query(data))

    value = form.cleaned_data["since"] if form.is_valid() else None
    assert value == since
