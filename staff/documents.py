"""MongoEngine documents of the staff app: the audit trail and sales counters.

Only staff.services writes them.
"""

import mongoengine as me

from config.documents import Document


class AuditEntry(Document):
    """One thing that happened, append-only: never updated, never deleted.

    ``actor`` is ``staff:<username>``, ``shopper``, ``job:<name>`` or
    ``command:<name>``;
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
    """Sales of one of the shop's local hours (``h:2030-01-15T12``, starting
    at that UTC time; ``staff.services.counters.hour_start``).

    The computed pattern: moved by one guarded ``$inc`` per order paid or
    refunded (staff.services.counters), so the dashboard reads at most 720
    small documents for its 30 days, never the orders. Money is in pence
    (integers add exactly). ``paid`` and ``refunded_orders`` list the order
    numbers already counted: the filter of each ``$inc`` requires the number
    to be absent, so a repeated or raced call counts an order once.

    One more document, ``{_id: "zone", kind: "zone", zone}``, names the zone
    whose hours the buckets count (``counters_convert`` recounts them when
    ``TIME_ZONE`` changes).
    """

    bucket = me.StringField(primary_key=True)
    kind = me.StringField(required=True)  # hour
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
    # The orders counted, in the order they were counted (the day rollups
    # sum their products: staff.services.rollups).
    paid = me.ListField(me.StringField())
    refunded_orders = me.ListField(me.StringField())

    meta = {
        "collection": "sales_counters",
        "indexes": [{"fields": ["kind", "start"]}],
    }


class SalesRollup(Document):
    """A local day's per-product figures (``d:2030-01-15``), summed from the
    orders its hour buckets list: a cache for the dashboard's top products,
    never a source of truth. ``counted`` is how many orders and refunds the day's hours
    had counted when it was summed; when the hours say more, it is summed
    again (staff.services.rollups)."""

    day = me.StringField(primary_key=True)
    counted = me.IntField(required=True)
    products = me.DictField()
    # Per hour bucket, how many of its paid and refunded numbers are summed:
    # [paid, refunded] (the lists only grow at their end).
    summed = me.DictField()

    meta = {"collection": "sales_rollups"}


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
