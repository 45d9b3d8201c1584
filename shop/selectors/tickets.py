"""Tickets sold per performance, for the box office: how many, for how much,
how many admitted, and which order holds each seat. Reads only.

A performance's tickets are the ticket lines (``key`` = the session id) of
its paid orders, found through the index on (``lines.key``, ``state``): a
full hall is a few hundred orders at most.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from config.decimals import decimal_of
from shop.documents import PAID, Order

TICKET = "ticket"


@dataclass(frozen=True)
class TicketFigures:
    tickets: int = 0
    admitted: int = 0
    revenue: Decimal = Decimal("0.00")


@dataclass(frozen=True)
class SoldTicket:
    row: int
    col: int
    label: str
    number: str  # the order
    code: str
    admitted_at: datetime | None
    admitted_by: str | None


def _ticket_lines(session_ids: list[str]):
    """(order number, line) for every ticket line of these sessions' paid orders."""
    found = Order.coll().find(
        {"lines.key": {"$in": session_ids}, "state": PAID},
        {
            "number": 1,
            "lines.kind": 1,
            "lines.key": 1,
            "lines.code": 1,
            "lines.line_total": 1,
            "lines.ticket.row": 1,
            "lines.ticket.col": 1,
            "lines.ticket.label": 1,
            "lines.admitted_at": 1,
            "lines.admitted_by": 1,
        },
    )
    wanted = set(session_ids)
    for raw in found:
        for line in raw.get("lines") or []:
            if line.get("kind") == TICKET and line.get("key") in wanted:
                yield raw["number"], line


def ticket_figures(*, session_ids: Iterable[str]) -> dict[str, TicketFigures]:
    """Per session: tickets sold (paid orders), admitted, and their revenue."""
    ids = [str(s) for s in session_ids]
    counts: dict[str, list] = {s: [0, 0, Decimal("0.00")] for s in ids}
    for _number, line in _ticket_lines(ids):
        figures = counts[line["key"]]
        figures[0] += 1
        figures[1] += 1 if line.get("admitted_at") else 0
        figures[2] += decimal_of(line["line_total"])
    return {s: TicketFigures(*figures) for s, figures in counts.items()}


def session_tickets(*, session_id: str) -> list[SoldTicket]:
    """Every ticket of one session's paid orders, by seat."""
    tickets = [
        SoldTicket(
            row=line["ticket"]["row"],
            col=line["ticket"]["col"],
            label=line["ticket"]["label"],
            number=number,
            code=line["code"],
            admitted_at=line.get("admitted_at"),
            admitted_by=line.get("admitted_by"),
        )
        for number, line in _ticket_lines([str(session_id)])
    ]
    return sorted(tickets, key=lambda t: (t.row, t.col))
