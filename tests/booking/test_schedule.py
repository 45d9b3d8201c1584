"""Scheduling a performance as the box office does: no overlap in one
theater, no start in the past; a performance may start when another ends."""

from datetime import timedelta

import pytest
from django.utils import timezone

from booking.documents import Session
from booking.errors import InvalidRequest, PerformanceOverlaps, TheaterNotFound
from booking.selectors import theaters_list
from booking.services.layouts import session_schedule
from tests.booking.factories import PRICES, make_theater


def schedule(theater, start, hours=2, show="Hamlet"):
    return session_schedule(
        theater_id=theater,
        show=show,
        start=start,
        end=start + timedelta(hours=hours),
        prices=PRICES,
    )


def test_overlaps_in_one_theater_are_refused_and_back_to_back_is_fine():
    hall, other = make_theater("Hall"), make_theater("Other")
    start = timezone.now() + timedelta(days=5)
    schedule(hall, start)

    for clash in (start, start + timedelta(hours=1), start - timedelta(hours=1)):
        with pytest.raises(PerformanceOverlaps) as refused:
            schedule(hall, clash, show="Macbeth")
        assert "The theater is taken then: Hamlet plays" in refused.value.message
    schedule(hall, start + timedelta(hours=2), show="Late show")  # starts as it ends
    schedule(hall, start - timedelta(hours=2), show="Matinee")  # ends as it starts
    schedule(other, start, show="Elsewhere")  # another theater
    assert Session.objects.count() == 4


def test_the_past_and_bad_theaters_are_refused():
    hall = make_theater("Hall")
    with pytest.raises(InvalidRequest, match="cannot start in the past"):
        schedule(hall, timezone.now() - timedelta(minutes=1))
    with pytest.raises(TheaterNotFound):
        schedule("nope", timezone.now() + timedelta(days=1))
    assert Session.objects.count() == 0


def test_theaters_list_names_the_zones_that_need_a_price():
    make_theater("Hall")
    (hall,) = theaters_list()
    assert hall.name == "Hall"
    assert hall.zones == (("stalls", "Stalls"), ("circle", "Circle"))
