"""Forced races of scheduling performances, with real processes released
together by a Barrier (tests.concurrency.cart_processes):

* clerks scheduling meeting performances in one theater at once, each
  from a form of their own: exactly one is scheduled, every other is told
  the theater is taken then;
* one form sent by many processes at once (a double click, a retry):
  one performance, and every send answers it;
* a turn whose holder died: waited for while its lease stands, taken over
  once it ran out; a turn that outlived its lease looks again and takes
  its performance back on a clash.
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


def test_a_turn_is_waited_for_and_one_left_by_a_dead_process_taken_over(
    mongo_db, monkeypatch
):
    theater = make_theater("Race Hall")
    start = (timezone.now() + timedelta(days=3)).replace(microsecond=0)

    def leave_a_turn(until):
        """What a scheduling that died in its turn leaves on the theater."""
        mongo_db.theaters.update_one(
            {}, {"$set": {"scheduling_token": "dead", "scheduling_until": until}}
        )

    leave_a_turn(timezone.now() + timedelta(hours=1))  # its lease stands
    monkeypatch.setattr(layouts, "TURN_WAIT", 0.2)
    with pytest.raises(SchedulingBusy):
        schedule(theater, start.isoformat(), 60, uuid.uuid4().hex)
    assert mongo_db.sessions.count_documents({}) == 0

    leave_a_turn(timezone.now() - timedelta(seconds=1))  # its lease ran out
    made = schedule(theater, start.isoformat(), 60, uuid.uuid4().hex)

    assert mongo_db.sessions.count_documents({}) == 1
    assert str(mongo_db.sessions.find_one()["_id"]) == made
    assert "scheduling_token" not in mongo_db.theaters.find_one()


def test_a_turn_that_outlived_its_lease_looks_again_and_withdraws(
    mongo_db, monkeypatch
):
    """A scheduling that stalled past its lease: another took the turn and
    put a meeting performance on sale meanwhile. The first finds its turn
    lost when giving it back, sees the other, and takes its own back."""
    theater = make_theater("Race Hall")
    start = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    create = layouts.session_create
    other = {}

    def stalled(**kwargs):
        # Meanwhile: the lease ran out, another scheduling took the turn
        # and scheduled a performance that meets this one.
        mongo_db.theaters.update_one({}, {"$set": {"scheduling_token": "other"}})
        other["id"] = create(**{**kwargs, "show": "Other", "key": None})
        return create(**kwargs)

    monkeypatch.setattr(layouts, "session_create", stalled)
    answer = schedule(theater, start.isoformat(), 60, uuid.uuid4().hex)

    assert answer == "overlaps"
    assert [str(s["_id"]) for s in mongo_db.sessions.find()] == [other["id"]]
