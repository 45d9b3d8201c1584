"""One live cart per owner: the owner's claim.

A shopper (an owner) has at most one live cart (active, pending or
expiring). The rule is a document per owner in ``cart_owners``, ``{_id:
owner, cart_id}``: a cart becomes live only by inserting its owner's claim
(``_id`` is unique on every server), and the owner is free again once the
claim is deleted, when the cart ends. ``Cart.live_owner`` is kept as the
lookup of the owner's live cart (one indexed read), set once the claim is
won and unset when the cart ends.

Why not a unique index on ``live_owner`` alone, as MongoDB would allow:
SecantusDB's Rust server (0.5.3, the default embedded server) keeps a unique
key after an update removes or changes it, until the document is deleted,
so an owner whose cart had ended could never have another one
(tests/test_server_conformance.py). Deleting a claim frees its key on every
server.

Write order, and what each crash leaves:
* A new cart is claimed, then inserted with its ``live_owner`` (two
  writes). A crash after the claim leaves a claim on a cart that does not
  exist: the owner's next ``claim`` makes that cart (empty, live) and the
  owner carries on with it. A request that meets a claim whose cart is not
  there yet does the same, so a claimant is never waited for: its own
  insert then finds the cart made and uses it (``lines.new_cart``). A
  claim older than a hold whose cart is gone (its cart was purged after a
  crash kept the claim) is stale: it is deleted, never made into a cart
  again (its id may be an old order's).
* An ending cart leaves its holding state (and ``live_owner``) first, then
  its claim is deleted. A crash in between leaves a claim on a cart that no
  longer holds anything: the next ``claim`` for the owner deletes it.
* A paid checkout's claim is deleted a moment later, with others
  (``shop.services.tidy``): one delete per batch instead of one per order, off
  the checkout's answer. Until then the claim is one that "no longer holds
  anything", as above: an owner who starts a new cart in between gets it
  (the next ``claim`` deletes the old one), and a batch lost with its
  process leaves only such claims.
"""

from datetime import datetime

from pymongo.errors import DuplicateKeyError

from shop.cart_state import HOLDING_STATES
from shop.documents import CartOwner
from shop.services.common import cart_document, carts, hold_time


def claims():
    return CartOwner.coll()


def claim(*, owner: str, cart_id: str, now: datetime) -> bool:
    """Make ``cart_id`` the owner's live cart; False when the owner has one.

    A claim on a cart that has ended, or is not the owner's (both left by a
    crash), is stale: it is deleted and the claim tried once more. A claim
    whose cart is not there yet (its claimant is inserting it, or stopped
    before) gets that cart made here: the owner has one (False).
    """
    for _ in range(2):
        try:
            claims().insert_one({"_id": owner, "cart_id": cart_id, "at": now})
            return True
        except DuplicateKeyError:
            pass
        held = claims().find_one({"_id": owner})
        if held is None:
            continue  # released meanwhile
        cart = carts().find_one(
            {"_id": held["cart_id"]}, {"state": 1, "owner": 1, "live_owner": 1}
        )
        if cart is None and now - held["at"] < hold_time():
            _make_claimed(owner, held["cart_id"], now)
            return False
        if live(cart, owner):
            if cart.get("live_owner") != owner:
                # A cart made before carts were born with this field (it was
                # set after the claim): a crash in between left it unset.
                carts().update_one(
                    {"_id": held["cart_id"], "state": {"$in": list(HOLDING_STATES)}},
                    {"$set": {"live_owner": owner}},
                )
            return False
        claims().delete_one({"_id": owner, "cart_id": held["cart_id"]})
    return False


def _make_claimed(owner: str, cart_id: str, now: datetime) -> None:
    """The claimed cart, empty, unless its claimant inserted it first."""
    try:
        carts().insert_one(cart_document(owner, cart_id, now)[1])
    except DuplicateKeyError:
        pass


def live(cart: dict | None, owner: str) -> bool:
    """Whether a claimed cart still makes its claim good: it exists, is the
    owner's, and holds (active, pending or expiring). A hand-over to an
    account cut short by a crash leaves the account a claim on a cart that
    is still the anonymous owner's: stale, not a lock-out."""
    return (
        cart is not None and cart["state"] in HOLDING_STATES and cart["owner"] == owner
    )


def release(*, owner: str, cart_id: str) -> None:
    """The cart ``cart_id`` has ended: free its owner. Idempotent; never
    touches a newer claim of the same owner."""
    claims().delete_one({"_id": owner, "cart_id": cart_id})


def release_all(ended: list[tuple[str, str]]) -> int:
    """Delete the claims of these ended carts: one statement (the batch of
    ``shop.services.tidy``, which a paid checkout's release waits for).

    Each pair's own delete would be an ``$or`` of pairs, which costs the
    Rust server a scan (``config/compat.py``); owners ``$in`` and carts
    ``$in`` is an ``_id`` lookup. It can also match a claim of one listed
    owner on another listed cart, which is only ever a claim a crash left
    on a cart that is not its owner's: every cart listed has ended, so a
    claim naming one is stale whoever holds it (``live``)."""
    owners = sorted({owner for owner, _ in ended})
    carts_ended = sorted({cart_id for _, cart_id in ended})
    done = claims().delete_many(
        {"_id": {"$in": owners}, "cart_id": {"$in": carts_ended}}
    )
    # Those the owners' next claims had not deleted already.
    return done.deleted_count
