"""The invariants of every hold, checked from the database.

Per resource (each kind's own conservation: for stock,
``free + held + sold == initial + restocks`` and ``free >= 0``), and per
reservation entry: it belongs to an active or pending cart that lists it
with the same amount. Per owner: at most one cart that holds (active,
pending or expiring) is findable as theirs (``live_owner``). Meant for a
quiet moment (tests, after the jobs):
under traffic, a service between its two writes shows up for a moment.
"""

from shop.cart_state import HOLDING_STATES, LISTING_STATES
from shop.documents import Cart
from shop.kinds import KINDS, Problem


def invariant_problems() -> list[Problem]:
    problems: list[Problem] = _owners_with_two_live_carts()
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
