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


class _Stored:
    """A line as stored (its dict in a cart document), read by attribute as
    the kinds read a line."""

    __slots__ = ("_son",)

    def __init__(self, son: dict) -> None:
        self._son = son

    def __getattr__(self, name: str):
        try:
            return self._son[name]
        except KeyError:
            raise AttributeError(name) from None


def stored_lines(son: dict | None) -> list[tuple[LineKind, object]]:
    """``lines_of`` a cart as stored (its document as read), without
    building it into a ``Cart``: a hot path that only counts lines or units
    (a cart add, the header badge) skips MongoEngine's document building,
    which was a tenth of a cart flow's CPU on the adds (bench/RESULTS.md)."""
    if son is None:
        return []
    return [
        (kind, _Stored(line)) for kind in KINDS for line in son.get(kind.field) or []
    ]


def units_of(lines: list[tuple[LineKind, object]]) -> int:
    """Units the lines charge for (``lines_of``, ``stored_lines``): the
    cart's badge."""
    return sum(kind.units(line) for kind, line in lines)


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
    "stored_lines",
    "units_of",
]
