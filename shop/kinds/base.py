"""What every reservable line kind provides to the shop."""

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from bson.decimal128 import Decimal128

from config.errors import DomainError
from shop.cart_state import ACTIVE
from shop.services.common import carts

CENT = Decimal("0.01")


def money(value) -> Decimal:
    return Decimal(value).quantize(CENT)


@dataclass(frozen=True)
class Hold:
    """One reservation entry on a resource, as the reconciler inspects it.

    ``amount`` is compared with ``LineKind.amount(line)`` of the cart's line:
    a unit count for products, a tuple of seats for tickets.
    """

    kind: str
    key: str
    cart_id: str
    amount: object
    at: datetime


@dataclass(frozen=True)
class Problem:
    """A broken invariant: which resource (``key``) and why."""

    kind: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.key}: {self.message}"


class LineKind(ABC):
    """The adapter between cart lines of one kind and the resource holding them.

    Class attributes: ``name`` (``"product"``), ``field`` (the ``Cart`` list
    holding the lines, ``"items"``) and ``key_field`` (the line attribute
    naming the resource, ``"sku"``; ``{field}.{key_field}`` is the path of
    a cart's resources). Every function is keyword-only,
    takes ids and embedded line documents, and is safe to call twice.
    """

    name: str
    field: str
    key_field: str
    # A kind whose login move is one protocol of its own (``move``), not the
    # pipeline's unlist, transfer, record (``shop.services.lines.move_line``).
    moves_whole = False

    # --- reading a line ---------------------------------------------------

    def lines(self, cart) -> list:
        return list(getattr(cart, self.field, None) or [])

    def key(self, line) -> str:
        return getattr(line, self.key_field)

    @abstractmethod
    def amount(self, line) -> object:
        """What the line holds, comparable with ``Hold.amount``."""

    @abstractmethod
    def units(self, line) -> int:
        """How many units the line charges for (quantity, number of seats)."""

    def title(self, line) -> str:
        return line.name

    def unit_price(self, line) -> Decimal | None:
        """The price of one unit (None when the line's units differ in price)."""
        return line.unit_price

    def subtotal(self, line) -> Decimal:
        return line.unit_price * self.units(line)

    # The checkout steps below take ``seen``: a dict one checkout run keeps
    # from its first step to its last, where a kind may leave what it read
    # for a later step of the same run (the cart is pending: nothing but
    # this run changes its holds). None: read everything afresh.

    def current_prices(self, lines: list, seen: dict | None = None) -> list:
        """``current_price`` of each line, or the DomainError saying why it
        can no longer be sold; a kind that can price all of a cart's lines
        in one read overrides it (what it returns is what ``repriced`` gets
        as ``price``)."""
        prices = []
        for line in lines:
            try:
                prices.append(self.current_price(line=line))
            except DomainError as exc:
                prices.append(exc)
        return prices

    def repriced(self, *, line, price=None) -> tuple[dict, list[str]]:
        """Today's prices for the line (``price``: as ``current_prices``
        found it): the line's fields to ``$set`` (names inside the line) and
        the changes in words for the shopper; both empty when nothing
        changed. A DomainError when it can no longer be sold."""
        price = money(self.current_price(line=line) if price is None else price)
        was = money(line.unit_price)
        if price == was:
            return {}, []
        return (
            {"unit_price": Decimal128(price)},
            [f"{self.title(line)} now £{price} (was £{was})"],
        )

    def order_lines(self, *, line) -> list[dict]:
        """The order's lines (``OrderLine`` fields) for this cart line."""
        unit = money(line.unit_price)
        units = self.units(line)
        return [
            {
                "kind": self.name,
                "key": self.key(line),
                "name": self.title(line),
                "quantity": units,
                "unit_price": Decimal128(unit),
                "line_total": Decimal128(money(unit * units)),
            }
        ]

    # --- the line pipeline's steps (run in order by shop.services.lines) ----
    # Taking: ``take`` on the resource, then ``record`` on the cart; if the
    # cart refuses, ``give_back``. Giving back: ``unlist`` from the cart, then
    # ``give_back``. Moving to another cart (login): ``unlist`` from one,
    # ``transfer`` on the resource, ``record`` on the other. Lines go in and
    # out as the kind's embedded line documents.

    @abstractmethod
    def guard(self, line) -> dict:
        """The line as read, as an ``$elemMatch`` of the cart's list: it no
        longer matches once anyone changed the line."""

    @abstractmethod
    def take(self, *, cart_id: str, line, now: datetime):
        """Hold on the resource what ``line`` lists, for the cart (more of
        the same if it holds some already); returns the line as taken, priced
        and named by the resource. Raises the resource's refusal."""

    @abstractmethod
    def record(self, *, cart_id: str, line, now: datetime) -> dict | None:
        """List ``line`` (just taken) on the active cart, joining the cart's
        line on the same resource; the cart after, or None if it refuses.
        Raises a cap's refusal (nothing written)."""

    def unlist(self, *, cart_id: str, line, update: dict) -> bool:
        """Take exactly this line (as read) off the active cart, with
        ``update`` besides; False when the line changed or the cart is not
        active."""
        guard = self.guard(line)
        return bool(
            carts()
            .update_one(
                {"_id": cart_id, "state": ACTIVE, self.field: {"$elemMatch": guard}},
                {**update, "$pull": {self.field: guard}},
            )
            .modified_count
        )

    @abstractmethod
    def transfer(self, *, from_cart_id: str, to_cart_id: str, line, now: datetime):
        """Hand what one cart holds for ``line`` to another cart, with nothing
        free in between; the line as moved, or None when nothing could move
        (the source gave it up, or the target holds the resource already)."""

    def refill(self, *, line, target) -> object | None:
        """What ``target`` (a cart) can take again of ``line`` when its hold
        could not be moved; None: nothing (the default)."""
        return None

    # --- the resource side ---------------------------------------------------

    @abstractmethod
    def current_price(self, *, line) -> Decimal:
        """The unit price now (checkout re-prices). A DomainError when the line
        can no longer be sold; its message is shown to the shopper."""

    @abstractmethod
    def give_back(self, *, cart_id: str, line, now: datetime | None = None) -> None:
        """Return exactly what this line holds (removing or clearing a line);
        ``now`` stamps a hold that stays smaller."""

    def untake(self, *, cart_id: str, line, now: datetime) -> None:
        """Undo a ``take`` the cart refused to ``record`` (``line``, as
        taken); by default, ``give_back``."""
        self.give_back(cart_id=cart_id, line=line, now=now)

    def backs(self, *, lines: list, sold: bool, now: datetime) -> list[dict]:
        """What a cart write that ends or empties the cart carries out for
        these lines of this kind: the ``stock_back`` entries of a kind whose
        units are held in its lines (``shop.kinds.line_stock``), free, or
        sold (``sold``: a checkout's complete); none by default (a kind
        holding on its resource gives back after the write)."""
        return []

    @abstractmethod
    def release(self, *, cart_id: str, key: str) -> None:
        """End this cart's hold on resource ``key`` entirely (expiry)."""

    @abstractmethod
    def held_keys(self, *, cart_id: str) -> list[str]:
        """Every resource on which this cart holds something, listed or not."""

    @abstractmethod
    def ensure_held(self, *, cart_id: str, line, now: datetime) -> None:
        """Before payment: the resource holds at least the line; DomainError if
        it does not and cannot."""

    def ensure_held_lines(
        self, *, cart_id: str, lines: list, now: datetime, seen: dict | None = None
    ) -> None:
        """``ensure_held`` for every line of this kind in a cart; a kind that
        can read all of a cart's holds at once overrides it."""
        for line in lines:
            self.ensure_held(cart_id=cart_id, line=line, now=now)

    @abstractmethod
    def commit(self, *, cart_id: str, line) -> bool:
        """Paid: what the line holds is sold. False when nothing was held
        (committed already, by a run that stopped before finishing)."""

    def commit_lines(
        self, *, cart_id: str, lines: list, seen: dict | None = None
    ) -> list[bool]:
        """``commit`` of every line of this kind in a cart, answered per
        line; a kind that can commit all of a cart's lines at once (in
        fewer round trips) overrides it."""
        return [self.commit(cart_id=cart_id, line=line) for line in lines]

    @abstractmethod
    def return_sold(
        self, *, cart_id: str, key: str, lines: list, reference: str
    ) -> None:
        """A paid order was canceled: what its ``lines`` (the order's lines of
        this kind on resource ``key``, sold to ``cart_id``) sold goes back on
        sale. Idempotent: a retried cancellation returns nothing twice."""

    # --- reconciliation and invariants ------------------------------------

    @abstractmethod
    def holds(self, *, before: datetime | None) -> Iterator[Hold]:
        """Every reservation entry (stamped before ``before``)."""

    @abstractmethod
    def release_hold(self, *, hold: Hold) -> bool:
        """Release exactly this entry if it is unchanged since it was read."""

    @abstractmethod
    def refresh_holds(
        self, *, key: str, cart_ids: list[str], before: datetime, now: datetime
    ) -> None:
        """Stamp the entries of these carts (confirmed live) as seen ``now``."""

    @abstractmethod
    def fit_hold(self, *, hold: Hold, line, now: datetime) -> None:
        """Make an active cart's entry hold what its line lists (guarded on the
        entry being unchanged)."""

    def recover(self, *, before: datetime) -> int:
        """Finish or undo the resource's own moves left in flight since
        before ``before`` (a crash between its documents); how many."""
        return 0

    @abstractmethod
    def settle(self) -> None:
        """Finish the resource's own interrupted work (e.g. a stock ledger)."""

    @abstractmethod
    def resource_problems(self) -> list[Problem]:
        """Per resource conservation problems (units neither lost nor made)."""
