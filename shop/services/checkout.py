"""Checkout: lock the cart, re-price, create the order, charge, commit.

The steps and what each leaves behind if the process dies right after it
(``checkout_recover``, run by the reconciler, finishes or undoes each):

1. cart ``active -> pending`` (findAndModify; refuses an expired, empty or
   someone else's cart). Left pending: reopened.
2. every line re-priced from the catalog; a change is written to the cart,
   which goes back to active, and the shopper is shown it before paying.
3. the order (unique on cart id: a repeat finds it), ``pending_payment``,
   with a new attempt number. Left so: the provider is asked whether the
   charge went through.
4. the charge through the payment provider, once per attempt reference.
   Declined: the cart goes back to active with its holds intact.
5. the order ``paid``, with the attempt that paid; 6. every line's hold
   committed (units sold); 7. the cart ``complete``. Left after 5 or 6: the
   commits are finished.
"""

import logging
import secrets
from datetime import datetime, timedelta
from decimal import Decimal

from bson.decimal128 import Decimal128
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from config import compat
from config.errors import DomainError
from shop import events, faults
from shop.cart_state import ACTIVE, COMPLETE, PENDING, is_stale, open_filter, refusal
from shop.documents import PAID, PENDING_PAYMENT, Order, Sequence
from shop.errors import (
    CartEmpty,
    CartInactive,
    CartNotFound,
    CheckoutInProgress,
    LineUnavailable,
    PaymentFailed,
    PricesChanged,
)
from shop.kinds import KINDS, lines_of
from shop.kinds.base import money
from shop.payments import Card, Charge, PaymentDeclined, PaymentError, provider
from shop.services import owners
from shop.services.common import carts, hold_time, load_cart, orders, utcnow
from shop.services.expiry import cart_expire

log = logging.getLogger("marquee.shop.checkout")

CURRENCY = "GBP"
# Order numbers start here so that they all have the same width for a while.
_FIRST_NUMBER = 100001
# A checkout pending longer than this stopped half-way (a real charge takes
# seconds); the reconciler then finishes or undoes it.
CHECKOUT_GRACE = timedelta(minutes=10)


_money = money


def _next_order_number() -> str:
    """A short, unique, human-friendly number: MQ-100001, MQ-100002, ..."""
    for _ in range(5):
        try:
            seq = Sequence.coll().find_one_and_update(
                {"_id": "order_number"},
                {"$inc": {"value": 1}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:
            continue  # two first-ever upserts raced; the counter exists now
        if seq is None:
            # The Rust server may answer an upsert that raced another first
            # one with no document (seen under a flash sale's first orders);
            # a number skipped is harmless, a number is unique by its index.
            continue
        return f"MQ-{_FIRST_NUMBER - 1 + seq['value']}"
    raise RuntimeError("could not allocate an order number")


def _paid_order(owner: str, cart_id: str, now: datetime) -> Order | None:
    """A repeat of a checkout that was paid: the same order, finished."""
    order = Order.objects(cart_id=cart_id, owner=owner, state=PAID).first()
    if order is None:
        return None
    raw = carts().find_one({"_id": cart_id})
    if raw and raw["state"] != COMPLETE:
        _fulfil(cart_id=cart_id, order=order, charge=None, now=now)
    return Order.objects(pk=order.pk).first()


def _begin(owner: str, cart_id: str, now: datetime):
    """Step 1: lock the cart (active, within its hold, with a line -> pending).

    One guarded update per kind of line ("has a line of this kind"), never a
    top-level ``$or`` and never a findAndModify: on the Rust server both cost
    a scan of every cart (config/compat.py). Once pending, nothing but this
    checkout changes the cart, so reading it after the lock reads what was
    locked.
    """
    lock = {"_id": cart_id, "owner": owner, **open_filter(now)}
    for kind in KINDS:
        locked = carts().update_one(
            {**lock, f"{kind.field}.0": {"$exists": True}},
            {"$set": {"state": PENDING, "checkout_at": now, "modified_at": now}},
        )
        if locked.modified_count:
            return load_cart(carts().find_one({"_id": cart_id}))
    raw = carts().find_one({"_id": cart_id, "owner": owner})
    if raw is not None and raw["state"] == ACTIVE and is_stale(raw, now):
        cart_expire(cart_id=cart_id, now=now)  # met past its hold: end it now
    # Missing: unknown, or someone else's (the same answer). Still active
    # within its hold: the only failed condition left is having a line.
    raise refusal(
        raw,
        now,
        pending=CheckoutInProgress(),
        active=CartEmpty(),
        closed=CartInactive("This cart has already been checked out or closed."),
    )


def _reopen(cart_id: str, now: datetime) -> None:
    """``pending -> active``, holds intact; the hold restarts from now."""
    carts().update_one(
        {"_id": cart_id, "state": PENDING},
        {
            "$set": {
                "state": ACTIVE,
                "modified_at": now,
                "expires_at": now + hold_time(),
            },
            "$unset": {"checkout_at": ""},
        },
    )


def _reprice(cart, now: datetime) -> None:
    """Step 2: every line at today's catalog price, or PricesChanged.

    A changed price is written to the (pending) cart's line before raising,
    so the reopened cart shows the shopper what they would pay.
    """
    changes = []
    for kind, line in lines_of(cart):
        try:
            fields, changed = kind.repriced(line=line)
        except DomainError as exc:
            raise LineUnavailable(kind.title(line), exc.message) from None
        if not fields:
            continue
        carts().update_one(
            {
                "_id": cart.cart_id,
                "state": PENDING,
                kind.field: {"$elemMatch": {kind.key_field: kind.key(line)}},
            },
            {"$set": {f"{kind.field}.$.{name}": v for name, v in fields.items()}},
        )
        changes.extend(changed)
    if changes:
        raise PricesChanged(changes)


def _order_lines(cart) -> tuple[list[dict], Decimal]:
    lines: list[dict] = []
    for kind, line in lines_of(cart):
        lines.extend(kind.order_lines(line=line))
    subtotal = sum((line["line_total"].to_decimal() for line in lines), Decimal(0))
    return lines, _money(subtotal)


def _order_details(cart, *, email: str, shipping: dict) -> tuple[dict, dict]:
    """The order's fields from the cart as it is now: ($set, $unset)."""
    lines, subtotal = _order_lines(cart)
    details = {
        "email": email,
        "shipping": shipping,
        "lines": lines,
        "subtotal": Decimal128(subtotal),
        "total": Decimal128(subtotal),
        "currency": CURRENCY,
    }
    codes = [line["code"] for line in lines if line.get("code")]
    if codes:
        details["codes"] = codes
        return details, {}
    # No empty list: it would collide with other orders' in the unique index.
    return details, {"codes": ""}


def _order_for(cart, *, email: str, shipping: dict, now: datetime) -> Order:
    """Step 3: this cart's order, created or (after a decline) brought up to
    date with the cart as it is now, with a new payment attempt counted in
    the same write (``payment_attempts``: a fresh charge reference per
    attempt, so a decline is not replayed). Unique on cart id (and ticket
    codes: a code drawn twice, however unlikely, is drawn again)."""
    for _ in range(3):
        details, unset = _order_details(cart, email=email, shipping=shipping)
        update = {
            "$set": details,
            "$inc": {"payment_attempts": 1},
            **({"$unset": unset} if unset else {}),
        }
        try:
            # An update, then a read (config/compat.py): the cart is pending,
            # so no other checkout of it changes the order in between.
            raw = None
            pending = {"cart_id": cart.cart_id, "state": PENDING_PAYMENT}
            if orders().update_one(pending, update).matched_count:
                raw = orders().find_one({"cart_id": cart.cart_id})
        except DuplicateKeyError:
            continue
        if raw is not None:
            return Order._from_son(raw)
        try:
            son = {
                "number": _next_order_number(),
                "cart_id": cart.cart_id,
                "owner": cart.owner,
                "token": secrets.token_urlsafe(24),
                "state": PENDING_PAYMENT,
                "payment_attempts": 1,
                "attempts": [],
                "created_at": now,
                **details,
            }
            orders().insert_one(son)
            events.order_moved.send(
                sender=None, order=son, before=None, after=PENDING_PAYMENT, at=now
            )
            return Order._from_son(son)
        except DuplicateKeyError:
            # The cart has an order after all: a concurrent submit created it
            # (update that one), or it is closed.
            if orders().count_documents(
                {"cart_id": cart.cart_id, "state": {"$ne": PENDING_PAYMENT}}, limit=1
            ):
                raise CartInactive("This cart's order is already closed.") from None
    raise CartInactive("This cart's order could not be created.")


def _attempt(reference, *, outcome, message, card, now) -> dict:
    return {
        "reference": reference,
        "at": now,
        "outcome": outcome,
        "message": message,
        "card": card,
    }


def _record_attempt(order_pk, *, reference, outcome, message, card, now) -> None:
    orders().update_one(
        {"_id": order_pk},
        {
            "$push": {
                "attempts": _attempt(
                    reference, outcome=outcome, message=message, card=card, now=now
                )
            }
        },
    )


def _mark_paid(order: Order, charge: Charge, attempt: dict | None, now):
    """Step 5: ``pending_payment -> paid`` with the charge (and ``attempt``,
    in the same write); the paid order, or None if it was paid already."""
    update: dict = {
        "$set": {
            "state": PAID,
            "paid_at": now,
            "payment_provider": charge.provider,
            "payment_reference": charge.reference,
        }
    }
    if attempt is not None:
        update["$push"] = {"attempts": attempt}
    paid = compat.update_then_read(
        orders(), {"_id": order.pk, "state": PENDING_PAYMENT}, update
    )
    if paid is None and attempt is not None:
        # Paid meanwhile (a recovery found the charge): keep the record.
        orders().update_one({"_id": order.pk}, {"$push": {"attempts": attempt}})
    return paid


def _fulfil(
    *,
    cart_id: str,
    order: Order,
    charge: Charge | None,
    now,
    cart=None,
    attempt: dict | None = None,
) -> Order:
    """Steps 5-7, each idempotent: order paid, holds committed, cart complete.

    ``attempt`` (the charge just taken) is recorded in the same write that
    marks the order paid. ``cart``, when the caller holds it since it went
    pending, spares a read: a pending cart's lines cannot change.
    """
    paid = None if charge is None else _mark_paid(order, charge, attempt, now)
    if paid is not None:
        events.order_moved.send(
            sender=None, order=paid, before=PENDING_PAYMENT, after=PAID, at=now
        )
    else:  # finishing a paid order: counted, even if a crash came in between
        events.order_paid_again.send(sender=None, order_id=order.pk)
    faults.point("checkout.after_paid")
    if cart is None:
        cart = load_cart(carts().find_one({"_id": cart_id}))
    for kind, line in lines_of(cart):
        if not kind.commit(cart_id=cart_id, line=line):
            # Only a commit removes a pending cart's hold: this line was
            # committed by the run that stopped before finishing.
            log.info("cart %s: %s already committed", cart_id, kind.key(line))
        faults.point("checkout.after_commit")
    # Paid means done, even if a recovery reopened the cart meanwhile.
    carts().update_one(
        {"_id": cart_id, "state": {"$in": [PENDING, ACTIVE]}},
        {
            "$set": {"state": COMPLETE, "ended_at": now, "modified_at": now},
            "$unset": {"live_owner": ""},
        },
    )
    faults.point("release.after_cart")
    owners.release(owner=cart.owner, cart_id=cart_id)
    if paid is not None:
        return Order._from_son(paid)
    return Order.objects(pk=order.pk).first()


def cart_checkout(
    *,
    owner: str,
    cart_id: str,
    email: str,
    shipping: dict,
    card: Card,
    now: datetime | None = None,
) -> Order:
    """Pay for the owner's cart and turn it into a paid order.

    Invariants: the shopper pays today's catalog prices and has seen them;
    one order per cart (a repeated submit returns the same paid order); units
    are sold only once the order is paid; a declined payment leaves the cart
    active with every hold intact.

    Raises CartNotFound (unknown or someone else's cart), CartEmpty,
    CartExpired, CartInactive, CheckoutInProgress, PricesChanged,
    LineUnavailable, OutOfStock, PaymentFailed.
    """
    now = utcnow(now)
    if not isinstance(owner, str) or not owner or not isinstance(cart_id, str):
        raise CartNotFound()
    done = _paid_order(owner, cart_id, now)
    if done is not None:
        return done
    cart = _begin(owner, cart_id, now)
    faults.point("checkout.after_pending")
    try:
        _reprice(cart, now)
        for kind in KINDS:
            kind.ensure_held_lines(cart_id=cart_id, lines=kind.lines(cart), now=now)
        order = _order_for(cart, email=email, shipping=shipping, now=now)
    except DomainError:
        _reopen(cart_id, now)
        raise
    faults.point("checkout.after_order")
    reference = f"{order.number}-{order.payment_attempts}"
    charge = _charge(order, reference, card, now)
    faults.point("checkout.after_charge")
    return _fulfil(
        cart_id=cart_id,
        order=order,
        charge=charge,
        now=now,
        cart=cart,
        attempt=_attempt(
            reference, outcome="paid", message="", card=card.label, now=now
        ),
    )


def _charge(order: Order, reference: str, card: Card, now: datetime) -> Charge:
    """Step 4: charge the order once under ``reference``. Declined or failed:
    the attempt is recorded, the cart reopens with its holds, PaymentFailed."""
    try:
        return provider().charge(
            reference=reference,
            amount=order.total,
            currency=order.currency,
            card=card,
            description=f"Marquee order {order.number}",
        )
    except (PaymentDeclined, PaymentError) as exc:
        outcome = "declined" if isinstance(exc, PaymentDeclined) else "error"
        _record_attempt(
            order.pk,
            reference=reference,
            outcome=outcome,
            message=str(exc),
            card=card.label,
            now=now,
        )
        _reopen(order.cart_id, now)
        raise PaymentFailed(f"{exc} Your items are still held.") from None


def checkout_recover(*, cart_id: str, now: datetime | None = None) -> str:
    """Finish or undo a checkout that stopped half-way; return what it did.

    Paid order (or a charge the provider confirms): commit and complete.
    No order, or the provider has no successful charge: reopen the cart with
    its holds (the expiry job ends it if the shopper is gone). Idempotent.
    """
    now = utcnow(now)
    raw = carts().find_one({"_id": cart_id, "state": PENDING})
    if raw is None:
        return "nothing"
    order = Order.objects(cart_id=cart_id).first()
    if order is not None and order.state == PAID:
        _fulfil(cart_id=cart_id, order=order, charge=None, now=now)
        return "completed"
    if order is not None and order.state == PENDING_PAYMENT and order.payment_attempts:
        reference = f"{order.number}-{order.payment_attempts}"
        charge = provider().lookup(reference=reference)
        if charge is not None and charge.outcome == "paid":
            _fulfil(cart_id=cart_id, order=order, charge=charge, now=now)
            return "completed"
    _reopen(cart_id, now)
    return "reopened"


def checkouts_recover(*, now: datetime | None = None) -> int:
    """Recover every checkout pending for longer than CHECKOUT_GRACE."""
    now = utcnow(now)
    stuck = carts().find(
        {"state": PENDING, "checkout_at": {"$lt": now - CHECKOUT_GRACE}}, {"_id": 1}
    )
    return sum(
        checkout_recover(cart_id=raw["_id"], now=now) != "nothing"
        for raw in list(stuck)
    )
