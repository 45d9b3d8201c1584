"""MongoEngine documents owned by the booking app (indexes in each ``meta``).

A hall's layout (cells, labels, zones, flags) never changes once written: it
is a ``SeatLayout`` version, and the theater names its current one. A
session keeps only what changes (DESIGN §3.10):

* ``seats[r][c]``: one integer per cell, the seat's state (see below), so that
  holding any set of seats is ONE conditional update of ONE document whose
  filter says "each of these seats is FREE";
* ``prices`` per zone, and the counters ``seatsAvailable`` (free), ``held``,
  ``sold`` and ``blocked``, which add up to the hall's seats.

A seat's state is FREE (0), GAP (-1), BLOCKED (-2, held back by staff), or
the *tag* of the hold that has it: a random 63-bit number at least
``TAG_MIN``, positive while held and negated once sold. The tag is the whole
link from the seat to its holder: the cart's ``SeatHolds`` document (one per
cart x session, ``_id`` "<session>|<cart>") lists each tag it wrote with the
seats it asked for. Neither document grows with the number of holders, so a
hold costs the same whether 0 or 890 seats are taken; who bought a seat is
on the order (the shop's), and the session only says "sold, under tag t".

Reads of the seat map go through pymongo (``booking.selectors``).
"""

import mongoengine as me

from config.decimals import MoneyField
from config.documents import Document

# The state of one cell of ``Session.seats`` (a hold's tag otherwise). A gap
# (aisle, stage edge) can never equal FREE, so the hold filter refuses it on
# its own, just as it refuses a position that is off the map.
FREE = 0
GAP = -1
BLOCKED = -2
# Tags are drawn from [TAG_MIN, TAG_MIN + 2**62): never a small constant.
TAG_MIN = 2**32

# Flags a seat may carry, in the order they are spoken in accessible names.
FLAGS = ("wheelchair", "companion", "restricted")


def is_held(value: int) -> bool:
    return value >= TAG_MIN


def is_sold(value: int) -> bool:
    return value <= -TAG_MIN


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
    """A hall with its seat layout of any shape (rows may differ in length).

    ``layout`` and ``zones`` are the hall as drawn; ``layout_version`` names
    the ``SeatLayout`` sessions are put on sale with (a re-arranged hall is a
    new version: sessions keep the one they were sold from).
    """

    name = me.StringField(required=True, max_length=120)
    zones = me.EmbeddedDocumentListField(Zone)
    layout = me.ListField(me.ListField(me.EmbeddedDocumentField(Cell)))
    # The state map every session starts from: FREE for a seat, GAP otherwise.
    seats = me.ListField(me.ListField(me.IntField(min_value=GAP, max_value=FREE)))
    # The number of real seats (the article's field name).
    seats_available = me.IntField(db_field="seatsAvailable", min_value=0)
    layout_version = me.IntField(default=1, min_value=1)
    created_at = me.DateTimeField()
    # Whose turn it is to schedule in this hall, and until when (a lease:
    # booking.services.layouts ``_theater_turn``).
    scheduling_token = me.StringField()
    scheduling_until = me.DateTimeField()

    meta = {
        "collection": "theaters",
        "indexes": [{"fields": ["name"], "unique": True}],
    }


class SeatLayout(Document):
    """One immutable version of a hall's layout, shared by its sessions.

    ``_id`` is "<theater id>:<version>" (or ":<content hash>" for a layout a
    converted session carried). Never updated: processes cache it.
    """

    id = me.StringField(primary_key=True)
    theater_id = me.ObjectIdField(required=True)
    version = me.StringField(required=True)
    zones = me.EmbeddedDocumentListField(Zone)
    layout = me.ListField(me.ListField(me.EmbeddedDocumentField(Cell)))
    seats = me.ListField(me.ListField(me.IntField(min_value=GAP, max_value=FREE)))
    seat_count = me.IntField(min_value=0)
    created_at = me.DateTimeField()

    meta = {"collection": "seat_layouts", "indexes": []}


class Session(Document):
    """One performance of a show in a theater: the state of its seats."""

    theater_id = me.ObjectIdField(required=True)
    theater_name = me.StringField(required=True)
    layout_id = me.StringField(required=True)  # a SeatLayout
    name = me.StringField(required=True, max_length=160)  # the show
    description = me.StringField(default="")
    start = me.DateTimeField(required=True)
    end = me.DateTimeField(required=True)
    prices = me.MapField(MoneyField(min_value=0))  # zone code
    seats = me.ListField(me.ListField(me.IntField()))
    seats_available = me.IntField(db_field="seatsAvailable", min_value=0)
    held = me.IntField(default=0, min_value=0)
    sold = me.IntField(default=0, min_value=0)
    blocked = me.IntField(default=0, min_value=0)
    seat_count = me.IntField(min_value=0)
    # Bumped by every change of seat state: an open map asks "anything new
    # since version v?" and gets an empty answer when nothing moved.
    version = me.IntField(default=0)
    created_at = me.DateTimeField()
    # The staff form that scheduled it (its key, drawn with the page): the
    # same form sent twice schedules once (booking.services.layouts).
    schedule_key = me.StringField()

    meta = {
        "collection": "sessions",
        "indexes": [
            {"fields": ["start"]},
            {"fields": ["schedule_key"], "unique": True, "sparse": True},
            {"fields": ["theater_id", "start"]},
            # The reconciler's sessions with seats on hold (not unique).
            {"fields": ["held"]},
        ],
    }


def holds_id(oid, cart_id: str) -> str:
    """The ``_id`` of a cart's SeatHolds document in a session."""
    return f"{oid}|{cart_id}"


class SeatHolds(Document):
    """The holds one cart wrote in one session, by tag.

    ``holds`` maps "t<tag>" to ``{seats: [[r, c], ...], at}``: the seats that
    hold asked for, and when it was written (or last confirmed by the
    reconciler). An entry is written BEFORE the session update that puts its
    tag on the seats, so a seat never carries a tag no entry explains; the
    seats whose state is +tag (held) or -tag (sold) are the cart's, the rest
    of an entry is history (a refused or released hold) and is pruned.
    ``n`` counts the entries (a document with none is deleted).
    """

    id = me.StringField(primary_key=True)  # ``holds_id``
    session_id = me.ObjectIdField(required=True)
    cart_id = me.StringField(required=True)
    holds = me.DictField()
    n = me.IntField(default=0)
    at = me.DateTimeField()

    meta = {
        "collection": "seat_holds",
        "indexes": [
            {"fields": ["cart_id"]},
            # A session's documents, and those of a window of time
            # (seat_holds_settle reads one session's at a time).
            {"fields": ["session_id", "at"]},
            {"fields": ["at"]},
        ],
        # Before (session_id, at) served the pruning, by session alone.
        "retired_indexes": ["session_id_1"],
    }


class SeatBlocks(Document):
    """Why staff blocked seats of a session: "r-c" -> {reason, by, at}.

    The session's BLOCKED state is the rule; this says why and who. A note
    for a seat that is no longer BLOCKED is history (ignored, overwritten).
    """

    id = me.ObjectIdField(primary_key=True)  # the session's id
    seats = me.DictField()

    meta = {"collection": "seat_blocks", "indexes": []}
