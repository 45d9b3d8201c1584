import mongoengine as me

from config import mongo
from config.documents import Document


class Place(Document):
    """A document with the index kinds Marquee uses, 2dsphere included."""

    name = me.StringField()
    location = me.PointField()
    meta = {
        "collection": "test_places",
        "indexes": [
            {"fields": ["name"], "unique": True},
            "-name",
            {"fields": [("location", "2dsphere")]},
        ],
    }


def test_ensure_indexes_is_idempotent_with_a_2dsphere_index(mongo_db):
    first = mongo.ensure_indexes([Place])
    second = mongo.ensure_indexes([Place])

    assert len(first) == 3
    assert second == []
    keys = [info["key"] for info in mongo_db.test_places.index_information().values()]
    assert [("location", "2dsphere")] in keys


def test_every_domain_document_leaves_index_creation_to_mongo_setup():
    for cls in mongo.domain_documents():
        assert cls._meta.get("auto_create_index") is False, cls.__name__


def test_an_index_an_earlier_version_declared_is_dropped_once(mongo_db):
    """A database made before seat holds were pruned by (session, at) keeps
    its index by session alone until ``mongo_setup``: then it goes, and the
    next setup finds nothing to do."""
    from booking.documents import SeatHolds

    holds = mongo_db[SeatHolds._meta["collection"]]
    holds.create_index("session_id")
    assert "session_id_1" in holds.index_information()

    assert mongo.ensure_indexes([SeatHolds]) == []
    assert mongo.ensure_indexes([SeatHolds]) == []

    names = holds.index_information()
    assert "session_id_1" not in names
    assert "session_id_1_at_1" in names
