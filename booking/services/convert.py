"""Bring a database of the older session shape to the compact one.

The older shape copied the hall's layout and zones into every session, kept
one ``reservations`` entry per held seat and one ``sold`` entry per sold
seat inside the session, and marked each taken seat 1. The compact shape
(``booking.documents``) keeps the layout as the hall's immutable version and
puts a tag on each held (+) or sold (-) seat, listed by the cart's
``SeatHolds``.

Per session, in an order every crash point of which a re-run finishes:

1. the layout version (an upsert: the theater's own version when the
   session's copy is the theater's layout, else a version named by the
   copy's content hash);
2. each cart's ``SeatHolds`` (an upsert setting the whole document; the
   tags are derived from session and cart, so a re-run writes the same);
3. the session itself, in ONE update guarded on "not converted yet".

Idempotent: a converted session is skipped. Run it with the shop stopped
(``manage.py convert_sessions``): a hold during the conversion of its
session would be written in the old shape.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from bson import ObjectId

from booking.documents import FREE, GAP, TAG_MIN, SeatHolds, Session, Theater
from booking.services.layouts import layout_write

TAKEN_BEFORE = 1  # the older shape's only taken state


@dataclass
class ConvertReport:
    sessions: int = 0  # converted now
    skipped: int = 0  # already in the compact shape
    holds: int = 0  # carts' SeatHolds written
    orphans: int = 0  # seats marked taken that no entry explained: freed

    def __str__(self) -> str:
        return (
            f"{self.sessions} sessions converted, {self.skipped} already compact,"
            f" {self.holds} carts' holds written, {self.orphans} unexplained"
            " taken seats freed"
        )


def _tag(session_id: ObjectId, cart_id: str, kind: str) -> int:
    digest = hashlib.sha256(f"{session_id}|{cart_id}|{kind}".encode()).digest()
    return TAG_MIN + int.from_bytes(digest[:8], "big") % 2**62


def _fingerprint(zones, layout) -> str:
    raw = json.dumps([zones, layout], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _layout_for(doc: dict, theater: dict | None) -> str:
    """The layout version the session was sold from (written if missing)."""
    zones, layout = doc["zones"], doc["layout"]
    if theater is not None and [theater["zones"], theater["layout"]] == [
        zones,
        layout,
    ]:
        version = theater.get("layout_version", 1)
        return layout_write(theater_id=theater["_id"], theater=theater, version=version)
    seats = [
        [FREE if cell.get("kind") == "seat" else GAP for cell in row] for row in layout
    ]
    raw = {
        "zones": zones,
        "layout": layout,
        "seats": seats,
        "seatsAvailable": sum(v == FREE for row in seats for v in row),
    }
    version = f"s{_fingerprint(zones, layout)}"
    return layout_write(theater_id=doc["theater_id"], theater=raw, version=version)


def _holds_of(doc: dict) -> dict[str, dict[str, dict]]:
    """Each cart's entries: cart -> {"t<tag>": {seats, at}}, held and sold."""
    carts: dict[str, dict[str, dict]] = {}
    for field, sign in (("reservations", 1), ("sold", -1)):
        for e in doc.get(field) or []:
            tag = _tag(doc["_id"], e["cart_id"], field)
            entry = carts.setdefault(e["cart_id"], {}).setdefault(
                f"t{tag}", {"seats": [], "at": e["at"], "sign": sign}
            )
            entry["seats"].append(list(e["seat"]))
            entry["at"] = min(entry["at"], e["at"])
    return carts


def _states(doc: dict, carts: dict, report: ConvertReport) -> tuple[list, dict]:
    """The new seat states and counters from the old ones and the entries."""
    tags = {}
    for entries in carts.values():
        for key, entry in entries.items():
            for r, c in entry["seats"]:
                tags[(r, c)] = entry["sign"] * int(key[1:])
    state, counts = [], {"seatsAvailable": 0, "held": 0, "sold": 0}
    for r, row in enumerate(doc["seats"]):
        state.append([])
        for c, value in enumerate(row):
            if value == GAP:
                state[-1].append(GAP)
                continue
            new = tags.get((r, c), FREE) if value == TAKEN_BEFORE else FREE
            report.orphans += value == TAKEN_BEFORE and new == FREE
            state[-1].append(new)
            field = "seatsAvailable" if new == FREE else "held" if new > 0 else "sold"
            counts[field] += 1
    return state, counts


def _write_holds(doc: dict, carts: dict) -> None:
    for cart_id, entries in carts.items():
        holds = {
            k: {"seats": e["seats"], "at": e["at"]} for k, e in sorted(entries.items())
        }
        SeatHolds.coll().update_one(
            {"_id": f"{doc['_id']}|{cart_id}"},
            {
                "$set": {
                    "session_id": doc["_id"],
                    "cart_id": cart_id,
                    "holds": holds,
                    "n": len(holds),
                    "at": max(e["at"] for e in holds.values()),
                }
            },
            upsert=True,
        )


def session_convert(doc: dict, theater: dict | None, report: ConvertReport) -> None:
    """Convert one session document of the older shape (see the module)."""
    layout_id = _layout_for(doc, theater)
    carts = _holds_of(doc)
    _write_holds(doc, carts)
    state, counts = _states(doc, carts, report)
    result = Session.coll().update_one(
        {"_id": doc["_id"], "layout_id": {"$exists": False}},
        {
            "$set": {
                "layout_id": layout_id,
                "seats": state,
                **counts,
                "blocked": 0,
                "seat_count": sum(counts.values()),
            },
            "$unset": {"layout": "", "zones": "", "reservations": ""},
        },
    )
    report.sessions += result.modified_count
    report.holds += len(carts)


def sessions_convert() -> ConvertReport:
    """Convert every session of the older shape; skip the compact ones.

    Theaters get their layout version 1 (``layout_version``) first.
    """
    report = ConvertReport()
    theaters = {}
    for theater in Theater.coll().find():
        if "layout_version" not in theater:
            layout_write(theater_id=theater["_id"], theater=theater, version=1)
            Theater.coll().update_one(
                {"_id": theater["_id"], "layout_version": {"$exists": False}},
                {"$set": {"layout_version": 1}},
            )
            theater["layout_version"] = 1
        theaters[theater["_id"]] = theater
    report.skipped = Session.coll().count_documents({"layout_id": {"$exists": True}})
    for doc in Session.coll().find({"layout_id": {"$exists": False}}):
        session_convert(doc, theaters.get(doc.get("theater_id")), report)
    return report
