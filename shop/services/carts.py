"""A shopper's changes to their cart: add, change, remove, clear, extend, merge.

Each product change runs the line pipeline of ``shop.services.lines`` (the
resource first when units are taken, the cart first when they are given
back); this module says only what the shopper wants.
"""

from dataclasses import dataclass
from datetime import datetime

from catalog.documents import stock_location
from catalog.errors import InvalidQuantity, NotStocked, OutOfStock
from catalog.selectors.pricing import sellable
from catalog.selectors.stores import store_get
from config import compat
from config.errors import DomainError
from shop import faults
from shop.cart_state import ACTIVE, CANCELED, live_filter, open_filter, refusal
from shop.documents import Cart, CartLine
from shop.errors import (
    CartChanged,
    CartNotFound,
    CartPending,
    ExtensionsUsed,
    LineNotInCart,
)
from shop.kinds import (
    KINDS,
    PRODUCTS,
    backs_of,
    line_stock,
    lines_of,
    stored_lines,
    units_of,
)
from shop.limits import MAX_EXTENSIONS
from shop.services import caps, owners
from shop.services.common import (
    carts,
    hold_time,
    load_cart,
    touched,
    utcnow,
)
from shop.services.expiry import carts_expire_holding
from shop.services.lines import (
    ATTEMPTS,
    first_line,
    live_cart,
    live_son,
    missing_cart,
    move_line,
    refusal_of,
    reload,
    take_and_record,
)


def _units(quantity: object, *, allow_zero: bool = False) -> int:
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        raise InvalidQuantity()
    if quantity < (0 if allow_zero else 1):
        raise InvalidQuantity()
    caps.units_fit(quantity)
    return quantity


def _line(cart: Cart, sku: str):
    return next((line for line in cart.items if line.sku == sku), None)


def _cart_line(owner: str, sku: str, now: datetime) -> tuple[Cart, object]:
    """The owner's live cart and its line of ``sku``; LineNotInCart (or
    CartExpired, when the cart ran out) when there is none."""
    cart = live_cart(owner, now, create=False)
    if cart is None:
        raise missing_cart(owner, now, LineNotInCart())
    line = _line(cart, sku)
    if line is None:
        raise LineNotInCart()
    return cart, line


def _take(*, cart_id: str, line, now: datetime):
    """Step 1 of holding the line's units for the cart: the counter gives
    them (``ProductKind.take``; the cart's write records them). When units
    are short, carts past their hold that list the SKU are expired first
    and the take is retried once (DESIGN §3.5)."""
    for attempt in (1, 2):
        try:
            return PRODUCTS.take(cart_id=cart_id, line=line, now=now)
        except OutOfStock as exc:
            if attempt == 2 or not carts_expire_holding(
                kind=PRODUCTS, key=line.sku, now=now
            ):
                raise OutOfStock(available=exc.available, name=_named(line)) from None
    raise AssertionError("unreachable")


def _named(line) -> str:
    """The line as a refusal names it: where it is collected, if it is."""
    return f"{line.name} at {line.store_name}" if line.store_name else line.name


class Added:
    """What an add did: the cart's id, the line's item, and the cart after
    it, which a page answering an add shows only by its units (the badge).

    The cart is kept as the add has it (as stored: the cart as read plus
    the line pushed, ``ProductKind.push``; or a ``Cart`` when the add made
    the cart or grew a line), and built into a ``Cart`` only when asked
    (``cart``): building the document of a cart read on every add cost a
    tenth of a cart flow's CPU (bench/RESULTS.md).
    """

    def __init__(self, item_id: str, *, son: dict | None = None, cart=None) -> None:
        self.item_id = item_id
        self._son = son
        self._cart = cart
        self.cart_id = cart.cart_id if cart is not None else son["_id"]

    @property
    def cart(self) -> Cart:
        if self._cart is None:
            self._cart = load_cart(self._son)
        return self._cart

    @property
    def units(self) -> int:
        """Units the cart lists after the add, of every kind (the badge)."""
        if self._cart is not None:
            return units_of(lines_of(self._cart))
        return units_of(stored_lines(self._son))


def cart_add_item(
    *,
    owner: str,
    sku: str,
    quantity: int,
    store_id: str | None = None,
    now: datetime | None = None,
) -> Cart:
    """``cart_add``, and the cart after it as a ``Cart``."""
    return cart_add(
        owner=owner, sku=sku, quantity=quantity, store_id=store_id, now=now
    ).cart


def cart_add(
    *,
    owner: str,
    sku: str,
    quantity: int,
    store_id: str | None = None,
    now: datetime | None = None,
) -> Added:
    """Put ``quantity`` units of ``sku`` in the owner's cart, holding them.

    Without ``store_id`` the line is delivered (online stock and price);
    with one it is collected there (that store's stock location, the line's
    key, and its price); a SKU may be on the cart both ways, as two lines.
    Name and price come from the catalog, never from the request. The units
    are reserved on the location first, then the line is recorded on the
    active cart (or grows); if the cart refuses, the units go back at once.
    A shopper without a live cart gets one born with the line, once the
    units are held. The live cart is read as stored: the add needs its id,
    its lines' keys and their count (``Added``).

    Raises InvalidQuantity, QuantityTooLarge, TooManyLines, UnknownSku,
    UnknownStore, NotForSale, NotStocked, OutOfStock (also for a store that
    does not stock the SKU), CartPending, CartExpired, CartChanged.
    """
    quantity = _units(quantity)
    now = utcnow(now)
    key = stock_location(sku, store_id)
    new = None
    for _ in range(ATTEMPTS):
        raw = live_son(owner, now)
        listed = stored_lines(raw)
        if any(kind is PRODUCTS and line.sku == key for kind, line in listed):
            # More of a line the cart has: its name and price are known
            # already (checkout re-prices every line anyway).
            cart = load_cart(raw)
            line = _line(cart, key)
            caps.units_fit(line.quantity + quantity)
            grown = _change(cart, line, line.quantity + quantity, now)
            return Added(line.item_id, cart=grown)
        caps.line_fits(None if raw is None else len(listed))
        if new is None:
            product = sellable(sku=sku, store_id=store_id)
            store = store_get(store_id=store_id) if store_id else None
            new = _new_line(product, key, store, quantity, now)
        try:
            if raw is not None:
                return Added(new.item_id, son=_add_line(raw, new, now))
            made = _first_line(owner, new, now)
        except NotStocked:
            if store_id is None:
                raise
            # The store does not stock it: to the shopper, out of stock there.
            raise OutOfStock(available=0, name=_named(new)) from None
        if made is not None:
            return Added(new.item_id, cart=made)
    raise CartChanged()


def _first_line(owner: str, line, now: datetime) -> Cart | None:
    """The owner's cart made with ``line``, once its units are held
    (``first_line``); None when the owner got a live cart meanwhile."""
    made = first_line(
        owner,
        now,
        field=PRODUCTS.field,
        take=lambda cart_id: _take(cart_id=cart_id, line=line, now=now),
        son=lambda taken: taken.to_mongo().to_dict(),
        give_back=lambda cart_id, taken: PRODUCTS.untake(
            cart_id=cart_id, line=taken, now=now
        ),
        point="add.after_reserve",
    )
    if made is None:
        return None
    taken, cart = made
    PRODUCTS.recorded(taken)
    cart.items.append(taken)
    return cart


def _new_line(product, key: str, store, quantity: int, now: datetime) -> CartLine:
    """The cart line of a catalog product at stock location ``key`` (to
    collect at ``store``, or delivered when None)."""
    return CartLine(
        sku=key,
        item_id=product.item_id,
        name=product.name,
        quantity=quantity,
        unit_price=product.unit_price,
        added_at=now,
        store_id=store.store_id if store else None,
        store_name=store.name if store else None,
    )


def _add_line(cart: dict, line, now: datetime) -> dict:
    """The line pipeline for a SKU new to the cart (as stored): reserve,
    then record. The cart after it, as stored: the cart as read plus the
    line, read back only if the SKU turned up on the cart meanwhile."""
    cart_id = cart["_id"]

    def record(taken) -> dict | None:
        return PRODUCTS.push(cart=cart, line=taken, now=now) or PRODUCTS.record(
            cart_id=cart_id, line=taken, now=now
        )

    _, after = take_and_record(
        cart_id=cart_id,
        take=lambda: _take(cart_id=cart_id, line=line, now=now),
        record=record,
        give_back=lambda taken: PRODUCTS.untake(cart_id=cart_id, line=taken, now=now),
        now=now,
        point="add.after_reserve",
    )
    return after


def _change(cart: Cart, line, quantity: int, now: datetime) -> Cart:
    """Move one line from its quantity to ``quantity`` (both >= 1), guarded
    on the quantity read: a concurrent change makes it refuse. Growing
    takes the difference first, then records it; shrinking records it with
    the units it gives back, in one write (``ProductKind.back``)."""
    cart_id, old = cart.cart_id, line.quantity
    delta = quantity - old
    if delta > 0:
        take_and_record(
            cart_id=cart_id,
            take=lambda: _take(
                cart_id=cart_id, line=PRODUCTS.part(line, delta), now=now
            ),
            record=lambda taken: PRODUCTS.grow(
                cart_id=cart_id, line=taken, old=old, now=now
            ),
            give_back=lambda taken: PRODUCTS.untake(
                cart_id=cart_id, line=taken, now=now
            ),
            now=now,
            point="set_quantity.after_stock",
        )
        return reload(cart_id)
    as_read = {
        "_id": cart_id,
        "state": ACTIVE,
        "items": {"$elemMatch": PRODUCTS.guard(line)},
    }
    fields = {"items.$.quantity": quantity} if delta else {}
    entries = [PRODUCTS.back(line, free=-delta, ends=False, now=now)] if delta else []

    def write(push: dict) -> bool:
        change = line_stock.merged(touched({"$set": fields}, now), push)
        return bool(carts().update_one(as_read, change).matched_count)

    if not line_stock.give(cart_id=cart_id, entries=entries, write=write):
        raise refusal_of(cart_id, now)
    return reload(cart_id)


def cart_set_quantity(
    *, owner: str, sku: str, quantity: int, now: datetime | None = None
) -> Cart:
    """Set a line's quantity; 0 removes it.

    Growing reserves the difference first (stock_adjust, guarded on free
    units) and then records it; shrinking records it and then gives the
    difference back. A change the stock cannot cover changes nothing.

    Raises InvalidQuantity, QuantityTooLarge, LineNotInCart, OutOfStock,
    CartPending, CartExpired, CartChanged.
    """
    quantity = _units(quantity, allow_zero=True)
    if quantity == 0:
        return cart_remove_item(owner=owner, sku=sku, now=now)
    now = utcnow(now)
    cart, line = _cart_line(owner, sku, now)
    return _change(cart, line, quantity, now)


def cart_remove_item(*, owner: str, sku: str, now: datetime | None = None) -> Cart:
    """Take a line out of the cart and give its units back (cart first).

    Raises LineNotInCart, CartPending, CartExpired, CartChanged.
    """
    now = utcnow(now)
    cart, line = _cart_line(owner, sku, now)
    if not PRODUCTS.take_back(
        cart_id=cart.cart_id, line=line, update=touched({}, now), now=now
    ):
        raise refusal_of(cart.cart_id, now)
    return reload(cart.cart_id)


def cart_clear(*, owner: str, now: datetime | None = None) -> Cart | None:
    """Empty the cart (every kind of line) and give every hold back.

    The cart is emptied in one update guarded on its lines as read, so what
    it empties is exactly what is then given back (a line added or changed
    in between makes it refuse: read again). Not a findAndModify returning
    the cart before it: on the Rust server that costs time growing with the
    carts (config/compat.py). Returns the emptied cart, None if there was
    none.

    Raises CartPending, CartExpired, CartChanged.
    """
    now = utcnow(now)
    raw = live_son(owner, now)
    if raw is None:
        return None
    cart_id = raw["_id"]
    emptied = {kind.field: [] for kind in KINDS}
    for _ in range(ATTEMPTS):
        # A field the cart lacks is guarded as None, which matches it absent.
        as_read = {kind.field: raw.get(kind.field) for kind in KINDS}
        query = {"_id": cart_id, "state": ACTIVE, **as_read}
        cart = load_cart(raw)
        # The lines held in their cart leave with the write that empties it.
        entries = backs_of(cart, sold=False, now=now)

        def write(push: dict, query=query) -> bool:
            change = line_stock.merged(touched({"$set": emptied}, now), push)
            return bool(carts().update_one(query, change).matched_count)

        if line_stock.give(cart_id=cart_id, entries=entries, write=write):
            break
        raw = carts().find_one({"_id": cart_id})
        if raw is None or raw["state"] != ACTIVE:
            raise refusal_of(cart_id, now)
    else:
        raise CartChanged()
    faults.point("clear.after_cart")
    for kind, line in lines_of(load_cart(raw)):
        kind.give_back(cart_id=cart_id, line=line)
    return reload(cart_id)


def cart_extend_hold(*, owner: str, now: datetime | None = None) -> Cart:
    """Add one hold time to the cart's current expiry, at most MAX_EXTENSIONS
    times. From the expiry, not from now: pressing it right after a change
    (which restarted the hold) still gives a whole hold more. The guard
    carries the count and the expiry as read (another change in between
    moves the expiry: read again).

    Raises CartNotFound, CartPending, CartExpired, ExtensionsUsed, CartChanged.
    """
    now = utcnow(now)
    if not isinstance(owner, str) or not owner:
        raise CartNotFound("You have no cart to extend.")
    for _ in range(3):
        raw = carts().find_one(live_filter(owner))
        if raw is None:
            raise missing_cart(owner, now, CartNotFound("You have no cart to extend."))
        until = raw["expires_at"]
        # An update, then a read by _id (config/compat.py).
        extended = compat.update_then_read(
            carts(),
            {
                "_id": raw["_id"],
                **live_filter(owner),
                "extensions": {"$lt": MAX_EXTENSIONS},
                # Both on expires_at: the cart within its hold, unchanged.
                "$and": [open_filter(now), {"expires_at": until}],
            },
            {
                "$set": {"modified_at": now, "expires_at": until + hold_time()},
                "$inc": {"extensions": 1},
            },
        )
        if extended is not None:
            return load_cart(extended)
        latest = carts().find_one({"_id": raw["_id"]})
        if latest is None or latest.get("expires_at") == until:
            raise refusal(latest, now, active=ExtensionsUsed())
    raise CartChanged()


def cart_merge(
    *, from_owner: str, to_owner: str, now: datetime | None = None
) -> Cart | None:
    """On login, move the anonymous cart into the account's cart.

    No live account cart: the anonymous cart changes owner (one update; its
    holds are untouched). Otherwise line by line: the line leaves the
    anonymous cart, its hold is handed to the account's cart
    (stock_transfer: no unit is free in between) and the line is recorded
    there; a SKU both carts have is given back and added again, which may
    find fewer units. Seats move the same way (seats_transfer), joining the
    account's line for their session. The emptied anonymous cart is
    canceled. A cart in checkout is left alone. Returns the account's cart,
    if any.
    """
    now = utcnow(now)
    if from_owner == to_owner:
        return None
    try:
        source = live_cart(from_owner, now, create=False)
        target = live_cart(to_owner, now, create=False)
    except CartPending:
        return None
    if source is None:
        return target
    if target is None:
        if _hand_over(source.cart_id, from_owner, to_owner, now):
            return reload(source.cart_id)
        # The account got a live cart meanwhile: merge into it.
        target = live_cart(to_owner, now, create=True)
    for kind in KINDS:
        for line in kind.lines(source):
            refill = move_line(
                kind,
                source_id=source.cart_id,
                target_id=target.cart_id,
                line=line,
                now=now,
            )
            if refill is not None:
                _refill(kind, target.cart_id, refill, now)
    _cancel_if_emptied(source.cart_id, from_owner, now)
    return reload(target.cart_id)


@dataclass(frozen=True)
class Merged:
    """A login's merge: the account's cart after it, and the title of each
    line of the anonymous cart that did not come along whole (its units
    sold out meanwhile, a cap of the account's cart, seats the account's
    line could not join), to tell the shopper."""

    cart: Cart | None
    short: list[str]


def cart_merge_report(
    *, from_owner: str, to_owner: str, now: datetime | None = None
) -> Merged:
    """``cart_merge``, and what of the anonymous cart it could not keep:
    each of its lines' units against what the account's cart lists after
    (its own units of that line included)."""
    now = utcnow(now)
    try:
        source = live_cart(from_owner, now, create=False)
        target = live_cart(to_owner, now, create=False)
    except CartPending:
        source = target = None
    merged = cart_merge(from_owner=from_owner, to_owner=to_owner, now=now)
    if source is None:
        return Merged(merged, [])
    had, after = _units_listed(target), _units_listed(merged)
    short = [
        title
        for key, (units, title) in _units_listed(source).items()
        if after.get(key, (0, ""))[0] < units + had.get(key, (0, ""))[0]
    ]
    return Merged(merged, short)


def _units_listed(cart: Cart | None) -> dict[tuple[str, str], tuple[int, str]]:
    """(kind, resource key) -> (units, the line's title) of a cart's lines."""
    if cart is None:
        return {}
    return {
        (kind.name, kind.key(line)): (kind.units(line), kind.title(line))
        for kind in KINDS
        for line in kind.lines(cart)
    }


def _cancel_if_emptied(cart_id: str, owner: str, now: datetime) -> None:
    """The anonymous cart, once every line left it, is canceled (guarded on
    being active and empty) and its owner's claim released."""
    emptied = {f"{kind.field}.0": {"$exists": False} for kind in KINDS}
    canceled = carts().update_one(
        {"_id": cart_id, "state": ACTIVE, **emptied},
        {
            "$set": {"state": CANCELED, "ended_at": now, "modified_at": now},
            "$unset": {"live_owner": ""},
        },
    )
    if canceled.modified_count:
        owners.release(owner=owner, cart_id=cart_id)


def _hand_over(cart_id: str, from_owner: str, to_owner: str, now: datetime) -> bool:
    """The anonymous cart becomes the account's (its holds untouched); False
    when the account has a live cart (its claim says so) or the anonymous
    cart changed meanwhile.

    The account's claim first, then the cart changes owner, then the
    anonymous claim goes (shop.services.owners).
    """
    if not owners.claim(owner=to_owner, cart_id=cart_id, now=now):
        return False
    moved = (
        carts()
        .update_one(
            {"_id": cart_id, "state": ACTIVE, "live_owner": from_owner},
            touched({"$set": {"owner": to_owner, "live_owner": to_owner}}, now),
        )
        .modified_count
    )
    if not moved:
        owners.release(owner=to_owner, cart_id=cart_id)
        return False
    owners.release(owner=from_owner, cart_id=cart_id)
    return True


def _refill(kind, cart_id: str, line, now: datetime) -> None:
    """The account's cart takes again what could not move to it (the add
    pipeline); sold out meanwhile, it keeps what it had."""
    try:
        take_and_record(
            cart_id=cart_id,
            take=lambda: kind.take(cart_id=cart_id, line=line, now=now),
            record=lambda taken: kind.record(cart_id=cart_id, line=taken, now=now),
            give_back=lambda taken: kind.untake(cart_id=cart_id, line=taken, now=now),
            now=now,
            point="add.after_reserve",
        )
    except DomainError:
        pass
