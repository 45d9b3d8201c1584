"""MongoEngine documents owned by the catalog app (indexes in each ``meta``).

Shapes follow the retail reference architecture: items and their variants
are separate documents (a variant list can be long, documents stay bounded),
and prices live in their own collection keyed by ``<item or sku>_<scope>`` so
that every price that could apply to one variant in one store is fetched by
one ``$in`` on ``_id``.
"""

import mongoengine as me

from config.decimals import MoneyField
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
    # Secondary attributes (material, ...): shown and searchable, not facets.
    attributes = me.DictField()
    created_at = me.DateTimeField()
    # Bumped by every change to the item, its variants or its prices; the
    # summary records the version it was built from (see summary_rebuild).
    version = me.IntField(default=0)

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
    amount = MoneyField(required=True, min_value=0, precision=2)

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


# --- Stock: counters and the journal of moves -------------------------------
#
# What a cart holds is its line (shop.kinds.line_stock, DESIGN §3.8): the
# inventory keeps only counters and a short journal of the moves in flight
# between it and the carts, so a hold costs the same however many carts
# hold the SKU. Only catalog.services (counters, stock) change these
# documents.


class InventoryMove(me.EmbeddedDocument):
    """A move of the counter whose cart side may not be finished yet.

    ``hold`` names the cart's line of the location (``hold_id``). ``takes``:
    units taken from ``quantity`` for it (the line's ``applied`` lists
    ``op`` once the cart has them). ``gives``: units given back (to
    ``quantity`` and ``sold``) for the cart's ``stock_back`` entry ``op``.
    """

    op = me.StringField(required=True)
    hold = me.StringField(required=True)
    units = me.IntField(min_value=0)
    at = me.DateTimeField(required=True)
    # "recovery": written by the reconciler, kept as a fence (counters.py).
    by = me.StringField()


# A stock location: where units of a SKU are counted and held. Online stock
# is keyed by the SKU itself, a store's by "<sku>@<store_id>" (click &
# collect): each location is an ``Inventory`` of its own, so one protocol
# (shop/kinds/line_stock.py) reserves both.
STORE_MARK = "@"


def stock_location(sku: str, store_id: str | None = None) -> str:
    """The stock location of ``sku``: online (no store) or at ``store_id``."""
    return f"{sku}{STORE_MARK}{store_id}" if store_id else sku


def location_parts(key: str) -> tuple[str, str | None]:
    """(sku, store_id or None) of a stock location key."""
    sku, _, store_id = key.partition(STORE_MARK)
    return sku, store_id or None


class Inventory(Document):
    """The stock of one SKU at one location (online, or one store's):
    counters, never a list of holders.

    ``_id`` is the stock location (``stock_location``). A store's inventory
    also names its SKU (``of_sku``), item and store, for the reads by SKU,
    item or store; these never change what is counted. (The store's place
    stays on the ``Store``: the nearest stores are a ``$geoNear`` there.)

    Conservation (``stock_problems``): ``quantity + held + sold ==
    received``, where ``held`` is what carts' lines hold plus the moves in
    flight (``takes``/``gives``: ``shop.kinds.line_stock``), and
    ``received`` the sum of the ledger entries applied so far.
    """

    sku = me.StringField(primary_key=True)
    # Units free to reserve; moved only by a conditional $inc.
    quantity = me.IntField(required=True, min_value=0, default=0)
    received = me.IntField(required=True, min_value=0, default=0)
    sold = me.IntField(required=True, min_value=0, default=0)
    ledger_seq = me.IntField(required=True, min_value=0, default=0)
    # References of the returns applied (stock_return): each applies once.
    returns = me.ListField(me.StringField())
    # Ledger entries refused when applied (an adjustment that would have made
    # free stock negative): they count for nothing (stock_correct).
    voided = me.ListField(me.IntField())
    takes = me.EmbeddedDocumentListField(InventoryMove)
    gives = me.EmbeddedDocumentListField(InventoryMove)
    modified_at = me.DateTimeField()
    # A store's stock only (absent online): see the class docstring.
    of_sku = me.StringField()
    item_id = me.StringField()
    store_id = me.StringField()

    meta = {
        "collection": "inventories",
        # Databases of an old shape carry ``reservations`` until
        # ``manage.py stock_lines_migrate`` has moved them into the lines.
        "strict": False,
        "indexes": [
            # Moves left in flight (the reconciler; normally empty).
            {"fields": ["takes.at"], "sparse": True},
            {"fields": ["gives.at"], "sparse": True},
            # A store's stock: of a SKU (nearest stores), of an item's SKUs
            # (totals), of a store (its report). Online inventories lack them.
            {"fields": ["of_sku"], "sparse": True},
            {"fields": ["item_id"], "sparse": True},
            {"fields": ["store_id"], "sparse": True},
        ],
        # The old shape's lookup of a cart's reservations.
        "retired_indexes": ["reservations.cart_id_1"],
    }


def hold_id(sku: str, cart_id: str) -> str:
    """What a counter's journal entry names as the holder of a move: one
    cart's line of one stock location (``"<location>|<cart_id>"``)."""
    return f"{sku}|{cart_id}"


class StockMovement(Document):
    """The stock ledger: one entry per receipt of units (initial stock,
    restocks) or adjustment (``kind``: damaged, count correction; negative
    when units leave).

    Entries of a SKU are numbered 1, 2, ... and applied to its inventory in
    that order (``Inventory.ledger_seq`` is the last one applied), so a crash
    between writing an entry and applying it is seen and finished later,
    never applied twice. ``pending`` is set until the entry is applied.

    An entry written for a request that carries a key (a staff form) has
    ``_id = "<sku>|<key>"``, so the same request sent twice writes once
    (``catalog.services.stock._record``); others have an ObjectId.
    """

    sku = me.StringField(required=True)
    seq = me.IntField(required=True, min_value=1)
    quantity = me.IntField(required=True)  # never 0
    kind = me.StringField(default="receipt")
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


class StockThreshold(Document):
    """A SKU's own low-stock threshold (others use settings.LOW_STOCK_THRESHOLD):
    the SKU is low while its free units are under it. Few SKUs have one."""

    sku = me.StringField(primary_key=True)
    threshold = me.IntField(required=True, min_value=0)

    meta = {"collection": "stock_thresholds", "indexes": [{"fields": ["threshold"]}]}


class SummaryVariant(me.EmbeddedDocument):
    sku = me.StringField(required=True)
    # Facet tokens of this variant ("size=6", "colour=red"), indexed.
    attrs = me.ListField(me.StringField())
    # Other attributes, searchable through keywords, not indexed.
    sattrs = me.DictField()


class Summary(Document):
    """One per sellable item: everything browsing needs, in one document.

    A read model: ``catalog.services.summaries`` rebuilds it from the item,
    its variants and its online prices whenever one of them changes; nothing
    else writes it. Facet values are ``"<facet>=<value>"`` tokens (see
    ``catalog.facets``) so one multikey index serves every facet.
    """

    item_id = me.StringField(primary_key=True)
    title = me.StringField(required=True)
    department = me.StringField(required=True)
    category = me.StringField(required=True)
    brand = me.StringField()
    rating = me.FloatField()
    created_at = me.DateTimeField()
    # The online price (lowest across variants), shown on the card.
    price = MoneyField(precision=2)
    # The same amount in integer cents: exact, and the sort and range key
    # (a Decimal128 sort is far slower than an integer one on some servers).
    price_cents = me.IntField()
    # Item-level facet tokens (brand, price band), indexed.
    attrs = me.ListField(me.StringField())
    sattrs = me.DictField()
    vars = me.ListField(me.EmbeddedDocumentField(SummaryVariant))
    # Union of the variants' tokens: counts variant facets without
    # unwinding every variant (not indexed; filters use ``vars.attrs``).
    vattrs = me.ListField(me.StringField())
    keywords = me.ListField(me.StringField())
    # The browse scopes the item shows in (``catalog.scopes.scopes_of``):
    # one equality serves the catalogue, a department or a category subtree.
    scopes = me.ListField(me.StringField())
    version = me.IntField(default=0)

    meta = {
        "collection": "summaries",
        # Every browse starts from a department when it has one; the sort
        # indexes end with _id, the tie-break that makes paging deterministic.
        "indexes": [
            {"fields": ["department", "attrs", "category", "item_id"]},
            {"fields": ["department", "vars.attrs", "category", "item_id"]},
            {"fields": ["department", "category", "item_id"]},
            {"fields": ["department", "price_cents", "item_id"]},
            {"fields": ["department", "rating", "item_id"]},
            {"fields": ["department", "created_at", "item_id"]},
            {"fields": ["department", "keywords", "item_id"]},
            {"fields": ["keywords", "item_id"]},
            # A page of a scope with no other filter reads a window of one of
            # these (see ``BrowseScope``), whatever the scope's size.
            {"fields": ["scopes", "rating", "item_id"]},
            {"fields": ["scopes", "price_cents", "item_id"]},
            {"fields": ["scopes", "created_at", "item_id"]},
        ],
    }


class BrowseScope(Document):
    """The counts of one browse scope, kept by the summary service.

    A read model of the summaries (``catalog.scopes`` says what is counted):
    a page that filters by nothing but its scope takes its total, facet and
    category counts from here, and its sort's bucket counts bound the query
    for the page itself. Every summary write adds its difference with
    ``$inc``; ``browse_scopes_rebuild`` recounts from the summaries, after a
    bulk load and as a scheduled repair.
    """

    scope = me.StringField(primary_key=True)
    n = me.IntField(default=0)
    # Escaped facet token -> items carrying it.
    facets = me.DictField()
    # Escaped child path (a department in the catalogue) -> items under it.
    children = me.DictField()
    # Sort -> bucket -> items.
    ranks = me.DictField()
    # The version of the counts: a recount sets a new epoch, and every
    # summary write in the scope adds one to v (``catalog.services.scopes``).
    epoch = me.ObjectIdField()
    v = me.IntField(default=0)
    # A department's last written item ids, one per version (newest last).
    changed = me.ListField(me.StringField())

    meta = {"collection": "browse_scopes"}


# --- The old shape of store stock (before click & collect) -----------------
# Kept only so ``manage.py store_stock_migrate`` can read and drain it: a
# store's counts now live in its ``Inventory`` documents.


class StockLine(me.EmbeddedDocument):
    sku = me.StringField(required=True)
    quantity = me.IntField(required=True, min_value=0)


class StoreStock(Document):
    """The old shape: what one store held of one item, per variant. Read
    and emptied by ``store_stock_migrate`` only; nothing else uses it."""

    stock_id = me.StringField(primary_key=True)  # "<store_id>|<item_id>"
    store_id = me.StringField(required=True)
    item_id = me.StringField(required=True)
    # No automatic single-field 2dsphere index: the compound one below serves
    # $geoNear, and every geo index multiplies the cost of a stock write.
    location = me.PointField(required=True, auto_index=False)
    vars = me.ListField(me.EmbeddedDocumentField(StockLine))

    meta = {
        "collection": "store_stock",
        "indexes": [
            {"fields": ["store_id"]},
            {"fields": ["item_id", "store_id"], "unique": True},
            {"fields": ["item_id", "(location"]},
        ],
    }


def store_stock_id(store_id: str, item_id: str) -> str:
    return f"{store_id}|{item_id}"
