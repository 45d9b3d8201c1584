"""What Marquee relies on from its MongoDB-compatible server, per server.

Each difference config/compat.py works around is asserted here for the
server this session runs on (the Rust server by default, the Python server
with MARQUEE_DB_ENGINE=python, or MongoDB through MONGODB_URI), so that a
server upgrade that changes one is noticed, and the workaround can go.
"""

import os

import pytest
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure

from config import compat, engine, mongo

# Servers whose unique index forgets a key when an update removes or changes
# it (the Rust server 0.5.3-beta.193 keeps it until the document is deleted).
FREES_UNIQUE_KEYS_ON_UPDATE = ("mongodb", "python")


@pytest.fixture
def server():
    """ "mongodb" for a server MONGODB_URI names, else the embedded engine."""
    if os.environ.get("MONGODB_URI"):
        return "mongodb"
    return engine.resolve().name


def _cart(mongo_db):
    carts = mongo_db.conformance_carts
    carts.insert_one(
        {
            "_id": "c1",
            "items": [{"sku": "a", "quantity": 1}, {"sku": "b", "quantity": 2}],
        }
    )
    return carts


POSITIONAL = (
    {"_id": "c1", "items": {"$elemMatch": {"sku": "b", "quantity": 2}}},
    {"$inc": {"items.$.quantity": 3}},
)


def test_find_and_modify_with_a_positional_operator(mongo_db, server):
    carts = _cart(mongo_db)
    try:
        after = carts.find_one_and_update(
            *POSITIONAL, return_document=ReturnDocument.AFTER
        )
        refused = False
    except OperationFailure:
        refused = True

    assert refused == (server == "python")
    if not refused:
        assert after["items"][1] == {"sku": "b", "quantity": 5}


def test_the_positional_helper_updates_once_and_returns_the_document(mongo_db, server):
    carts = _cart(mongo_db)

    after = compat.find_one_and_update_positional(carts, *POSITIONAL)
    missed = compat.find_one_and_update_positional(
        carts,
        {"_id": "c1", "items": {"$elemMatch": {"sku": "b", "quantity": 2}}},
        {"$inc": {"items.$.quantity": 3}},
    )

    assert after["items"] == [{"sku": "a", "quantity": 1}, {"sku": "b", "quantity": 5}]
    assert missed is None  # the guard no longer holds: nothing changed
    assert carts.find_one({"_id": "c1"})["items"][1]["quantity"] == 5


def _stages(plan: dict) -> list[str]:
    stages = []
    while plan:
        stages.append(plan.get("stage"))
        plan = plan.get("inputStage")
    return stages


def test_an_anchored_regex_on_an_indexed_array_uses_the_index(mongo_db, server):
    """Keyword search's prefix match (catalog.selectors.browse)."""
    coll = mongo_db.conformance_keywords
    coll.create_index("keywords")
    coll.insert_many([{"keywords": [f"w{i}", "all"]} for i in range(500)])

    explain = coll.find({"keywords": {"$regex": "^w49"}}).explain()
    stages = _stages(explain["queryPlanner"]["winningPlan"])

    assert coll.count_documents({"keywords": {"$regex": "^w49"}}) == 11
    # The Python server scans the collection; MongoDB and the Rust server
    # walk the index.
    assert ("IXSCAN" in stages) == (server != "python"), stages


def test_an_identical_2dsphere_index_is_refused_again_but_ensure_indexes_is_idempotent(
    mongo_db, server
):
    coll = mongo_db.conformance_places
    coll.create_index([("location", "2dsphere")])
    try:
        coll.create_index([("location", "2dsphere")])
        refused = False
    except OperationFailure:
        refused = True

    assert refused == (server != "mongodb")
    assert mongo.ensure_indexes() == []  # the fixture created them all already


def test_a_unique_key_freed_by_an_update_can_be_taken_again(mongo_db, server):
    """One live cart per owner rests on this (shop.services.lines.new_cart)."""
    coll = mongo_db.conformance_owners
    coll.create_index("live_owner", unique=True, sparse=True)
    coll.insert_one({"_id": 1, "live_owner": "alice"})
    coll.update_one({"_id": 1}, {"$unset": {"live_owner": ""}})
    try:
        coll.insert_one({"_id": 2, "live_owner": "alice"})
        taken = True
    except DuplicateKeyError:
        taken = False

    assert taken == (server in FREES_UNIQUE_KEYS_ON_UPDATE), server


def test_an_upsert_whose_guard_fails_on_an_existing_id_is_a_duplicate(mongo_db, server):
    """What ``accounts.throttle.hit`` decides by: an upsert guarded on
    ``n < limit`` makes a missing document (whatever the guard), counts one
    under its limit, and on one at its limit tries to make it again, which
    its ``_id`` refuses; never a second document, never a count past it."""
    counts = mongo_db.conformance_counts
    under = {"_id": "w", "n": {"$lt": 2}}
    count = {"$inc": {"n": 1}, "$setOnInsert": {"expires": 1}}

    made = counts.update_one(under, count, upsert=True)
    counts.update_one(under, count, upsert=True)
    with pytest.raises(DuplicateKeyError):
        counts.update_one(under, count, upsert=True)

    assert made.upserted_id == "w"
    assert list(counts.find()) == [{"_id": "w", "n": 2, "expires": 1}]


# Servers whose expressions read a path through an array of sub-documents
# ("$gives.op" over gives: [{op}, ...]) as the array of its values, as
# MongoDB does; both SecantusDB servers (0.5.3) read it as missing.
READ_ARRAY_PATHS_IN_EXPRESSIONS = ("mongodb",)


def test_a_path_through_an_array_of_subdocuments_in_an_expression(mongo_db, server):
    """Why the stock commit's guards are query operators (``gives.op $nin``
    in catalog/services/counters.py ``give``), never an ``$expr`` on
    ``"$gives.op"``: on the embedded servers such a guard would see no ops,
    and a move fenced by a recovery would apply twice. Query operators read
    the path alike on every server."""
    coll = mongo_db.conformance_paths
    coll.insert_one({"_id": 1, "gives": [{"op": "a"}, {"op": "b"}]})

    coll.update_one({"_id": 1}, [{"$set": {"ops": "$gives.op"}}])
    by_query = coll.count_documents({"_id": 1, "gives.op": {"$nin": ["b"]}})

    doc = coll.find_one({"_id": 1})
    if server in READ_ARRAY_PATHS_IN_EXPRESSIONS:
        assert doc["ops"] == ["a", "b"]
    else:
        assert "ops" not in doc, doc
    assert by_query == 0


def test_an_update_that_leaves_a_document_as_it_was_does_not_count_it(mongo_db, server):
    """A pipeline update that moves only some of the documents it matches
    (each guarded inside the update, leaving any other exactly as it was)
    reads the modified count as the documents that moved: a document passed
    through unchanged, a missing field included, must not count, on every
    server. (An earlier shape's holds step relied on it; kept as a property
    of the servers.)"""
    coll = mongo_db.conformance_noop
    coll.insert_many([{"_id": "moves", "n": 1}, {"_id": "stays", "n": 2}])
    stays_before = coll.find_one({"_id": "stays"})
    moves_here = {"$ne": ["$_move", None]}

    result = coll.update_many(
        {"_id": {"$in": ["moves", "stays"]}},
        [
            # A field of the statement's own, set on both and then unset,
            # as the holds' step does.
            {"$set": {"_move": {"$cond": [{"$eq": ["$_id", "moves"]}, 1, None]}}},
            {
                "$set": {
                    "n": {"$cond": [moves_here, 0, "$n"]},
                    "back": {"$cond": [moves_here, ["op"], "$back"]},
                }
            },
            {"$unset": "_move"},
        ],
    )

    assert (result.matched_count, result.modified_count) == (2, 1), server
    assert coll.find_one({"_id": "stays"}) == stays_before == {"_id": "stays", "n": 2}
    assert coll.find_one({"_id": "moves"}) == {"_id": "moves", "n": 0, "back": ["op"]}
