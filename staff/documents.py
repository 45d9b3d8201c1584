"""MongoEngine documents of the staff app: the audit trail and sales counters.

Only staff.services writes them.
"""

import mongoengine as me

from config.documents import Document


class AuditEntry(Document):
    """One thing that happened, append-only: never updated, never deleted.

    ``actor`` is ``staff:<username>``, ``shopper`` or a job's name;
    ``object_kind``/``object_id`` name what changed (``order``/number,
    ``cart``/id); ``before``/``after`` are its states around the change.
    """

    at = me.DateTimeField(required=True)
    actor = me.StringField(required=True)
    action = me.StringField(required=True)
    object_kind = me.StringField(required=True)
    object_id = me.StringField(required=True)
    reason = me.StringField(default="")
    before = me.StringField()
    after = me.StringField()
    details = me.DictField()

    meta = {
        "collection": "audit",
        "indexes": [
            {"fields": ["object_kind", "object_id", "at"]},
            {"fields": ["-at"]},
        ],
    }


class SalesCounter(Document):
    """Sales of one hour (``h:2030-01-15T12``) or one day (``d:2030-01-15``).

    The computed pattern: moved by one ``$inc`` per order paid or refunded, so
    the dashboard reads 24 + 30 small documents, never the orders. Money is
    in pence (integers add exactly). ``paid`` and ``refunded`` list the order
    numbers already counted: the filter of each ``$inc`` requires the number
    to be absent, so a repeated or raced call counts an order once; days take
    their hours' orders in that order (``applied``), so each once too.
    Hours are UTC hours; days are local days (settings.TIME_ZONE).
    """

    bucket = me.StringField(primary_key=True)
    kind = me.StringField(required=True)  # hour, day
    start = me.DateTimeField(required=True)
    orders = me.IntField(default=0)
    revenue = me.IntField(default=0)  # pence, gross of refunds
    ticket_revenue = me.IntField(default=0)
    goods_revenue = me.IntField(default=0)
    tickets = me.IntField(default=0)
    units = me.IntField(default=0)
    refunds = me.IntField(default=0)
    refunded = me.IntField(default=0)  # pence
    refunded_tickets = me.IntField(default=0)
    refunded_units = me.IntField(default=0)
    # Per product or show (day buckets): {key: {"name", "qty", "revenue"}}.
    products = me.DictField()
    # Hour buckets: the orders counted, in the order they were counted.
    paid = me.ListField(me.StringField())
    refunded_orders = me.ListField(me.StringField())
    # Day buckets: per list and hour ("paid" -> "14" -> n), how many of that
    # hour's orders the day has taken (staff.services.counters).
    applied = me.DictField()

    meta = {
        "collection": "sales_counters",
        "indexes": [{"fields": ["kind", "start"]}],
    }


class SalesEntry(Document):
    """What one order adds to its day bucket (``<list>|<hour>|<number>``),
    written before the order enters its hour's list so that any process can
    apply it to the day; deleted once applied."""

    key = me.StringField(primary_key=True)
    inc = me.ListField()
    set = me.ListField()

    meta = {"collection": "sales_entries"}


class OrderSearchIndexes(Document):
    """Indexes on the shop's ``orders`` collection that only staff pages need
    (search by email, lists by date and state). Declared here so the shop's
    documents stay the shop's; never instantiated.
    """

    id = me.ObjectIdField(primary_key=True)
    email = me.StringField()
    state = me.StringField()
    created_at = me.DateTimeField()
    lines = me.ListField(me.DictField())

    meta = {
        "collection": "orders",
        "strict": False,
        "indexes": [
            # Each ends with the list's sort (newest first, _id breaking
            # ties), so a page is read in index order, never sorted.
            {"fields": ["email", "-created_at", "-id"]},
            {"fields": ["-created_at", "-id"]},
            {"fields": ["state", "-created_at", "-id"]},
            # Tickets or goods (multikey on the lines' kinds), with or
            # without a state.
            {"fields": ["lines.kind", "-created_at", "-id"]},
            {"fields": ["state", "lines.kind", "-created_at", "-id"]},
        ],
    }


class LowStockIndex(Document):
    """An index on the catalog's ``inventories`` for the dashboard's low-stock
    list (free units under the threshold); never instantiated."""

    quantity = me.IntField()

    meta = {
        "collection": "inventories",
        "strict": False,
        "indexes": [{"fields": ["quantity"]}],
    }
