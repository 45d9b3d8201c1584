"""Product lines: units of a SKU held on a stock location (catalog).

A line's key (``CartLine.sku``) is its stock location: the SKU (delivery:
online stock and price) or ``"<sku>@<store_id>"`` (click & collect: that
store's stock and price). The kind never tells them apart beyond the
price's scope and the order line's store: one protocol holds both.
"""

from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings

from catalog.documents import location_parts
from catalog.errors import (
    AlreadyReserved,
    InvalidQuantity,
    NotForSale,
    OutOfStock,
    ReservationMissing,
)
from catalog.selectors.pricing import price_for, prices_for
from catalog.selectors.stock import (
    stock_hold,
    stock_holds,
    stock_holds_of_cart,
    stock_problems,
    stock_stale_holders,
)
from catalog.services.stock import (
    stock_adjust,
    stock_commit,
    stock_commit_all,
    stock_ledger_settle,
    stock_moves_recover,
    stock_refresh,
    stock_release,
    stock_reserve,
    stock_return,
    stock_transfer,
)
from config.errors import DomainError
from shop.cart_state import ACTIVE
from shop.documents import Cart, CartLine
from shop.kinds.base import Hold, LineKind, Problem
from shop.limits import MAX_LINE_QUANTITY
from shop.services import tidy
from shop.services.common import carts, touched, touched_end, update_then_read

# A concurrent writer changed the entry between our read and our update.
_ATTEMPTS = 4


def give_back_units(*, sku: str, cart_id: str, quantity: int, now=None) -> None:
    """Return exactly ``quantity`` units of this cart's hold on ``sku``.

    A smaller give-back shrinks the entry; one of the entry's whole size ends
    it. Nothing held (expiry got there first) is not an error.
    """
    for _ in range(_ATTEMPTS):
        try:
            stock_adjust(sku=sku, cart_id=cart_id, delta=-quantity, now=now)
            return
        except ReservationMissing:
            return
        except InvalidQuantity:
            # The entry holds exactly ``quantity`` (or less: give back all).
            hold = stock_hold(sku=sku, cart_id=cart_id)
            if hold is None:
                return
            if hold.quantity <= quantity and stock_release(
                sku=sku,
                cart_id=cart_id,
                expect_quantity=hold.quantity,
                expect_at=hold.at,
            ):
                return


def needs_delivery(lines) -> bool:
    """Whether any of these product lines is delivered (not collected)."""
    return any(not getattr(line, "store_id", None) for line in lines)


def _new_line_write(line, now: datetime) -> tuple[dict, dict]:
    """The guard and update that put a line on an active cart that does not
    list its SKU yet."""
    return (
        {"items.sku": {"$ne": line.sku}},
        touched({"$push": {"items": line.to_mongo().to_dict()}}, now),
    )


class ProductKind(LineKind):
    name = "product"
    field = "items"
    key_field = "sku"

    def amount(self, line) -> int:
        return line.quantity

    def units(self, line) -> int:
        return line.quantity

    # --- the line pipeline's steps ---------------------------------------------

    def guard(self, line) -> dict:
        return {"sku": line.sku, "quantity": line.quantity}

    def take(self, *, cart_id: str, line, now: datetime):
        """A new hold of the line's units, or a bigger one if the cart holds
        the SKU already (a double click, a crash's leftover, a change)."""
        try:
            stock_reserve(
                sku=line.sku, cart_id=cart_id, quantity=line.quantity, now=now
            )
        except AlreadyReserved:
            return self.grow(cart_id=cart_id, line=line, now=now)
        return line

    def grow(self, *, cart_id: str, line, now: datetime):
        """More units on the cart's hold of the SKU (a line's quantity
        rising): the line lists how many more."""
        stock_adjust(sku=line.sku, cart_id=cart_id, delta=line.quantity, now=now)
        return line

    def part(self, line, quantity: int) -> CartLine:
        """The same line with ``quantity`` units (what a change takes or
        gives back)."""
        son = line.to_mongo().to_dict()
        son["quantity"] = quantity
        return CartLine._from_son(son)

    def push(self, *, cart: Cart, line, now: datetime) -> Cart | None:
        """``record`` of a line new to ``cart`` (as the caller read it) in one
        write: the cart after it is that cart plus the line, with no read
        back (it may lack a concurrent request's change, as a read could
        carry one: it is shown, never used to decide a rule). None when the
        cart refused (the SKU turned up meanwhile: ``record`` grows it)."""
        guard, update = _new_line_write(line, now)
        query = {"_id": cart.cart_id, "state": ACTIVE, **guard}
        if not carts().update_one(query, update).matched_count:
            return None
        cart.items.append(line)
        # What the write did to the cart as read (``touched``).
        cart.modified_at = now
        cart.expires_at = touched_end(cart.expires_at, now)
        return cart

    def record(self, *, cart_id: str, line, now: datetime) -> dict | None:
        raw = update_then_read(cart_id, *_new_line_write(line, now))
        if raw is not None:
            return raw
        # The cart lists the SKU already (another request of this shopper
        # added it meanwhile): the line grows, within the line cap.
        room = {
            "sku": line.sku,
            "quantity": {"$lte": MAX_LINE_QUANTITY - line.quantity},
        }
        return update_then_read(
            cart_id,
            {"items": {"$elemMatch": room}},
            touched({"$inc": {"items.$.quantity": line.quantity}}, now),
        )

    def transfer(self, *, from_cart_id: str, to_cart_id: str, line, now: datetime):
        moved = stock_transfer(
            sku=line.sku, from_cart_id=from_cart_id, to_cart_id=to_cart_id, now=now
        )
        return line if moved else None

    def refill(self, *, line, target):
        """The target cart's own line of the SKU grows by as much of this
        line as the line cap leaves room for."""
        existing = next((i for i in target.items if i.sku == line.sku), None)
        room = MAX_LINE_QUANTITY - (existing.quantity if existing else 0)
        return self.part(line, min(line.quantity, room)) if room > 0 else None

    # --- the resource side ---------------------------------------------------

    def current_price(self, *, line) -> Decimal:
        # The line knows its item: the catalog's pricing rule alone answers,
        # in one read (``sellable`` would also re-read the variant and item),
        # at the line's store for a collect line (UnknownStore: it closed).
        sku, store_id = location_parts(line.sku)
        price = price_for(item_id=line.item_id, sku=sku, store_id=store_id)
        if price is None:
            raise NotForSale()
        return price

    def current_prices(self, lines: list, seen: dict | None = None) -> list:
        # Every line's candidate prices in one query (``prices_for``).
        try:
            prices = prices_for(
                [(line.item_id, *location_parts(line.sku)) for line in lines]
            )
        except DomainError:  # a store closed: line by line, to say which
            return super().current_prices(lines)
        return [NotForSale() if price is None else price for price in prices]

    def repriced(self, *, line, price=None) -> tuple[dict, list[str]]:
        fields, changes = super().repriced(line=line, price=price)
        if getattr(line, "store_name", None):
            changes = [f"{change} at {line.store_name}" for change in changes]
        return fields, changes

    def order_lines(self, *, line) -> list[dict]:
        lines = super().order_lines(line=line)
        if getattr(line, "store_id", None):
            for son in lines:
                son.update(store_id=line.store_id, store_name=line.store_name)
        return lines

    def give_back(self, *, cart_id: str, line, now: datetime | None = None) -> None:
        give_back_units(sku=line.sku, cart_id=cart_id, quantity=line.quantity, now=now)

    def release(self, *, cart_id: str, key: str) -> None:
        stock_release(sku=key, cart_id=cart_id)

    def held_keys(self, *, cart_id: str) -> list[str]:
        # The index on the holds' cart_id answers this.
        return [hold.sku for hold in stock_holds_of_cart(cart_id=cart_id)]

    def ensure_held(self, *, cart_id: str, line, now: datetime) -> None:
        self._top_up(
            cart_id=cart_id,
            line=line,
            hold=stock_hold(sku=line.sku, cart_id=cart_id),
            now=now,
        )

    def ensure_held_lines(
        self, *, cart_id: str, lines: list, now: datetime, seen: dict | None = None
    ) -> None:
        if not lines:
            return  # a cart of tickets only: no stock to look at
        # One indexed query for all of the cart's holds, not one per line.
        holds = {h.sku: h for h in stock_holds_of_cart(cart_id=cart_id)}
        for line in lines:
            self._top_up(cart_id=cart_id, line=line, hold=holds.get(line.sku), now=now)
        if seen is not None:
            # What commit_lines starts from (a top-up above changed a hold:
            # its guard then fails and it is read again).
            seen["stock_holds"] = holds

    def _top_up(self, *, cart_id: str, line, hold, now: datetime) -> None:
        """Reserve whatever the line lists beyond ``hold`` (None: no entry)."""
        try:
            if hold is None:
                stock_reserve(
                    sku=line.sku, cart_id=cart_id, quantity=line.quantity, now=now
                )
            elif hold.quantity < line.quantity:
                stock_adjust(
                    sku=line.sku,
                    cart_id=cart_id,
                    delta=line.quantity - hold.quantity,
                    now=now,
                )
        except OutOfStock as exc:
            raise OutOfStock(available=exc.available, name=line.name) from None

    def commit(self, *, cart_id: str, line) -> bool:
        try:
            stock_commit(sku=line.sku, cart_id=cart_id, quantity=line.quantity)
        except ReservationMissing:
            return False
        return True

    def commit_lines(
        self, *, cart_id: str, lines: list, seen: dict | None = None
    ) -> list[bool]:
        # One command per step of the move for all the cart's SKUs; the
        # last (the emptied holds deleted) a moment later, with other
        # checkouts' (shop.services.tidy).
        done = stock_commit_all(
            cart_id=cart_id,
            quantities={line.sku: line.quantity for line in lines},
            known=(seen or {}).get("stock_holds"),
            finish=tidy.finish_holds_later,
        )
        return [line.sku in done for line in lines]

    def return_sold(
        self, *, cart_id: str, key: str, lines: list, reference: str
    ) -> None:
        # The reference makes the stock update apply once per order and SKU.
        stock_return(
            sku=key, quantity=sum(line.quantity for line in lines), reference=reference
        )

    def holds(self, *, before: datetime | None) -> Iterator[Hold]:
        for h in stock_holds(before=before):
            yield Hold(
                kind=self.name, key=h.sku, cart_id=h.cart_id, amount=h.quantity, at=h.at
            )

    def release_hold(self, *, hold: Hold) -> bool:
        return bool(
            stock_release(
                sku=hold.key,
                cart_id=hold.cart_id,
                expect_quantity=hold.amount,
                expect_at=hold.at,
            )
        )

    def refresh_holds(
        self, *, key: str, cart_ids: list[str], before: datetime, now: datetime
    ) -> None:
        stock_refresh(sku=key, cart_ids=cart_ids, before=before, now=now)

    def fit_hold(self, *, hold: Hold, line, now: datetime) -> None:
        delta = line.quantity - hold.amount
        if delta == 0:
            return
        try:
            stock_adjust(
                sku=hold.key,
                cart_id=hold.cart_id,
                delta=delta,
                now=now,
                expect_quantity=hold.amount,
                expect_at=hold.at,
            )
        except (OutOfStock, ReservationMissing, InvalidQuantity):
            # Changed meanwhile, or no stock to top up: checkout's
            # ensure_held refuses a short line with a clear message.
            pass

    def settle(self) -> None:
        stock_ledger_settle()

    def recover(self, *, before: datetime) -> int:
        return stock_moves_recover(before=before)

    def stale_holders(self, *, key: str, now: datetime) -> list[str]:
        # A cart past its hold changed none of its holds for a hold time.
        return stock_stale_holders(
            sku=key, changed_before=now - timedelta(minutes=settings.CART_HOLD_MINUTES)
        )

    def resource_problems(self) -> list[Problem]:
        return [Problem(self.name, p.sku, p.message) for p in stock_problems()]
