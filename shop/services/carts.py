"""A shopper's changes to their cart: add, change, remove, clear, extend, merge.

Order of the two writes (DESIGN §3.2). When units are TAKEN, the resource
first, then the cart (guarded on ``state == "active"``), and if the cart
refuses, the units go straight back. When units are GIVEN BACK, the cart
first, then the resource. Either way the resource never holds less than the
cart lists: a crash between the two writes leaves a surplus hold, which the
reconciler returns; never a line without its units.

Every change pushes ``expires_at`` to now + CART_HOLD_MINUTES.
"""

import uuid
from datetime import datetime

from bson.decimal128 import Decimal128
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from catalog.errors import AlreadyReserved, InvalidQuantity, OutOfStock
from catalog.selectors.pricing import sellable
from catalog.services.stock import stock_adjust, stock_reserve, stock_transfer
from config.errors import DomainError
from shop import faults
from shop.cart_state import (
    ACTIVE,
    CANCELED,
    PENDING,
    is_live,
    live_filter,
    missing,
    open_filter,
    refusal,
)
from shop.documents import Cart
from shop.errors import (
    CartChanged,
    CartNotFound,
    CartPending,
    ExtensionsUsed,
    LineNotInCart,
    QuantityTooLarge,
)
from shop.kinds import KINDS, PRODUCTS, lines_of
from shop.kinds.products import give_back_units
from shop.limits import MAX_EXTENSIONS, MAX_LINE_QUANTITY
from shop.services.common import carts, hold_time, load_cart, utcnow
from shop.services.expiry import cart_expire, carts_expire_holding

# Read-then-write loops on the cart retry this often when another request of
# the same shopper got in between.
_ATTEMPTS = 4


def _units(quantity: object, *, allow_zero: bool = False) -> int:
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        raise InvalidQuantity()
    if quantity < (0 if allow_zero else 1):
        raise InvalidQuantity()
    if quantity > MAX_LINE_QUANTITY:
        raise QuantityTooLarge(limit=MAX_LINE_QUANTITY)
    return quantity


def _touch(now: datetime) -> dict:
    """The fields every cart change sets: the hold restarts from now."""
    return {"modified_at": now, "expires_at": now + hold_time()}


def _reload(cart_id: str) -> Cart:
    return load_cart(carts().find_one({"_id": cart_id}))


def _line(cart: Cart, sku: str):
    return next((line for line in cart.items if line.sku == sku), None)


def _live_cart(owner: str, now: datetime, *, create: bool) -> Cart | None:
    """The owner's active cart within its hold (created if asked).

    A live cart found past its hold is expired on the spot (its units go
    back) and a new one started: expiry never waits for the job.
    Raises CartPending while a checkout of the owner's cart runs.
    """
    if not isinstance(owner, str) or not owner:
        # No shopper identity yet (a first visit): no cart to find.
        if create:
            raise CartNotFound()
        return None
    for _ in range(_ATTEMPTS):
        raw = carts().find_one(live_filter(owner))
        if raw is not None:
            if raw["state"] == PENDING:
                raise CartPending()
            if is_live(raw, now):
                return load_cart(raw)
            cart_expire(cart_id=raw["_id"], now=now)
            continue
        if not create:
            return None
        cart = _new_cart(owner, now)
        if cart is not None:
            return cart
    raise CartChanged()


def _new_cart(owner: str, now: datetime) -> Cart | None:
    """A new live cart for the owner; None when the owner has one already."""
    if not isinstance(owner, str) or not owner:
        raise CartNotFound()
    cart = Cart(
        cart_id=uuid.uuid4().hex,
        owner=owner,
        live_owner=owner,
        state=ACTIVE,
        items=[],
        created_at=now,
        **_touch(now),
    )
    try:
        # The unique live_owner index allows one live cart per owner.
        carts().insert_one(cart.to_mongo().to_dict())
    except DuplicateKeyError:
        return None
    return cart


def _refusal(cart_id: str, now: datetime) -> DomainError:
    """Why a conditional update of this cart matched nothing (cart_state)."""
    raw = carts().find_one({"_id": cart_id}, {"state": 1, "expires_at": 1})
    return refusal(raw, now)


def _missing_cart(owner: str, now: datetime, default: DomainError) -> DomainError:
    """The owner has no live cart: say so, or that it expired."""
    latest = carts().find_one(
        {"owner": owner}, {"state": 1}, sort=[("modified_at", -1)]
    )
    return missing(latest, default)


def _take(*, cart_id: str, sku: str, quantity: int, name: str, now, new: bool):
    """Hold ``quantity`` more units of ``sku`` for the cart.

    ``new``: a new entry (or a bigger one if the cart already holds some:
    a double click, or a leftover of a crash). When units are short, carts
    past their hold that list the SKU are expired first and the reservation
    is retried once (DESIGN §3.5).
    """
    for attempt in (1, 2):
        try:
            if new:
                try:
                    stock_reserve(sku=sku, cart_id=cart_id, quantity=quantity, now=now)
                    return
                except AlreadyReserved:
                    pass
            stock_adjust(sku=sku, cart_id=cart_id, delta=quantity, now=now)
            return
        except OutOfStock as exc:
            if attempt == 2 or not carts_expire_holding(
                kind=PRODUCTS, key=sku, now=now
            ):
                raise OutOfStock(available=exc.available, name=name) from None


def cart_add_item(
    *, owner: str, sku: str, quantity: int, now: datetime | None = None
) -> Cart:
    """Put ``quantity`` units of ``sku`` in the owner's cart, holding them.

    Name and price come from the catalog, never from the request. The units
    are reserved on the SKU's inventory first, then the line is recorded on
    the active cart (or grows if present); if the cart refuses, the units go
    back at once.

    Raises InvalidQuantity, QuantityTooLarge, UnknownSku, NotForSale,
    NotStocked, OutOfStock, CartPending, CartExpired, CartChanged.
    """
    quantity = _units(quantity)
    now = utcnow(now)
    cart = _live_cart(owner, now, create=False)
    line = _line(cart, sku) if cart is not None else None
    if line is not None:
        # More of a line the cart has: its name and price are known already
        # (checkout re-prices every line anyway).
        if line.quantity + quantity > MAX_LINE_QUANTITY:
            raise QuantityTooLarge(limit=MAX_LINE_QUANTITY)
        return _change(cart, line, line.quantity + quantity, now)
    product = sellable(sku=sku)
    if cart is None:
        # There was none a moment ago: insert one straight away. If another
        # request of this shopper made one meanwhile, the unique index
        # refuses and the loop finds (or expires and replaces) that one.
        cart = _new_cart(owner, now) or _live_cart(owner, now, create=True)

    cart_id = cart.cart_id
    _take(
        cart_id=cart_id,
        sku=sku,
        quantity=quantity,
        name=product.name,
        now=now,
        new=True,
    )
    faults.point("add.after_reserve")
    son = {
        "sku": sku,
        "item_id": product.item_id,
        "name": product.name,
        "quantity": quantity,
        "unit_price": Decimal128(product.unit_price),
        "added_at": now,
    }
    raw = carts().find_one_and_update(
        {"_id": cart_id, "state": ACTIVE, "items.sku": {"$ne": sku}},
        {"$push": {"items": son}, "$set": _touch(now)},
        return_document=ReturnDocument.AFTER,
    )
    if raw is None:
        # Another request of this shopper added the same SKU meanwhile. (No
        # findAndModify here: the embedded server refuses a positional "$"
        # in it, so update, then read.)
        if (
            carts()
            .update_one(
                {
                    "_id": cart_id,
                    "state": ACTIVE,
                    "items": {
                        "$elemMatch": {
                            "sku": sku,
                            "quantity": {"$lte": MAX_LINE_QUANTITY - quantity},
                        }
                    },
                },
                {"$inc": {"items.$.quantity": quantity}, "$set": _touch(now)},
            )
            .modified_count
        ):
            raw = carts().find_one({"_id": cart_id})
    if raw is None:
        give_back_units(sku=sku, cart_id=cart_id, quantity=quantity, now=now)
        raise _refusal(cart_id, now)
    return load_cart(raw)


def _change(cart: Cart, line, quantity: int, now: datetime) -> Cart:
    """Move one line from its quantity to ``quantity`` (both >= 1)."""
    cart_id, sku, old = cart.cart_id, line.sku, line.quantity
    delta = quantity - old

    def record(fields: dict) -> dict | None:
        # Guarded on the quantity read: a concurrent change makes this refuse.
        # (update then read: the embedded server refuses a positional "$" in
        # findAndModify.)
        if (
            not carts()
            .update_one(
                {
                    "_id": cart_id,
                    "state": ACTIVE,
                    "items": {"$elemMatch": {"sku": sku, "quantity": old}},
                },
                {"$set": {**fields, **_touch(now)}},
            )
            .modified_count
        ):
            return None
        return carts().find_one({"_id": cart_id})

    if delta > 0:
        _take(
            cart_id=cart_id, sku=sku, quantity=delta, name=line.name, now=now, new=False
        )
        faults.point("set_quantity.after_stock")
        raw = record({"items.$.quantity": quantity})
        if raw is None:
            give_back_units(sku=sku, cart_id=cart_id, quantity=delta, now=now)
            raise _refusal(cart_id, now)
    elif delta < 0:
        raw = record({"items.$.quantity": quantity})
        if raw is None:
            raise _refusal(cart_id, now)
        faults.point("set_quantity.after_cart")
        give_back_units(sku=sku, cart_id=cart_id, quantity=-delta, now=now)
    else:
        raw = record({})
        if raw is None:
            raise _refusal(cart_id, now)
    return load_cart(raw)


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
    cart = _live_cart(owner, now, create=False)
    if cart is None:
        raise _missing_cart(owner, now, LineNotInCart())
    line = _line(cart, sku)
    if line is None:
        raise LineNotInCart()
    return _change(cart, line, quantity, now)


def cart_remove_item(*, owner: str, sku: str, now: datetime | None = None) -> Cart:
    """Take a line out of the cart and give its units back (cart first).

    Raises LineNotInCart, CartPending, CartExpired, CartChanged.
    """
    now = utcnow(now)
    cart = _live_cart(owner, now, create=False)
    if cart is None:
        raise _missing_cart(owner, now, LineNotInCart())
    line = _line(cart, sku)
    if line is None:
        raise LineNotInCart()
    if (
        not carts()
        .update_one(
            {
                "_id": cart.cart_id,
                "state": ACTIVE,
                "items": {"$elemMatch": {"sku": sku, "quantity": line.quantity}},
            },
            {"$pull": {"items": {"sku": sku}}, "$set": _touch(now)},
        )
        .modified_count
    ):
        raise _refusal(cart.cart_id, now)
    faults.point("remove.after_cart")
    PRODUCTS.give_back(cart_id=cart.cart_id, line=line)
    return _reload(cart.cart_id)


def cart_clear(*, owner: str, now: datetime | None = None) -> Cart | None:
    """Empty the cart (every kind of line) and give every hold back.

    The cart is emptied in one update that returns what it held; then each
    line's units go back. Returns the emptied cart, None if there was none.

    Raises CartPending, CartExpired.
    """
    now = utcnow(now)
    cart = _live_cart(owner, now, create=False)
    if cart is None:
        return None
    fields = {kind.field: [] for kind in KINDS}
    before = carts().find_one_and_update(
        {"_id": cart.cart_id, "state": ACTIVE},
        {"$set": {**fields, **_touch(now)}},
        return_document=ReturnDocument.BEFORE,
    )
    if before is None:
        raise _refusal(cart.cart_id, now)
    faults.point("clear.after_cart")
    for kind, line in lines_of(load_cart(before)):
        kind.give_back(cart_id=cart.cart_id, line=line)
    return _reload(cart.cart_id)


def cart_extend_hold(*, owner: str, now: datetime | None = None) -> Cart:
    """Restart the hold from now without changing the cart, at most
    MAX_EXTENSIONS times (guarded in the update's filter).

    Raises CartNotFound, CartPending, CartExpired, ExtensionsUsed.
    """
    now = utcnow(now)
    if not isinstance(owner, str) or not owner:
        raise CartNotFound("You have no cart to extend.")
    raw = carts().find_one_and_update(
        {
            **live_filter(owner),
            **open_filter(now),
            "extensions": {"$lt": MAX_EXTENSIONS},
        },
        {"$set": _touch(now), "$inc": {"extensions": 1}},
        return_document=ReturnDocument.AFTER,
    )
    if raw is not None:
        return load_cart(raw)
    raw = carts().find_one(live_filter(owner))
    if raw is None:
        raise _missing_cart(owner, now, CartNotFound("You have no cart to extend."))
    raise refusal(raw, now, active=ExtensionsUsed())


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
        source = _live_cart(from_owner, now, create=False)
        target = _live_cart(to_owner, now, create=False)
    except CartPending:
        return None
    if source is None:
        return target
    if target is None:
        try:
            if (
                carts()
                .update_one(
                    {"_id": source.cart_id, "state": ACTIVE, "live_owner": from_owner},
                    {
                        "$set": {
                            "owner": to_owner,
                            "live_owner": to_owner,
                            **_touch(now),
                        }
                    },
                )
                .modified_count
            ):
                return _reload(source.cart_id)
        except DuplicateKeyError:
            pass  # the account got a live cart meanwhile: merge into it
        target = _live_cart(to_owner, now, create=True)
    for line in source.items:
        _merge_line(source.cart_id, target.cart_id, to_owner, line, now)
    # Imported here: the ticket services build on this module's helpers.
    from shop.services.tickets import tickets_merge

    for line in source.tickets:
        tickets_merge(
            source_id=source.cart_id, target_id=target.cart_id, line=line, now=now
        )
    emptied = {f"{kind.field}.0": {"$exists": False} for kind in KINDS}
    carts().update_one(
        {"_id": source.cart_id, "state": ACTIVE, **emptied},
        {
            "$set": {"state": CANCELED, "ended_at": now, "modified_at": now},
            "$unset": {"live_owner": ""},
        },
    )
    return _reload(target.cart_id)


def _merge_line(source_id: str, target_id: str, to_owner: str, line, now) -> None:
    sku, quantity = line.sku, line.quantity
    if (
        not carts()
        .update_one(
            {
                "_id": source_id,
                "state": ACTIVE,
                "items": {"$elemMatch": {"sku": sku, "quantity": quantity}},
            },
            {"$pull": {"items": {"sku": sku}}, "$set": {"modified_at": now}},
        )
        .modified_count
    ):
        return
    faults.point("merge.after_source")
    target = _reload(target_id)
    if _line(target, sku) is None and stock_transfer(
        sku=sku, from_cart_id=source_id, to_cart_id=target_id, now=now
    ):
        faults.point("merge.after_transfer")
        son = line.to_mongo().to_dict()
        if (
            carts()
            .update_one(
                {"_id": target_id, "state": ACTIVE, "items.sku": {"$ne": sku}},
                {"$push": {"items": son}, "$set": _touch(now)},
            )
            .modified_count
        ):
            return
        give_back_units(sku=sku, cart_id=target_id, quantity=quantity, now=now)
        return
    give_back_units(sku=sku, cart_id=source_id, quantity=quantity, now=now)
    existing = _line(target, sku)
    room = MAX_LINE_QUANTITY - (existing.quantity if existing else 0)
    if room > 0:
        try:
            cart_add_item(
                owner=to_owner, sku=sku, quantity=min(quantity, room), now=now
            )
        except DomainError:
            pass  # sold out meanwhile: the account's cart keeps what it had
