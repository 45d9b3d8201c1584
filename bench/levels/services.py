"""The services level: Marquee's shop services called in-process.

Each user is an anonymous shopper (an ``anon:`` owner key, as a session
token makes one) calling the services its page requests call, with the
request and template layers left out: the difference between this level and
raw is what Marquee's business rules cost (the catalog's pricing reads, the
hold deadline, the order, the payment record), and the difference between
this level and ``http`` is what the web layer costs.

Cart flow, as the seed's: the shopper's first ``cart_add`` that holds
its units creates the cart (Marquee has no separate "create a cart": a cart
exists once something is in it, and a refused add makes none, so the adds
go one at a time until one holds), the other adds run concurrently, then
``cart_pay`` pays with the test gateway's card. A sold-out product is
a refused add; the user checks out what it could reserve.

Theater flow, as the seed's: ``cart_hold_seats`` of the user's own 5
adjacent seats (the raw level's ``seats_for``), in one conditional update of
the session; the hold of a shopper without a cart makes the cart with its
line (action ``hold_seats``); then ``cart_pay``. Contended: look at the
seat map (booking's ``seat_map`` selector: ``view_seats``), try a free pair
of the hot seats, look again when beaten (3 tries).
"""

from __future__ import annotations

import threading
import uuid
from functools import partial

from bench import monitor
from bench.levels import Level, Outcome, Workload, marquee, raw


def connect(uri: str, db_name: str, pool: int):
    # Marquee's own client options and pool (settings.MONGODB_POOL_SIZE, 8
    # connections, fewer than a load worker's 50 threads: the threads past it
    # wait in the worker, as in any Marquee process): --pool applies to raw
    # only.
    return marquee.connect(uri, db_name)


def _owner(user: int) -> str:
    return f"anon:bench-{user}-{uuid.uuid4().hex[:12]}"


def add_item(owner: str, sku: str, quantity: int, action: str):
    """One add, as the add page's POST makes it (``cart_add``): what it did,
    or None when the product is sold out."""
    from catalog.errors import OutOfStock
    from shop.services.carts import cart_add

    with monitor.action(action):
        try:
            return cart_add(owner=owner, sku=sku, quantity=quantity)
        except OutOfStock:
            return None


def checkout(owner: str, cart_id: str):
    """The checkout, as the checkout page's POST makes it (``cart_pay``):
    the paid order as stored."""
    from shop.services.checkout import cart_pay

    with monitor.action("checkout"):
        return cart_pay(
            owner=owner,
            cart_id=cart_id,
            email=marquee.EMAIL,
            shipping=marquee.SHIPPING,
            card=marquee.card(),
        )


# What this process has warmed: (cache, database name).
_warm: set[tuple[str, str]] = set()
_warming = threading.Lock()


def _catalog_warm(ctx) -> None:
    """Once per process and database, uncounted: the names of the products
    on sale in the cache ``sellable`` keeps (catalog/selectors/pricing.py),
    as a shop's processes have them after their first pages. A flow's
    commands then do not depend on which process met a SKU first."""
    from catalog.selectors.pricing import names_warm

    with _warming:
        key = ("names", ctx.db.name)
        if key in _warm:
            return
        with monitor.uncounted():
            names_warm([marquee.sku(i) for i in range(ctx.run.params.products)])
        _warm.add(key)


def _sessions_warm(ctx) -> None:
    """Once per process and database, uncounted: the sessions' headers and
    halls in the caches a hold and a sale read (booking/services/seats.py
    ``sessions_warm``), as a box office's processes have them after their
    first holds. A flow's commands then do not depend on which process met
    a session first."""
    from booking.services.seats import sessions_warm

    with _warming:
        key = ("sessions", ctx.db.name)
        if key in _warm:
            return
        with monitor.uncounted():
            ids, probe = marquee.sessions(ctx.db)
            sessions_warm([*ids, probe])
        _warm.add(key)


def cart_flow(ctx, rng) -> Outcome:
    """First add (creates the cart), the other adds concurrently, checkout."""
    p = ctx.run.params
    _catalog_warm(ctx)
    owner = _owner(ctx.user)
    skus = [marquee.sku(i) for i in rng.sample(range(p.hot or p.products), p.items)]
    # The first add that holds makes the cart (a refused one leaves none):
    # one at a time until then, as the raw level creates its cart first.
    first = None
    while skus and first is None:
        first = add_item(owner, skus.pop(0), p.quantity, "first_add")
    rest = ctx.parallel(
        [partial(add_item, owner, s, p.quantity, "add_to_cart") for s in skus]
    )
    added = [add for add in (first, *rest) if add is not None]
    if not added:
        return Outcome(kind="sold_out", got="nothing")
    _paid(checkout(owner, added[0].cart_id))
    return Outcome(got=f"{len(added)} of {p.items} items")


def cart_probe(ctx, rng) -> None:
    """Every cart action once, on the probe's own SKUs."""
    from shop.services.carts import cart_set_quantity

    owner = _owner(-1)
    first, second = marquee.PROBE_SKUS
    if add_item(owner, first, 1, "first_add") is None:
        raise RuntimeError("probe: could not add the probe's first SKU")
    added = add_item(owner, second, 1, "add_to_cart")
    if added is None:
        raise RuntimeError("probe: could not add the probe's second SKU")
    with monitor.action("change_quantity"):
        cart_set_quantity(owner=owner, sku=second, quantity=2)
    checkout(owner, added.cart_id)


def hold_seats(owner: str, session_id: str, seats) -> str | None:
    """One hold; the cart's id, or None when a seat was taken first."""
    from booking.errors import SeatsTaken
    from shop.services.tickets import cart_hold_seats

    with monitor.action("hold_seats"):
        try:
            held = cart_hold_seats(
                owner=owner,
                session_id=session_id,
                seats=tuple((row, col) for row, col in seats),
            )
        except SeatsTaken:
            return None
    return held.cart_id


def theater_flow(ctx, rng) -> Outcome:
    """Hold this user's own seats, check out."""
    _sessions_warm(ctx)
    index, seats = raw.seats_for(ctx.run, ctx.user)
    owner = _owner(ctx.user)
    cart_id = hold_seats(owner, marquee.sessions(ctx.db)[0][index], seats)
    if cart_id is None:
        return Outcome(kind="seats_taken", got="nothing")
    _paid(checkout(owner, cart_id))
    return Outcome(got=f"{len(seats)} seats")


def view_seats(session_id: str) -> list[str]:
    """The seat map's states of row A, as the shopper sees it."""
    from booking.selectors import seat_map

    with monitor.action("view_seats"):
        found = seat_map(session_id=session_id)
    return [cell.state for cell in found.rows[0].cells]


def contended_theater_flow(ctx, rng) -> Outcome:
    """Look at the map, try a free pair of the hot seats; again when beaten."""
    _sessions_warm(ctx)
    p = ctx.run.params
    owner = _owner(ctx.user)
    session_id = marquee.sessions(ctx.db)[0][0]
    for _ in range(p.attempts):
        row = view_seats(session_id)[: p.hot_seats]
        free = raw.free_blocks(row, p.tickets, free="free")
        if not free:
            return Outcome(kind="sold_out", got="nothing")
        first = rng.choice(free)
        seats = [(0, first + k) for k in range(p.tickets)]
        cart_id = hold_seats(owner, session_id, seats)
        if cart_id is not None:
            _paid(checkout(owner, cart_id))
            return Outcome(got=f"{p.tickets} seats")
    return Outcome(kind="seats_taken", got="nothing")


def theater_probe(ctx, rng) -> None:
    """Every theater action once, on the probe's own session."""
    p = ctx.run.params
    session_id = marquee.sessions(ctx.db)[1]
    owner = _owner(-1)
    view_seats(session_id)
    cart_id = hold_seats(owner, session_id, [(0, k) for k in range(p.tickets)])
    if cart_id is None:
        raise RuntimeError("probe: could not hold the probe session's seats")
    _paid(checkout(owner, cart_id))


def _paid(order) -> None:
    if order.state != "paid":
        raise RuntimeError(f"order {order.number} is {order.state}")


_THEATER = Workload(
    setup=marquee.theater_setup,
    user_flow=theater_flow,
    probe=theater_probe,
    check=marquee.theater_check,
)

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
        "add_to_cart": 8,
        "change_quantity": 7,
        "view_seats": 2,
        "hold_seats": 8,
        "checkout": 15,
    },
    workloads={
        "cart": _CART,
        "cart-contended": _CART,
        "theater": _THEATER,
        "theater-contended": Workload(
            setup=marquee.theater_setup,
            user_flow=contended_theater_flow,
            probe=theater_probe,
            check=marquee.theater_check,
        ),
    },
)
