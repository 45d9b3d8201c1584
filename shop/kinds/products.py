"""Product lines: units of a SKU held on its online inventory (catalog)."""

from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings

from catalog.errors import (
    InvalidQuantity,
    NotForSale,
    OutOfStock,
    ReservationMissing,
)
from catalog.selectors.pricing import price_for
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
    stock_ledger_settle,
    stock_moves_recover,
    stock_refresh,
    stock_release,
    stock_reserve,
    stock_return,
)
from shop.kinds.base import Hold, LineKind, Problem

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


class ProductKind(LineKind):
    name = "product"
    field = "items"
    key_field = "sku"

    def amount(self, line) -> int:
        return line.quantity

    def units(self, line) -> int:
        return line.quantity

    def current_price(self, *, line) -> Decimal:
        # The line knows its item: the catalog's pricing rule alone answers,
        # in one read (``sellable`` would also re-read the variant and item).
        price = price_for(item_id=line.item_id, sku=line.sku)
        if price is None:
            raise NotForSale()
        return price

    def give_back(self, *, cart_id: str, line) -> None:
        give_back_units(sku=line.sku, cart_id=cart_id, quantity=line.quantity)

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

    def ensure_held_lines(self, *, cart_id: str, lines: list, now: datetime) -> None:
        if not lines:
            return  # a cart of tickets only: no stock to look at
        # One indexed query for all of the cart's holds, not one per line.
        holds = {h.sku: h for h in stock_holds_of_cart(cart_id=cart_id)}
        for line in lines:
            self._top_up(cart_id=cart_id, line=line, hold=holds.get(line.sku), now=now)

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
