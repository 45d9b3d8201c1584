"""Checkout: lock the cart, re-price, create the order, charge, commit.

A checkout holds its pending cart with a short **lease** (``lease_until``,
SHOP_CHECKOUT_LEASE_SECONDS; renewed before the charge once a third of it
has gone) and a number, ``checkout_attempt``: the fence of its cart writes
and, with a random tag drawn with it, its charge's reference
(``<order number>-<tag>-<attempt>``, shop.payments). Once the lease has
lapsed, the shopper's resubmit takes the checkout over (same attempt, so
the same reference: the provider charges a reference once, whoever asks)
and finishes it; the reconciler, every minute, finishes or undoes it
(``checkout_recover``). Within the lease a resubmit finishes a checkout the
provider says was paid, else waits (CheckoutInProgress).

The steps and what each leaves behind if the process dies right after it:

1. cart ``active -> pending`` (one update per kind of line; refuses an
   expired, empty or someone else's cart), with a new attempt and a
   lease. Left pending: a resubmit after the lease finishes it; the
   reconciler reopens it.
2. every line re-priced from the catalog; a change is written to the cart,
   which goes back to active, and the shopper is shown it before paying.
3. the order (unique on cart id: a repeat finds it), ``pending_payment``,
   with the attempt number. Left so: the provider is asked whether the
   charge went through (a resubmit charges the same reference).
4. the charge through the payment provider, once per attempt reference.
   Declined: the cart goes back to active with its holds intact.
5. the order ``paid``, with the attempt that paid, then its payment
   handed to be announced (its audit entry, counters and email follow a
   moment later, in a batch: shop.services.settle); 6. every line's hold
   committed (units sold); 7. the cart ``complete``. Left after 5 or 6:
   the commits are finished and the payment announced.
"""

import logging
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from bson.decimal128 import Decimal128
from django.utils import timezone
from pymongo.errors import DuplicateKeyError

from config import compat
from config.decimals import decimal_of
from config.errors import DomainError
from shop import events, faults
from shop.cart_state import (
    ACTIVE,
    COMPLETE,
    PENDING,
    is_stale,
    lapsed_filters,
    open_filter,
    refusal,
)
from shop.documents import PAID, PENDING_PAYMENT, Order
from shop.errors import (
    AddressNeeded,
    CartEmpty,
    CartInactive,
    CartNotFound,
    CheckoutInProgress,
    CheckoutTakenOver,
    LineUnavailable,
    PaymentFailed,
    PricesChanged,
)
from shop.kinds import KINDS, lines_of
from shop.kinds.base import money
from shop.kinds.products import needs_delivery
from shop.payments import (
    AtCounter,
    Card,
    Charge,
    PaymentDeclined,
    PaymentError,
    charge_reference,
    new_tag,
    provider,
)
from shop.services import owners, settle
from shop.services.common import (
    carts,
    hold_time,
    lease_time,
    load_cart,
    orders,
    utcnow,
)
from shop.services.expiry import cart_expire
from shop.services.numbers import next_order_number

log = logging.getLogger("marquee.shop.checkout")

CURRENCY = "GBP"


_money = money


def _paid_order(owner: str, cart_id: str, now: datetime) -> Order | None:
    """A repeat of a checkout that was paid: the same order, finished."""
    order = orders().find_one({"cart_id": cart_id, "owner": owner, "state": PAID})
    if order is None:
        return None
    raw = carts().find_one({"_id": cart_id})
    if raw and raw["state"] != COMPLETE:
        return _fulfil(cart_id=cart_id, order=order, charge=None, now=now)
    return Order._from_son(order)


@dataclass(frozen=True)
class _Run:
    """This run of a checkout: the pending cart, its attempt number, and the
    clock its lease renews from (a test's fixed ``now``, else the clock)."""

    cart: object
    attempt: int
    # The attempt's tag (None: a cart locked before attempts had one).
    tag: str | None
    taken_over: bool
    fixed_now: datetime | None
    # What the kinds read in one step for a later one (``LineKind``'s
    # ``seen``): the prices step's seat states, the held check's holds.
    seen: dict = field(default_factory=dict)

    @classmethod
    def of(cls, raw: dict, *, taken_over: bool, fixed: datetime | None) -> "_Run":
        """The run of the pending cart ``raw`` (its SON, as locked)."""
        return cls(
            load_cart(raw),
            raw.get("checkout_attempt") or 0,
            raw.get("checkout_tag"),
            taken_over,
            fixed,
        )

    @property
    def cart_id(self) -> str:
        return self.cart.cart_id

    def fence(self) -> dict:
        """The guard of this run's cart writes: still its checkout."""
        return {"_id": self.cart_id, "state": PENDING, **_attempt_is(self.attempt)}

    def renew(self, locked_at: datetime) -> None:
        """Push the lease on if a third of it has gone since ``locked_at``:
        this run is alive. A checkout that got here quickly, as nearly all
        do, spends no command on it (its lease cannot have lapsed).

        Raises CheckoutTakenOver when the fence matches nothing: the lease
        lapsed and a recovery (or the shopper's next attempt) took the cart
        over, so this run must not go on to charge: the card would be
        charged for an attempt another run already finished or reopened.
        """
        now = self.fixed_now or timezone.now()
        if now - locked_at < lease_time() / 3:
            return
        renewed = carts().update_one(
            self.fence(), {"$set": {"lease_until": now + lease_time()}}
        )
        if not renewed.matched_count:
            raise CheckoutTakenOver()


def _attempt_is(attempt: int) -> dict:
    # A cart pending from before attempts were numbered has none.
    return {"checkout_attempt": attempt if attempt else {"$in": [0, None]}}


def _begin(owner: str, cart_id: str, now: datetime, fixed: datetime | None) -> _Run:
    """Step 1: lock the cart (active, within its hold -> pending) with a new
    attempt and a lease; or take over a checkout whose lease lapsed.

    One guarded update, then a read of what it locked: once pending, nothing
    but this checkout changes the cart. Never a top-level ``$or`` and never
    a findAndModify: on the Rust server both cost a scan of every cart
    (config/compat.py), and so does any logical operator saying "has a line
    of some kind"; so the lock does not ask, and a cart found empty after it
    is unlocked again as it was (CartEmpty), which only a checkout of an
    empty cart pays for.
    """
    lease = now + lease_time()
    locked = carts().update_one(
        {"_id": cart_id, "owner": owner, **open_filter(now)},
        {
            "$set": {
                "state": PENDING,
                "checkout_at": now,
                "modified_at": now,
                "lease_until": lease,
                "checkout_tag": new_tag(),
            },
            "$inc": {"checkout_attempt": 1},
        },
    )
    if locked.modified_count:
        raw = carts().find_one({"_id": cart_id})
        if raw is not None and not any(raw.get(kind.field) for kind in KINDS):
            _unlock_empty(raw)
            raise CartEmpty()
        return _Run.of(raw, taken_over=False, fixed=fixed)
    raw = _take_over(cart_id, now, owner=owner)
    if raw is not None:
        return _Run.of(raw, taken_over=True, fixed=fixed)
    raise _not_begun(owner, cart_id, now)


def _unlock_empty(raw: dict) -> None:
    """An empty cart locked by ``_begin``: back to active with the hold it
    had (only its attempt number and tag moved)."""
    carts().update_one(
        {"_id": raw["_id"], "state": PENDING, **_attempt_is(raw["checkout_attempt"])},
        {
            "$set": {
                "state": ACTIVE,
                "modified_at": raw.get("modified_at"),
                "expires_at": raw.get("expires_at"),
            },
            "$unset": {"checkout_at": "", "lease_until": ""},
        },
    )


def _take_over(cart_id: str, now: datetime, **guard) -> dict | None:
    """The pending cart with a new lease, if its checkout's lease lapsed."""
    for lapsed in lapsed_filters(now, lease_time()):
        raw = compat.update_then_read(
            carts(),
            {"_id": cart_id, **guard, **lapsed},
            {"$set": {"lease_until": now + lease_time()}},
        )
        if raw is not None:
            return raw
    return None


def _not_begun(owner: str, cart_id: str, now: datetime) -> DomainError:
    raw = carts().find_one({"_id": cart_id, "owner": owner})
    if raw is not None and raw["state"] == ACTIVE and is_stale(raw, now):
        cart_expire(cart_id=cart_id, now=now)  # met past its hold: end it now
    # Missing: unknown, or someone else's (the same answer). Still active
    # within its hold: the only failed condition left is having a line.
    busy = None
    if raw is not None and raw["state"] == PENDING and raw.get("lease_until"):
        busy = max(1, int((raw["lease_until"] - now).total_seconds()) + 1)
    return refusal(
        raw,
        now,
        pending=CheckoutInProgress(busy),
        active=CartEmpty(),
        closed=CartInactive("This cart has already been checked out or closed."),
    )


def _reopen(cart_id: str, now: datetime, attempt: int | None = None) -> None:
    """``pending -> active``, holds intact; the hold restarts from now.
    ``attempt``: only if the cart is still in that checkout (a run that
    was taken over reopens nothing)."""
    fence = {} if attempt is None else _attempt_is(attempt)
    carts().update_one(
        {"_id": cart_id, "state": PENDING, **fence},
        {
            "$set": {
                "state": ACTIVE,
                "modified_at": now,
                "expires_at": now + hold_time(),
            },
            "$unset": {"checkout_at": "", "lease_until": ""},
        },
    )


def _reprice(cart, now: datetime, seen: dict | None = None) -> None:
    """Step 2: every line at today's catalog price, or PricesChanged.

    A changed price is written to the (pending) cart's line before raising,
    so the reopened cart shows the shopper what they would pay.
    """
    changes = []
    for kind in KINDS:
        lines = kind.lines(cart)
        prices = kind.current_prices(lines, seen) if lines else []
        for line, price in zip(lines, prices, strict=True):
            try:
                if isinstance(price, DomainError):
                    raise price
                fields, changed = kind.repriced(line=line, price=price)
            except DomainError as exc:
                raise LineUnavailable(kind.title(line), exc.message) from None
            if fields:
                _write_price(cart.cart_id, kind, line, fields)
                changes.extend(changed)
    if changes:
        raise PricesChanged(changes)


def _write_price(cart_id: str, kind, line, fields: dict) -> None:
    carts().update_one(
        {
            "_id": cart_id,
            "state": PENDING,
            kind.field: {"$elemMatch": {kind.key_field: kind.key(line)}},
        },
        {"$set": {f"{kind.field}.$.{name}": v for name, v in fields.items()}},
    )


def _order_lines(cart) -> tuple[list[dict], Decimal]:
    lines: list[dict] = []
    for kind, line in lines_of(cart):
        lines.extend(kind.order_lines(line=line))
    subtotal = sum((decimal_of(line["line_total"]) for line in lines), Decimal(0))
    return lines, _money(subtotal)


def _order_details(cart, *, email: str, shipping: dict | None) -> tuple[dict, dict]:
    """The order's fields from the cart as it is now: ($set, $unset). The
    payment adds its own (``order_fields``: a counter sale's method and
    customer; nothing for a card)."""
    lines, subtotal = _order_lines(cart)
    details = {
        # One spelling per address, as accounts and the box office keep it:
        # an order placed as "Ada@Example.com" is the account ada@example.com
        # may claim.
        "email": email.strip().lower(),
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


def _order_for(run: _Run, *, email, shipping, now, payment=None) -> dict:
    """Step 3: this cart's order (its document), created or brought up to
    date with the cart, with the run's attempt and its tag (``payment_attempts``,
    ``payment_tag``: the charge's reference; never back to an older attempt).
    Unique on cart id (and ticket codes: a code drawn twice, however
    unlikely, is drawn again)."""
    cart = run.cart
    # A cart's first checkout has no order yet: straight to the insert (a
    # duplicate key says otherwise, and the next round updates it).
    fresh = run.attempt == 1 and not run.taken_over
    for _ in range(3):
        details, unset = _order_details(cart, email=email, shipping=shipping)
        details.update(payment.order_fields() if payment is not None else {})
        attempt = {"payment_attempts": run.attempt, "payment_tag": run.tag}
        update = {"$set": {**details, **attempt}}
        if unset:
            update["$unset"] = unset
        try:
            # An update, then a read (config/compat.py): the cart is pending,
            # so no other checkout of it changes the order in between.
            raw = None
            pending = {"cart_id": cart.cart_id, "state": PENDING_PAYMENT}
            newer = {"payment_attempts": {"$lte": run.attempt}}
            if not fresh and orders().update_one(pending | newer, update).matched_count:
                raw = orders().find_one({"cart_id": cart.cart_id})
        except DuplicateKeyError:
            continue
        fresh = False
        if raw is not None:
            return raw
        order = _insert_order(run, details, now)
        if order is not None:
            return order
    raise CartInactive("This cart's order could not be created.")


def _insert_order(run: _Run, details: dict, now) -> dict | None:
    """The cart's order (its document, as inserted), new; None when the
    cart has one after all (a concurrent submit created it: update that
    one) or a ticket code was drawn twice. Raises CartInactive when the
    cart's order is closed."""
    cart = run.cart
    son = {
        "number": next_order_number(),
        "cart_id": cart.cart_id,
        "owner": cart.owner,
        "token": secrets.token_urlsafe(24),
        "state": PENDING_PAYMENT,
        "payment_attempts": run.attempt,
        "payment_tag": run.tag,
        "attempts": [],
        "created_at": now,
        **details,
    }
    try:
        orders().insert_one(son)
    except DuplicateKeyError:
        if orders().count_documents(
            {"cart_id": cart.cart_id, "state": {"$ne": PENDING_PAYMENT}}, limit=1
        ):
            raise CartInactive("This cart's order is already closed.") from None
        return None
    events.order_moved.send(
        sender=None, order=son, before=None, after=PENDING_PAYMENT, at=now
    )
    return son


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


def _mark_paid(order: dict, charge: Charge, attempt: dict | None, now):
    """Step 5: ``pending_payment -> paid`` with the charge (and ``attempt``),
    marked to be announced (``settle.to_announce``: the outbox), all in one
    write; the paid order, or None if it was paid already."""
    update: dict = {
        "$set": {
            "state": PAID,
            "paid_at": now,
            "payment_provider": charge.provider,
            "payment_reference": charge.reference,
            **settle.to_announce(now),
        }
    }
    if attempt is not None:
        update["$push"] = {"attempts": attempt}
    pk = order["_id"]
    moved = orders().update_one({"_id": pk, "state": PENDING_PAYMENT}, update)
    if not moved.matched_count:
        if attempt is not None:
            # Paid meanwhile (a recovery found the charge): keep the record.
            orders().update_one({"_id": pk}, {"$push": {"attempts": attempt}})
        return None
    # The order as this update left it: nothing else writes a pending
    # order's fields while its cart is in this checkout, so no read back.
    paid = order | update["$set"]
    paid["attempts"] = [*paid.get("attempts", []), *([attempt] if attempt else [])]
    return paid


def _fulfil(
    *,
    cart_id: str,
    order: dict,
    charge: Charge | None,
    now,
    cart=None,
    attempt: dict | None = None,
    seen: dict | None = None,
) -> Order:
    """Steps 5-7, each idempotent: order paid, holds committed, cart
    complete; the paid ``Order``.

    ``order`` is the order's document: a run carries it as a dict from its
    insert to paid and makes the ``Order`` once, at the end (MongoEngine
    building an order with its lines three times, and converting it back
    once, was about 6 % of a theater flow's Python time, sampled).

    ``attempt`` (the charge just taken) is recorded in the same write that
    marks the order paid; ``seen``, what this run's kinds read before the
    charge. ``cart``, when the caller holds it since it went
    pending, spares a read: a pending cart's lines cannot change.
    """
    paid = None if charge is None else _mark_paid(order, charge, attempt, now)
    if paid is not None:
        # Paid and marked to be announced, in one write: a run that stops
        # here leaves the announcement to the reconciler
        # (``settle.orders_settle``), or to this process's settler.
        faults.point("checkout.after_paid_write")
        settle.later(paid)
    else:
        # Finishing an order paid before (by a run that stopped, or a
        # recovery that found the charge while this run was charging): its
        # paid write marked it, and the settler may announce it sooner than
        # the reconciler (each receiver does its part once). As it is now:
        # ``order`` may be this run's pending copy, and an order canceled
        # before a late charge landed is not paid, so not announced.
        order = orders().find_one({"_id": order["_id"]})
        if order is not None and order.get("paid_at"):
            settle.later(order)
    faults.point("checkout.after_paid")
    if cart is None:
        cart = load_cart(carts().find_one({"_id": cart_id}))
    _commit_lines(cart_id, cart, seen)
    # Paid means done, even if a recovery reopened the cart meanwhile.
    carts().update_one(
        {"_id": cart_id, "state": {"$in": [PENDING, ACTIVE]}},
        {
            "$set": {"state": COMPLETE, "ended_at": now, "modified_at": now},
            "$unset": {"live_owner": "", "lease_until": ""},
        },
    )
    faults.point("release.after_cart")
    # The owner is free again: the cart no longer holds, so the claim is
    # stale from here on (``owners.release_later``).
    owners.release_later(owner=cart.owner, cart_id=cart_id)
    return Order._from_son(paid if paid is not None else order)


def _commit_lines(cart_id: str, cart, seen: dict | None) -> None:
    """Step 6: every line's hold committed, kind by kind."""
    for kind in KINDS:
        lines = kind.lines(cart)
        if not lines:
            continue
        committed = kind.commit_lines(cart_id=cart_id, lines=lines, seen=seen)
        for line, done in zip(lines, committed, strict=True):
            if not done:
                # Only a commit removes a pending cart's hold: this line was
                # committed by the run that stopped before finishing.
                log.info("cart %s: %s already committed", cart_id, kind.key(line))
        faults.point("checkout.after_commit")


def cart_checkout(
    *,
    owner: str,
    cart_id: str,
    email: str,
    shipping: dict | None,
    card: Card | AtCounter,
    now: datetime | None = None,
) -> Order:
    """Pay for the owner's cart and turn it into a paid order.

    ``card``: the payment method, a card or ``AtCounter`` (a box-office
    sale: settled at the counter, the order carries the customer's name).

    Invariants: the shopper pays today's catalog prices and has seen them;
    one order per cart (a repeated submit returns the same paid order); at
    most one charge per checkout attempt, however many runs (a resubmit after
    the lease lapsed takes over the same attempt); units are sold only once
    the order is paid; a declined payment leaves the cart active with every
    hold intact; goods are delivered somewhere (``shipping`` None: tickets
    and lines to collect at a store only).

    Raises CartNotFound (unknown or someone else's cart), CartEmpty, AddressNeeded,
    CartExpired, CartInactive, CheckoutInProgress, PricesChanged,
    LineUnavailable, OutOfStock, PaymentFailed.
    """
    fixed, now = now, utcnow(now)
    if not isinstance(owner, str) or not owner or not isinstance(cart_id, str):
        raise CartNotFound()
    run = _start(owner, cart_id, now, fixed)
    if isinstance(run, Order):
        return run
    faults.point("checkout.after_pending")
    order = _prepare(run, email=email, shipping=shipping, now=now, payment=card)
    faults.point("checkout.after_order")
    run.renew(locked_at=now)
    reference = charge_reference(order)
    charge = _charge(order, reference, card, now, run)
    faults.point("checkout.after_charge")
    return _fulfil(
        cart_id=cart_id,
        order=order,
        charge=charge,
        now=now,
        cart=run.cart,
        seen=run.seen,
        attempt=_attempt(
            reference, outcome="paid", message="", card=card.label, now=now
        ),
    )


def _start(owner: str, cart_id: str, now, fixed) -> "_Run | Order":
    """Step 1, or the end already: the paid order (a repeated submit, or a
    run stopped after charging, finished now), else this run.

    A first attempt that locked the cart is new: no earlier run can have
    paid for it, so only a cart that was in a checkout before (a repeat, a
    retry after a decline, a take-over) looks for its paid order.
    """
    try:
        run = _begin(owner, cart_id, now, fixed)
    except DomainError as refused:
        done = _paid_order(owner, cart_id, now)
        if done is None and isinstance(refused, CheckoutInProgress):
            # Charged, and the run that charged has not finished: finish it.
            done = _charged_order(cart_id, now)
        if done is None:
            raise
        return done
    if run.attempt > 1 or run.taken_over:
        done = _paid_order(owner, cart_id, now)
        if done is not None:
            return done
    if run.taken_over and (done := _charged_order(cart_id, now)) is not None:
        return done
    return run


def _prepare(
    run: _Run, *, email: str, shipping: dict | None, now, payment=None
) -> dict:
    """Steps 2-3: re-price, check the holds, the order (its document); any
    refusal reopens the cart (if this run still has it)."""
    try:
        if shipping is None and needs_delivery(run.cart.items):
            raise AddressNeeded()
        _reprice(run.cart, now, run.seen)
        for kind in KINDS:
            kind.ensure_held_lines(
                cart_id=run.cart_id, lines=kind.lines(run.cart), now=now, seen=run.seen
            )
        return _order_for(run, email=email, shipping=shipping, now=now, payment=payment)
    except DomainError:
        _reopen(run.cart_id, now, run.attempt)
        raise


def _charged_order(cart_id: str, now: datetime) -> Order | None:
    """The cart's order finished, if the provider has a paid charge for its
    latest reference (a run stopped after charging); else None."""
    order = orders().find_one({"cart_id": cart_id, "state": PENDING_PAYMENT})
    if order is None or not order.get("payment_attempts"):
        return None
    charge = provider(order.get("payment_method")).lookup(
        reference=charge_reference(order)
    )
    if charge is None or charge.outcome != "paid":
        return None
    return _fulfil(cart_id=cart_id, order=order, charge=charge, now=now)


def _charge(order: dict, reference: str, card, now: datetime, run) -> Charge:
    """Step 4: charge the order once under ``reference`` (with the provider
    of the payment's method: a card's, or the counter's). Declined or
    failed: the attempt is recorded, the cart reopens with its holds,
    PaymentFailed."""
    try:
        return provider(card.method).charge(
            reference=reference,
            amount=decimal_of(order["total"]),
            currency=order["currency"],
            card=card,
            description=f"Marquee order {order['number']}",
        )
    except (PaymentDeclined, PaymentError) as exc:
        outcome = "declined" if isinstance(exc, PaymentDeclined) else "error"
        _record_attempt(
            order["_id"],
            reference=reference,
            outcome=outcome,
            message=str(exc),
            card=card.label,
            now=now,
        )
        _reopen(order["cart_id"], now, run.attempt)
        raise PaymentFailed(f"{exc} Your items are still held.") from None


def checkout_recover(*, cart_id: str, now: datetime | None = None) -> str:
    """Finish or undo a checkout whose lease lapsed; return what it did.

    The lease is taken over first (a checkout still running is left alone:
    "nothing"). Paid order (or a charge the provider confirms): commit and
    complete. No order, or the provider has no successful charge: reopen the
    cart with its holds (the expiry job ends it if the shopper is gone).
    Idempotent.
    """
    now = utcnow(now)
    raw = _take_over(cart_id, now)
    if raw is None:
        return "nothing"
    order = orders().find_one({"cart_id": cart_id})
    if order is not None and order["state"] == PAID:
        _fulfil(cart_id=cart_id, order=order, charge=None, now=now)
        return "completed"
    if _charged_order(cart_id, now) is not None:
        return "completed"
    _reopen(cart_id, now, raw.get("checkout_attempt") or 0)
    return "reopened"


def checkouts_recover(*, now: datetime | None = None) -> int:
    """Recover every checkout whose lease lapsed (the reconciler, each minute)."""
    now = utcnow(now)
    stuck = [
        raw["_id"]
        for lapsed in lapsed_filters(now, lease_time())
        for raw in carts().find(lapsed, {"_id": 1})
    ]
    return sum(
        checkout_recover(cart_id=cart_id, now=now) != "nothing" for cart_id in stuck
    )
