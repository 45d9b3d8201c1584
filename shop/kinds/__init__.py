"""The kinds of reservable cart lines, and the one registry the shop iterates.

A cart holds lines of several kinds (products, theater seats); each
kind's units are reserved on a resource owned by another app. Expiry,
checkout, clearing, reconciliation and the invariant check never name a
kind: they loop over ``KINDS`` and call the kind's functions (see
``shop.kinds.base.LineKind``). A new kind is one adapter module plus one
embedded list field on ``Cart``.

Theater tickets are the second kind: ``TicketLine`` (one line per session,
its seats listed) in ``shop/documents.py``, ``shop/kinds/tickets.py`` over
booking's services and selectors, and ``shop.services.tickets`` for the
shopper's changes (seats first, then the cart line).
"""

from shop.kinds.base import Hold, LineKind, Problem
from shop.kinds.products import ProductKind
from shop.kinds.tickets import TicketKind

PRODUCTS = ProductKind()
TICKETS = TicketKind()

KINDS: tuple[LineKind, ...] = (PRODUCTS, TICKETS)


def lines_of(cart) -> list[tuple[LineKind, object]]:
    """Every line of a cart with its kind, kind by kind."""
    return [(kind, line) for kind in KINDS for line in kind.lines(cart)]


def backs_of(cart, *, sold: bool, now) -> list[dict]:
    """What a write that ends or empties ``cart`` carries out for the lines
    held in it, every kind's (``LineKind.backs``): free, or ``sold``."""
    return [
        entry
        for kind in KINDS
        for entry in kind.backs(lines=kind.lines(cart), sold=sold, now=now)
    ]


def kind_named(name: str) -> LineKind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise KeyError(name)


__all__ = [
    "KINDS",
    "PRODUCTS",
    "TICKETS",
    "backs_of",
    "Hold",
    "LineKind",
    "Problem",
    "kind_named",
    "lines_of",
]
