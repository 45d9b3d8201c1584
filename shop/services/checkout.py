"""Checkout: lock the cart, re-price, charge, write the order, commit.

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

1. cart ``active -> pending`` (one update; refuses an expired or someone
   else's cart, and unlocks an empty one), with a new attempt, its tag and
   a lease, and what the order needs beside the lines: its number (drawn at
   the cart's first checkout, kept by every later attempt), the email, the
   address and the payment's details. Left pending: a resubmit after the
   lease finishes it; the reconciler reopens it.
2. every line re-priced from the catalog; a change is written to the cart,
   which goes back to active, and the shopper is shown it before paying.
3. the charge through the payment provider, once per attempt reference
   (number, tag and attempt: all on the cart). Declined: the order is
   written ``pending_payment`` with the attempt (what was tried stays on
   record), and the cart goes back to active with its holds intact. Left
   charged: the provider is asked whether the reference was charged, and
   the cart has all the order needs to be written.
4. the order, written once, ``paid`` (unique on cart id: the order a
   declined attempt left is moved ``pending_payment -> paid`` instead),
   with the attempt that paid and marked to be announced (its audit entry,
   counters and email follow a moment later, in a batch:
   shop.services.settle); 5. every line's hold committed (units sold); 6.
   the cart ``complete``. Left after 4 or 5: the commits are finished and
   the payment announced.

The order is written after the charge, not before it, because the cart
already fences the checkout and carries the reference: a pending order
written first would be one more synced write on every sale for nothing a
recovery needs.
"""

import logging
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cached_property

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
    CardDeclined,
    CartEmpty,
    CartInactive,
    CartNotFound,
    CheckoutInProgress,
    CheckoutTakenOver,
    LineUnavailable,
    PaymentFailed,
    PricesChanged,
)
from shop.kinds import KINDS, backs_of, line_stock, lines_of
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
    reference_of,
)
from shop.services import settle, tidy
from shop.services.common import (
    carts,
    lease_time,
    load_cart,
    orders,
    touched,
    utcnow,
)
from shop.services.expiry import cart_expire
from shop.services.numbers import next_order_number, put_back

log = logging.getLogger("marquee.shop.checkout")

CURRENCY = "GBP"


_money = money


def _paid_order(owner: str, cart_id: str, now: datetime) -> dict | None:
    """A repeat of a checkout that was paid: the same order (as stored),
    finished."""
    order = orders().find_one({"cart_id": cart_id, "owner": owner, "state": PAID})
    if order is None:
        return None
    raw = carts().find_one({"_id": cart_id})
    if raw and raw["state"] != COMPLETE:
        return _fulfil(cart_id=cart_id, order=order, charge=None, now=now)
    return order


def _given(email: str, shipping: dict | None, payment: Card | AtCounter) -> dict:
    """What a checkout writes on its cart beside the lines, for the order:
    the email (one spelling per address, as accounts and the box office
    keep it: an order placed as "Ada@Example.com" is the account
    ada@example.com may claim), the address, the payment's own fields
    (``order_fields``: a counter sale's method and customer; nothing for a
    card)."""
    return {
        "checkout_email": email.strip().lower(),
        "checkout_shipping": shipping,
        "checkout_payment": payment.order_fields(),
    }


def _literal(fields: dict) -> dict:
    # Values in a pipeline update are expressions: a string starting with
    # "$" (an address line, say) would be read as a field path.
    return {name: {"$literal": value} for name, value in fields.items()}


def _unless_set(fields: dict) -> dict:
    """Pipeline ``$set`` values that keep a field the cart has already."""
    return {
        name: {"$ifNull": [f"${name}", {"$literal": value}]}
        for name, value in fields.items()
    }


@dataclass(frozen=True)
class _Draft:
    """The order of a pending cart's attempt, not yet written: everything
    it needs is on the cart (step 1), so a run and a recovery make the
    same one."""

    cart: object
    number: str
    tag: str | None
    attempt: int
    given: dict

    @classmethod
    def of(cls, raw: dict) -> "_Draft":
        """The draft of the pending cart ``raw`` (its SON)."""
        return cls(
            load_cart(raw),
            raw["order_number"],
            raw.get("checkout_tag"),
            raw.get("checkout_attempt") or 0,
            {name: raw.get(name) for name in _GIVEN},
        )

    @property
    def cart_id(self) -> str:
        return self.cart.cart_id

    @property
    def reference(self) -> str:
        return reference_of(self.number, self.tag, self.attempt)

    def son(self, now: datetime) -> dict:
        """The order's document, ``pending_payment``, with ticket codes and a
        link token drawn now (so a code drawn twice is drawn again by making
        the document again). Unique on cart id and on codes."""
        cart = self.cart
        lines: list[dict] = []
        for kind, line in lines_of(cart):
            lines.extend(kind.order_lines(line=line))
        subtotal = _money(
            sum((decimal_of(line["line_total"]) for line in lines), Decimal(0))
        )
        son = {
            "number": self.number,
            "cart_id": cart.cart_id,
            "owner": cart.owner,
            "token": secrets.token_urlsafe(24),
            "state": PENDING_PAYMENT,
            "email": self.given["checkout_email"],
            "shipping": self.given["checkout_shipping"],
            "lines": lines,
            "subtotal": Decimal128(subtotal),
            "total": Decimal128(subtotal),
            "currency": CURRENCY,
            "payment_attempts": self.attempt,
            "payment_tag": self.tag,
            "attempts": [],
            "created_at": now,
            **(self.given["checkout_payment"] or {}),
        }
        # No empty list of codes: it would collide with other orders' in
        # the unique index.
        codes = [line["code"] for line in lines if line.get("code")]
        if codes:
            son["codes"] = codes
        return son


_GIVEN = ("checkout_email", "checkout_shipping", "checkout_payment")


@dataclass(frozen=True)
class _Run:
    """This run of a checkout: the pending cart's draft order (its cart,
    attempt, tag and number), and the clock its lease renews from (a test's
    fixed ``now``, else the clock)."""

    draft: _Draft
    taken_over: bool
    fixed_now: datetime | None
    # What the kinds read in one step for a later one (``LineKind``'s
    # ``seen``): the prices step's seat states, the held check's holds.
    seen: dict = field(default_factory=dict)

    @classmethod
    def of(cls, raw: dict, *, taken_over: bool, fixed: datetime | None) -> "_Run":
        """The run of the pending cart ``raw`` (its SON, as locked)."""
        return cls(_Draft.of(raw), taken_over, fixed)

    @property
    def cart(self):
        return self.draft.cart

    @property
    def cart_id(self) -> str:
        return self.draft.cart_id

    @property
    def attempt(self) -> int:
        return self.draft.attempt

    @property
    def fresh(self) -> bool:
        """The cart's first attempt, run by its first run: no order yet."""
        return self.attempt == 1 and not self.taken_over

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

    def may_share_attempt(self, locked_at: datetime) -> bool:
        """Whether another run may be charging this attempt: this run took
        it over from one that stalled, or enough of its own lease has gone
        (the rule of ``renew``) that a recovery or a resubmit may have."""
        now = self.fixed_now or timezone.now()
        return self.taken_over or now - locked_at >= lease_time() / 3


def _attempt_is(attempt: int) -> dict:
    # A cart pending from before attempts were numbered has none.
    return {"checkout_attempt": attempt if attempt else {"$in": [0, None]}}


def _numbered(raw: dict | None, drawn: str) -> None:
    """``drawn`` was offered to the cart ``raw`` as it locked (None: the
    lock was refused); handed back if the cart kept the number it had."""
    if raw is None or raw.get("order_number") != drawn:
        put_back(drawn)


def _begin(
    owner: str, cart_id: str, now: datetime, fixed: datetime | None, given: dict
) -> _Run:
    """Step 1: lock the cart (active, within its hold -> pending) with a new
    attempt, a lease, its order number and what the order needs; or take
    over a checkout whose lease lapsed.

    One guarded update, then a read of what it locked: once pending, nothing
    but this checkout changes the cart. Never a top-level ``$or`` and never
    a findAndModify: on the Rust server both cost a scan of every cart
    (config/compat.py), and so does any logical operator saying "has a line
    of some kind"; so the lock does not ask, and a cart found empty after it
    is unlocked again as it was (CartEmpty), which only a checkout of an
    empty cart pays for.
    """
    drawn = next_order_number()
    locked = carts().update_one(
        {"_id": cart_id, "owner": owner, **open_filter(now)},
        [
            {
                "$set": {
                    **_literal(
                        {
                            "state": PENDING,
                            "checkout_at": now,
                            "modified_at": now,
                            "lease_until": now + lease_time(),
                            "checkout_tag": new_tag(),
                            **given,
                        }
                    ),
                    "checkout_attempt": {
                        "$add": [{"$ifNull": ["$checkout_attempt", 0]}, 1]
                    },
                    # The cart's first checkout draws its number; later
                    # attempts keep it (their references and the order's).
                    **_unless_set({"order_number": drawn}),
                }
            }
        ],
    )
    if locked.modified_count:
        raw = carts().find_one({"_id": cart_id})
        _numbered(raw, drawn)
        if raw is not None and not any(raw.get(kind.field) for kind in KINDS):
            _unlock_empty(raw)
            raise CartEmpty()
        return _Run.of(raw, taken_over=False, fixed=fixed)
    raw = _take_over(cart_id, now, given, drawn, owner=owner)
    if raw is not None:
        return _Run.of(raw, taken_over=True, fixed=fixed)
    raise _not_begun(owner, cart_id, now)


def _unlock_empty(raw: dict) -> None:
    """An empty cart locked by ``_begin``: back to active with the hold it
    had (only its attempt number and tag moved; its order number is kept
    for its first real checkout)."""
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


def _take_over(
    cart_id: str,
    now: datetime,
    given: dict | None = None,
    drawn: str | None = None,
    **guard,
) -> dict | None:
    """The pending cart with a new lease, if its checkout's lease lapsed.

    The same attempt goes on, with what its lock wrote; a cart locked
    before checkouts wrote their order's number and details on the cart
    gets them here (``drawn``, and a resubmit's ``given``), so that every
    charge's reference, and the order a recovery writes, come from the
    cart."""
    drawn = drawn or next_order_number()
    update = {
        "lease_until": {"$literal": now + lease_time()},
        **_unless_set({"order_number": drawn, **(given or {})}),
    }
    for lapsed in lapsed_filters(now, lease_time()):
        raw = compat.update_then_read(
            carts(), {"_id": cart_id, **guard, **lapsed}, [{"$set": update}]
        )
        if raw is not None:
            _numbered(raw, drawn)
            return raw
    _numbered(None, drawn)
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
    """``pending -> active``, holds intact; the hold restarts from now,
    never ending sooner than the shopper extended it (``touched``).
    ``attempt``: only if the cart is still in that checkout (a run that
    was taken over reopens nothing)."""
    fence = {} if attempt is None else _attempt_is(attempt)
    carts().update_one(
        {"_id": cart_id, "state": PENDING, **fence},
        touched(
            {
                "$set": {"state": ACTIVE},
                "$unset": {"checkout_at": "", "lease_until": ""},
            },
            now,
        ),
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


def _order_fields(son: dict) -> dict:
    """The update that brings the cart's existing order up to ``son`` (a
    later attempt's draft): its lines, total, details and attempt."""
    keep = ("_id", "token", "created_at", "attempts", "cart_id", "owner")
    update: dict = {"$set": {k: v for k, v in son.items() if k not in keep}}
    if "codes" not in son:
        update["$unset"] = {"codes": ""}
    return update


def _write_order(
    draft: _Draft,
    now: datetime,
    *,
    state: dict,
    attempt: dict,
    fresh: bool,
    son: dict | None = None,
) -> dict | None:
    """Write the draft's order with ``state`` (its ``$set``: paid, or
    nothing for a declined attempt) and ``attempt`` on record; the document
    as written, or None when the cart's order is closed already (paid by
    another run, or canceled).

    ``fresh``, the cart's first attempt run by its first run: no order can
    exist yet, so an insert. Otherwise the order a declined attempt left
    ``pending_payment`` is brought up to this attempt first (if it is still
    pending and not of a later attempt), and inserted only if there is
    none. A ticket code drawn twice, however unlikely, is drawn again
    (``son``: the draft's document as made already, for the first try).
    """
    for _ in range(3):
        son = son or draft.son(now)
        if fresh:
            written = {**son, **state, "attempts": [attempt]}
            try:
                orders().insert_one(written)
            except DuplicateKeyError:
                written = None  # the cart's order after all, or a code
            if written is not None:
                after = written["state"]
                events.order_moved.send(
                    sender=None, order=written, before=None, after=after, at=now
                )
                return written
        update = _order_fields(son)
        update["$set"].update(state)
        update["$push"] = {"attempts": attempt}
        pending = {
            "cart_id": draft.cart_id,
            "state": PENDING_PAYMENT,
            "payment_attempts": {"$lte": draft.attempt},
        }
        if orders().update_one(pending, update).matched_count:
            # Unique on cart id: the one order, as this update left it (the
            # cart is pending, so no other checkout of it writes it now).
            return orders().find_one({"cart_id": draft.cart_id})
        if orders().count_documents({"cart_id": draft.cart_id}, limit=1):
            return None
        # No order of the cart: insert it (with new codes, if one collided).
        fresh, son = True, None
    raise CartInactive("This cart's order could not be created.")


def _attempt(reference, *, outcome, message, card, now) -> dict:
    return {
        "reference": reference,
        "at": now,
        "outcome": outcome,
        "message": message,
        "card": card,
    }


def _paid_fields(charge: Charge, now) -> dict:
    """What marks an order paid: the charge, and the outbox's mark
    (``settle.to_announce``), in the write that pays it."""
    return {
        "state": PAID,
        "paid_at": now,
        "payment_provider": charge.provider,
        "payment_reference": charge.reference,
        **settle.to_announce(now),
    }


def _mark_paid(order: dict, charge: Charge, now) -> dict | None:
    """Step 4 for an order written before its charge (``pending_payment``:
    by a Marquee that wrote orders first): paid, with the charge; the paid
    order, or None if it was paid already."""
    update = {"$set": _paid_fields(charge, now)}
    pk = order["_id"]
    moved = orders().update_one({"_id": pk, "state": PENDING_PAYMENT}, update)
    if not moved.matched_count:
        return None
    return order | update["$set"]


def _fulfil(
    *,
    cart_id: str,
    order: dict | _Draft,
    charge: Charge | None,
    now,
    cart=None,
    attempt: dict | None = None,
    seen: dict | None = None,
    son: dict | None = None,
    fresh: bool = False,
) -> dict:
    """Steps 4-6, each idempotent: order paid, holds committed, cart
    complete; the paid order as stored (``Paid`` builds its ``Order``).

    ``order``: the draft of this attempt's order (written here, paid, with
    ``charge`` and ``attempt``; ``son``, its document as made for the
    charge; ``fresh``, see ``_write_order``), or the order's document when
    it is written already (paid before, or pending from before orders were
    written after their charge).

    ``seen``, what this run's kinds read before the charge. ``cart``, when
    the caller holds it since it went pending, spares a read: a pending
    cart's lines cannot change.
    """
    paid = None
    if isinstance(order, _Draft):
        paid = _write_order(
            order,
            now,
            state=_paid_fields(charge, now),
            attempt=attempt,
            fresh=fresh,
            son=son,
        )
    elif charge is not None:
        paid = _mark_paid(order, charge, now)
    if paid is not None:
        # Paid and marked to be announced, in one write: a run that stops
        # here leaves the announcement to the reconciler
        # (``settle.orders_settle``), or to this process's settler.
        faults.point("checkout.after_paid_write")
        settle.later(paid)
    else:
        # Finishing an order paid before (by a run that stopped, another
        # run of this checkout, or a recovery that found the charge while
        # this run was charging): its paid write marked it, and the settler
        # may announce it sooner than the reconciler (each receiver does
        # its part once). As it is now (the cart's one order): an order
        # canceled before a late charge landed is not paid, so not
        # announced.
        order = orders().find_one({"cart_id": cart_id})
        if order is not None and order.get("paid_at"):
            settle.later(order)
    faults.point("checkout.after_paid")
    # The cart as its lines are sold: the run's pending cart (its lines
    # cannot change), else as read now.
    as_read = {"state": PENDING}
    if cart is None:
        raw = carts().find_one({"_id": cart_id})
        cart = load_cart(raw)
        if raw is not None and raw["state"] == ACTIVE:
            # Reopened by a recovery of a Marquee from before reopens voided
            # the attempt: paid means done, with the lines it has now.
            as_read = {"state": ACTIVE, "modified_at": raw["modified_at"]}
    _commit_lines(cart_id, cart, seen)
    _complete(cart_id, cart, as_read, now)
    faults.point("release.after_cart")
    # The owner is free again: the cart no longer holds, so the claim is
    # stale from here on, and goes with a batch (``shop.services.tidy``).
    tidy.release_claim_later(owner=cart.owner, cart_id=cart_id)
    return paid if paid is not None else order


def _complete(cart_id: str, cart, as_read: dict, now: datetime) -> None:
    """Step 6: the cart complete, in one write guarded on the cart as read
    that carries its lines' units out, sold (``LineKind.backs``); their
    counters count them sold next, and the entries' last step waits for a
    batch (``shop.services.tidy``)."""
    entries = backs_of(cart, sold=True, now=now)

    def complete(push: dict) -> bool:
        change = line_stock.merged(
            {
                "$set": {"state": COMPLETE, "ended_at": now, "modified_at": now},
                "$unset": {"live_owner": "", "lease_until": ""},
            },
            push,
        )
        query = {"_id": cart_id, **as_read}
        return bool(carts().update_one(query, change).modified_count)

    line_stock.give(
        cart_id=cart_id, entries=entries, write=complete, finish=tidy.finish_backs_later
    )


def _commit_lines(cart_id: str, cart, seen: dict | None) -> None:
    """Step 5: every line held on a resource (seats) committed, kind by
    kind; a kind whose lines are their holds is sold by step 6."""
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


class Paid:
    """A checkout's paid order as stored. The checkout page's POST shows
    it only by its number and its link (the redirect: ``number``,
    ``token``), so the ``Order`` is built only when asked (``order``):
    MongoEngine's building of an order with its lines was 3 % of a cart
    flow's CPU (bench/RESULTS.md)."""

    def __init__(self, son: dict) -> None:
        self.son = son

    @property
    def number(self) -> str:
        return self.son["number"]

    @property
    def token(self) -> str:
        return self.son["token"]

    @property
    def state(self) -> str:
        return self.son["state"]

    @cached_property
    def order(self) -> Order:
        return Order._from_son(self.son)


def cart_checkout(
    *,
    owner: str,
    cart_id: str,
    email: str,
    shipping: dict | None,
    card: Card | AtCounter,
    now: datetime | None = None,
) -> Order:
    """``cart_pay``, and its paid order as an ``Order``."""
    return cart_pay(
        owner=owner, cart_id=cart_id, email=email, shipping=shipping, card=card, now=now
    ).order


def cart_pay(
    *,
    owner: str,
    cart_id: str,
    email: str,
    shipping: dict | None,
    card: Card | AtCounter,
    now: datetime | None = None,
) -> Paid:
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
    run = _start(owner, cart_id, now, fixed, _given(email, shipping, card))
    if isinstance(run, dict):
        return Paid(run)
    faults.point("checkout.after_pending")
    son = _prepare(run, now=now)
    run.renew(locked_at=now)
    faults.point("checkout.before_charge")
    charge = _charge(run, son, card, now)
    faults.point("checkout.after_charge")
    paid = _fulfil(
        cart_id=cart_id,
        order=run.draft,
        son=son,
        fresh=run.fresh,
        charge=charge,
        now=now,
        cart=run.cart,
        seen=run.seen,
        attempt=_attempt(
            charge.reference, outcome="paid", message="", card=card.label, now=now
        ),
    )
    return Paid(paid)


def _start(owner: str, cart_id: str, now, fixed, given: dict) -> "_Run | dict":
    """Step 1, or the end already: the paid order as stored (a repeated
    submit, or a run stopped after charging, finished now), else this run.

    A first attempt that locked the cart is new: no earlier run can have
    paid for it, so only a cart that was in a checkout before (a repeat, a
    retry after a decline, a take-over) looks for its paid order.
    """
    try:
        run = _begin(owner, cart_id, now, fixed, given)
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


def _prepare(run: _Run, *, now) -> dict:
    """Step 2: re-price, check the holds; the order's document as it will be
    written (``_Draft.son``), for the charge's amount. Any refusal reopens
    the cart (if this run still has it)."""
    try:
        if run.draft.given["checkout_shipping"] is None and needs_delivery(
            run.cart.items
        ):
            raise AddressNeeded()
        _reprice(run.cart, now, run.seen)
        for kind in KINDS:
            kind.ensure_held_lines(
                cart_id=run.cart_id, lines=kind.lines(run.cart), now=now, seen=run.seen
            )
        return run.draft.son(now)
    except DomainError:
        _give_up(run, now)
        raise


def _give_up(run: _Run, now: datetime) -> None:
    """A run that will not charge reopens its cart, for the shopper to fix
    and pay again. If another run of this attempt may be charging (this one
    took it over, or its own lease may have lapsed meanwhile), the
    attempt's reference is voided first: a charge landing after the reopen
    would pay for units the cart may give back. A charge found paid, or a
    provider that cannot say: the cart stays pending, for the run that
    charged or the recovery to finish."""
    if run.may_share_attempt(locked_at=now):
        method = (run.draft.given["checkout_payment"] or {}).get("payment_method")
        try:
            if provider(method).void(reference=run.draft.reference) is not None:
                return
        except PaymentError:
            return
    _reopen(run.cart_id, now, run.attempt)


def _charged_order(cart_id: str, now: datetime, *, close: bool = False) -> dict | None:
    """The cart's order finished (as stored), if the provider has a paid charge for the
    cart's latest attempt (a run stopped after charging); else None.

    The attempt's reference is the cart's; a pending order the cart has (a
    declined attempt's, or one written before its charge by an earlier
    Marquee) is asked for its own too, and finished as it is.

    ``close``: each reference is voided as it is asked (``PaymentProvider.
    void``), so that None also means no charge under them can land later:
    the cart may be reopened. Raises PaymentError if the provider cannot
    say."""
    raw = carts().find_one({"_id": cart_id})
    if raw is None or raw["state"] != PENDING:
        return None
    pending = orders().find_one({"cart_id": cart_id, "state": PENDING_PAYMENT})
    asks: list[tuple[dict | _Draft, str | None, str]] = []
    if raw.get("order_number") and raw.get("checkout_attempt"):
        draft = _Draft.of(raw)
        method = (draft.given["checkout_payment"] or {}).get("payment_method")
        asks.append((draft, method, draft.reference))
    if pending is not None and pending.get("payment_attempts"):
        reference = charge_reference(pending)
        if not asks or asks[0][2] != reference:
            asks.append((pending, pending.get("payment_method"), reference))
    for order, method, reference in asks:
        payments = provider(method)
        ask = payments.void if close else payments.lookup
        charge = ask(reference=reference)
        if charge is not None and charge.outcome == "paid":
            attempt = _attempt(reference, outcome="paid", message="", card="", now=now)
            return _fulfil(
                cart_id=cart_id, order=order, charge=charge, now=now, attempt=attempt
            )
    return None


def _charge(run: _Run, son: dict, card, now: datetime) -> Charge:
    """Step 3: charge the order once under the attempt's reference (with
    the provider of the payment's method: a card's, or the counter's).
    Declined or failed: the order is written ``pending_payment`` with the
    attempt, the cart reopens with its holds, CardDeclined (the provider
    declined the card) or PaymentFailed (the provider failed)."""
    reference = run.draft.reference
    try:
        return provider(card.method).charge(
            reference=reference,
            amount=decimal_of(son["total"]),
            currency=son["currency"],
            card=card,
            description=f"Marquee order {son['number']}",
        )
    except (PaymentDeclined, PaymentError) as exc:
        outcome = "declined" if isinstance(exc, PaymentDeclined) else "error"
        attempt = _attempt(
            reference, outcome=outcome, message=str(exc), card=card.label, now=now
        )
        _write_order(
            run.draft, now, son=son, state={}, attempt=attempt, fresh=run.fresh
        )
        _reopen(run.cart_id, now, run.attempt)
        failed = CardDeclined if outcome == "declined" else PaymentFailed
        raise failed(f"{exc} Your items are still held.") from None


def checkout_recover(*, cart_id: str, now: datetime | None = None) -> str:
    """Finish or undo a checkout whose lease lapsed; return what it did.

    The lease is taken over first (a checkout still running is left alone:
    "nothing"). Paid order (or a charge the provider confirms): commit and
    complete. No order, or the provider has no successful charge: reopen the
    cart with its holds (the expiry job ends it if the shopper is gone).
    Idempotent.

    Before it reopens, the provider voids the attempt's reference: a run
    that stalled in its charge past the lease may still be waiting for the
    provider's answer, and a charge landing once the cart is open again
    would pay for units the shopper may have given back (never counted
    sold). A provider that cannot say leaves the cart pending ("unsure"),
    for the next run to ask again.
    """
    now = utcnow(now)
    raw = _take_over(cart_id, now)
    if raw is None:
        return "nothing"
    order = orders().find_one({"cart_id": cart_id})
    if order is not None and order["state"] == PAID:
        _fulfil(cart_id=cart_id, order=order, charge=None, now=now)
        return "completed"
    try:
        if _charged_order(cart_id, now, close=True) is not None:
            return "completed"
    except PaymentError:
        log.warning("cart %s: the provider could not void its checkout", cart_id)
        return "unsure"
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
        checkout_recover(cart_id=cart_id, now=now) in ("completed", "reopened")
        for cart_id in stuck
    )
