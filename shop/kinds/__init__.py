"""The kinds of reservable cart lines, and the one registry the shop iterates.

A cart holds lines of several kinds (products now, theater seats later); each
kind's units are reserved on a resource owned by another app. Expiry,
checkout, clearing, reconciliation and the invariant check never name a
kind: they loop over ``KINDS`` and call the kind's functions (see
``shop.kinds.base.LineKind``). A new kind is one adapter module plus one
embedded list field on ``Cart``.

Adding theater tickets, for instance:

1. ``shop/documents.py``: ``TicketLine(EmbeddedDocument)`` (``session_id``,
   ``seats``, ``name``, ``unit_price``) and ``Cart.tickets =
   EmbeddedDocumentListField(TicketLine)``.
2. ``shop/kinds/tickets.py``: ``TicketKind(LineKind)`` with ``name =
   "ticket"``, ``field = "tickets"``, ``key_field = "session_id"``,
   ``amount(line) = tuple(sorted(line.seats))``, ``units(line) =
   len(line.seats)``, and each abstract function calling
   ``booking.services.seats_hold/seats_release/seats_commit`` and booking's
   selectors.
3. ``KINDS = (PRODUCTS, TICKETS)`` below; then a ``cart_add_tickets``
   service in ``shop.services`` (seats first, then the cart line).
"""

from shop.kinds.base import Hold, LineKind, Problem
from shop.kinds.products import ProductKind

PRODUCTS = ProductKind()

KINDS: tuple[LineKind, ...] = (PRODUCTS,)


def lines_of(cart) -> list[tuple[LineKind, object]]:
    """Every line of a cart with its kind, kind by kind."""
    return [(kind, line) for kind in KINDS for line in kind.lines(cart)]


def kind_named(name: str) -> LineKind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise KeyError(name)


__all__ = ["KINDS", "PRODUCTS", "Hold", "LineKind", "Problem", "kind_named", "lines_of"]
