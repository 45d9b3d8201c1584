"""Sales counters: moved once per order paid or refunded, equal to a recount."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from shop.documents import REFUNDED
from shop.services.orders import order_cancel
from staff.selectors.counters import counter_problems, counters_rebuild, recount
from staff.selectors.dashboard import dashboard
from staff.services.counters import count_refund, count_sale, counters, hour_bucket
from staff.services.trail import sale_counted
from tests.staff.conftest import pay


def test_paying_counts_the_order_in_its_hour_and_day(mongo_db, product, show):
    now = timezone.now()
    goods = pay("anon:ann", sku=product, quantity=2, now=now)
    both = pay("anon:bob", sku=product, session=show, seats=[(0, 0), (0, 1)], now=now)

    hour = mongo_db.sales_counters.find_one({"_id": hour_bucket(now)[0]})
    assert hour["orders"] == 2
    assert hour["units"] == 3
    assert hour["tickets"] == 2
    assert hour["revenue"] == int((goods.total + both.total) * 100)
    assert hour["ticket_revenue"] + hour["goods_revenue"] == hour["revenue"]
    assert sorted(hour["paid"]) == sorted([goods.number, both.number])
    assert counter_problems() == []

    d = dashboard(now=now)
    assert d.today.orders == 2 and d.week.orders == 2
    assert d.today.revenue == hour["revenue"]
    assert d.today.average == hour["revenue"] // 2
    assert d.today.tickets == 2 and d.today.units == 3
    assert {p["name"] for p in d.top_products} == {"JC Sneaker", "Hamlet"}


def test_a_refund_is_counted_once_and_nets_out_of_revenue(mongo_db, product):
    now = timezone.now()
    order = pay("anon:ann", sku=product, quantity=2, now=now)

    order_cancel(number=order.number, staff=True, now=now)
    order_cancel(number=order.number, staff=True, now=now)  # a double click

    assert mongo_db.orders.find_one({"_id": order.pk})["state"] == REFUNDED
    day = dashboard(now=now).today
    assert (day.orders, day.refunds, day.revenue, day.units) == (1, 1, 0, 0)
    assert counter_problems() == []


def test_counting_again_changes_nothing(mongo_db, product):
    order = pay("anon:ann", sku=product)
    raw = mongo_db.orders.find_one({"_id": order.pk})
    before = list(mongo_db.sales_counters.find({}, {"_id": 1, "orders": 1}))

    assert count_sale(raw) is False
    sale_counted(order.pk)  # what a recovered checkout calls

    assert list(mongo_db.sales_counters.find({}, {"_id": 1, "orders": 1})) == before
    assert counter_problems() == []


def test_a_crash_between_paying_and_counting_is_made_good(mongo_db, product):
    """The count of an order paid by a run that stopped before counting is
    taken when the order is met again (the reconciler finishing it)."""
    order = pay("anon:ann", sku=product)
    counters().delete_many({})
    assert counter_problems() != []

    sale_counted(order.pk)

    assert counter_problems() == []


def test_refund_counts_in_the_hour_it_happened(mongo_db, product):
    paid_at = timezone.now() - timedelta(days=2)
    order = pay("anon:ann", sku=product, now=paid_at)
    refund_at = timezone.now()

    order_cancel(number=order.number, staff=True, now=refund_at)

    paid_hour = mongo_db.sales_counters.find_one({"_id": hour_bucket(paid_at)[0]})
    refund_hour = mongo_db.sales_counters.find_one({"_id": hour_bucket(refund_at)[0]})
    assert (paid_hour["orders"], paid_hour.get("refunds", 0)) == (1, 0)
    assert (refund_hour.get("orders", 0), refund_hour["refunds"]) == (0, 1)
    assert counter_problems() == []
    raw = mongo_db.orders.find_one({"_id": order.pk})
    assert count_refund(raw) is False


def test_check_invariants_names_a_bucket_that_drifted(mongo_db, product):
    order = pay("anon:ann", sku=product)
    call_command("check_invariants")  # holds
    bucket = hour_bucket(order.paid_at)[0]
    mongo_db.sales_counters.update_one({"_id": bucket}, {"$inc": {"revenue": 1}})

    with pytest.raises(CommandError, match=bucket):
        call_command("check_invariants")


def test_rebuild_gives_back_what_the_services_kept(mongo_db, product, show):
    now = timezone.now()
    pay("anon:ann", sku=product, quantity=3, now=now)
    refunded = pay("anon:bob", session=show, seats=[(1, 1)], now=now)
    order_cancel(number=refunded.number, staff=True, now=now)
    kept = {d["_id"]: d for d in mongo_db.sales_counters.find({})}

    counters_rebuild()

    rebuilt = {d["_id"]: d for d in mongo_db.sales_counters.find({})}
    assert set(rebuilt) == set(kept) == set(recount())
    for key, doc in kept.items():
        for name in ("orders", "revenue", "refunds", "tickets", "units"):
            assert rebuilt[key].get(name, 0) == doc.get(name, 0), (key, name)
    assert counter_problems() == []


def test_a_day_takes_what_a_dead_process_left_in_its_hour(mongo_db, product):
    """A process that counted an order in its hour and died before its day:
    the next order counted in that hour (or the settle job) takes both, once."""
    from staff.services import counters as service
    from staff.tasks import settle_sales_counters

    now = timezone.now()
    first = pay("anon:ann", sku=product, now=now)
    raw = mongo_db.orders.find_one({"_id": first.pk})
    counters().delete_many({})
    settle = service.settle_day
    service.settle_day = lambda **kwargs: 0  # the process dies here
    try:
        assert count_sale(raw) is True
    finally:
        service.settle_day = settle
    assert mongo_db.sales_entries.count_documents({}) == 1
    assert any("applied" in str(p) for p in counter_problems())

    second = pay("anon:bob", sku=product, now=now)

    day = dashboard(now=now).today
    assert day.orders == 2
    assert day.revenue == int((first.total + second.total) * 100)
    assert counter_problems() == []
    assert mongo_db.sales_entries.count_documents({}) == 0  # tidied once applied
    assert settle_sales_counters() == 0  # nothing left to take


def test_the_settle_job_finishes_a_lone_dead_count(mongo_db, product):
    from staff.services import counters as service
    from staff.tasks import settle_sales_counters

    order = pay("anon:ann", sku=product)
    raw = mongo_db.orders.find_one({"_id": order.pk})
    counters().delete_many({})
    settle = service.settle_day
    service.settle_day = lambda **kwargs: 0
    try:
        count_sale(raw)
    finally:
        service.settle_day = settle

    assert settle_sales_counters() == 1
    assert settle_sales_counters() == 0
    assert counter_problems() == []
