"""Per-order caps: the one place that says how much one cart may hold.

* seats of one performance (``MAX_SEATS_PER_PERFORMANCE``, default 10);
* units of one product line (``MAX_LINE_QUANTITY``, ``shop/limits.py``);
* lines in a cart, products and performances together (``MAX_CART_LINES``).

The seat cap is checked before any seat is taken (a clear refusal, nothing
to give back) and again by the cart write that lists the seats, which is
guarded on the line as read (its ``rev``): two requests of one shopper
cannot both squeeze under it. The units cap likewise: checked here before
anything is taken, and again by the write that grows a line the cart
already lists (guarded on room for the units: ``shop/kinds/products.py``).
The line cap is checked before a new line is taken; concurrent first adds
of one shopper may pass it by one each, which the hold and add throttle
(``accounts/throttle.py``) bounds.
"""

from django.conf import settings

from shop.errors import QuantityTooLarge, TooManyLines, TooManySeats
from shop.limits import MAX_LINE_QUANTITY


def max_seats() -> int:
    return settings.MAX_SEATS_PER_PERFORMANCE


def max_lines() -> int:
    return settings.MAX_CART_LINES


def seats_fit(listed: int, adding: int) -> None:
    """``adding`` more seats next to ``listed`` of one performance fit, or
    TooManySeats."""
    if listed + adding > max_seats():
        raise TooManySeats(limit=max_seats())


def units_fit(quantity: int) -> None:
    """A product line of ``quantity`` units is within the units cap, or
    QuantityTooLarge."""
    if quantity > MAX_LINE_QUANTITY:
        raise QuantityTooLarge(limit=MAX_LINE_QUANTITY)


def line_fits(listed: int | None) -> None:
    """One more line fits next to the ``listed`` lines of a cart (None: a
    cart not made yet), or TooManyLines."""
    if listed is not None and listed + 1 > max_lines():
        raise TooManyLines(limit=max_lines())


def seats_listed(cart, session_id: str) -> int | None:
    """How many seats of ``session_id`` the cart lists (None: no line)."""
    if cart is None:
        return None
    line = next((t for t in cart.tickets if t.session_id == session_id), None)
    return None if line is None else len(line.seats)


def hold_fits(cart, session_id: str, adding: int) -> None:
    """A hold of ``adding`` seats of ``session_id`` fits ``cart``: the
    performance's seat cap, and the line cap for a performance new to it."""
    listed = seats_listed(cart, session_id)
    if listed is None:
        line_fits(None if cart is None else cart.line_count())
    seats_fit(listed or 0, adding)
