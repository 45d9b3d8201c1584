"""What tests read and set of stock held in carts' lines (shop.kinds.line_stock).

The units a cart holds are in its lines, so the checks a test makes of
stock compose the catalog's counters with the carts: ``stock_problems``
(conservation, the ledger), ``held_by`` (what one cart holds of a location),
and ``hold`` (units held by a cart made for the purpose, through the kind's
own take and record).
"""

from datetime import datetime

from catalog.selectors.stock import stock_problems as _catalog_problems
from shop.cart_state import HOLDING_STATES
from shop.kinds import PRODUCTS, line_stock
from shop.services.common import cart_document, carts, utcnow


def stock_problems():
    """Conservation per location, with what the carts hold."""
    return _catalog_problems(held=line_stock.held_units())


def held_by(cart_id: str, key: str) -> int:
    """The units the cart holds of location ``key``: what its line lists
    while the cart is in a holding state (0: none)."""
    raw = carts().find_one({"_id": cart_id}, {"items": 1, "state": 1}) or {}
    if raw.get("state") not in HOLDING_STATES:
        return 0
    return sum(x["quantity"] for x in raw.get("items") or [] if x["sku"] == key)


def hold(key: str, cart_id: str, quantity: int, now: datetime | None = None):
    """``quantity`` units of ``key`` held by cart ``cart_id`` (made active,
    owned by ``anon:<cart_id>``, if it does not exist): the kind's take,
    then its record. Raises what the take raises (OutOfStock, NotStocked)."""
    from shop.documents import CartLine

    now = utcnow(now)
    if not carts().count_documents({"_id": cart_id}, limit=1):
        _, son = cart_document(f"anon:{cart_id}", cart_id, now)
        carts().insert_one(son)
    line = CartLine(
        sku=key, item_id=f"item-{key}", name=key, quantity=quantity, unit_price=0
    )
    taken = PRODUCTS.take(cart_id=cart_id, line=line, now=now)
    if PRODUCTS.record(cart_id=cart_id, line=taken, now=now) is None:
        PRODUCTS.untake(cart_id=cart_id, line=taken, now=now)
        raise AssertionError(f"cart {cart_id} refused {key}")
