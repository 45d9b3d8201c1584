"""Carts as shoppers see them. A cart past its hold counts as expired here,
whether or not the expiry job has reached it yet (DESIGN §3.5)."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from catalog.selectors.pricing import Sellable, sellable
from catalog.selectors.stock import stock_free
from shop.cart_state import (
    ACTIVE,
    EXPIRED,
    EXPIRING,
    PENDING,
    is_live,
    live_filter,
    stale_filter,
)
from shop.documents import Cart
from shop.identity import owner_of
from shop.kinds import (
    PRODUCTS,
    TICKETS,
    LineKind,
    lines_of,
    stored_lines,
    units_of,
)
from shop.kinds.products import needs_delivery
from shop.limits import MAX_EXTENSIONS, MAX_LINE_QUANTITY

# Below this many free units a line shows "only N more available".
LOW_STOCK = 5
# How long after expiry the cart page still points to what was released.
RECENTLY_EXPIRED = timedelta(days=1)


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


def live_cart(*, owner: str | None, now: datetime | None = None) -> Cart | None:
    """The owner's cart that still holds its lines (active within its hold,
    or in checkout), else None."""
    raw = _live_son(owner, now)
    return None if raw is None else Cart._from_son(raw)


def _live_son(owner: str | None, now: datetime | None) -> dict | None:
    """``live_cart`` as stored."""
    if not owner:
        return None
    raw = Cart.coll().find_one(live_filter(owner))
    if raw is None or not is_live(raw, _now(now)):
        return None
    return raw


def current_cart_id(request, *, now: datetime | None = None) -> str | None:
    """The id of the requesting shopper's live cart, if they have one."""
    cart = live_cart(owner=owner_of(request), now=now)
    return cart.cart_id if cart else None


def cart_units(*, owner: str | None, now: datetime | None = None) -> int:
    """Units in the owner's live cart (the header badge of every page),
    counted on the cart as stored: no ``Cart`` built (``stored_lines``)."""
    return units_of(stored_lines(_live_son(owner, now)))


def units_in(cart: Cart | None) -> int:
    """Units in a cart already at hand (a service returned it): no query."""
    if cart is None:
        return 0
    return units_of(lines_of(cart))


@dataclass(frozen=True)
class LineView:
    kind: LineKind
    line: object
    key: str
    title: str
    units: int
    unit_price: Decimal | None  # None: the units differ in price (seats)
    subtotal: Decimal
    warning: str = ""

    @property
    def is_ticket(self) -> bool:
        return self.kind is TICKETS


@dataclass(frozen=True)
class CartView:
    cart: Cart
    lines: list[LineView]
    total: Decimal
    units: int
    seconds_left: int
    extensions_left: int
    max_quantity: int = MAX_LINE_QUANTITY
    notices: list[str] = field(default_factory=list)

    @property
    def cart_id(self) -> str:
        return self.cart.cart_id

    @property
    def hold_minutes(self) -> int:
        """What one "Hold them longer" adds to the hold."""
        return settings.CART_HOLD_MINUTES

    @property
    def pending(self) -> bool:
        return self.cart.state == PENDING

    @property
    def empty(self) -> bool:
        return not self.lines

    @property
    def product_lines(self) -> list[LineView]:
        return [v for v in self.lines if not v.is_ticket]

    @property
    def needs_address(self) -> bool:
        """Goods to deliver: a product line not collected at a store."""
        return needs_delivery(v.line for v in self.product_lines)

    @property
    def ticket_lines(self) -> list[LineView]:
        return [v for v in self.lines if v.is_ticket]

    @property
    def time_left(self) -> str:
        """``M:SS`` as the server counts it (the page's countdown starts here)."""
        minutes, seconds = divmod(self.seconds_left, 60)
        return f"{minutes}:{seconds:02d}"


def _stale_units(skus: list[str], now: datetime) -> dict[str, int]:
    """Units of these SKUs listed by carts past their hold (not really taken).

    One query with a top-level ``$or``, which the Rust server plans branch
    by branch: both branches match only carts past their hold or expiring,
    few whatever the shop's size, so it stays flat where the same count as
    two queries reads every holder of the SKU (``bench/or_bench.py``)."""
    stale: dict[str, int] = {}
    found = Cart.coll().find(
        {
            "items.sku": {"$in": skus},
            **stale_filter(now),
        },
        {"items": 1},
    )
    for raw in found:
        for item in raw.get("items", []):
            if item["sku"] in skus:
                stale[item["sku"]] = stale.get(item["sku"], 0) + item["quantity"]
    return stale


def _warnings(cart: Cart, now: datetime) -> dict[str, str]:
    skus = [line.sku for line in cart.items]
    if not skus:
        return {}
    free = stock_free(skus=skus)
    low = [sku for sku in skus if free.get(sku, 0) <= LOW_STOCK]
    stale = _stale_units(low, now) if low else {}
    warnings = {}
    for sku in low:
        more = free.get(sku, 0) + stale.get(sku, 0)
        warnings[sku] = (
            "No more available" if more == 0 else f"Only {more} more available"
        )
    return warnings


def cart_view(*, owner: str | None, now: datetime | None = None) -> CartView | None:
    """The owner's live cart with totals, stock warnings and time left."""
    now = _now(now)
    cart = live_cart(owner=owner, now=now)
    if cart is None:
        return None
    warnings = _warnings(cart, now)
    lines = []
    for kind, line in lines_of(cart):
        lines.append(
            LineView(
                kind=kind,
                line=line,
                key=kind.key(line),
                title=kind.title(line),
                units=kind.units(line),
                unit_price=kind.unit_price(line),
                subtotal=kind.subtotal(line),
                warning=warnings.get(kind.key(line), "") if kind is PRODUCTS else "",
            )
        )
    return CartView(
        cart=cart,
        lines=lines,
        total=sum((v.subtotal for v in lines), Decimal("0.00")),
        units=sum(v.units for v in lines),
        seconds_left=max(0, int((cart.expires_at - now).total_seconds())),
        extensions_left=max(0, MAX_EXTENSIONS - cart.extensions),
    )


def expired_cart(*, owner: str | None, now: datetime | None = None) -> Cart | None:
    """The owner's latest cart if its hold ran out recently (what was released)."""
    if not owner:
        return None
    now = _now(now)
    raw = Cart.coll().find_one({"owner": owner}, sort=[("modified_at", -1)])
    if raw is None or is_live(raw, now):
        return None
    if not (raw.get("items") or raw.get("tickets")):
        return None
    if raw["state"] not in (ACTIVE, EXPIRING, EXPIRED):
        return None
    ended = raw.get("ended_at") or raw["expires_at"]
    if now - ended > RECENTLY_EXPIRED:
        return None
    return Cart._from_son(raw)


@dataclass(frozen=True)
class Offer:
    """A SKU as the add-to-cart page shows it."""

    product: Sellable
    free: int

    @property
    def low(self) -> bool:
        return 0 < self.free <= LOW_STOCK


def offer(*, sku: str) -> Offer:
    """The SKU's name, price and free units. Raises UnknownSku, NotForSale."""
    product = sellable(sku=sku)
    return Offer(product=product, free=stock_free(skus=[sku]).get(sku, 0))
