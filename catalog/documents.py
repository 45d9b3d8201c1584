"""MongoEngine documents owned by the catalog app (indexes in each ``meta``).

Shapes follow the retail reference architecture: items and their variants
are separate documents (a variant list can be long, documents stay bounded),
and prices live in their own collection keyed by ``<item or sku>_<scope>`` so
that every price that could apply to one variant in one store is fetched by
one ``$in`` on ``_id``.
"""

import mongoengine as me

from config.documents import Document

# The scope of a price that applies when no store is chosen (the web shop),
# and the last resort for any store.
ONLINE = "online"


class Item(Document):
    """A product as shoppers know it; sizes and colours are its variants."""

    item_id = me.StringField(primary_key=True)
    department = me.StringField(required=True)
    # A path such as "Shoes/Women/Pumps": prefix queries select a subtree.
    category = me.StringField(required=True)
    brand = me.StringField()
    title = me.StringField(required=True)
    description = me.StringField(default="")
    style = me.StringField()
    thumbnail = me.StringField()
    rating = me.FloatField(min_value=0, max_value=5)
    # Lower-cased tokens for keyword search (no text index on every server).
    keywords = me.ListField(me.StringField())
    created_at = me.DateTimeField()

    meta = {
        "collection": "items",
        "indexes": [
            {"fields": ["category"]},
            {"fields": ["department", "category"]},
        ],
    }


class Variant(Document):
    """One sellable SKU of an item (its size, colour, ...)."""

    sku = me.StringField(primary_key=True)
    item_id = me.StringField(required=True)
    attributes = me.DictField()

    meta = {
        "collection": "variants",
        # All variants of an item, sorted by SKU, from the index alone.
        "indexes": [{"fields": ["item_id", "sku"]}],
    }


class Price(Document):
    """A price for an item or a SKU in one store, one store group, or online.

    ``_id`` is ``<item_id or sku>_<store_id | group_id | "online">``, e.g.
    ``30671_store23`` or ``93284847362823_sgroup12``.
    """

    price_id = me.StringField(primary_key=True)
    amount = me.Decimal128Field(required=True, min_value=0, precision=2)

    meta = {"collection": "prices"}


class Address(me.EmbeddedDocument):
    line1 = me.StringField()
    city = me.StringField()
    region = me.StringField()
    zip = me.StringField()
    country = me.StringField()


class Store(Document):
    """A physical store; its ``group`` (a store group id) scopes group prices."""

    store_id = me.StringField(required=True, unique=True)
    name = me.StringField(required=True)
    group = me.StringField(required=True)
    region = me.StringField()
    address = me.EmbeddedDocumentField(Address)
    location = me.PointField()

    meta = {
        "collection": "stores",
        "indexes": [
            {"fields": ["name"]},
            {"fields": ["address.zip"]},
            {"fields": [("location", "2dsphere")]},
        ],
    }


# --- Online stock and its reservations -------------------------------------
#
# Double bookkeeping (DESIGN §3): every unit a cart holds is written on the
# inventory (a reservation entry) and on the cart (a line), so either side can
# be rolled back. Only catalog.services.stock changes these documents, each
# change one conditional update of one inventory document.


class StockReservation(me.EmbeddedDocument):
    """Units of one SKU held by one cart (at most one entry per cart)."""

    cart_id = me.StringField(required=True)
    quantity = me.IntField(required=True, min_value=1)
    # When the entry was last reserved, adjusted or confirmed by the reconciler.
    at = me.DateTimeField(required=True)


class Inventory(Document):
    """The online stock of one SKU.

    Units the shop still has = ``quantity`` (free to reserve) plus the sum of
    ``reservations``. Conservation, checked per SKU from this one document:
    ``quantity + sum(reservations) + sold == received``, where ``received``
    is the sum of the ledger entries applied so far (``ledger_seq`` of them).
    """

    sku = me.StringField(primary_key=True)
    quantity = me.IntField(required=True, min_value=0, default=0)
    reservations = me.EmbeddedDocumentListField(StockReservation)
    received = me.IntField(required=True, min_value=0, default=0)
    sold = me.IntField(required=True, min_value=0, default=0)
    ledger_seq = me.IntField(required=True, min_value=0, default=0)
    # References of the returns applied (stock_return): each applies once.
    returns = me.ListField(me.StringField())
    modified_at = me.DateTimeField()

    meta = {
        "collection": "inventories",
        "indexes": [
            # Which SKUs does a cart hold (reconciliation, checkout).
            {"fields": ["reservations.cart_id"]},
        ],
    }


class StockMovement(Document):
    """The stock ledger: one entry per receipt of units (initial stock, restocks).

    Entries of a SKU are numbered 1, 2, ... and applied to its inventory in
    that order (``Inventory.ledger_seq`` is the last one applied), so a crash
    between writing an entry and applying it is seen and finished later,
    never applied twice. ``pending`` is set until the entry is applied.
    """

    sku = me.StringField(required=True)
    seq = me.IntField(required=True, min_value=1)
    quantity = me.IntField(required=True, min_value=1)
    note = me.StringField(default="")
    at = me.DateTimeField(required=True)
    pending = me.BooleanField()

    meta = {
        "collection": "stock_ledger",
        "indexes": [
            {"fields": ["sku", "seq"], "unique": True},
            {"fields": ["pending"], "sparse": True},
        ],
    }
