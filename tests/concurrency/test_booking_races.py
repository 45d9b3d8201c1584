"""Seat races forced between real processes on one session (DESIGN §3).

Each child is forked, opens a MongoClient of its own to the test's database
(by name, on the same server), proves it can talk to it, then waits at a
Barrier: the parent only creates the session, so the children's requests
leave together and meet in the server. No sleeps: the Barrier forces the race.
A negative control shows the harness does see a race when the code has one.
"""

import multiprocessing
import time
from collections import Counter
from collections.abc import Callable

import pytest
from bson import ObjectId
from django.utils import timezone

from booking import selectors, services
from booking.errors import BookingError, NoAdjacentSeats, SeatsTaken
from booking.services.holds import new_tag, write_intent
from config import mongo
from tests.booking.factories import (
    ZONES,
    holders,
    make_session,
    make_theater,
    seat,
    seat_states,
    sold_to,
    taken,
)

pytestmark = pytest.mark.concurrency

FORK = multiprocessing.get_context("fork")
PROCESSES = 16
ROUNDS = 20


def _child(uri: str, db_name: str, barrier, results, index: int, action) -> None:
    mongo.connect(uri, db=db_name)  # a client of this process's own
    mongo.db().command("ping")  # connected before the start, not during it
    try:
        barrier.wait(timeout=60)
        outcome = ("won", action(index))
    except BookingError as exc:
        outcome = ("refused", type(exc).__name__)
    except Exception as exc:  # reported to the parent, which fails the test
        outcome = ("crashed", repr(exc))
    results.put((index, outcome))


def race(mongo_db, mongo_uri, action: Callable[[int], object], n: int = PROCESSES):
    """Run ``action(i)`` in n processes released together; outcomes by i."""
    barrier = FORK.Barrier(n)
    results = FORK.Queue()
    children = [
        FORK.Process(
            target=_child,
            args=(mongo_uri, mongo_db.name, barrier, results, i, action),
        )
        for i in range(n)
    ]
    for child in children:
        child.start()
    try:
        outcomes = dict(results.get(timeout=120) for _ in children)
    finally:
        for child in children:
            child.join(timeout=60)
    assert [child.exitcode for child in children] == [0] * n
    crashed = {i: o for i, o in outcomes.items() if o[0] == "crashed"}
    assert not crashed, crashed
    return outcomes


def winners(outcomes) -> dict[int, object]:
    return {i: value for i, (kind, value) in outcomes.items() if kind == "won"}


def refusals(outcomes) -> set[str]:
    return {value for kind, value in outcomes.values() if kind == "refused"}


def read(mongo_db, session_id: str) -> dict:
    return mongo_db.sessions.find_one({"_id": ObjectId(session_id)})


def entries_by_cart(session_id: str) -> dict[str, set]:
    carts: dict[str, set] = {}
    for seat_, cart in holders(session_id).items():
        carts.setdefault(cart, set()).add(seat_)
    return carts


def assert_conserved(session_id: str) -> None:
    """Each seat in one state; the counters count them and add up to the
    hall; every tag on a seat is one cart's (booking's own check)."""
    states = seat_states(session_id)
    doc = mongo.db().sessions.find_one({"_id": ObjectId(session_id)})
    by_state = Counter(state for state, _ in states.values())
    assert doc["seatsAvailable"] == by_state["free"]
    assert (doc["held"], doc["sold"]) == (by_state["held"], by_state["sold"])
    assert doc["blocked"] == by_state["blocked"]
    assert doc["seat_count"] == len(states)
    assert selectors.session_invariant_violations() == []


@pytest.fixture
def timings(request):
    """Wall time of each race, printed with -s and kept for the report."""
    started = time.monotonic()
    yield
    elapsed = time.monotonic() - started
    print(f"\n{request.node.name}: {elapsed:.2f}s")


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_sixteen_processes_on_one_seat_leave_exactly_one_holder(
    mongo_db, mongo_uri, round_, timings
):
    session_id = make_session(make_theater())

    outcomes = race(
        mongo_db,
        mongo_uri,
        lambda i: (
            services.seats_hold(
                session_id=session_id, cart_id=f"cart-{i}", seats=[(2, 4)]
            ).positions
        ),
    )

    won = winners(outcomes)
    assert len(won) == 1
    assert refusals(outcomes) == {"SeatsTaken"}
    (winner,) = won
    assert entries_by_cart(session_id) == {f"cart-{winner}": {(2, 4)}}
    assert_conserved(session_id)


def long_row_hall() -> str:
    """One row of 18 seats (and a second row nobody asks for)."""
    return make_theater(
        "Long Row",
        layout=[[seat("A", n) for n in range(1, 19)], [seat("B", 1)]],
        zones=ZONES,
    )


@pytest.mark.parametrize("round_", range(5))
def test_overlapping_three_seat_blocks_are_all_or_nothing_and_never_shared(
    mongo_db, mongo_uri, round_, timings
):
    session_id = make_session(long_row_hall())
    # Process i wants seats i, i+1, i+2: each block overlaps four others.
    blocks = {i: {(0, i), (0, i + 1), (0, i + 2)} for i in range(PROCESSES)}

    outcomes = race(
        mongo_db,
        mongo_uri,
        lambda i: (
            services.seats_hold(
                session_id=session_id, cart_id=f"cart-{i}", seats=sorted(blocks[i])
            ).positions
        ),
    )

    won = winners(outcomes)
    assert 1 <= len(won) <= 6
    assert refusals(outcomes) <= {"SeatsTaken"}
    carts = entries_by_cart(session_id)
    # Every winner holds exactly its three seats; no loser holds any.
    assert carts == {f"cart-{i}": blocks[i] for i in won}
    assert {i: set(seats) for i, seats in won.items()} == {i: blocks[i] for i in won}
    held = [s for seats in carts.values() for s in seats]
    assert len(held) == len(set(held)) == 3 * len(won)
    assert_conserved(session_id)


def small_zone_hall() -> str:
    """A "circle" of two rows of six, in front of a stalls row."""
    return make_theater(
        "Small Circle",
        layout=[
            [seat("A", n, "circle") for n in range(1, 7)],
            [seat("B", n, "circle") for n in range(1, 7)],
            [seat("C", n) for n in range(1, 7)],
        ],
        zones=ZONES,
    )


@pytest.mark.parametrize("round_", range(5))
def test_best_available_under_contention_never_returns_another_carts_seat(
    mongo_db, mongo_uri, round_, timings
):
    session_id = make_session(small_zone_hall())

    def action(i: int):
        if i % 4 == 3:  # a quarter of them click seats instead
            return services.seats_hold(
                session_id=session_id, cart_id=f"cart-{i}", seats=[(i % 2, 2)]
            ).positions
        return services.seats_best_available(
            session_id=session_id, cart_id=f"cart-{i}", count=2, zone="circle"
        ).positions

    outcomes = race(mongo_db, mongo_uri, action)

    won = winners(outcomes)
    assert refusals(outcomes) <= {"SeatsTaken", "NoAdjacentSeats"}
    carts = entries_by_cart(session_id)
    # What each process was told it holds is exactly what its cart holds.
    assert carts == {f"cart-{i}": set(seats) for i, seats in won.items()}
    assert all(r < 2 for seats in carts.values() for r, _ in seats)
    assert len(taken(session_id)) <= 12
    assert_conserved(session_id)


def test_checkout_racing_expiry_for_one_cart_ends_sold_or_free_never_both(
    mongo_db, mongo_uri, timings
):
    session_id = make_session(make_theater())
    seats = [(0, 0), (0, 1), (0, 2)]
    services.seats_hold(session_id=session_id, cart_id="cart-1", seats=seats)

    def action(i: int):
        call = services.seats_commit if i % 2 else services.seats_release
        return call.__name__, call(session_id=session_id, cart_id="cart-1").positions

    outcomes = race(mongo_db, mongo_uri, action)

    assert read(mongo_db, session_id)["held"] == 0
    sold = sold_to(session_id, "cart-1")
    assert sold in (set(), set(seats))
    assert taken(session_id) == sold
    # Whoever came first decided; everyone after saw the decision.
    moved = [value for kind, value in outcomes.values() if kind == "won" and value[1]]
    assert len(moved) >= 1
    assert {name for name, _ in moved} == (
        {"seats_commit"} if sold else {"seats_release"}
    )
    assert_conserved(session_id)


# --- Negative control -------------------------------------------------------


def check_then_write_hold(session_id: str, cart_id: str, seat_: tuple, barrier):
    """The mistake the services avoid: read availability, then write blindly
    (both sides written, as the services do, but no rule in the filter)."""
    sessions = mongo.db().sessions
    oid = ObjectId(session_id)
    r, c = seat_
    doc = sessions.find_one({"_id": oid}, {"seats": 1})
    barrier.wait(timeout=60)  # every process has read "free" before any writes
    if doc["seats"][r][c] != 0:
        raise SeatsTaken()
    tag = new_tag()
    write_intent(oid, cart_id, tag, [seat_], timezone.now())
    sessions.update_one(
        {"_id": oid},  # no availability rule in the filter
        {
            "$set": {f"seats.{r}.{c}": tag},
            "$inc": {"seatsAvailable": -1, "held": 1},
        },
    )
    return seat_


@pytest.mark.parametrize("round_", range(3))
def test_negative_control_a_check_then_write_hold_oversells_and_is_caught(
    mongo_db, mongo_uri, round_, timings
):
    session_id = make_session(make_theater())
    read_barrier = FORK.Barrier(PROCESSES)

    outcomes = race(
        mongo_db,
        mongo_uri,
        lambda i: check_then_write_hold(session_id, f"cart-{i}", (2, 4), read_barrier),
    )

    # The harness sees the race: every process "won" the same seat, and
    # all but the last lost it without being told.
    assert len(winners(outcomes)) == PROCESSES
    assert read(mongo_db, session_id)["held"] == PROCESSES
    assert len(entries_by_cart(session_id)) == 1
    violations = selectors.session_invariant_violations()
    assert any(f"held is {PROCESSES}, but 1 seat is held" in v for v in violations)
    assert any("seatsAvailable is" in line for line in violations)
    with pytest.raises(AssertionError):
        assert_conserved(session_id)


def test_no_adjacent_seats_is_the_only_refusal_once_a_zone_is_full(
    mongo_db, mongo_uri, timings
):
    session_id = make_session(small_zone_hall())

    outcomes = race(
        mongo_db,
        mongo_uri,
        lambda i: (
            services.seats_best_available(
                session_id=session_id, cart_id=f"cart-{i}", count=2, zone="circle"
            ).positions
        ),
    )

    # Twelve circle seats make six pairs, whatever the order of arrival.
    assert len(winners(outcomes)) == 6
    assert refusals(outcomes) == {NoAdjacentSeats.__name__}
    assert len(taken(session_id)) == 12
    assert_conserved(session_id)


# --- Blocked seats (staff) ----------------------------------------------------


@pytest.mark.parametrize("round_", range(10))
def test_staff_blocking_and_shoppers_holding_one_seat_leave_exactly_one_winner(
    mongo_db, mongo_uri, round_, timings
):
    session_id = make_session(make_theater())

    def action(i: int):
        if i % 3 == 0:  # two staff members in three processes... a crowd
            return services.seats_block(
                session_id=session_id, seats=[(2, 4)], reason="house", by=f"s{i}"
            ).seats
        return services.seats_hold(
            session_id=session_id, cart_id=f"cart-{i}", seats=[(2, 4)]
        ).positions

    outcomes = race(mongo_db, mongo_uri, action)

    won = winners(outcomes)
    assert len(won) == 1
    assert refusals(outcomes) <= {
        "SeatsTaken",
        "SeatsAlreadyBlocked",
        "SeatsNotBlockable",
    }
    ((winner, _),) = won.items()
    state, cart = seat_states(session_id)[(2, 4)]
    if winner % 3 == 0:
        assert (state, cart) == ("blocked", None)
    else:
        assert (state, cart) == ("held", f"cart-{winner}")
    assert_conserved(session_id)


def test_staff_unblocking_into_a_staff_cart_races_shoppers_and_one_wins(
    mongo_db, mongo_uri, timings
):
    """Unblock + hold would let a shopper in between; a hold ``from_blocked``
    is one update, so a blocked seat goes to staff or stays blocked."""
    session_id = make_session(make_theater())
    services.seats_block(session_id=session_id, seats=[(2, 4)], reason="house", by="s")

    def action(i: int):
        return services.seats_hold(
            session_id=session_id,
            cart_id=f"cart-{i}",
            seats=[(2, 4)],
            from_blocked=i == 0,
        ).positions

    outcomes = race(mongo_db, mongo_uri, action)

    assert list(winners(outcomes)) == [0]
    assert refusals(outcomes) == {"SeatsTaken"}
    assert holders(session_id) == {(2, 4): "cart-0"}
    assert_conserved(session_id)
