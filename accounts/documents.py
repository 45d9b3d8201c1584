"""The accounts app's MongoDB documents: throttle counters and the record
of emails sent (so a task run twice sends once)."""

import mongoengine as me

from config.documents import Document


class ThrottleCount(Document):
    """Requests of one client (a session or an address) in one window:
    ``_id`` is ``<who>|<window start>``; deleted by the TTL index once the
    window is long over."""

    key = me.StringField(primary_key=True)
    n = me.IntField(default=0)
    expires = me.DateTimeField()

    meta = {
        "collection": "throttle_counts",
        "indexes": [{"fields": ["expires"], "expireAfterSeconds": 0}],
    }


class SentEmail(Document):
    """An order's email, claimed before it is sent: ``_id`` is ``<order
    number>|<kind>``. ``sending`` while its sender has it (since ``at``);
    without it, the email was sent (accounts/tasks.py)."""

    key = me.StringField(primary_key=True)
    to = me.StringField(required=True)
    at = me.DateTimeField(required=True)
    sending = me.BooleanField()

    meta = {"collection": "sent_emails"}
