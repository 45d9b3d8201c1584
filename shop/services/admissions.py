"""Admission at the door: a ticket's code admits once, to its performance.

Where an admission is recorded: on the order's ticket line itself
(``admitted_at``, ``admitted_by``). The order already holds everything that
decides whether a code admits (its state: only a paid order's tickets do;
the line's performance, ``key``), so ONE conditional update of that one
document carries the whole rule in its filter. Two scanners, or a scan and a
refund, meet on the same document and the server orders them: exactly one
scan admits, and a ticket whose order left ``paid`` never does. The unique
index on ``codes`` finds the order from the code.

When the update matches nothing, the order is read again only to say why.
"""

import re
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from shop.documents import PAID, PENDING_PAYMENT, Order
from shop.errors import (
    TicketAlreadyAdmitted,
    TicketForAnotherPerformance,
    TicketNotAdmitted,
    TicketRefunded,
    TicketUnpaid,
    UnknownTicket,
)

# The shop's codes: 12 characters shown as XXXX-XXXX-XXXX (shop.kinds.tickets).
_CODE = re.compile(r"^[A-Z0-9]{12}$")


def ticket_code_of(text: str) -> str | None:
    """A ticket code as the shop writes it (ABCD-EFGH-JKLM), however it was
    typed or scanned (with or without dashes and spaces, any case); None if
    ``text`` cannot be one."""
    raw = re.sub(r"[\s-]", "", text or "").upper()
    if not _CODE.match(raw):
        return None
    return "-".join(raw[i : i + 4] for i in range(0, 12, 4))


@dataclass(frozen=True)
class Admission:
    """One ticket as the door sees it."""

    code: str
    number: str  # the order's
    name: str  # who bought it
    session_id: str
    show: str
    theater: str
    start: datetime
    seat: str  # "Row A, seat 1"
    zone_name: str
    admitted_at: datetime | None
    admitted_by: str | None


def _now(now: datetime | None) -> datetime:
    # MongoDB keeps milliseconds: answer with the time that was stored.
    now = now or timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _read(code: str) -> tuple[dict, dict] | None:
    raw = Order.coll().find_one(
        {"codes": code},
        {
            "number": 1,
            "state": 1,
            "shipping.name": 1,
            "lines": {"$elemMatch": {"code": code}},
        },
    )
    if raw is None or not raw.get("lines"):
        return None
    return raw, raw["lines"][0]


def admission_of(raw: dict, line: dict) -> Admission:
    ticket = line.get("ticket") or {}
    return Admission(
        code=line["code"],
        number=raw["number"],
        name=(raw.get("shipping") or {}).get("name", ""),
        session_id=line["key"],
        show=ticket.get("show", ""),
        theater=ticket.get("theater", ""),
        start=ticket.get("start"),
        seat=ticket.get("label", ""),
        zone_name=ticket.get("zone_name", ""),
        admitted_at=line.get("admitted_at"),
        admitted_by=line.get("admitted_by"),
    )


def _refusal(code: str | None, session_id: str, *, admitting: bool):
    """Why the guarded update matched nothing, read again (or UnknownTicket)."""
    found = _read(code) if code else None
    if found is None:
        return UnknownTicket()
    raw, line = found
    ticket = line.get("ticket") or {}
    if line["key"] != session_id:
        return TicketForAnotherPerformance(ticket.get("show", "?"), ticket["start"])
    if raw["state"] == PENDING_PAYMENT:
        return TicketUnpaid()
    if raw["state"] != PAID:
        return TicketRefunded()
    if admitting and line.get("admitted_at"):
        return TicketAlreadyAdmitted(line["admitted_at"], line.get("admitted_by", "?"))
    if not admitting and not line.get("admitted_at"):
        return TicketNotAdmitted()
    return UnknownTicket()  # changed again since the update: ask for a rescan


def _swap_admission(
    code: str, session_id: str, *, was: datetime | None, at, by
) -> bool:
    """The one conditional update of an admission: the paid ticket ``code``
    of this performance, admitted at ``was`` (None: not admitted), is set to
    ``at``/``by``. False when anything differs (another scanner won)."""
    line = {"code": code, "key": session_id, "admitted_at": was}
    return bool(
        Order.coll()
        .update_one(
            {"codes": code, "state": PAID, "lines": {"$elemMatch": line}},
            # The line by an array filter on its code (unique), never the
            # positional "$": with two arrays in the filter ("codes" finds
            # the order through its index) "$" may name a position of
            # either, and did: in an order whose goods come first, another
            # ticket's line. The guard stays in the filter: the Rust server
            # tests an array filter again after each field it sets.
            {"$set": {"lines.$[t].admitted_at": at, "lines.$[t].admitted_by": by}},
            array_filters=[{"t.code": code}],
        )
        .modified_count
    )


def ticket_admit(
    *, code: str, session_id: str, by: str, now: datetime | None = None
) -> Admission:
    """Admit the ticket with ``code`` to performance ``session_id``.

    Guard (one update of the order): the order is paid and its line with this
    code is for this performance and not admitted yet; effect: the line
    records when and by whom. Returns the admission as stored.

    Raises UnknownTicket, TicketForAnotherPerformance, TicketUnpaid,
    TicketRefunded, TicketAlreadyAdmitted (with when and by whom).
    """
    normal = ticket_code_of(code)
    now = _now(now)
    if normal is not None:
        if _swap_admission(normal, session_id, was=None, at=now, by=by):
            return admission_of(*_read(normal))
    raise _refusal(normal, session_id, admitting=True)


def ticket_admission_undo(*, code: str, session_id: str) -> Admission:
    """Take back a mistaken admission: the ticket admits again.

    Guard: the line with this code is for this performance, its order is
    paid, and it is admitted; effect: the admission is unset. Returns the
    admission as it was.

    Raises UnknownTicket, TicketForAnotherPerformance, TicketUnpaid,
    TicketRefunded, TicketNotAdmitted.
    """
    normal = ticket_code_of(code)
    found = _read(normal) if normal else None
    if found is not None and found[1].get("admitted_at"):
        # Guarded on the admission as read: an undo never takes back a
        # later scan it did not see.
        raw, line = found
        if _swap_admission(
            normal, session_id, was=line["admitted_at"], at=None, by=None
        ):
            return admission_of(raw, line)
    raise _refusal(normal, session_id, admitting=False)
