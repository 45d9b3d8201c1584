"""Box-office sales between real processes.

* Race: two staff sell the same blocked seat at once while a shopper tries
  to hold it (processes released together by a Barrier): exactly one sale
  wins, the other sale and the shopper are refused, the seat is sold to the
  winner's order, and every invariant holds.
* Crashes: a sale stopped (``os._exit``) at each point between the staff
  hold and the paid order. Then the reconciler and expiry run: the seats go
  back BLOCKED, never FREE (a shopper cannot take them at any moment), the
  unpaid order is canceled, and conservation holds throughout. A crash once
  the counter's charge is recorded finishes as a sale.
"""

import os
from datetime import timedelta

import pytest
from bson import ObjectId

from booking.errors import SeatsTaken
from booking.selectors import session_invariant_violations
from booking.services.blocks import seats_block
from config.errors import DomainError
from shop import faults
from shop.documents import Order
from shop.selectors.invariants import invariant_problems
from shop.services.box_office import box_office_sell
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile
from shop.services.tickets import cart_hold_seats
from tests.booking.factories import SMALL_SEATS, seat_states
from tests.concurrency.cart_processes import run_together, run_until_crash
from tests.concurrency.test_crash_recovery import MUCH_LATER, SOON, T0
from tests.shop.factories import make_show

pytestmark = pytest.mark.concurrency

ROUNDS = int(os.environ.get("MARQUEE_RACE_ROUNDS", "20")) // 4 or 1
HOUSE = [(1, 1), (1, 2)]


def house_show(hall: str = "Test Hall") -> str:
    show = make_show(hall=hall)
    seats_block(session_id=show, seats=HOUSE, reason="House seats", by="ann")
    return show


def sell(show, seats, who):
    return box_office_sell(
        session_id=show,
        seats=seats,
        name=f"Customer of {who}",
        email=f"{who}@example.com",
        by=f"staff:{who}",
        now=T0,
    )


# --- work done in the children -----------------------------------------------------


def counter_or_shopper(role, show, seat, who):
    try:
        if role == "sell":
            return sell(show, [seat], who).number
        cart_hold_seats(owner=f"anon:{who}", session_id=show, seats=(seat,), now=T0)
        return "held"
    except DomainError as exc:
        return type(exc).__name__


def test_two_sales_and_a_shopper_on_one_blocked_seat_exactly_one_sale_wins(
    mongo_uri, mongo_db
):
    for round_ in range(ROUNDS):
        show = house_show(f"Hall {round_}")
        seat = HOUSE[round_ % 2]
        work = [
            ("sell", show, seat, f"clerk{round_}a"),
            ("sell", show, seat, f"clerk{round_}b"),
            ("hold", show, seat, f"shopper{round_}"),
        ]

        results = run_together(
            counter_or_shopper, work, uri=mongo_uri, db_name=mongo_db.name
        )

        sales = [r for r in results[:2] if r.startswith("MQ-")]
        assert len(sales) == 1, (round_, results)
        assert sorted(results[:2]) == sorted([sales[0], "NotHouseSeats"]), results
        assert results[2] == "SeatsTaken", (round_, results)
        order = Order.objects.get(number=sales[0])
        assert order.state == "paid" and len(order.codes) == 1
        assert seat_states(show)[seat] == ("sold", order.cart_id), round_
        doc = mongo_db.sessions.find_one({"_id": ObjectId(show)})
        assert (doc["sold"], doc["blocked"], doc["held"]) == (1, 1, 0), round_
        assert session_invariant_violations() == [], round_
        assert invariant_problems() == [], round_


# --- crashes -----------------------------------------------------------------------


def crash_at(point, show):
    faults.arm(point, "exit")
    sell(show, HOUSE, "crashed")


# point: (seats sold in the end, the order's state in the end or None)
CRASHES = {
    "tickets.after_hold": (0, None),  # seats held, no cart yet
    "new_cart.after_claim": (0, None),  # claimed, the cart not yet made
    "checkout.after_pending": (0, None),  # the cart locked for checkout
    "checkout.before_charge": (0, None),  # locked and priced, not charged
    "checkout.after_charge": (2, "paid"),  # the counter took the money
}


def assert_never_free(show) -> None:
    """The house seats are blocked, held by the staff cart, or (once paid)
    sold; never FREE, so no shopper can take them."""
    states = seat_states(show)
    assert all(states[s][0] in {"blocked", "held", "sold"} for s in HOUSE), states
    for seat in HOUSE:
        with pytest.raises(SeatsTaken):
            cart_hold_seats(owner="anon:eager", session_id=show, seats=(seat,), now=T0)
    assert session_invariant_violations() == []


@pytest.mark.parametrize("point", sorted(CRASHES))
def test_a_sale_stopped_before_it_is_paid_gives_the_seats_back_blocked(
    point, mongo_uri, mongo_db
):
    sold, order_state = CRASHES[point]
    show = house_show()

    code = run_until_crash(
        crash_at, (point, show), uri=mongo_uri, db_name=mongo_db.name
    )

    assert code == faults.EXIT_CODE, f"{point} was not reached (exit {code})"
    assert_never_free(show)
    for moment in (SOON, MUCH_LATER + timedelta(hours=1)):
        reservations_reconcile(now=moment)
        carts_expire(now=moment)
        assert invariant_problems() == [], moment
        assert_never_free(show)
    doc = mongo_db.sessions.find_one({"_id": ObjectId(show)})
    assert (doc["held"], doc["sold"], doc["blocked"]) == (0, sold, 2 - sold)
    assert doc["seatsAvailable"] == SMALL_SEATS - 2
    expected = [("sold" if sold else "blocked")] * 2
    assert [seat_states(show)[s][0] for s in HOUSE] == expected
    found = mongo_db.orders.find_one({"email": "crashed@example.com"})
    assert (found and found["state"]) == order_state
    if sold:
        assert found["payment_method"] == "box_office"
    assert (
        mongo_db.carts.count_documents({"state": {"$in": ["active", "pending"]}}) == 0
    )
