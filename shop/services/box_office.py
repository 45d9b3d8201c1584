"""A box-office sale: blocked (house) seats sold by staff to a named customer.

Not a second checkout. Each sale is a staff cart of its own (owner
``boxoffice:<uuid>``, so two sales never share a cart or its claim) that
holds the seats from BLOCKED (``cart_hold_seats(..., from_blocked=True)``:
BLOCKED -> the cart's tag in ONE conditional update, so no shopper can take
a seat in between), then the shop's checkout pays it with ``AtCounter``
(settled at the counter, no card). The result is an ordinary order: its
number, lines, ticket codes, the confirmation email with the tickets' PDF,
the staff order pages, refunds, check-in.

The crash rule: anything that stops between the hold and the paid order
leaves a hold that runs out or is reconciled like any cart's (expiry, the
reconciler, the checkout's recovery), and the seats then go back to
BLOCKED, never FREE. That rule lives in ONE place, booking's
``holds.origin_of``: the hold's intent records that its seats came from
BLOCKED, and every release puts them back there. A refund of a completed
sale is a return of sold seats, which puts them on sale (FREE), as any
refund does.
"""

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from booking.errors import SeatsNotBlocked
from booking.values import Seat
from shop.documents import Order
from shop.errors import CustomerInvalid, NotHouseSeats
from shop.payments import AtCounter
from shop.services.checkout import cart_checkout
from shop.services.common import carts
from shop.services.order_owners import BOX_OFFICE
from shop.services.tickets import cart_hold_seats

MAX_NAME = 150
MAX_PHONE = 40


def _customer(name, email, phone) -> tuple[str, str, str]:
    """The customer as typed, checked: a name, a valid email, a phone (or
    none). Raises CustomerInvalid."""
    name = name.strip() if isinstance(name, str) else ""
    email = email.strip().lower() if isinstance(email, str) else ""
    phone = phone.strip() if isinstance(phone, str) else ""
    if not name or len(name) > MAX_NAME:
        raise CustomerInvalid(f"Give the customer's name (up to {MAX_NAME} letters).")
    try:
        validate_email(email)
    except ValidationError:
        raise CustomerInvalid(
            "Give the customer's email address: the tickets are sent there."
        ) from None
    if len(phone) > MAX_PHONE or any(c not in "0123456789 +()-." for c in phone):
        raise CustomerInvalid("A phone number has digits, spaces and + ( ) - only.")
    return name, email, phone


def box_office_sell(
    *,
    session_id: str,
    seats: Sequence[Seat],
    name: str,
    email: str,
    phone: str = "",
    by: str,
    now: datetime | None = None,
) -> Order:
    """Sell blocked seats to a named customer; returns the paid order.

    A new staff cart holds every seat from BLOCKED (all or nothing, one
    conditional update of the session), then ``cart_checkout`` pays it at
    the counter (``AtCounter``): the order carries the customer's name,
    email (where the confirmation goes) and phone, and says "Box office".
    Invariants: a seat is sold only if it was blocked; a sale that stops
    before it is paid gives its seats back BLOCKED (see the module).

    Raises CustomerInvalid, InvalidSeats (none, or more than a hold takes),
    TooManySeats, SessionNotFound, SessionClosed (started or over),
    SeatOffMap, NotHouseSeats (a seat is free, held or sold), and what
    ``cart_checkout`` raises.
    """
    name, email, phone = _customer(name, email, phone)
    owner = f"{BOX_OFFICE}{uuid.uuid4().hex}"
    try:
        cart_hold_seats(
            owner=owner, session_id=session_id, seats=seats, now=now, from_blocked=True
        )
    except SeatsNotBlocked as exc:
        raise NotHouseSeats(exc.labels, exc.now) from None
    cart_id = carts().find_one({"live_owner": owner}, {"_id": 1})["_id"]
    return cart_checkout(
        owner=owner,
        cart_id=cart_id,
        email=email,
        shipping=None,
        card=AtCounter(by=by, name=name, phone=phone),
        now=now,
    )
