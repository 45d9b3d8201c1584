"""MongoEngine documents owned by the booking app (indexes in each ``meta``).

Shapes follow the theater reservation article: a theater holds the seat map
of its one hall; each session copies that map and keeps the live state of
every seat in a 2D array, so that holding any set of seats is ONE conditional
update of ONE document (``$and`` of ``seats.<r>.<c> == FREE``). The counter
keeps the article's name, ``seatsAvailable``.

Reads of the seat map go through pymongo (``booking.selectors``): a hall of a
few hundred cells would otherwise be turned into as many objects on every
refresh of every open map.
"""

import mongoengine as me

from config.documents import Document

# The state of one cell of ``Session.seats``. A gap (aisle, stage edge, the
# hole of a horseshoe) can never equal FREE, so the hold filter refuses it on
# its own, just as it refuses a position that is off the map.
FREE = 0
TAKEN = 1
GAP = -1

# Flags a seat may carry, in the order they are spoken in accessible names.
FLAGS = ("wheelchair", "companion", "restricted")


class Zone(me.EmbeddedDocument):
    """A price zone of a hall (Stalls, Circle, ...); ``rank`` 0 is the best."""

    code = me.StringField(required=True, regex=r"^[a-z][a-z0-9_-]{0,31}$")
    name = me.StringField(required=True, max_length=60)
    colour = me.StringField(required=True, regex=r"^#[0-9a-fA-F]{6}$")
    rank = me.IntField(required=True, min_value=0)


class Cell(me.EmbeddedDocument):
    """One cell of a seat layout: a seat, or a gap (aisle, stage edge)."""

    kind = me.StringField(required=True, choices=("seat", "gap"))
    # The rest describes a seat; a gap has none of it. The row label is per
    # seat, not per row: the slips of a horseshoe sit in a grid row of the
    # stalls but are sold as rows of their own.
    row = me.StringField(max_length=12)
    number = me.IntField(min_value=0)
    zone = me.StringField()
    flags = me.ListField(me.StringField(choices=FLAGS))


class Theater(Document):
    """A hall with its seat layout of any shape (rows may differ in length)."""

    name = me.StringField(required=True, max_length=120)
    zones = me.EmbeddedDocumentListField(Zone)
    layout = me.ListField(me.ListField(me.EmbeddedDocumentField(Cell)))
    # The state map every session starts from: FREE for a seat, GAP otherwise.
    seats = me.ListField(me.ListField(me.IntField(min_value=GAP, max_value=FREE)))
    # The number of real seats (the article's field name).
    seats_available = me.IntField(db_field="seatsAvailable", min_value=0)
    created_at = me.DateTimeField()

    meta = {
        "collection": "theaters",
        "indexes": [{"fields": ["name"], "unique": True}],
    }


class SeatEntry(me.EmbeddedDocument):
    """One seat held by a cart (in ``reservations``) or sold (in ``sold``).

    One entry per seat, not one per hold: releasing a single seat of a
    multi-seat hold is then a ``$pull`` of that entry guarded by an
    ``$elemMatch`` on ``{cart_id, seat}``, with no positional update of a
    nested seat list, no running total to keep in step with it, and no empty
    entries left behind. A hold of n seats pushes n entries with ``$each`` in
    the same update that takes the seats. Label, zone and price are copied at
    hold time: the cart shows and charges what the shopper was offered.
    """

    cart_id = me.StringField(required=True)
    seat = me.ListField(me.IntField(min_value=0), required=True)  # [row, col]
    label = me.StringField(required=True)  # "Row F, seat 12"
    zone = me.StringField(required=True)
    price = me.Decimal128Field(required=True, min_value=0)
    at = me.DateTimeField(required=True)


class Session(Document):
    """One performance of a show in a theater, with the live state of its seats."""

    theater_id = me.ObjectIdField(required=True)
    theater_name = me.StringField(required=True)
    name = me.StringField(required=True, max_length=160)  # the show
    description = me.StringField(default="")
    start = me.DateTimeField(required=True)
    end = me.DateTimeField(required=True)
    # Copied from the theater: a session keeps the layout it went on sale
    # with, and the seat map is drawn from this one document.
    zones = me.EmbeddedDocumentListField(Zone)
    layout = me.ListField(me.ListField(me.EmbeddedDocumentField(Cell)))
    prices = me.MapField(me.Decimal128Field(min_value=0))  # zone code
    seats = me.ListField(me.ListField(me.IntField(min_value=GAP, max_value=TAKEN)))
    seats_available = me.IntField(db_field="seatsAvailable", min_value=0)
    reservations = me.EmbeddedDocumentListField(SeatEntry)
    # Seats whose hold was committed at checkout: they stay TAKEN, and the
    # entry moved here in the same update, so "taken == held + sold" can be
    # checked on this document alone.
    sold = me.EmbeddedDocumentListField(SeatEntry)
    # Bumped by every change of seat state: an open map asks "anything new
    # since version v?" and gets an empty answer when nothing moved.
    version = me.IntField(default=0)
    created_at = me.DateTimeField()

    meta = {
        "collection": "sessions",
        "indexes": [
            {"fields": ["reservations.cart_id"]},
            {"fields": ["start"]},
            {"fields": ["theater_id", "start"]},
        ],
    }
