"""The invariants of every hold, checked from the database.

Per resource (each kind's own conservation: for stock,
``free + held + sold == initial + restocks`` and ``free >= 0``), and per
reservation entry: it belongs to an active or pending cart that lists it
with the same amount. Per owner: at most one cart that holds (active,
pending or expiring) is findable as theirs (``live_owner``). Per checkout,
once no run holds its lease: a paid order's cart is complete, and a
complete cart has a paid order (paid, or since refunded). Meant for a
quiet moment (tests, after the jobs):
under traffic, a service between its two writes shows up for a moment.
"""

from datetime import datetime
from itertools import islice

from shop.cart_state import COMPLETE, HOLDING_STATES, LISTING_STATES, lease_open
from shop.documents import PAID, REFUNDED, REFUNDING, Cart, Order
from shop.kinds import KINDS, Problem
from shop.services.common import lease_time, utcnow

# An order that took the money (a refund does not undo that its cart sold).
PAID_STATES = (PAID, REFUNDING, REFUNDED)
_BATCH = 500


def invariant_problems(*, now: datetime | None = None) -> list[Problem]:
    problems: list[Problem] = _owners_with_two_live_carts()
    problems.extend(checkout_problems(now=now))
    for kind in KINDS:
        problems.extend(kind.resource_problems())
        holds = list(kind.holds(before=None))
        ids = list({hold.cart_id for hold in holds})
        found = {
            raw["_id"]: Cart._from_son(raw)
            for raw in Cart.coll().find({"_id": {"$in": ids}})
        }
        for hold in holds:
            cart = found.get(hold.cart_id)
            if cart is None:
                problems.append(
                    Problem(kind.name, hold.key, f"held by missing cart {hold.cart_id}")
                )
                continue
            if cart.state not in LISTING_STATES:
                problems.append(
                    Problem(
                        kind.name,
                        hold.key,
                        f"held by {cart.state} cart {hold.cart_id}",
                    )
                )
                continue
            line = next((x for x in kind.lines(cart) if kind.key(x) == hold.key), None)
            if line is None:
                problems.append(
                    Problem(
                        kind.name,
                        hold.key,
                        f"cart {hold.cart_id} holds it but does not list it",
                    )
                )
            elif kind.amount(line) != hold.amount:
                problems.append(
                    Problem(
                        kind.name,
                        hold.key,
                        f"cart {hold.cart_id} holds {hold.amount} "
                        f"but lists {kind.amount(line)}",
                    )
                )
    return problems


def _owners_with_two_live_carts() -> list[Problem]:
    """One live cart per owner (shop.services.owners)."""
    doubles = Cart.coll().aggregate(
        [
            {"$match": {"live_owner": {"$exists": True}}},
            {"$match": {"state": {"$in": list(HOLDING_STATES)}}},
            {"$group": {"_id": "$live_owner", "n": {"$sum": 1}}},
            {"$match": {"n": {"$gt": 1}}},
        ]
    )
    return [Problem("cart", row["_id"], f"{row['n']} live carts") for row in doubles]


def invariant_keys(problems: list[Problem]) -> list[str]:
    """The offending resources, each once, in order."""
    return list(dict.fromkeys(p.key for p in problems))


def _chunks(cursor, size=_BATCH):
    it = iter(cursor)
    while chunk := list(islice(it, size)):
        yield chunk


def checkout_problems(*, now: datetime | None = None) -> list[Problem]:
    """Paid order => complete cart (or none: purged after its retention),
    and complete cart => paid order, except while a checkout holds its lease
    (it is finishing right now)."""
    now = utcnow(now)
    problems = []
    paid = Order.coll().find(
        {"state": {"$in": list(PAID_STATES)}}, {"cart_id": 1, "number": 1}
    )
    for chunk in _chunks(paid):
        ids = [o["cart_id"] for o in chunk]
        found = {
            c["_id"]: c
            for c in Cart.coll().find(
                {"_id": {"$in": ids}},
                {"state": 1, "lease_until": 1, "checkout_at": 1},
            )
        }
        for order in chunk:
            # No cart: purged after its retention (shop.services.cleanup).
            cart = found.get(order["cart_id"])
            if cart is None or cart["state"] == COMPLETE:
                continue
            if not lease_open(cart, now, lease_time()):
                message = f"paid but its cart is {cart['state']}"
                problems.append(Problem("order", order["number"], message))
    complete = Cart.coll().find({"state": COMPLETE}, {"_id": 1})
    for chunk in _chunks(complete):
        ids = [c["_id"] for c in chunk]
        sold = {
            o["cart_id"]
            for o in Order.coll().find(
                {"cart_id": {"$in": ids}, "state": {"$in": list(PAID_STATES)}},
                {"cart_id": 1},
            )
        }
        problems.extend(
            Problem("cart", cart_id, "complete without a paid order")
            for cart_id in ids
            if cart_id not in sold
        )
    return problems
