"""``config.mongo.insert_new``: the documents not there yet are inserted,
duplicates are skipped, and any other error is raised, a write concern the
server could not meet included (the caller must not count those written)."""

import pytest
from pymongo import WriteConcern
from pymongo.errors import BulkWriteError

from config.mongo import insert_new


def test_inserts_the_new_and_skips_the_duplicates(mongo_db):
    mongo_db.things.insert_one({"_id": "b"})

    inserted = insert_new(mongo_db.things, [{"_id": "a"}, {"_id": "b"}, {"_id": "c"}])

    assert inserted == [0, 2]
    assert sorted(d["_id"] for d in mongo_db.things.find()) == ["a", "b", "c"]


def test_a_write_concern_not_met_is_raised_even_beside_duplicates(mongo_db):
    mongo_db.things.insert_one({"_id": "b"})
    # One node cannot acknowledge w: 2, as a replica set in a step-down
    # cannot acknowledge w: majority.
    unmet = mongo_db.things.with_options(write_concern=WriteConcern(w=2, wtimeout=100))

    with pytest.raises(BulkWriteError) as raised:
        insert_new(unmet, [{"_id": "a"}, {"_id": "b"}])

    assert raised.value.details["writeConcernErrors"]
