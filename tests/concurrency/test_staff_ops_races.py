"""Forced races of the back office's operations, with real processes
released together by a Barrier (tests.concurrency.cart_processes):

* scanners admitting one ticket at once: exactly one admits;
* a scan racing the ticket's refund: admitted and then refunded, or refused
  as refunded, never both sides lost;
* receipts and damaged-stock adjustments racing shoppers' adds: free stock
  never goes negative and ``free + held + sold == received`` holds;
* one staff form's receipt sent by many processes at once (its request
  key): received exactly once.
"""

import os
from datetime import UTC, datetime

import pytest

from catalog.errors import AlreadyRecorded, FreeStockShort, OutOfStock
from catalog.selectors.stock import stock_level
from catalog.services.stock import stock_correct, stock_restock
from config.errors import DomainError
from shop.documents import Order
from shop.selectors.invariants import invariant_problems
from shop.selectors.tickets import ticket_figures
from shop.services.admissions import ticket_admit
from shop.services.carts import cart_add_item
from shop.services.orders import order_cancel
from tests.shop.factories import make_product, make_show
from tests.staff.conftest import pay
from tests.stock import stock_problems

pytestmark = pytest.mark.concurrency

ROUNDS = int(os.environ.get("MARQUEE_RACE_ROUNDS", "20")) // 4 or 1
SCANNERS = 8
T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


# --- work done in the children -----------------------------------------------------


def scan(code, session_id, who):
    try:
        return ticket_admit(code=code, session_id=session_id, by=who).admitted_by
    except DomainError as exc:
        return type(exc).__name__


def refund(number):
    return order_cancel(number=number, staff=True).state


def door(role, *args):
    return {"scan": scan, "refund": refund}[role](*args)


def add_one(owner, sku):
    try:
        cart_add_item(owner=owner, sku=sku, quantity=1, now=T0)
        return "added"
    except OutOfStock:
        return "out"


def receive(sku, units):
    stock_restock(sku=sku, quantity=units, note="race")
    return "received"


def receive_keyed(sku, units, key):
    try:
        return stock_restock(sku=sku, quantity=units, note="race", key=key)
    except AlreadyRecorded as repeat:
        return ("repeat", repeat.seq, repeat.same)


def write_off(sku, units):
    try:
        stock_correct(sku=sku, delta=-units, kind="damaged", note="race")
        return "written off"
    except FreeStockShort:
        return "refused"


def stockroom(role, *args):
    return {"add": add_one, "receive": receive, "write_off": write_off}[role](*args)


# --- the races ---------------------------------------------------------------------


def test_eight_scanners_on_one_ticket_admit_it_exactly_once(race, mongo_db):
    show = make_show()
    for round_ in range(ROUNDS):
        order = pay(f"anon:door{round_}", session=show, seats=[(2, round_ % 8)])
        code = order.codes[0]

        results = race(scan, [(code, show, f"scanner{i}") for i in range(SCANNERS)])

        winners = [r for r in results if r.startswith("scanner")]
        assert len(winners) == 1, (round_, results)
        assert results.count("TicketAlreadyAdmitted") == SCANNERS - 1, results
        line = Order.objects.get(number=order.number).lines[0]
        assert line.admitted_by == winners[0], round_
        assert ticket_figures(session_ids=[show])[show].admitted == 1, round_
        order_cancel(number=order.number, staff=True)  # the seat for the next round


def test_a_scan_racing_the_refund_never_admits_a_refunded_order_silently(
    race, mongo_db
):
    show = make_show()
    outcomes = []
    for round_ in range(ROUNDS):
        order = pay(f"anon:rf{round_}", session=show, seats=[(2, round_ % 8)])
        code = order.codes[0]

        scanned, state = race(
            door, [("scan", code, show, "scanner"), ("refund", order.number)]
        )

        outcomes.append(scanned)
        assert state == "refunded", round_
        line = Order.objects.get(number=order.number).lines[0]
        if scanned == "scanner":
            assert line.admitted_by == "scanner", round_  # admitted, then refunded
        else:
            assert scanned == "TicketRefunded", (round_, scanned)
            assert line.admitted_at is None, round_
    print(f"the scan came first in {outcomes.count('scanner')} of {ROUNDS} rounds")


def test_receipts_and_write_offs_racing_shoppers_keep_conservation(race, mongo_db):
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"RUSH-{round_}", stock=4)
        work = [("add", f"anon:r{round_}s{i}", sku) for i in range(8)]
        work += [("receive", sku, 3), ("receive", sku, 2)]
        work += [("write_off", sku, 2), ("write_off", sku, 5)]

        results = race(stockroom, work)

        level = stock_level(sku=sku)
        added = results.count("added")
        written_off = sum(
            units
            for (role, _sku, units), result in zip(work[8:], results[8:], strict=True)
            if role == "write_off" and result == "written off"
        )
        assert level.free >= 0, round_
        assert level.held == added, (round_, results)
        assert level.received == 4 + 3 + 2 - written_off, (round_, results)
        assert level.free + level.held + level.sold == level.received, round_
        assert stock_problems() == [], round_
        assert invariant_problems() == [], round_


def test_one_receipt_sent_at_once_by_eight_processes_is_received_once(race, mongo_db):
    for round_ in range(ROUNDS):
        sku = make_product(sku=f"DUP-{round_}", stock=4)
        key = f"race-key-{round_:04d}"

        results = race(receive_keyed, [(sku, 5, key)] * SCANNERS)

        written = [r for r in results if isinstance(r, int)]
        assert written == [2], (round_, results)  # exactly one wrote entry 2
        assert results.count(("repeat", 2, True)) == SCANNERS - 1, results
        level = stock_level(sku=sku)
        assert (level.free, level.received) == (9, 9), round_
        assert mongo_db.stock_ledger.count_documents({"sku": sku}) == 2
        assert stock_problems() == [], round_
