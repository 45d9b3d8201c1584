"""The raw level: the seed articles' operation sequences, straight with pymongo.

This is the yardstick, the most any layer above can get from this database on
this machine: the same documents and the same operations the articles (and
their simulator) issue, one round trip each, with the articles' known mistakes
fixed (shared/seeds/README.md) and DESIGN §3's rules kept:

* a reservation is a conditional single-document update whose filter holds
  the availability rule; a modified count of 0 is the refusal;
* the resource is reserved first, then recorded on the cart under
  ``state == "active"``; if that fails the reservation is released;
* a seat hold *decrements* ``seatsAvailable`` and a release gives it back;
* a filter naming two fields of one array entry uses ``$elemMatch``;
* line prices come from the database, never from the caller.

Cart: cart upsert (1); per item, concurrently: product read, inventory
reserve, cart push (3 x 5); checkout: cart read, order insert, cart state,
inventory multi-update (4). 20 commands, as the original.

Theater: cart insert (1); seat hold returning the session's price (1), cart
push (1); checkout: cart read, receipt insert, session multi-update, cart
state (4). 7 commands, as the original.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial

from bson import Binary, Decimal128, ObjectId
from pymongo import ASCENDING, MongoClient

from bench import monitor
from bench.levels import Check, Level, Outcome, Workload

ACTIVE = "active"
COMPLETE = "complete"
INSERT_BATCH = 500
# Extra documents only the probe touches, outside the load's data.
PROBE_STOCK = 10


class CartInactive(Exception):
    """The cart left the active state under the flow (never expected here)."""


def connect(uri: str, db_name: str, pool: int):
    # The options Marquee's own connection uses (config.mongo), so the
    # yardstick pays the same write concern: majority, acknowledged.
    client = MongoClient(
        uri,
        maxPoolSize=pool,
        tz_aware=True,
        uuidRepresentation="standard",
        w="majority",
        serverSelectionTimeoutMS=10_000,
    )
    return client[db_name]


def _now() -> datetime:
    return datetime.now(UTC)


# --- Cart: data ------------------------------------------------------------


def cart_setup(db, run) -> str:
    """1,000 products of 1 KiB properties with their inventories, bulk-inserted."""
    p = run.params
    db.carts.create_index([("state", ASCENDING)])
    db.inventories.create_index([("reservations._id", ASCENDING)])
    db.orders.create_index([("cartId", ASCENDING)], unique=True)
    filler = random.Random(run.seed)
    # One more product than the load uses: the probe's.
    ids = list(range(p.products + 1))
    for start in range(0, len(ids), INSERT_BATCH):
        batch = ids[start : start + INSERT_BATCH]
        db.products.insert_many(
            [
                {
                    "_id": i,
                    "name": f"product {i}",
                    "price": Decimal128(p.price(i)),
                    "properties": {"bin": Binary(filler.randbytes(p.product_bytes))},
                }
                for i in batch
            ],
            ordered=False,
        )
        db.inventories.insert_many(
            [
                {
                    "_id": i,
                    "quantity": PROBE_STOCK if i == p.products else p.stock,
                    "reservations": [],
                }
                for i in batch
            ],
            ordered=False,
        )
    hot = f", users pick among the first {p.hot}" if p.hot else ""
    return f"{p.products} products x {p.product_bytes} B, stock {p.stock:,} each{hot}"


# --- Cart: operations ------------------------------------------------------


def create_cart(db, cart_id: ObjectId) -> None:
    with monitor.action("create_cart"):
        now = _now()
        db.carts.update_one(
            {"_id": cart_id},
            {"$set": {"state": ACTIVE, "modifiedOn": now, "products": []}},
            upsert=True,
        )


def add_to_cart(db, cart_id: ObjectId, product_id: int, quantity: int) -> bool:
    """Reserve ``quantity`` of a product for the cart; False when stock is short."""
    with monitor.action("add_to_cart"):
        product = db.products.find_one({"_id": product_id}, {"name": 1, "price": 1})
        if product is None:
            raise LookupError(f"no product {product_id}")
        now = _now()
        reserved = db.inventories.update_one(
            {"_id": product_id, "quantity": {"$gte": quantity}},
            {
                "$inc": {"quantity": -quantity},
                "$push": {
                    "reservations": {
                        "_id": cart_id,
                        "quantity": quantity,
                        "createdOn": now,
                    }
                },
            },
        )
        if reserved.modified_count == 0:
            return False
        line = {
            "_id": product_id,
            "quantity": quantity,
            "name": product["name"],
            "price": product["price"],
        }
        recorded = db.carts.update_one(
            {"_id": cart_id, "state": ACTIVE},
            {"$set": {"modifiedOn": now}, "$push": {"products": line}},
        )
        if recorded.modified_count == 0:
            _release_stock(db, cart_id, product_id, quantity)
            raise CartInactive(f"cart {cart_id} is not active")
        return True


def _release_stock(db, cart_id, product_id, quantity) -> None:
    # Gives the amount back and drops the entry in one update; a second
    # release finds no entry and changes nothing.
    db.inventories.update_one(
        {
            "_id": product_id,
            "reservations": {"$elemMatch": {"_id": cart_id, "quantity": quantity}},
        },
        {"$inc": {"quantity": quantity}, "$pull": {"reservations": {"_id": cart_id}}},
    )


def change_quantity(db, cart_id: ObjectId, product_id: int, new: int) -> bool:
    """Move a line to ``new`` units; False (nothing changed) when stock is short.

    The seed's version updates ``products`` instead of ``inventories`` and
    never sets the reservation's quantity; both fixed.
    """
    with monitor.action("change_quantity"):
        cart = db.carts.find_one(
            {"_id": cart_id, "state": ACTIVE, "products._id": product_id},
            {"products": 1},
        )
        if cart is None:
            raise CartInactive(f"cart {cart_id} has no product {product_id}")
        old = next(
            line["quantity"] for line in cart["products"] if line["_id"] == product_id
        )
        delta = new - old
        now = _now()
        adjusted = db.inventories.update_one(
            {
                "_id": product_id,
                "reservations": {"$elemMatch": {"_id": cart_id}},
                # A negative delta always passes: it gives stock back.
                "quantity": {"$gte": delta},
            },
            {
                "$inc": {"quantity": -delta, "reservations.$.quantity": delta},
                "$set": {"reservations.$.modifiedOn": now},
            },
        )
        if adjusted.modified_count == 0:
            return False
        recorded = db.carts.update_one(
            {"_id": cart_id, "state": ACTIVE, "products._id": product_id},
            {"$set": {"products.$.quantity": new, "modifiedOn": now}},
        )
        if recorded.modified_count == 0:
            db.inventories.update_one(
                {"_id": product_id, "reservations": {"$elemMatch": {"_id": cart_id}}},
                {"$inc": {"quantity": delta, "reservations.$.quantity": -delta}},
            )
            raise CartInactive(f"cart {cart_id} is not active")
        return True


def checkout_cart(db, cart_id: ObjectId) -> None:
    """Order insert, cart complete, reservations committed (stock stays sold)."""
    with monitor.action("checkout"):
        cart = db.carts.find_one({"_id": cart_id, "state": ACTIVE}, {"products": 1})
        if cart is None or not cart["products"]:
            raise CartInactive(f"cart {cart_id} is not active or empty")
        now = _now()
        total = sum(
            (
                line["price"].to_decimal() * line["quantity"]
                for line in cart["products"]
            ),
            Decimal(0),
        )
        # The unique index on cartId makes a repeated checkout fail here
        # instead of creating a second order.
        db.orders.insert_one(
            {
                "cartId": cart_id,
                "createdOn": now,
                "total": Decimal128(total),
                "shipping": {"name": "Joe Dow", "address": "Some street 1"},
                "payment": {"method": "visa", "transaction_id": str(cart_id)},
                "products": cart["products"],
            }
        )
        done = db.carts.update_one(
            {"_id": cart_id, "state": ACTIVE},
            {"$set": {"state": COMPLETE, "modifiedOn": now}},
        )
        if done.modified_count == 0:
            raise CartInactive(f"cart {cart_id} left the active state")
        db.inventories.update_many(
            {"reservations._id": cart_id},
            {"$pull": {"reservations": {"_id": cart_id}}},
        )


# --- Cart: flows and checks -----------------------------------------------


def cart_flow(ctx, rng) -> Outcome:
    """Create a cart, add the items concurrently, check out what was reserved."""
    p = ctx.run.params
    db = ctx.db
    cart_id = ObjectId()
    create_cart(db, cart_id)
    picks = rng.sample(range(p.hot or p.products), p.items)
    reserved = ctx.parallel(
        [partial(add_to_cart, db, cart_id, product, p.quantity) for product in picks]
    )
    got = sum(1 for r in reserved if r)
    if got == 0:
        return Outcome(kind="sold_out", got="nothing")
    checkout_cart(db, cart_id)
    return Outcome(got=f"{got} of {p.items} items")


def cart_probe(ctx, rng) -> None:
    """Every cart action once, on the probe's own product."""
    product = ctx.run.params.products
    cart_id = ObjectId()
    create_cart(ctx.db, cart_id)
    if not add_to_cart(ctx.db, cart_id, product, 1):
        raise RuntimeError("probe: could not reserve the probe product")
    if not change_quantity(ctx.db, cart_id, product, 2):
        raise RuntimeError("probe: could not change the probe line's quantity")
    checkout_cart(ctx.db, cart_id)


def cart_check(db, run) -> Check:
    """Per product: stock + reserved + sold == initial, and stock >= 0."""
    p = run.params
    sold = Counter()
    for row in db.orders.aggregate(
        [
            {"$unwind": "$products"},
            {"$group": {"_id": "$products._id", "n": {"$sum": "$products.quantity"}}},
        ]
    ):
        sold[row["_id"]] = row["n"]
    oversell = mismatched = negative = 0
    reserved_total = 0
    for inv in db.inventories.find({}, {"quantity": 1, "reservations.quantity": 1}):
        initial = PROBE_STOCK if inv["_id"] == p.products else p.stock
        reserved = sum(r["quantity"] for r in inv["reservations"])
        reserved_total += reserved
        taken = reserved + sold[inv["_id"]]
        oversell += max(0, taken - initial)
        negative += inv["quantity"] < 0
        mismatched += inv["quantity"] + taken != initial
    orders = db.orders.count_documents({})
    complete = db.carts.count_documents({"state": COMPLETE})
    ok = oversell == 0 and mismatched == 0 and negative == 0 and orders == complete
    offered = p.stock * (p.hot or p.products)
    sold_by_load = sum(sold.values()) - sold[p.products]
    lines = (
        f"stock + reserved + sold == initial for {p.products + 1} products: "
        f"{'yes' if mismatched == 0 else f'NO ({mismatched} differ)'}; "
        f"negative stock: {negative}",
        f"units sold to users {sold_by_load:,} of {offered:,} on offer, still "
        f"reserved {reserved_total:,}; orders {orders:,} = completed carts "
        f"{complete:,} (the probe's one included)",
    )
    figures = {"sold": sold_by_load, "offered": offered, "reserved": reserved_total}
    return Check(ok=ok, oversell=oversell, lines=lines, figures=figures)


# --- Theater: data ---------------------------------------------------------


def theater_setup(db, run) -> str:
    """Theaters of rows x seats and their sessions (seat maps of zeros)."""
    p = run.params
    db.carts.create_index([("state", ASCENDING)])
    db.sessions.create_index([("reservations._id", ASCENDING)])
    db.receipts.create_index([("cartId", ASCENDING)], unique=True)
    seats = p.rows * p.seats_per_row
    db.theaters.insert_many(
        [
            {
                "_id": t,
                "name": f"Theater {t}",
                "seats": [[0] * p.seats_per_row for _ in range(p.rows)],
                "seatsAvailable": seats,
            }
            for t in range(p.theaters)
        ]
    )
    per_theater = p.sessions_for(run.users)
    # One more session than the load uses: the probe's.
    count = p.theaters * per_theater + 1
    start = datetime(2026, 1, 1, 20, 0, tzinfo=UTC)
    for first in range(0, count, INSERT_BATCH):
        db.sessions.insert_many(
            [
                {
                    "_id": s,
                    "theaterId": s // per_theater if s < count - 1 else 0,
                    "name": f"Play {s}",
                    "start": start,
                    "end": start,
                    "price": Decimal128(p.price),
                    "seatsAvailable": seats,
                    "seats": [[0] * p.seats_per_row for _ in range(p.rows)],
                    "reservations": [],
                }
                for s in range(first, min(first + INSERT_BATCH, count))
            ],
            ordered=False,
        )
    what = (
        f"{p.hot_seats} hot seats in row 0 of 1 session"
        if p.hot_seats
        else f"{p.tickets} adjacent seats per user, none shared"
    )
    return (
        f"{_count(p.theaters, 'theater')} of {p.rows}x{p.seats_per_row} seats, "
        f"{_count(per_theater, 'session')} each; {what}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def seats_for(run, user: int) -> tuple[int, list[list[int]]]:
    """The session and block of adjacent seats that are user ``user``'s alone."""
    p = run.params
    sessions = p.theaters * p.sessions_for(run.users)
    block = user // sessions
    per_row = p.seats_per_row // p.tickets
    row, first = block // per_row, (block % per_row) * p.tickets
    return user % sessions, [[row, first + k] for k in range(p.tickets)]


# --- Theater: operations ---------------------------------------------------


def create_theater_cart(db, cart_id: ObjectId) -> None:
    with monitor.action("create_cart"):
        now = _now()
        db.carts.insert_one(
            {
                "_id": cart_id,
                "state": ACTIVE,
                "total": Decimal128("0"),
                "reservations": [],
                "createdOn": now,
                "modifiedOn": now,
            }
        )


def view_seats(db, session_id: int) -> list[list[int]]:
    with monitor.action("view_seats"):
        session = db.sessions.find_one({"_id": session_id}, {"seats": 1})
        return session["seats"]


def hold_seats(db, cart_id: ObjectId, session_id: int, seats: list[list[int]]) -> bool:
    """Hold every seat or none; False when one of them is taken.

    One update checks each seat is free and takes them all, *decrementing*
    ``seatsAvailable`` (the seed's +n is its bug), and returns the session's
    price so the cart line is priced by the database.
    """
    with monitor.action("hold_seats"):
        paths = [f"seats.{row}.{seat}" for row, seat in seats]
        now = _now()
        session = db.sessions.find_one_and_update(
            {"_id": session_id, "$and": [{path: 0} for path in paths]},
            {
                "$set": dict.fromkeys(paths, 1),
                "$inc": {"seatsAvailable": -len(seats)},
                "$push": {
                    "reservations": {"_id": cart_id, "seats": seats, "createdOn": now}
                },
            },
            projection={"price": 1},
        )
        if session is None:
            return False
        price = session["price"].to_decimal()
        total = price * len(seats)
        recorded = db.carts.update_one(
            {"_id": cart_id, "state": ACTIVE},
            {
                "$push": {
                    "reservations": {
                        "sessionId": session_id,
                        "seats": seats,
                        "price": Decimal128(price),
                        "total": Decimal128(total),
                    }
                },
                "$inc": {"total": Decimal128(total)},
                "$set": {"modifiedOn": now},
            },
        )
        if recorded.modified_count == 0:
            release_seats(db, cart_id, session_id, seats)
            raise CartInactive(f"cart {cart_id} is not active")
        return True


def release_seats(db, cart_id, session_id, seats) -> None:
    """Free the seats and give them back to ``seatsAvailable`` (the seed forgot)."""
    db.sessions.update_one(
        {"_id": session_id, "reservations": {"$elemMatch": {"_id": cart_id}}},
        {
            "$set": {f"seats.{row}.{seat}": 0 for row, seat in seats},
            "$inc": {"seatsAvailable": len(seats)},
            "$pull": {"reservations": {"_id": cart_id}},
        },
    )


def checkout_theater(db, cart_id: ObjectId) -> None:
    """Receipt insert, holds committed (seats stay taken), cart complete."""
    with monitor.action("checkout"):
        cart = db.carts.find_one(
            {"_id": cart_id, "state": ACTIVE}, {"reservations": 1, "total": 1}
        )
        if cart is None or not cart["reservations"]:
            raise CartInactive(f"cart {cart_id} is not active or empty")
        now = _now()
        db.receipts.insert_one(
            {
                "cartId": cart_id,
                "createdOn": now,
                "reservations": cart["reservations"],
                "total": cart["total"],
            }
        )
        db.sessions.update_many(
            {"reservations._id": cart_id},
            {"$pull": {"reservations": {"_id": cart_id}}},
        )
        done = db.carts.update_one(
            {"_id": cart_id, "state": ACTIVE},
            {"$set": {"state": COMPLETE, "modifiedOn": now}},
        )
        if done.modified_count == 0:
            raise CartInactive(f"cart {cart_id} left the active state")


# --- Theater: flows and checks ---------------------------------------------


def theater_flow(ctx, rng) -> Outcome:
    """Cart, one hold of this user's own seats, checkout."""
    db = ctx.db
    cart_id = ObjectId()
    create_theater_cart(db, cart_id)
    session_id, seats = seats_for(ctx.run, ctx.user)
    if not hold_seats(db, cart_id, session_id, seats):
        return Outcome(kind="seats_taken", got="nothing")
    checkout_theater(db, cart_id)
    return Outcome(got=f"{len(seats)} seats")


def free_blocks(row: list, size: int, *, free=0) -> list[int]:
    """First seats of every run of ``size`` adjacent free seats in ``row``."""
    return [
        first
        for first in range(len(row) - size + 1)
        if all(state == free for state in row[first : first + size])
    ]


def contended_theater_flow(ctx, rng) -> Outcome:
    """Look at the map, try a free pair of the hot seats; again when beaten."""
    p = ctx.run.params
    db = ctx.db
    cart_id = ObjectId()
    create_theater_cart(db, cart_id)
    for _ in range(p.attempts):
        row = view_seats(db, 0)[0][: p.hot_seats]
        free = free_blocks(row, p.tickets)
        if not free:
            return Outcome(kind="sold_out", got="nothing")
        first = rng.choice(free)
        seats = [[0, first + k] for k in range(p.tickets)]
        if hold_seats(db, cart_id, 0, seats):
            checkout_theater(db, cart_id)
            return Outcome(got=f"{p.tickets} seats")
    return Outcome(kind="seats_taken", got="nothing")


def theater_probe(ctx, rng) -> None:
    """Every theater action once, on the probe's own session (the last one)."""
    p = ctx.run.params
    session_id = p.theaters * p.sessions_for(ctx.run.users)
    cart_id = ObjectId()
    create_theater_cart(ctx.db, cart_id)
    view_seats(ctx.db, session_id)
    seats = [[0, k] for k in range(p.tickets)]
    if not hold_seats(ctx.db, cart_id, session_id, seats):
        raise RuntimeError("probe: could not hold the probe session's seats")
    checkout_theater(ctx.db, cart_id)


def theater_check(db, run) -> Check:
    """Per session: seats marked == seats held + seats sold, none claimed twice."""
    p = run.params
    capacity = p.rows * p.seats_per_row
    sold: dict[int, list[tuple[int, int]]] = {}
    for receipt in db.receipts.find({}, {"reservations": 1}):
        for res in receipt["reservations"]:
            sold.setdefault(res["sessionId"], []).extend(map(tuple, res["seats"]))
    probe_session = p.theaters * p.sessions_for(run.users)
    oversell = mismatched = wrong_count = 0
    held_total = sold_total = 0
    for session in db.sessions.find(
        {}, {"seats": 1, "seatsAvailable": 1, "reservations": 1}
    ):
        marked = {
            (r, c)
            for r, row in enumerate(session["seats"])
            for c, taken in enumerate(row)
            if taken
        }
        held = [tuple(s) for res in session["reservations"] for s in res["seats"]]
        claims = held + sold.get(session["_id"], [])
        if session["_id"] != probe_session:
            held_total += len(held)
            sold_total += len(claims) - len(held)
        # A seat claimed twice, or claimed without being marked taken, is a
        # seat sold to two people.
        oversell += len(claims) - len(set(claims)) + len(set(claims) - marked)
        mismatched += set(claims) != marked
        wrong_count += session["seatsAvailable"] != capacity - len(marked)
    receipts = db.receipts.count_documents({})
    complete = db.carts.count_documents({"state": COMPLETE})
    ok = oversell == 0 and mismatched == 0 and wrong_count == 0 and receipts == complete
    lines = (
        "seats marked == seats held + seats sold in every session: "
        f"{'yes' if mismatched == 0 else f'NO ({mismatched} differ)'}; "
        f"seatsAvailable wrong in {wrong_count}",
        f"seats sold to users {sold_total:,}, still held {held_total:,}; "
        f"receipts {receipts:,} = completed carts {complete:,} (the probe's "
        "one included)",
    )
    offered = p.hot_seats or capacity * probe_session
    figures = {"sold": sold_total, "offered": offered, "reserved": held_total}
    return Check(ok=ok, oversell=oversell, lines=lines, figures=figures)


_CART = Workload(
    setup=cart_setup, user_flow=cart_flow, probe=cart_probe, check=cart_check
)
_THEATER = Workload(
    setup=theater_setup,
    user_flow=theater_flow,
    probe=theater_probe,
    check=theater_check,
)

LEVEL = Level(
    name="raw",
    description="the seed's operation sequence straight with pymongo",
    connect=connect,
    budgets={
        "create_cart": 1,
        "add_to_cart": 3,
        "change_quantity": 3,
        "view_seats": 1,
        "hold_seats": 2,
        "checkout": 4,
    },
    workloads={
        "cart": _CART,
        "cart-contended": _CART,
        "theater": _THEATER,
        "theater-contended": Workload(
            setup=theater_setup,
            user_flow=contended_theater_flow,
            probe=theater_probe,
            check=theater_check,
        ),
    },
)
