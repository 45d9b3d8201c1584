"""The base of every MongoEngine document in Marquee."""

import mongoengine as me


class Document(me.Document):
    """Indexes are created by ``manage.py mongo_setup`` only, never on first use.

    MongoEngine would otherwise issue ``createIndexes`` from whichever process
    touches a collection first, in the middle of a request, and some servers
    reject re-creating an index that exists (2dsphere on the embedded one).
    """

    meta = {"abstract": True, "auto_create_index": False}
