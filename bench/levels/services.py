"""The services level: Marquee's shop services called in-process.

Each user is an anonymous shopper (an ``anon:`` owner key, as a session
token makes one) calling the services its page requests call, with the
request and template layers left out: the difference between this level and
raw is what Marquee's business rules cost (the catalog's pricing reads, the
hold deadline, the order, the payment record), and the difference between
this level and ``http`` is what the web layer costs.

Cart flow, as the seed's: the shopper's first ``cart_add_item`` creates the
cart (Marquee has no separate "create a cart": a cart exists once something
is in it), the other 4 adds run concurrently, then ``cart_checkout`` pays
with the test gateway's card. A sold-out product is a refused add; the user
checks out what it could reserve.
"""

from __future__ import annotations

import uuid
from functools import partial

from bench import monitor
from bench.levels import Level, Outcome, Workload, marquee


def connect(uri: str, db_name: str, pool: int):
    # Marquee's own client options and pool (pymongo's default of 100, more
    # than the 50 threads of a load worker): --pool applies to raw only.
    return marquee.connect(uri, db_name)


def _owner(user: int) -> str:
    return f"anon:bench-{user}-{uuid.uuid4().hex[:12]}"


def add_item(owner: str, sku: str, quantity: int, action: str):
    """One add; the cart, or None when the product is sold out."""
    from catalog.errors import OutOfStock
    from shop.services.carts import cart_add_item

    with monitor.action(action):
        try:
            return cart_add_item(owner=owner, sku=sku, quantity=quantity)
        except OutOfStock:
            return None


def checkout(owner: str, cart_id: str):
    from shop.services.checkout import cart_checkout

    with monitor.action("checkout"):
        return cart_checkout(
            owner=owner,
            cart_id=cart_id,
            email=marquee.EMAIL,
            shipping=marquee.SHIPPING,
            card=marquee.card(),
        )


def cart_flow(ctx, rng) -> Outcome:
    """First add (creates the cart), 4 concurrent adds, checkout."""
    p = ctx.run.params
    owner = _owner(ctx.user)
    skus = [marquee.sku(i) for i in rng.sample(range(p.hot or p.products), p.items)]
    first = add_item(owner, skus[0], p.quantity, "first_add")
    rest = ctx.parallel(
        [partial(add_item, owner, s, p.quantity, "add_to_cart") for s in skus[1:]]
    )
    carts = [cart for cart in (first, *rest) if cart is not None]
    if not carts:
        return Outcome(kind="sold_out", got="nothing")
    order = checkout(owner, carts[0].cart_id)
    if order.state != "paid":
        raise RuntimeError(f"order {order.number} is {order.state}")
    return Outcome(got=f"{len(carts)} of {p.items} items")


def cart_probe(ctx, rng) -> None:
    """Every cart action once, on the probe's own SKUs."""
    from shop.services.carts import cart_set_quantity

    owner = _owner(-1)
    first, second = marquee.PROBE_SKUS
    if add_item(owner, first, 1, "first_add") is None:
        raise RuntimeError("probe: could not add the probe's first SKU")
    cart = add_item(owner, second, 1, "add_to_cart")
    if cart is None:
        raise RuntimeError("probe: could not add the probe's second SKU")
    with monitor.action("change_quantity"):
        cart_set_quantity(owner=owner, sku=second, quantity=2)
    checkout(owner, cart.cart_id)


_CART = Workload(
    setup=marquee.cart_setup,
    user_flow=cart_flow,
    probe=cart_probe,
    check=marquee.cart_check,
)

LEVEL = Level(
    name="services",
    description="Marquee's shop services called in-process",
    connect=connect,
    # bench/README.md, "Round-trip budgets", lists each action's commands.
    budgets={
        "first_add": 8,
        "add_to_cart": 7,
        "change_quantity": 4,
        "checkout": 19,
    },
    workloads={"cart": _CART, "cart-contended": _CART},
)
