"""What the activity log derives from its partitions (the partitions
themselves are plain collections: see ``activity.services.partitions``)."""

import mongoengine as me

from config.documents import Document


class Partner(me.EmbeddedDocument):
    item = me.StringField(required=True)
    n = me.IntField(required=True)  # paid orders holding both items


class BoughtTogether(Document):
    """One item's top partners: the items most often in the same paid
    orders over the job's window, most first (ties: by item id)."""

    item_id = me.StringField(primary_key=True)
    partners = me.EmbeddedDocumentListField(Partner)
    # The run that wrote it: a run deletes what older runs wrote.
    run = me.StringField(required=True)
    at = me.DateTimeField(required=True)

    meta = {"collection": "activity_bought_together", "indexes": [{"fields": ["run"]}]}


class ItemDay(Document):
    """One item's activity on one local day, counted by type.

    ``_id`` is ``<YYYY-MM-DD>|<item_id>``; recounted whole (replaced) from
    the partitions by the counting job, so a count is never added twice.
    """

    key = me.StringField(primary_key=True)
    day = me.StringField(required=True)
    item = me.StringField(required=True)
    view = me.IntField(default=0)
    add = me.IntField(default=0)
    order = me.IntField(default=0)

    meta = {
        "collection": "activity_item_days",
        "indexes": [{"fields": ["day", "item"]}],
    }
