"""A session's hall: its immutable layout version, read once per process.

A ``SeatLayout`` is never updated (a re-arranged hall is a new version), and
a session never changes the layout it was put on sale with, so both lookups
are cached for the life of the process: the seat services and the seat map
read the layout from memory and only the small session document from the
database. The caches are bounded; an entry is only ever a copy of a value
that cannot change.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from bson import ObjectId

from booking.documents import SeatLayout, Session
from booking.errors import SessionNotFound


@dataclass(frozen=True)
class Hall:
    """A layout version: cells, zones and the number of real seats."""

    layout_id: str
    layout: list  # rows of cell dicts (``kind``, ``row``, ``number``, ...)
    zones: list  # zone dicts (``code``, ``name``, ``colour``, ``rank``)
    seat_count: int

    @property
    def zone_names(self) -> dict[str, str]:
        return {z["code"]: z["name"] for z in self.zones}

    @property
    def shape(self) -> list[int]:
        return [len(row) for row in self.layout]


@lru_cache(maxsize=256)
def hall(layout_id: str) -> Hall:
    """The layout version ``layout_id`` (it exists once a session names it)."""
    doc = SeatLayout.coll().find_one({"_id": layout_id})
    if doc is None:
        raise LookupError(f"no seat layout {layout_id}")
    return Hall(
        layout_id=layout_id,
        layout=doc["layout"],
        zones=doc["zones"],
        seat_count=doc["seat_count"],
    )


@lru_cache(maxsize=4096)
def _layout_id_of(oid: ObjectId) -> str:
    doc = Session.coll().find_one({"_id": oid}, {"layout_id": 1})
    if doc is None:
        raise SessionNotFound()
    return doc["layout_id"]


def hall_of_session(oid: ObjectId) -> Hall:
    """The hall of a session; SessionNotFound when there is no such session
    (a miss is not cached: the session may be created later)."""
    return hall(_layout_id_of(oid))


def forget() -> None:
    """Empty the caches (tests that rewrite a layout in place, conversions)."""
    hall.cache_clear()
    _layout_id_of.cache_clear()
