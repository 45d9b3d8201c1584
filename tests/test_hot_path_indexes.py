"""Every query on a hot path is served by an index (issue: data that only grows).

A populated database (a few hundred carts, holds and orders, and a pile of
ended carts), then each hot-path action runs through the real services
while a command listener records what they send. Each recorded query shape
(find, update, delete, findAndModify, aggregate, count, distinct) is then
``explain``ed on the same database, and the test fails on a collection
scan. On the Rust server ``explain`` reports an index scan for a top-level
``$or`` and for a findAndModify that the server in fact answers in time
proportional to the collection (config/compat.py), so a top-level ``$or``
on the collections that grow (carts, orders) fails the test as well, but
for one measured flat (``FLAT_OR``, ``bench/or_bench.py``), and so does a
findAndModify anywhere but on a collection of a fixed handful of documents
(``FIXED_SIZE``).

To cover more actions, append to ACTIONS: ``(name, function(world) ->
None)``; the shapes they send are checked the same way. The seat actions
run on one performance of a 200-seat hall whose seats a few dozen carts
held, bought or let lapse.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from pymongo import monitoring

from accounts.throttle import hit
from booking.selectors import seat_map
from booking.services.blocks import seats_block, seats_unblock
from booking.services.holds import seat_holds_settle
from catalog.documents import hold_id
from catalog.selectors.stock import stock_at_stores
from catalog.services import counters
from config import mongo
from shop.selectors.carts import cart_units, cart_view, expired_cart
from shop.selectors.orders import order_by_link, order_of_owner, orders_of_owner
from shop.selectors.tickets import session_tickets, ticket_figures
from shop.services.admissions import ticket_admission_undo, ticket_admit
from shop.services.box_office import box_office_sell
from shop.services.carts import (
    cart_add_item,
    cart_clear,
    cart_extend_hold,
    cart_merge,
    cart_remove_item,
    cart_set_quantity,
)
from shop.services.checkout import cart_checkout, checkouts_recover
from shop.services.cleanup import carts_purge
from shop.services.expiry import cart_expire, cart_release, carts_expire
from shop.services.order_owners import orders_attach, orders_attach_by_email
from shop.services.orders import order_cancel, orders_cancel_recover
from shop.services.reconcile import reservations_reconcile
from shop.services.settle import orders_settle
from shop.services.tickets import (
    cart_hold_best_available,
    cart_hold_seats,
    cart_release_seats,
)
from staff.selectors.carts import live_carts
from staff.selectors.dashboard import dashboard
from tests.booking.factories import seat
from tests.shop.factories import (
    SHIPPING,
    card,
    make_product,
    make_show,
    make_store,
    stock_store,
)

T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
SHAPED = {"find", "update", "delete", "findAndModify", "aggregate", "count", "distinct"}
# Collections whose size grows with the shop's history (seat_holds keeps
# every sold seat's entry).
GROWING = {"carts", "orders", "seat_holds"}
# Collections of a fixed handful of documents: the only ones a hot path may
# send a findAndModify to. On the Rust server its cost grows with the
# collection, even on ``_id`` alone (config/compat.py); the sequences are
# one document per sequence.
FIXED_SIZE = {"sequences"}
ROWS, COLS = 10, 20
# Top-level $or shapes that bench/or_bench.py measures flat on the Rust
# server, by their filter's fields: the server plans each branch on its own,
# and these branches match only carts past their hold or expiring (few: the
# expiry job runs every minute), not every live cart. The cart page's count
# of units held by carts past their hold (shop.selectors.carts).
FLAT_OR = [{"items.sku", "$or"}]
# Never part of a query shape.
_ENVELOPE = {
    "lsid",
    "$db",
    "$clusterTime",
    "txnNumber",
    "writeConcern",
    "readConcern",
    "$readPreference",
    "ordered",
    "bypassDocumentValidation",
}


class Recorder(monitoring.CommandListener):
    def __init__(self):
        self.on = False
        self.commands: list[tuple[str, dict]] = []

    def started(self, event):
        if self.on and event.command_name in SHAPED:
            command = {k: v for k, v in event.command.items() if k not in _ENVELOPE}
            self.commands.append((self.action, command))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


# --- the world and the actions ------------------------------------------------


class World:
    """What the actions share: a clock and shoppers numbered as they come."""

    def __init__(self):
        self.now = T0
        self.count = 0
        self.show = None
        self.next_seat = 0
        self.stale = []  # seats held long ago by carts that never came back

    def shopper(self) -> str:
        self.count += 1
        return f"anon:hot{self.count}"

    def cart(self, sku="HOT-1", quantity=1):
        owner = self.shopper()
        cart = cart_add_item(owner=owner, sku=sku, quantity=quantity, now=self.now)
        return owner, cart.cart_id

    def seats(self, n=2) -> tuple:
        """The next ``n`` seats no action has taken yet."""
        first, self.next_seat = self.next_seat, self.next_seat + n
        return tuple(divmod(i, COLS) for i in range(first, self.next_seat))

    def seat_cart(self, owner=None, n=2):
        owner = owner or self.shopper()
        held = cart_hold_seats(
            owner=owner, session_id=self.show, seats=self.seats(n), now=self.now
        )
        return owner, held.cart_id


def pay(world, owner, cart_id):
    return cart_checkout(
        owner=owner,
        cart_id=cart_id,
        email="hot@example.com",
        shipping=SHIPPING,
        card=card(),
        now=world.now,
    )


def populate(world: World) -> None:
    """A few hundred carts: live, paid, expired, held by carts long gone."""
    for i in range(8):
        make_product(sku=f"HOT-{i}", stock=10_000)
    make_product(sku="LAST", stock=3)
    make_product(sku="FEW", stock=6)
    # Click & collect: two stores, one with HOT-1, neither with LAST.
    make_store("hot-a", "Hot A", lng=-1.54, lat=53.80)
    make_store("hot-b", "Hot B", lng=-1.08, lat=53.96)
    stock_store("HOT-1", "hot-a", quantity=10_000, price="9.00")
    stock_store("LAST", "hot-b", quantity=0)
    world.now = T0 - timedelta(hours=2)
    for _ in range(3):  # stale holders of the last units
        world.cart(sku="LAST")
    for i in range(150):
        owner, cart_id = world.cart(sku=f"HOT-{i % 8}", quantity=1 + i % 3)
        if i % 3 == 0:
            pay(world, owner, cart_id)
        elif i % 3 == 1:
            cart_expire(cart_id=cart_id, now=world.now + timedelta(hours=1))
    for i in range(20):  # takes no cart recorded (crashed adds)
        sku = f"HOT-{i % 8}"
        counters.take(sku, hold_id(sku, f"ghost-{i}"), 1, world.now)
    # A performance: seats bought, let lapse, and held by carts gone quiet.
    world.show = make_show(
        layout=[[seat(chr(65 + r), c + 1) for c in range(COLS)] for r in range(ROWS)]
    )
    for i in range(45):
        owner, cart_id = world.seat_cart()
        if i % 3 == 0:
            pay(world, owner, cart_id)
        elif i % 3 == 1:
            cart_expire(cart_id=cart_id, now=world.now + timedelta(hours=1))
    world.stale = list(world.seats(2))
    cart_hold_seats(
        owner=world.shopper(), session_id=world.show, seats=world.stale, now=world.now
    )
    world.now = T0
    for i in range(150):
        world.cart(sku=f"HOT-{i % 8}")
    for _ in range(15):
        world.seat_cart()
    # Ended carts long past the retention, in bulk (their shape, not a service).
    mongo.db().carts.insert_many(
        {
            "_id": f"old-{i}",
            "owner": f"anon:old{i}",
            "state": "expired",
            "items": [],
            "tickets": [],
            "created_at": T0 - timedelta(days=60),
            "modified_at": T0 - timedelta(days=60),
            "expires_at": T0 - timedelta(days=60),
            "ended_at": T0 - timedelta(days=60),
        }
        for i in range(600)
    )


def add(world):
    world.cart()


def add_more_of_a_line(world):
    owner, _ = world.cart()
    cart_add_item(owner=owner, sku="HOT-1", quantity=1, now=world.now)


def change(world):
    owner, _ = world.cart(quantity=2)
    cart_set_quantity(owner=owner, sku="HOT-1", quantity=4, now=world.now)
    cart_set_quantity(owner=owner, sku="HOT-1", quantity=1, now=world.now)


def remove(world):
    owner, _ = world.cart()
    cart_remove_item(owner=owner, sku="HOT-1", now=world.now)


def sold_out_add(world):
    """Short of units: the stale holders of the SKU are expired first."""
    world.cart(sku="LAST", quantity=2)


def checkout(world):
    pay(world, *world.cart(quantity=2))


def login(world):
    anonymous, _ = world.cart()
    account = world.shopper()
    cart_add_item(owner=account, sku="HOT-2", quantity=1, now=world.now)
    cart_merge(from_owner=anonymous, to_owner=account, now=world.now)


def clear(world):
    owner, _ = world.cart()
    cart_add_item(owner=owner, sku="HOT-2", quantity=1, now=world.now)
    cart_clear(owner=owner, now=world.now)


def extend_hold(world):
    owner, _ = world.cart()
    cart_extend_hold(owner=owner, now=world.now)


def orders_follow_login(world):
    """At login: the browser's recent orders, then (once the address is
    proven) every order placed with the account's email."""
    anonymous, cart_id = world.cart()
    pay(world, anonymous, cart_id)
    account = world.shopper()
    orders_attach(from_owner=anonymous, to_owner=account, now=world.now)
    orders_attach_by_email(email="Hot@Example.com", to_owner=account)


def release(world):
    _, cart_id = world.cart()
    cart_release(cart_id=cart_id, now=world.now)


def expiry_job(world):
    carts_expire(now=world.now + timedelta(minutes=45))


def reconcile_job(world):
    reservations_reconcile(now=world.now + timedelta(minutes=10))


def cleanup_job(world):
    carts_purge(now=world.now + timedelta(days=1))


def collect_add(world):
    owner = world.shopper()
    cart_add_item(owner=owner, sku="HOT-1", store_id="hot-a", quantity=1, now=world.now)


def hold_seats(world):
    world.seat_cart()


def hold_more_seats(world):
    owner, _ = world.seat_cart()
    world.seat_cart(owner=owner)


def hold_best_available(world):
    cart_hold_best_available(
        owner=world.shopper(), session_id=world.show, count=2, now=world.now
    )


def seats_of_a_lapsed_hold(world):
    """Seats a quiet cart held past its time: its hold is expired first."""
    cart_hold_seats(
        owner=world.shopper(), session_id=world.show, seats=world.stale, now=world.now
    )


def release_seats(world):
    owner, _ = world.seat_cart()
    cart_release_seats(owner=owner, session_id=world.show, now=world.now)


def seat_map_of_a_cart(world):
    _, cart_id = world.seat_cart()
    seat_map(session_id=world.show, cart_id=cart_id)
    seat_map(session_id=world.show)


def ticket_checkout(world):
    pay(world, *world.seat_cart())


def cancel(world):
    """A shopper's order canceled: refunded, its units back on sale."""
    order = pay(world, *world.cart(quantity=2))
    order_cancel(number=order.number, staff=True, now=world.now)


def cancel_tickets(world):
    order = pay(world, *world.seat_cart())
    order_cancel(number=order.number, staff=True, now=world.now)


def seat_holds_job(world):
    # Seat holds are stamped by the server's clock, not the shop's.
    now = timezone.now()
    seat_holds_settle(before=now + timedelta(minutes=10), since=now - timedelta(days=1))


def check_in(world):
    """At the door: a ticket scanned, the scan undone, scanned again."""
    order = pay(world, *world.seat_cart())
    code = next(line.code for line in order.lines if line.code)
    ticket_admit(code=code, session_id=world.show, by="door", now=world.now)
    ticket_admission_undo(code=code, session_id=world.show)
    ticket_admit(code=code, session_id=world.show, by="door", now=world.now)


def box_office_sale(world):
    """House seats blocked, one sold at the counter, one given back."""
    seats = world.seats(2)
    seats_block(session_id=world.show, seats=seats, reason="House", by="staff:hot")
    box_office_sell(
        session_id=world.show,
        seats=seats[:1],
        name="A Customer",
        email="counter@example.com",
        by="staff:hot",
        now=world.now,
    )
    seats_unblock(session_id=world.show, seats=seats[1:], by="staff:hot")


def checkouts_job(world):
    checkouts_recover(now=world.now + timedelta(minutes=10))


def cancels_job(world):
    orders_cancel_recover(now=world.now + timedelta(minutes=10))


def settle_job(world):
    orders_settle(now=timezone.now() + timedelta(minutes=10))


def shopper_pages(world):
    """What a shopper's pages read: the cart (with a line of a SKU running
    low, which asks how many units carts past their hold keep) and its
    count, the cart that ran out, the account's orders, one by number and
    one by its link."""
    owner, cart_id = world.cart(sku="FEW")
    cart_view(owner=owner, now=world.now)
    order = pay(world, owner, cart_id)
    cart_units(owner=owner, now=world.now)
    expired_cart(owner=owner, now=world.now)
    orders_of_owner(owner=owner)
    order_of_owner(owner=owner, number=order.number)
    order_by_link(number=order.number, token=order.token)


def door_pages(world):
    """What the box office and the door read of a performance: its
    figures and every ticket sold for it."""
    ticket_figures(session_ids=[world.show])
    session_tickets(session_id=world.show)


def staff_during_a_sale(world):
    """What staff watch during a sale: the dashboard's live figures and
    checks, the live carts soonest to end."""
    dashboard(now=world.now)
    live_carts(now=world.now)


def throttled_post(world):
    """What every add and every seat hold counts before its view runs
    (``accounts.throttle``): its address's window and its session's, one
    of them new, the other under its limit, and one at its limit."""
    for key in ("ip:203.0.113.7", "session:hot-path", "ip:203.0.113.7"):
        hit(key, limit=2, window=60, now=world.now)
    hit("ip:203.0.113.7", limit=2, window=60, now=world.now)


def stores_with_a_sku(world):
    """What the item page reads for a store: each store's units of a SKU
    (its stock locations; the ``$geoNear`` over the stores that follows is
    the stores' own index)."""
    stock_at_stores(sku="HOT-1")
    stock_at_stores(sku="LAST")


ACTIONS = [
    ("throttled post", throttled_post),
    ("collect add", collect_add),
    ("stores with a SKU", stores_with_a_sku),
    ("add", add),
    ("add more of a line", add_more_of_a_line),
    ("change", change),
    ("remove", remove),
    ("sold-out add", sold_out_add),
    ("checkout", checkout),
    ("login", login),
    ("clear", clear),
    ("extend hold", extend_hold),
    ("orders follow login", orders_follow_login),
    ("release", release),
    ("expiry", expiry_job),
    ("reconcile", reconcile_job),
    ("cleanup", cleanup_job),
    ("hold seats", hold_seats),
    ("hold more seats", hold_more_seats),
    ("seats of a lapsed hold", seats_of_a_lapsed_hold),
    ("release seats", release_seats),
    ("seat map", seat_map_of_a_cart),
    ("ticket checkout", ticket_checkout),
    ("cancel", cancel),
    ("cancel tickets", cancel_tickets),
    ("seat holds settle", seat_holds_job),
    ("check-in", check_in),
    ("shopper pages", shopper_pages),
    ("door pages", door_pages),
    ("staff during a sale", staff_during_a_sale),
    ("box office sale", box_office_sale),
    ("checkouts job", checkouts_job),
    ("cancels job", cancels_job),
    ("settle job", settle_job),
    # Last: the best seats are wherever the hall's ranking puts them.
    ("hold best available", hold_best_available),
]


# --- explain --------------------------------------------------------------------


def explainable(command_name: str, command: dict) -> list[dict]:
    """The command as one or more explainable single statements."""
    if command_name == "update":
        return [
            {"update": command["update"], "updates": [u]} for u in command["updates"]
        ]
    if command_name == "delete":
        return [
            {"delete": command["delete"], "deletes": [d]} for d in command["deletes"]
        ]
    return [command]


def shape_of(value):
    """The query's shape: its fields and operators, every value a ``?``."""
    if isinstance(value, dict):
        return {k: shape_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape_of(v) for v in value[:1]]
    return "?"


def stages(plan) -> list[str]:
    found = []
    if isinstance(plan, dict):
        if "stage" in plan:
            found.append(plan["stage"])
        for value in plan.values():
            found.extend(stages(value))
    elif isinstance(plan, list):
        for value in plan:
            found.extend(stages(value))
    return found


def query_of(command: dict) -> dict:
    for key in ("filter", "query", "q"):
        if isinstance(command.get(key), dict):
            return command[key]
    if "updates" in command:
        return command["updates"][0]["q"]
    if "deletes" in command:
        return command["deletes"][0]["q"]
    pipeline = command.get("pipeline") or [{}]
    return pipeline[0].get("$match", {})


def collection_of(command: dict) -> str:
    return next(iter(command.values()))


def problems_of(action: str, command: dict, plan: dict) -> list[str]:
    name, where = next(iter(command)), collection_of(command)
    said = []
    if "COLLSCAN" in stages(plan.get("queryPlanner", {}).get("winningPlan")):
        said.append("collection scan")
    query_fields = set(query_of(command))
    if where in GROWING and "$or" in query_fields and query_fields not in FLAT_OR:
        said.append("top-level $or on a growing collection")
    if name == "findAndModify" and where not in FIXED_SIZE:
        said.append("findAndModify on a collection that can grow")
    query = shape_of(query_of(command))
    return [f"{action}: {name} {where} {query}: {s}" for s in said]


@pytest.fixture
def recorder(listen):
    """The test's database through a client that records every command."""
    return listen(Recorder())


def test_every_hot_path_query_is_served_by_an_index(recorder, mongo_db):
    world = World()
    populate(world)
    assert mongo_db.carts.count_documents({}) > 900
    assert mongo_db.inventories.count_documents({"takes.0": {"$exists": True}}) >= 8
    assert mongo_db.orders.count_documents({}) >= 50
    assert mongo_db.seat_holds.count_documents({}) > 40

    recorder.on = True
    for action, run in ACTIONS:
        recorder.action = action
        run(world)
    recorder.on = False

    seen, problems = set(), []
    for action, command in recorder.commands:
        for statement in explainable(next(iter(command)), command):
            shape = (action, repr(shape_of(statement)))
            if shape in seen:
                continue
            seen.add(shape)
            plan = mongo_db.command("explain", statement, verbosity="queryPlanner")
            problems.extend(problems_of(action, statement, plan))
    assert {action for action, _ in recorder.commands} == {a for a, _ in ACTIONS}
    assert len(seen) > 40  # the actions really ran their queries
    assert problems == [], "\n".join(problems)

    # The pruning reads one session's documents through the index that
    # starts with the session, not the window of every session's ones.
    (per_session, *_) = [
        command
        for action, command in recorder.commands
        if action == "seat holds settle" and "session_id" in command.get("filter", {})
    ]
    plan = mongo_db.command("explain", per_session, verbosity="queryPlanner")
    assert "session_id" in index_keys(plan["queryPlanner"]["winningPlan"])[:1]


def index_keys(plan) -> list[str]:
    """The fields of the first index the plan scans."""
    if isinstance(plan, dict):
        if plan.get("stage") == "IXSCAN":
            return list(plan["keyPattern"])
        plan = list(plan.values())
    if isinstance(plan, list):
        for part in plan:
            if found := index_keys(part):
                return found
    return []
