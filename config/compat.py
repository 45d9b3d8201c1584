"""Where the servers Marquee runs on differ, and what Marquee does about it.

Marquee is written for MongoDB. It runs by default on SecantusDB's Rust
server and falls back to SecantusDB's Python server (config/engine.py); the
test suite runs on the first and its shop, booking and race tests on the
second. Where one of them departs from MongoDB, the one workaround lives
here, saying which server needs it and why, and behaves as MongoDB does on
every other server. Re-tested with the Rust server (0.5.3-beta.193) and the
Python server (0.7.0b3), see tests/test_server_conformance.py:

* findAndModify with a positional ``$``: the Python server refuses it (see
  ``find_one_and_update_positional``); MongoDB and the Rust server apply it.
* Re-creating an identical 2dsphere index: both SecantusDB servers answer
  IndexKeySpecsConflict where MongoDB answers a no-op, so
  ``config.mongo.ensure_indexes`` compares key patterns before it creates.
* Cost that grows with the collection on the Rust server, though ``explain``
  reports an index scan: a findAndModify (even on ``_id`` alone: 2.8 ms at
  1,000 carts, 17 ms at 10,000, where update_one stays at 1.5-2.5 ms) and a
  filter with a top-level ``$or`` whose branches match many documents (3 ms
  -> 27 ms): the server plans each branch by its own fields, whatever else
  the filter names, so ``{_id, $or: [active within its hold, pending]}``
  reads every live cart, while an ``$or`` of branches that match few stays
  flat (bench/or_bench.py). Hot paths over
  collections that grow use update_one and find_one by ``_id`` instead (the
  checkout lock, ``shop.services.checkout._begin``; the expiry job's two
  queries), and the cleanup job (``shop.services.cleanup``) keeps the carts
  collection to live carts plus a retention.
* An update's ``arrayFilters``: the Rust server tests the filter again
  after each field it sets, so a filter on a field the update changes
  stops the later fields (MongoDB tests it once, on the document before).
  Marquee's one array filter names the element by its unique code and keeps
  the guard in the query (``shop.services.admissions._swap_admission``).
* findAndModify with ``upsert`` on one ``_id`` from concurrent clients: the
  Rust server applies every ``$inc`` but answers some of them with no
  document. The order numbers' sequence (``shop.services.numbers``) skips
  the block such an answer reserved (a gap, never a repeat); the throttle
  (``accounts.throttle.hit``) upserts with update_one, which every server
  answers as MongoDB does.
"""

from __future__ import annotations

from pymongo import ReturnDocument
from pymongo.collection import Collection
from pymongo.errors import OperationFailure

# The Python server's refusal: BadValue, "The positional operator did not
# find the match needed from the query", though the filter matched.
_POSITIONAL_REFUSED = 2
_refused = False


def find_one_and_update_positional(
    collection: Collection, filter: dict, update: dict
) -> dict | None:
    """``find_one_and_update`` of an update that names ``array.$``: the
    document after the update, or None when the filter matched nothing.

    One atomic round trip on MongoDB and the Rust server. SecantusDB's
    Python server refuses a positional ``$`` inside findAndModify, so there
    (learned on the first refusal, per process) it is an update, then a
    read of the document by ``_id``. The update is the same conditional
    write either way; only the document returned may then carry a later
    concurrent change too, which callers already allow for (they read it to
    show the cart, never to decide a rule).
    """
    global _refused
    if not _refused:
        try:
            return collection.find_one_and_update(
                filter, update, return_document=ReturnDocument.AFTER
            )
        except OperationFailure as exc:
            if exc.code != _POSITIONAL_REFUSED or "positional" not in str(exc):
                raise
            _refused = True
    if not collection.update_one(filter, update).matched_count:
        return None
    return collection.find_one({"_id": filter["_id"]})


def update_then_read(collection: Collection, filter: dict, update: dict) -> dict | None:
    """The document after a guarded ``update`` of the one document ``filter``
    names by ``_id``, or None when the guard matched nothing.

    An update, then a read by ``_id``: two round trips whose cost does not
    grow with the collection, where a findAndModify on the Rust server does
    (see the module's notes). The update is the same conditional write; the
    document read may carry a later concurrent change too, so callers read
    it to show or to carry on, never to decide a rule the guard decided.
    """
    if not collection.update_one(filter, update).matched_count:
        return None
    return collection.find_one({"_id": filter["_id"]})
