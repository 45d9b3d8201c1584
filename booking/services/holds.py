"""The cart side of booking's seat protocol: ``SeatHolds`` documents.

One document per cart x session (``_id`` "<session>|<cart>", so uniqueness
comes from ``_id``, never from a secondary index). Each hold writes an entry
"t<tag>" -> {seats, at} here BEFORE the session update that puts the tag on
the seats (the intent); the session says which of an entry's seats are the
cart's (state +tag held, -tag sold). These helpers write and prune entries;
the rules of seats are in ``booking.services.seats``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from bson import ObjectId
from django.utils import timezone
from pymongo.errors import DuplicateKeyError

from booking.documents import BLOCKED, FREE, TAG_MIN, SeatHolds, holds_id
from booking.values import Seat


def holds_coll():
    return SeatHolds.coll()


def new_tag() -> int:
    """A fresh hold's tag: random, 63 bits, never a small state constant."""
    return TAG_MIN + secrets.randbelow(2**62)


def key(tag: int) -> str:
    return f"t{tag}"


def tag_of(key_: str) -> int:
    return int(key_[1:])


def _entry_added(
    oid: ObjectId,
    cart_id: str,
    tag: int,
    seats: Sequence[Seat],
    at: datetime,
    origin: int,
) -> dict:
    """The update that adds the entry ``tag`` -> ``seats`` to the cart's
    document (made by an upsert if need be). ``origin``: the state the seats
    are taken from (see ``origin_of``)."""
    entry: dict = {"seats": [list(s) for s in seats], "at": at}
    if origin == BLOCKED:
        entry["origin"] = BLOCKED
    return {
        "$set": {
            f"holds.{key(tag)}": entry,
            "session_id": oid,
            "cart_id": cart_id,
            "at": at,
        },
        "$inc": {"n": 1},
    }


def write_intent(
    oid: ObjectId,
    cart_id: str,
    tag: int,
    seats: Sequence[Seat],
    now: datetime,
    origin: int = FREE,
) -> bool:
    """Record that ``tag`` is about to be put on ``seats`` for the cart (one
    upsert). Returns whether the document was created by this call."""
    result = holds_coll().update_one(
        {"_id": holds_id(oid, cart_id)},
        _entry_added(oid, cart_id, tag, seats, now, origin),
        upsert=True,
    )
    return result.upserted_id is not None


def restore_intent(
    oid: ObjectId,
    cart_id: str,
    tag: int,
    seats: Sequence[Seat],
    at: datetime,
    origin: int = FREE,
) -> bool:
    """The intent of a hold whose session update came late (``LATE_HOLD``
    after its intent): ``seat_holds_settle`` may have judged the intent
    dead before the seats carried its tag, and pruned it. Now that they do,
    it is written again if it is gone, so that every tag on a seat stays
    listed by its cart (checkout's proof by the line's tags relies on it,
    and refunds find their seats through it). Returns whether it was gone."""
    try:
        result = holds_coll().update_one(
            {"_id": holds_id(oid, cart_id), f"holds.{key(tag)}": {"$exists": False}},
            _entry_added(oid, cart_id, tag, seats, at, origin),
            upsert=True,
        )
    except DuplicateKeyError:
        return False  # the document lists the entry: nothing was pruned
    return result.modified_count == 1 or result.upserted_id is not None


def drop_entries(oid: ObjectId, cart_id: str, tags: Iterable[int]) -> None:
    """Remove whole entries (their holds finished and no seat carries their
    tags); the document goes with its last entry."""
    keys = sorted({key(t) for t in tags})
    hid = holds_id(oid, cart_id)
    for k in keys:
        holds_coll().update_one(
            {"_id": hid, f"holds.{k}": {"$exists": True}},
            {"$unset": {f"holds.{k}": ""}, "$inc": {"n": -1}},
        )
    if keys:
        holds_coll().delete_one({"_id": hid, "n": {"$lte": 0}})


def forget(
    oid: ObjectId, cart_id: str, moved: Mapping[Seat, int], doc: dict | None
) -> None:
    """After the session moved ``moved`` (seat -> the tag it carried) off the
    cart: those seats leave their entries, and an entry left with none goes
    (the document with its last entry). One guarded write in the common
    case. ``doc`` is the cart's document as read before the move.
    """
    entries = (doc or {}).get("holds", {})
    dead, shrink = [], {}
    for k, entry in entries.items():
        tag = tag_of(k)
        gone = [s for s in entry["seats"] if moved.get(tuple(s)) == tag]
        if not gone:
            continue
        if len(gone) == len(entry["seats"]):
            dead.append(k)
        else:
            shrink[k] = gone
    if not dead and not shrink:
        return
    hid = holds_id(oid, cart_id)
    present = {f"holds.{k}": {"$exists": True} for k in dead}
    if len(dead) == len(entries):
        # n counts the entries exactly: these are all of them.
        if (
            holds_coll()
            .delete_one({"_id": hid, "n": len(dead), **present})
            .deleted_count
        ):
            return
    update: dict = {
        "$pull": {f"holds.{k}.seats": {"$in": v} for k, v in shrink.items()}
    }
    if dead:
        update["$unset"] = dict.fromkeys((f"holds.{k}" for k in dead), "")
        update["$inc"] = {"n": -len(dead)}
    if not shrink:
        del update["$pull"]
    if holds_coll().update_one({"_id": hid, **present}, update).modified_count and dead:
        holds_coll().delete_one({"_id": hid, "n": {"$lte": 0}})


def retract(oid: ObjectId, cart_id: str, tag: int, created: bool) -> None:
    """Take back the intent of a hold the session refused."""
    hid = holds_id(oid, cart_id)
    only = {"_id": hid, "n": 1, f"holds.{key(tag)}": {"$exists": True}}
    if created and holds_coll().delete_one(only).deleted_count:
        return
    drop_entries(oid, cart_id, [tag])


def read(oid: ObjectId, cart_id: str) -> dict | None:
    return holds_coll().find_one({"_id": holds_id(oid, cart_id)})


def origin_of(entry: dict) -> int:
    """The state a hold's seats go back to when it is released (its hold
    ran out, was reconciled, or was given back): the state they were taken
    from. FREE for a shopper's hold; BLOCKED for staff's hold of house
    seats (``seats_hold(from_blocked=True)``), so a box-office sale that
    stops before it is paid never puts a house seat on sale. A sold seat
    returned by a refund is another move (``seats_return``: FREE)."""
    return BLOCKED if entry.get("origin") == BLOCKED else FREE


def origins(doc: dict | None) -> dict[int, int]:
    """Each entry's tag -> the state its seats were taken from."""
    return {
        tag_of(k): origin_of(entry) for k, entry in (doc or {}).get("holds", {}).items()
    }


def stamped(doc: dict) -> bool:
    """Whether every entry of ``doc`` has its stamp (a ``SeatHolds`` document
    as stored does; the entries ``seats_not_held`` builds from a line's tags
    do not)."""
    return all(entry.get("at") is not None for entry in doc.get("holds", {}).values())


def candidates(doc: dict | None) -> dict[Seat, list[tuple[int, datetime]]]:
    """Each seat the cart's entries name: its (tag, stamp) pairs, newest first."""
    found: dict[Seat, list[tuple[int, datetime]]] = {}
    for k, entry in (doc or {}).get("holds", {}).items():
        for r, c in entry["seats"]:
            found.setdefault((r, c), []).append((tag_of(k), entry["at"]))
    for pairs in found.values():
        pairs.sort(key=lambda p: p[1], reverse=True)
    return found


def dead_tags(doc: dict | None, state: list) -> list[int]:
    """Entries of ``doc`` none of whose seats carries its tag (+ or -)."""
    dead = []
    for k, entry in (doc or {}).get("holds", {}).items():
        tag = tag_of(k)
        live = any(
            r < len(state) and c < len(state[r]) and abs(state[r][c]) == tag
            for r, c in entry["seats"]
        )
        if not live:
            dead.append(tag)
    return dead


# An intent older than this whose seats do not carry its tag belongs to a
# hold that will never finish (its process stopped): the shop's reconciler
# waits as long before judging a hold (RECONCILE_GRACE).
INTENT_GRACE = timedelta(minutes=1)
# A hold whose session update lands this long after its intent makes sure
# the intent is still there (``restore_intent``): half the grace, so a
# settle on a machine whose clock is up to that much ahead is covered.
LATE_HOLD = INTENT_GRACE / 2
# How far back settling looks: every write of a document (an intent, the
# reconciler's confirmation) moves its ``at``, so history a crash leaves is
# met within a day; older history is inert (no seat carries its tag).
PRUNE_WINDOW = timedelta(days=1)


def seat_holds_settle(
    *, before: datetime | None = None, since: datetime | None = None
) -> int:
    """Prune entries no seat carries (history of a crash between a hold's
    intent and its session update, or between a release's session update
    and its pruning). Only entries stamped before ``before`` (default: now -
    INTENT_GRACE) are judged, in documents last written since ``since``
    (default: PRUNE_WINDOW before ``before``). Returns how many entries went.

    Safe to run twice at once: each removal is guarded on the entry.
    """
    from booking.documents import Session

    before = before or timezone.now() - INTENT_GRACE
    window = {"$lt": before, "$gte": since or before - PRUNE_WINDOW}
    pruned = 0
    # One session at a time, its documents streamed from the server (index
    # session_id, at): a day of a busy shop's holds is never in memory at
    # once, only one session's seat states.
    for oid in holds_coll().distinct("session_id", {"at": window}):
        session = Session.coll().find_one({"_id": oid}, {"seats": 1})
        state = session["seats"] if session else []
        for doc in holds_coll().find({"session_id": oid, "at": window}):
            dead = [
                tag
                for tag in dead_tags(doc, state)
                if doc["holds"][key(tag)]["at"] < before
            ]
            drop_entries(oid, doc["cart_id"], dead)
            pruned += len(dead)
    return pruned
