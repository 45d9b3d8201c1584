"""Reconciling the two sides of every hold (seed 001's cleanup_inventory).

Each reservation entry on a resource must belong to an active or pending
cart that lists it with the same amount. Crashes between the two writes of a
service, and only they, leave entries that do not; this puts them right.
"""

from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from itertools import islice

from shop.cart_state import ACTIVE, holds_anything, is_stale
from shop.kinds import KINDS, Hold, LineKind
from shop.services.checkout import checkouts_recover
from shop.services.common import carts, load_cart, utcnow
from shop.services.expiry import cart_expire
from shop.services.orders import orders_cancel_recover
from shop.services.settle import orders_settle

# Entries and carts changed more recently than this may belong to a service
# between its two writes right now: they are left for the next run.
RECONCILE_GRACE = timedelta(minutes=1)
_BATCH = 500


@dataclass
class ReconcileReport:
    recovered: int = 0  # checkouts finished or undone
    canceled: int = 0  # order cancellations finished
    announced: int = 0  # payments no settler announced (shop.services.settle)
    moves: int = 0  # resource moves left in flight finished or undone
    released: int = 0  # entries no live cart lists
    fitted: int = 0  # entries resized to their cart's line
    refreshed: int = 0  # entries confirmed and stamped
    expired: int = 0  # carts found past their hold
    skipped: int = 0  # entries or carts too recent to judge

    def as_dict(self) -> dict:
        return asdict(self)


def _batches(iterable, size):
    it = iter(iterable)
    while chunk := list(islice(it, size)):
        yield chunk


def reservations_reconcile(*, now: datetime | None = None) -> ReconcileReport:
    """Release, resize or confirm every reservation entry against its cart.

    First checkouts stuck in ``pending`` are finished or undone, order
    cancellations stuck in ``refunding`` are finished, payments no settler
    announced are announced, and each kind's
    resource settles its own interrupted work. Then, for each entry
    older than RECONCILE_GRACE: its cart missing or finished, or not listing
    it -> released (guarded on the entry being unchanged); cart past its hold
    or left ``expiring`` -> the cart is expired; active cart listing it with
    another amount -> resized to the line; otherwise stamped as confirmed.
    Safe to run twice at once and after a crash: every write is conditional.
    """
    now = utcnow(now)
    before = now - RECONCILE_GRACE
    report = ReconcileReport(
        recovered=checkouts_recover(now=now),
        canceled=orders_cancel_recover(now=now),
        announced=orders_settle(now=now),
    )
    for kind in KINDS:
        kind.settle()
        report.moves += kind.recover(before=before)
        for chunk in _batches(kind.holds(before=before), _BATCH):
            _reconcile_chunk(kind, chunk, now, before, report)
    return report


def _reconcile_chunk(kind: LineKind, holds: list[Hold], now, before, report) -> None:
    ids = list({hold.cart_id for hold in holds})
    found = {raw["_id"]: load_cart(raw) for raw in carts().find({"_id": {"$in": ids}})}
    confirmed: dict[str, list[str]] = defaultdict(list)
    expired: set[str] = set()
    for hold in holds:
        cart = found.get(hold.cart_id)
        if not holds_anything(cart):
            report.released += kind.release_hold(hold=hold)
            continue
        if is_stale(cart, now):
            if hold.cart_id not in expired:
                expired.add(hold.cart_id)
                report.expired += cart_expire(cart_id=hold.cart_id, now=now)
            # The expiry released what the cart lists; an entry it does not
            # list (a crash's leftover) is this run's to release.
            report.released += kind.release_hold(hold=hold)
            continue
        if cart.modified_at > before:
            report.skipped += 1
            continue
        line = next((x for x in kind.lines(cart) if kind.key(x) == hold.key), None)
        if line is None:
            report.released += kind.release_hold(hold=hold)
        elif kind.amount(line) == hold.amount:
            if cart.state == ACTIVE:
                confirmed[hold.key].append(hold.cart_id)
        elif cart.state == ACTIVE:
            # A pending cart's commit gives a surplus back by itself.
            kind.fit_hold(hold=hold, line=line, now=now)
            report.fitted += 1
    for key, cart_ids in confirmed.items():
        kind.refresh_holds(key=key, cart_ids=cart_ids, before=before, now=now)
        report.refreshed += len(cart_ids)
