"""Order numbers: MQ-100001, MQ-100002, ..., reserved a block at a time.

One ``$inc`` of the ``order_number`` sequence reserves the next
``ORDER_NUMBER_BLOCK`` numbers for this process, which hands them out one
by one without a write: one write per block instead of one per order (the
sequence is a single document every checkout would otherwise update). The
sequence's value is the last number reserved.

* A number is never handed out twice: each block is reserved by one
  update, and the order's unique index on ``number`` says so again.
* Within a process the numbers rise; between processes they interleave
  (each has its own block), so they follow the order of payment only
  roughly, as the numbers of a database sequence with a cache do.
* A block's unused numbers are skipped when its process stops: a gap,
  never a repeat. A restored backup hands out again the numbers reserved
  after it was taken (the README says so; a charge's reference stays new,
  docs/architecture.md §11).

A forked child (a web or job worker) reserves its own blocks; blocks are
kept per database (the tests give each test its own).
"""

import os
import threading

from django.conf import settings
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from config import mongo
from shop.documents import Sequence

# Numbers start here so that they all have the same width for a while.
FIRST_NUMBER = 100001
_SEQUENCE = "order_number"

_lock = threading.Lock()
# database name -> [next serial, last serial of the block]
_blocks: dict[str, list[int]] = {}


def forget() -> None:
    """Drop this process's blocks: what a restart does (tests of a
    restore)."""
    with _lock:
        _blocks.clear()


def _after_fork() -> None:
    # A child must not share its parent's blocks, nor wait on a lock a
    # parent's thread held at the fork.
    global _lock, _blocks
    _lock = threading.Lock()
    _blocks = {}


os.register_at_fork(after_in_child=_after_fork)


def _reserve(size: int) -> int:
    """Reserve the next ``size`` serials; the last of them."""
    for _ in range(5):
        try:
            seq = Sequence.coll().find_one_and_update(
                {"_id": _SEQUENCE},
                {"$inc": {"value": size}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:
            continue  # two first-ever upserts raced; the counter exists now
        if seq is None:
            # The Rust server may answer an upsert that raced another first
            # one with no document (seen under a flash sale's first orders);
            # a block skipped is harmless, a number is unique by its index.
            continue
        return seq["value"]
    raise RuntimeError("could not reserve order numbers")


def next_order_number() -> str:
    """A short, unique, human-friendly number: MQ-100001, MQ-100002, ..."""
    db = mongo.connected_db_name()
    with _lock:
        block = _blocks.get(db)
        if block is None or block[0] > block[1]:
            size = max(1, settings.ORDER_NUMBER_BLOCK)
            last = _reserve(size)
            block = _blocks[db] = [last - size + 1, last]
        serial = block[0]
        block[0] += 1
    return f"MQ-{FIRST_NUMBER - 1 + serial}"


def put_back(number: str) -> None:
    """``number`` was drawn but not used (a checkout whose cart had its
    number already, or whose lock was refused): if it is still this
    process's latest, it is handed out again, so a refused checkout leaves
    no gap. One drawn by another thread since stays a gap, harmlessly."""
    serial = int(number.removeprefix("MQ-")) - FIRST_NUMBER + 1
    with _lock:
        block = _blocks.get(mongo.connected_db_name())
        if block is not None and block[0] - 1 == serial:
            block[0] = serial
