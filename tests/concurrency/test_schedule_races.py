"""Forced races of scheduling performances, with real processes released
together by a Barrier (tests.concurrency.cart_processes):

* clerks scheduling meeting performances in one theater at once, each
  from a form of their own: exactly one is scheduled, every other is told
  the theater is taken then;
* one form sent by many processes at once (a double click, a retry):
  one performance, and every send answers it;
* a turn whose holder died: the next scheduling waits out its lease, then
  takes it (the lease shortened for the test), never schedules inside it.
"""

import uuid
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from booking.errors import PerformanceOverlaps, SchedulingBusy
from booking.services import layouts
from booking.services.layouts import session_schedule
from tests.booking.factories import PRICES, make_theater

pytestmark = pytest.mark.concurrency

CLERKS = 8


def schedule(theater, start_iso, minutes, key):
    start = datetime.fromisoformat(start_iso)
    try:
        return session_schedule(
            theater_id=theater,
            show=f"Show {key[:6]}",
            start=start,
            end=start + timedelta(minutes=minutes),
            prices=PRICES,
            key=key,
        )
    except PerformanceOverlaps:
        return "overlaps"


def resend(theater, start_iso, key):
    start = datetime.fromisoformat(start_iso)
    return session_schedule(
        theater_id=theater,
        show="Twelfth Night",
        start=start,
        end=start + timedelta(hours=2),
        prices=PRICES,
        key=key,
    )


def test_clerks_scheduling_one_slot_at_once_schedule_exactly_one(race, mongo_db):
    theater = make_theater("Race Hall")
    start = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    # Every clerk's performance meets every other's (staggered starts).
    work = [
        (theater, (start + timedelta(minutes=5 * i)).isoformat(), 120, uuid.uuid4().hex)
        for i in range(CLERKS)
    ]

    results = race(schedule, work)

    made = [r for r in results if r != "overlaps"]
    assert len(made) == 1, results
    assert results.count("overlaps") == CLERKS - 1
    assert mongo_db.sessions.count_documents({}) == 1
    assert str(mongo_db.sessions.find_one()["_id"]) == made[0]
    # Every turn was given back.
    assert "scheduling_until" not in mongo_db.theaters.find_one()


def test_one_form_sent_by_many_processes_schedules_once(race, mongo_db):
    theater = make_theater("Race Hall")
    start = (timezone.now() + timedelta(days=3)).replace(microsecond=0).isoformat()
    key = uuid.uuid4().hex

    results = race(resend, [(theater, start, key)] * CLERKS)

    assert len(set(results)) == 1, results
    assert mongo_db.sessions.count_documents({}) == 1
    assert str(mongo_db.sessions.find_one()["_id"]) == results[0]


def test_a_turn_left_by_a_dead_process_is_waited_out_then_taken(mongo_db, monkeypatch):
    theater = make_theater("Race Hall")
    start = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    # A scheduling that died in its turn: its lease stands for a while.
    held_until = timezone.now() + timedelta(seconds=1)
    mongo_db.theaters.update_one(
        {},
        {"$set": {"scheduling_token": "dead", "scheduling_until": held_until}},
    )
    monkeypatch.setattr(layouts, "TURN_WAIT", 0.1)
    with pytest.raises(SchedulingBusy):
        schedule(theater, start.isoformat(), 60, uuid.uuid4().hex)
    assert mongo_db.sessions.count_documents({}) == 0

    monkeypatch.setattr(layouts, "TURN_WAIT", 30.0)
    made = schedule(theater, start.isoformat(), 60, uuid.uuid4().hex)

    assert timezone.now() >= held_until  # not inside the dead one's lease
    assert mongo_db.sessions.count_documents({}) == 1
    assert str(mongo_db.sessions.find_one()["_id"]) == made
    assert "scheduling_token" not in mongo_db.theaters.find_one()
