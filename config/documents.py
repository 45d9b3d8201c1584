"""The base of every MongoEngine document in Marquee."""

import mongoengine as me
from pymongo.collection import Collection


class Document(me.Document):
    """Indexes are created by ``manage.py mongo_setup`` only, never on first use.

    MongoEngine would otherwise issue ``createIndexes`` from whichever process
    touches a collection first, in the middle of a request, and some servers
    reject re-creating an index that exists (2dsphere on the embedded one).
    """

    meta = {"abstract": True, "auto_create_index": False}

    @classmethod
    def coll(cls) -> Collection:
        """The document's pymongo collection: services write through it with
        the conditional updates (filters carrying the rule) that MongoEngine's
        querysets cannot express."""
        return cls._get_collection()
