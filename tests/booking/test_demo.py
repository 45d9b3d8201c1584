"""The box office demo data: three halls of different shapes, four weeks."""

import io

from django.utils import timezone

from booking import demo, selectors
from config import mongo


def load(seed: int = 7) -> str:
    out = io.StringIO()
    demo.load(items=10, seed=seed, out=out)
    return out.getvalue()


def schedule(db) -> list[tuple]:
    return [
        (s["theater_name"], s["name"], s["start"], sorted(s["prices"].items()))
        for s in db.sessions.find().sort([("start", 1), ("theater_name", 1)])
    ]


def test_demo_loads_three_halls_of_different_shapes_and_four_weeks_of_sessions(
    mongo_db,
):
    output = load()

    halls = {t["name"]: t for t in mongo_db.theaters.find()}
    assert set(halls) == {"The Royal", "The Horseshoe", "Studio 3"}
    royal, horseshoe, studio = (
        halls["The Royal"],
        halls["The Horseshoe"],
        halls["Studio 3"],
    )
    assert royal["seatsAvailable"] == 600
    assert {len(row) for row in royal["seats"]} == {32}  # rectangle + 2 aisles
    assert len({len(row) for row in horseshoe["seats"]}) > 2  # ragged
    assert any(all(v == -1 for v in row) for row in horseshoe["seats"])  # aisle row
    assert {c.get("row") for row in horseshoe["layout"] for c in row} >= {"SL", "SR"}
    assert studio["seatsAvailable"] == 96
    flags = {f for row in royal["layout"] for c in row for f in c.get("flags", [])}
    assert flags == {"wheelchair", "companion", "restricted"}

    sessions = list(mongo_db.sessions.find())
    assert 40 <= len(sessions) <= 120
    assert min(s["start"] for s in sessions) > timezone.now()
    span = max(s["start"] for s in sessions) - min(s["start"] for s in sessions)
    assert span.days >= 25
    assert len({s["name"] for s in sessions}) == 6
    # The compact shape: the hall's layout version, not a copy of it.
    assert all("layout" not in s and "reservations" not in s for s in sessions)
    layouts = {s["layout_id"] for s in sessions}
    assert mongo_db.seat_layouts.count_documents({"_id": {"$in": list(layouts)}}) == 3
    assert f"{len(sessions)} sessions" in output
    assert selectors.session_invariant_violations() == []
    assert len(selectors.upcoming_sessions()) == 6


def test_demo_is_deterministic_for_a_seed_and_skips_a_second_load(
    mongo_db, mongo_uri, mongo_admin
):
    load(seed=3)
    first = schedule(mongo_db)

    assert "already present" in load(seed=3)
    assert schedule(mongo_db) == first

    other = mongo_db.name + "_b"
    try:
        mongo.connect(mongo_uri, db=other)
        mongo.ensure_indexes()
        load(seed=3)
        assert schedule(mongo_admin[other]) == first
    finally:
        mongo_admin.drop_database(other)
