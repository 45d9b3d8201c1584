"""Product lines: units of a SKU held on a stock location (catalog), in
the line itself.

A line's key (``CartLine.sku``) is its stock location: the SKU (delivery:
online stock and price) or ``"<sku>@<store_id>"`` (click & collect: that
store's stock and price). The kind never tells them apart beyond the
price's scope and the order line's store: one protocol holds both.

A line's ``quantity`` is what its cart holds (``shop.kinds.line_stock``):
taking units is the counter's step (``take``) then the cart's write
(``record``, ``push``), and every cart write that shortens, removes or ends
lines carries their units out (``back``, ``backs``), so there is no hold
to fit, top up or release besides the line.
"""

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal

from catalog import faults
from catalog.documents import hold_id, location_parts
from catalog.errors import NotForSale, NotStocked, OutOfStock
from catalog.selectors.pricing import price_for, prices_for
from catalog.selectors.stock import stock_problems
from catalog.services import counters
from catalog.services.stock import stock_ledger_settle, stock_return
from config.errors import DomainError
from shop.cart_state import ACTIVE
from shop.documents import CartLine
from shop.kinds import line_stock
from shop.kinds.base import Hold, LineKind, Problem
from shop.limits import MAX_LINE_QUANTITY
from shop.services.common import carts, touched, touched_end, update_then_read


def needs_delivery(lines) -> bool:
    """Whether any of these product lines is delivered (not collected)."""
    return any(not getattr(line, "store_id", None) for line in lines)


def _op(line) -> str:
    """The take a line as taken (``ProductKind.take``) carries."""
    return line.applied[-1]


def _recorded(line) -> None:
    """Step 2 of a take landed: the counter's entry is finished."""
    faults.point("stock.take.after_hold")
    counters.taken(line.sku, _op(line))


class ProductKind(LineKind):
    name = "product"
    field = "items"
    key_field = "sku"
    moves_whole = True  # a login moves a line in one protocol (``move``)

    def amount(self, line) -> int:
        return line.quantity

    def units(self, line) -> int:
        return line.quantity

    # --- the line pipeline's steps ---------------------------------------------

    def guard(self, line) -> dict:
        """The line as read: its units, and the takes that gave them, which
        a give-back that ends it drops from the counter's journal (a line
        removed and added again meanwhile, the same size, is another line:
        its takes are not these)."""
        return {
            "sku": line.sku,
            "quantity": line.quantity,
            "applied": list(line.applied or []),
        }

    def take(self, *, cart_id: str, line, now: datetime):
        """Step 1 of a take: the line's units leave the counter for this
        cart; the line, as taken, lists the move (``applied``), which the
        cart's write (``record``, ``push``, a new cart) records. The line is
        the caller's own (a new line, or a ``part``): it is returned listing
        the move, not copied (a copy cost a fifth of a millisecond per add).
        Raises NotStocked, OutOfStock (with the units still free)."""
        op = counters.take(line.sku, hold_id(line.sku, cart_id), line.quantity, now)
        if op is None:
            free = counters.free_units(line.sku)
            raise NotStocked() if free is None else OutOfStock(available=free)
        faults.point("stock.take.after_counter")
        line.applied = [op]
        return line

    def recorded(self, line) -> None:
        """Step 2 of a take landed (``line`` as taken): the counter's journal
        entry of the move is finished (dropped by the next write to it)."""
        _recorded(line)

    def untake(self, *, cart_id: str, line, now: datetime | None = None) -> None:
        """The cart refused the take: its units go back to the counter, once
        (guarded on the counter's entry: a recovery may have been first)."""
        counters.untake(line.sku, _op(line), line.quantity)

    def part(self, line, quantity: int, applied: list[str] | None = None) -> CartLine:
        """The same line with ``quantity`` units (what a change takes or
        gives back), listing ``applied`` if given."""
        son = line.to_mongo().to_dict()
        son["quantity"] = quantity
        if applied is not None:
            son["applied"] = applied
        return CartLine._from_son(son)

    def push(self, *, cart: dict, line, now: datetime) -> dict | None:
        """``record`` of a line new to ``cart`` (as the caller read it, as
        stored) in one write: the cart after it, as stored, is that cart
        plus the line, with no read back (it may lack a concurrent request's
        change, as a read could carry one: it is shown, never used to
        decide a rule). None when the cart refused (the SKU turned up
        meanwhile: ``record`` grows it)."""
        guard, update = line_stock.pushed(line.to_mongo().to_dict(), _op(line))
        query = {"_id": cart["_id"], "state": ACTIVE, **guard}
        if not carts().update_one(query, touched(update, now)).matched_count:
            return None
        _recorded(line)
        # What the write did to the cart as read (``touched``).
        return {
            **cart,
            self.field: [*(cart.get(self.field) or []), update["$push"][self.field]],
            "modified_at": now,
            "expires_at": touched_end(cart["expires_at"], now),
        }

    def record(self, *, cart_id: str, line, now: datetime) -> dict | None:
        """Step 2 of a take (``line`` as taken): a new line on the active
        cart, or, if the cart lists the location already (another request
        of this shopper added it meanwhile), that line grows within the
        line cap. Either way the move is listed, and refused if a recovery
        fenced it. The cart after, or None."""
        op = _op(line)
        guard, update = line_stock.pushed(line.to_mongo().to_dict(), op)
        raw = update_then_read(cart_id, guard, touched(update, now))
        if raw is None:
            room = {
                "sku": line.sku,
                "quantity": {"$lte": MAX_LINE_QUANTITY - line.quantity},
            }
            raw = update_then_read(
                cart_id,
                {"items": {"$elemMatch": room}, "stock_void": {"$ne": op}},
                touched(
                    {
                        "$inc": {"items.$.quantity": line.quantity},
                        "$push": {"items.$.applied": op},
                    },
                    now,
                ),
            )
        if raw is not None:
            _recorded(line)
        return raw

    def grow(self, *, cart_id: str, line, old: int, now: datetime) -> dict | None:
        """Step 2 of a take growing the cart's line of the location from
        ``old`` units (as read) by the taken ``line``'s; None if it changed."""
        guard, update = line_stock.grown(line.sku, old, line.quantity, _op(line))
        raw = update_then_read(cart_id, guard, touched(update, now))
        if raw is not None:
            _recorded(line)
        return raw

    def back(self, line, *, free: int = 0, sold: int = 0, ends: bool, now) -> dict:
        """The ``stock_back`` entry of ``free + sold`` units leaving ``line``
        (as read); ``ends``: the line goes, so its takes are dropped from the
        counter's journal with the entry's step 2."""
        forget = list(line.applied or []) if ends else []
        return line_stock.back_entry(
            line.sku, free=free, sold=sold, forget=forget, now=now
        )

    def backs(self, *, lines: list, sold: bool, now: datetime) -> list[dict]:
        return [
            self.back(
                line,
                free=0 if sold else line.quantity,
                sold=line.quantity if sold else 0,
                ends=True,
                now=now,
            )
            for line in lines
        ]

    def take_back(self, *, cart_id: str, line, update: dict, now: datetime) -> bool:
        """Take exactly this line (as read) off the active cart with
        ``update`` besides, its units back on the counter: one give-back.
        False when the line changed or the cart is not active."""
        guard = self.guard(line)
        entry = self.back(line, free=line.quantity, ends=True, now=now)

        def unlist(push: dict) -> bool:
            query = {"_id": cart_id, "state": ACTIVE, "items": {"$elemMatch": guard}}
            change = line_stock.merged(update, {"$pull": {"items": guard}}, push)
            return bool(carts().update_one(query, change).modified_count)

        return line_stock.give(cart_id=cart_id, entries=[entry], write=unlist)

    def transfer(self, *, from_cart_id: str, to_cart_id: str, line, now: datetime):
        """Not a step of its own: a login moves a product line whole
        (``move``)."""
        raise NotImplementedError("ProductKind.move moves a line whole")

    def move(self, *, source_id: str, target_id: str, line, now: datetime):
        """A login hands this line (as read) from the anonymous cart to the
        account's (``line_stock.transfer``): a new line there, or more of the
        account's line of the location, within the line cap. A target that
        refuses (closed, or over the cap) frees the units. True when the
        target has them, False when it refused, None when the line changed
        on the source (nothing moved)."""
        guard = self.guard(line)
        moved = line.to_mongo().to_dict()

        def unlist(push: dict) -> bool:
            # Only from an active cart: a pending one is being paid for, an
            # expiring or ended one gives its lines' units back itself.
            query = {"_id": source_id, "state": ACTIVE, "items": {"$elemMatch": guard}}
            change = line_stock.merged(
                touched({}, now), {"$pull": {"items": guard}}, push
            )
            return bool(carts().update_one(query, change).modified_count)

        def record(op: str, moved_in: dict) -> bool:
            moved["applied"] = [op]
            guard_new, push = line_stock.pushed(moved, op)
            query = {"_id": target_id, "state": ACTIVE, **guard_new}
            if (
                carts()
                .update_one(query, touched(line_stock.merged(push, moved_in), now))
                .modified_count
            ):
                return True
            room = {
                "sku": line.sku,
                "quantity": {"$lte": MAX_LINE_QUANTITY - line.quantity},
            }
            query = {
                "_id": target_id,
                "state": ACTIVE,
                "items": {"$elemMatch": room},
                "stock_void": {"$ne": op},
            }
            grow = {
                "$inc": {"items.$.quantity": line.quantity},
                "$push": {"items.$.applied": op, **moved_in["$push"]},
            }
            return bool(carts().update_one(query, touched(grow, now)).modified_count)

        moved = line_stock.transfer(
            key=line.sku,
            source_id=source_id,
            target_id=target_id,
            units=line.quantity,
            applied=list(line.applied or []),
            unlist=unlist,
            record=record,
            now=now,
        )
        return None if moved is None else bool(moved)

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
        """Nothing to do: the write that unlisted the line carried its units
        out (``backs``, ``take_back``)."""

    def release(self, *, cart_id: str, key: str) -> None:
        """Nothing to do: the write that ends the cart carries its lines'
        units out (``backs``)."""

    def held_keys(self, *, cart_id: str) -> list[str]:
        return []  # a cart holds exactly what its lines list

    def ensure_held(self, *, cart_id: str, line, now: datetime) -> None:
        """A line is its hold: held while its cart is active or pending."""

    def ensure_held_lines(
        self, *, cart_id: str, lines: list, now: datetime, seen: dict | None = None
    ) -> None:
        """As ``ensure_held``: nothing to check."""

    def commit(self, *, cart_id: str, line) -> bool:
        """The complete write sells the lines (``backs(sold=True)``)."""
        return True

    def return_sold(
        self, *, cart_id: str, key: str, lines: list, reference: str
    ) -> None:
        # The reference makes the stock update apply once per order and SKU.
        stock_return(
            sku=key, quantity=sum(line.quantity for line in lines), reference=reference
        )

    # --- reconciliation: the moves left in flight, and conservation ----------

    def holds(self, *, before: datetime | None) -> Iterator[Hold]:
        return iter(())  # no hold outside the lines

    def release_hold(self, *, hold: Hold) -> bool:
        return False

    def refresh_holds(
        self, *, key: str, cart_ids: list[str], before: datetime, now: datetime
    ) -> None:
        """Nothing to stamp: a line is confirmed by its cart."""

    def fit_hold(self, *, hold: Hold, line, now: datetime) -> None:
        """Nothing to fit: a line is its hold."""

    def settle(self) -> None:
        stock_ledger_settle()

    def recover(self, *, before: datetime) -> int:
        return line_stock.recover(before=before)

    def resource_problems(self) -> list[Problem]:
        held = line_stock.held_units()
        return [Problem(self.name, p.sku, p.message) for p in stock_problems(held=held)]
