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
