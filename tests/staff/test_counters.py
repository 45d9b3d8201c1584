"""Sales counters: moved once per order paid or refunded, equal to a recount."""

from datetime import UTC, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from shop.documents import REFUNDED
from shop.services import numbers, settle
from shop.services.orders import order_cancel
from staff.selectors.counters import counter_problems, hour_figures, recount
from staff.selectors.dashboard import dashboard
from staff.services.counters import (
    BLOCK,
    bucket_of,
    count_refund,
    count_sale,
    counters,
)
from staff.services.recount import counters_rebuild
from staff.tasks import sum_sales_days
from tests.staff.conftest import pay


def test_paying_counts_the_order_in_its_hour_and_day(mongo_db, product, show):
    now = timezone.now()
    goods = pay("anon:ann", sku=product, quantity=2, now=now)
    both = pay("anon:bob", sku=product, session=show, seats=[(0, 0), (0, 1)], now=now)

    hour = hour_figures(now)
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
    settle.later(raw)  # what a recovered checkout calls

    assert list(mongo_db.sales_counters.find({}, {"_id": 1, "orders": 1})) == before
    assert counter_problems() == []


def test_a_crash_between_paying_and_counting_is_made_good(mongo_db, product):
    """The count of an order paid by a run that stopped before counting is
    taken when the order is met again (the reconciler finishing it)."""
    order = pay("anon:ann", sku=product)
    counters().delete_many({})
    assert counter_problems() != []

    settle.later(mongo_db.orders.find_one({"_id": order.pk}))

    assert counter_problems() == []


def test_refund_counts_in_the_hour_it_happened(mongo_db, product):
    paid_at = timezone.now() - timedelta(days=2)
    order = pay("anon:ann", sku=product, now=paid_at)
    refund_at = timezone.now()

    order_cancel(number=order.number, staff=True, now=refund_at)

    paid_hour = hour_figures(paid_at)
    refund_hour = hour_figures(refund_at)
    assert (paid_hour["orders"], paid_hour.get("refunds", 0)) == (1, 0)
    assert (refund_hour.get("orders", 0), refund_hour["refunds"]) == (0, 1)
    assert counter_problems() == []
    raw = mongo_db.orders.find_one({"_id": order.pk})
    assert count_refund(raw) is False


def test_check_invariants_names_a_bucket_that_drifted(mongo_db, product):
    order = pay("anon:ann", sku=product)
    call_command("check_invariants")  # holds
    bucket = bucket_of(order.number, order.paid_at)[0]
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

    rebuilt = {d["_id"]: d for d in mongo_db.sales_counters.find({"kind": "hour"})}
    assert set(rebuilt) == set(kept) == set(recount())
    for key, doc in kept.items():
        for name in ("orders", "revenue", "refunds", "tickets", "units"):
            assert rebuilt[key].get(name, 0) == doc.get(name, 0), (key, name)
    assert counter_problems() == []


def test_a_day_is_the_sum_of_its_hours(mongo_db, product):
    """Orders paid in different hours of one day add up to that day's tile
    and chart point; an order of yesterday stays in yesterday."""
    now = timezone.localtime(timezone.now()).replace(hour=15, minute=30)
    early = pay("anon:ann", sku=product, now=now.replace(hour=1))
    late = pay("anon:bob", sku=product, quantity=2, now=now.replace(hour=14))
    pay("anon:cat", sku=product, now=now - timedelta(days=1))

    d = dashboard(now=now)

    assert mongo_db.sales_counters.count_documents({"kind": "hour"}) == 3
    assert d.today.orders == 2 and d.week.orders == 3
    assert d.today.revenue == int((early.total + late.total) * 100)
    orders_per_day = next(c for c in d.charts if c.id == "orders-day")
    assert orders_per_day.series[0].values[-2:] == [1, 2]
    assert [p["qty"] for p in d.top_products] == [4]
    assert counter_problems() == []


def test_a_busy_hour_is_counted_in_buckets_of_a_block_of_orders(mongo_db, product):
    """Orders of one hour whose numbers fall in two blocks are counted in
    two buckets, each listing only its own; the dashboard adds them up."""
    now = timezone.now()
    first = pay("anon:ann", sku=product, now=now)
    serial = int(first.number.rpartition("-")[2])
    # The next number is the first of the next block: the sequence set just
    # before it, and this process's own block of numbers forgotten.
    target = (serial // BLOCK + 1) * BLOCK
    mongo_db.sequences.update_one(
        {"_id": "order_number"},
        {"$set": {"value": target - numbers.FIRST_NUMBER}},
    )
    numbers.forget()
    second = pay("anon:bob", sku=product, quantity=2, now=now)

    buckets = {d["_id"]: d for d in mongo_db.sales_counters.find({"kind": "hour"})}
    assert set(buckets) == {
        bucket_of(first.number, now)[0],
        bucket_of(second.number, now)[0],
    }
    assert sorted(d["paid"] for d in buckets.values()) == sorted(
        [[first.number], [second.number]]
    )
    assert hour_figures(now)["orders"] == 2
    d = dashboard(now=now)
    assert (d.today.orders, d.today.units) == (2, 3)
    orders_per_hour = next(c for c in d.charts if c.id == "orders-hour")
    assert sum(orders_per_hour.series[0].values) == 2
    assert [p["qty"] for p in d.top_products] == [3]
    assert counter_problems() == []


def test_counters_of_one_document_per_hour_are_converted(mongo_db, product, show):
    """A database of the version that kept one document per hour: its
    buckets are recounted into blocks by ``convert_data``, once."""
    now = timezone.now()
    pay("anon:ann", sku=product, quantity=2, now=now)
    refunded = pay("anon:bob", session=show, seats=[(1, 1)], now=now)
    order_cancel(number=refunded.number, staff=True, now=now)
    # Rewrite the buckets as the earlier version kept them.
    hour = hour_figures(now)
    counters().delete_many({})
    start = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    counters().insert_one(
        {"_id": f"h:{start:%Y-%m-%dT%H}", "kind": "hour", "start": start, **hour}
    )
    assert counter_problems() != []

    call_command("convert_data", verbosity=0)
    converted = list(mongo_db.sales_counters.find({}))
    call_command("convert_data", verbosity=0)  # a current database: nothing

    assert list(mongo_db.sales_counters.find({})) == converted
    assert all("#" in d["_id"] for d in converted if d["kind"] == "hour")
    assert counter_problems() == []
    d = dashboard(now=now)
    assert (d.today.orders, d.today.refunds) == (2, 1)


def test_a_bucket_keeps_no_per_product_figures(mongo_db, product, show):
    """A count rewrites the whole bucket: it holds the hour's totals and the
    numbers it counted, nothing that grows with the products sold. The top
    products are summed from the orders the day's buckets list, a refund
    taken away in the hour it was counted."""
    now = timezone.now()
    pay("anon:ann", sku=product, quantity=2, now=now)
    both = pay("anon:bob", sku=product, session=show, seats=[(0, 0), (0, 1)], now=now)
    order_cancel(number=both.number, staff=True, now=now)

    (bucket,) = mongo_db.sales_counters.find({"kind": "hour"})
    assert "products" not in bucket
    top = {p["name"]: p["qty"] for p in dashboard(now=now).top_products}
    assert top == {"JC Sneaker": 2}  # Bob's sneaker and seats went back
    assert counter_problems() == []


def test_buckets_that_summed_each_product_are_converted(mongo_db, product):
    """A database of the version whose buckets also kept a map of every
    product: ``convert_data`` drops the map, once, and keeps the figures."""
    now = timezone.now()
    order = pay("anon:ann", sku=product, quantity=2, now=now)
    bucket_id = bucket_of(order.number, order.paid_at)[0]
    counters().update_one(
        {"_id": bucket_id},
        {"$set": {"products": {"sku:X": {"name": "JC Sneaker", "qty": 2}}}},
    )

    call_command("convert_data", verbosity=0)
    converted = list(mongo_db.sales_counters.find({}))
    call_command("convert_data", verbosity=0)  # a current database: nothing

    assert list(mongo_db.sales_counters.find({})) == converted
    assert ["products" in d for d in converted if d["kind"] == "hour"] == [False]
    assert counter_problems() == []
    assert [p["qty"] for p in dashboard(now=now).top_products] == [2]


def test_rebuild_drops_what_an_earlier_version_kept(mongo_db, product):
    """Day buckets and their pending entries, from the version that kept
    them, are gone after a rebuild; the hours equal the recount."""
    order = pay("anon:ann", sku=product)
    mongo_db.sales_counters.insert_one({"_id": "d:2030-01-01", "kind": "day"})
    mongo_db.sales_entries.insert_one({"_id": "paid|h:2030-01-01T00|MQ-1"})

    counters_rebuild()

    # Only the hours, and the zone they count.
    assert sorted(mongo_db.sales_counters.distinct("kind")) == ["hour", "zone"]
    assert "sales_entries" not in mongo_db.list_collection_names()
    assert counter_problems() == []
    assert dashboard(now=order.paid_at).today.orders == 1


def test_top_products_follow_new_orders_of_a_summed_day(mongo_db, product):
    """A day's per-product sum is kept, and summed again once its hours
    have counted another order or refund."""
    now = timezone.now()
    order = pay("anon:ann", sku=product, quantity=2, now=now)
    assert [p["qty"] for p in dashboard(now=now).top_products] == [2]
    assert mongo_db.sales_rollups.count_documents({}) == 1

    pay("anon:bob", sku=product, quantity=3, now=now)
    assert [p["qty"] for p in dashboard(now=now).top_products] == [5]

    order_cancel(number=order.number, staff=True, now=now)
    assert [p["qty"] for p in dashboard(now=now).top_products] == [3]


def test_a_day_s_sum_is_brought_up_to_date_with_the_orders_counted_since(
    mongo_db, product
):
    """The rollup says how much of each bucket's lists it summed: the next
    sum adds only what was counted since, and a refund takes its order
    away."""
    now = timezone.now()
    first = pay("anon:ann", sku=product, quantity=2, now=now)
    assert sum_sales_days(now=now) == 1
    (rollup,) = mongo_db.sales_rollups.find()
    bucket = bucket_of(first.number, first.paid_at)[0]
    assert (rollup["counted"], rollup["summed"]) == (1, {bucket: [1, 0]})

    pay("anon:bob", sku=product, quantity=3, now=now)
    order_cancel(number=first.number, staff=True, now=now)
    sum_sales_days(now=now)

    (rollup,) = mongo_db.sales_rollups.find()
    assert (rollup["counted"], rollup["summed"]) == (3, {bucket: [2, 1]})
    assert [p["qty"] for p in rollup["products"].values()] == [3]
    assert [p["qty"] for p in dashboard(now=now).top_products] == [3]


def test_a_sum_of_an_earlier_version_is_summed_from_the_start(mongo_db, product):
    """A rollup that does not say what it summed is summed again whole once
    its day counts more."""
    now = timezone.now()
    order = pay("anon:ann", sku=product, quantity=2, now=now)
    day = f"d:{timezone.localdate(order.paid_at):%Y-%m-%d}"
    mongo_db.sales_rollups.insert_one(
        {"_id": day, "counted": 1, "products": {"sku:X": {"name": "X", "qty": 9}}}
    )
    pay("anon:bob", sku=product, quantity=1, now=now)

    assert [(p["name"], p["qty"]) for p in dashboard(now=now).top_products] == [
        ("JC Sneaker", 3)
    ]


@pytest.mark.parametrize(
    "day, hours, labels",
    [
        ("2026-03-29", 23, [f"{h:02}" for h in range(24) if h != 1]),  # clocks forward
        ("2026-10-25", 25, ["00", "01", "01", *(f"{h:02}" for h in range(2, 24))]),
        ("2026-11-26", 24, [f"{h:02}" for h in range(24)]),
    ],
)
def test_today_has_each_of_its_hours_once_when_the_clocks_change(
    settings, day, hours, labels
):
    from datetime import UTC, datetime, time, timedelta

    from django.utils import timezone

    from staff.selectors.dashboard import _hours_today

    settings.TIME_ZONE = "Europe/London"
    noon = timezone.make_aware(datetime.combine(datetime.fromisoformat(day), time(12)))
    first = timezone.make_aware(datetime.combine(noon.date(), time.min)).astimezone(UTC)
    # One order in every UTC hour of the local day, and one either side.
    buckets = [
        {"start": first + timedelta(hours=h), "orders": 1} for h in range(-1, hours + 1)
    ]

    today = _hours_today(buckets, noon)

    assert len(today) == hours
    assert [f"{h:%H}" for h, _ in today] == labels
    assert sum(figures.get("orders", 0) for _, figures in today) == hours


def test_a_day_of_more_refunds_than_sales_draws_no_negative_bar():
    import re

    from staff.charts import Chart, Series

    chart = Chart(
        id="rev-day",
        title="Revenue per day",
        description="Net revenue.",
        labels=["Mon", "Tue"],
        series=[Series("Revenue", [120.0, -45.0])],
        unit="£",
    )

    heights = [float(h) for h in re.findall(r'height="(-?[\d.]+)"', chart.svg)]
    assert heights and min(heights) >= 0
    assert "Tue: Revenue £-45.00" in chart.svg  # the figure is still there
    assert "£-45.00" in chart.table


def test_a_zone_half_an_hour_off_utc_counts_each_order_in_its_local_day(
    mongo_db, product, settings
):
    """In India a UTC hour straddles two local days (18:00-19:00 UTC is
    23:30-00:30): ten minutes before and after local midnight are two
    days' sales, and today's hours start at local midnight."""
    from datetime import datetime

    from staff.selectors.dashboard import _hours_today

    settings.TIME_ZONE = "Asia/Kolkata"
    before = datetime(2026, 11, 25, 18, 20, tzinfo=UTC)  # 23:50 on the 25th
    after = datetime(2026, 11, 25, 18, 40, tzinfo=UTC)  # 00:10 on the 26th
    late = pay("anon:ann", sku=product, quantity=1, now=before)
    early = pay("anon:bob", sku=product, quantity=2, now=after)
    settle.flush()

    assert bucket_of(late.number, before)[1] == datetime(
        2026, 11, 25, 17, 30, tzinfo=UTC
    )
    assert bucket_of(early.number, after)[0].startswith("h:2026-11-25T18:30#")
    assert counter_problems() == []
    now = after + timedelta(minutes=20)
    d = dashboard(now=now)
    assert (d.today.orders, d.today.units) == (1, 2)
    assert (d.week.orders, d.week.units) == (2, 3)
    today = _hours_today(list(counters().find({"kind": "hour"})), now)
    assert [f"{h:%H:%M}" for h, _ in today[:2]] == ["00:00", "01:00"]
    assert len(today) == 24
    assert [figures.get("orders", 0) for _, figures in today[:2]] == [1, 0]


def test_buckets_counted_in_utc_hours_are_recounted_in_local_ones(
    mongo_db, product, settings
):
    """A database counted by an earlier version in UTC hours, or in another
    zone than the shop's now, is recounted on the shop's local hours by the
    conversion ``serve`` runs; the zone is recorded, so a start without a
    change reads nothing."""
    from datetime import datetime

    from staff.services.recount import counters_convert

    at = datetime(2026, 11, 25, 18, 40, tzinfo=UTC)
    pay("anon:ann", sku=product, quantity=1, now=at)
    settle.flush()  # counted as an earlier version did: no zone recorded

    settings.TIME_ZONE = "Asia/Kolkata"
    assert counter_problems() != []  # the bucket of 18:00 UTC is not its hour
    assert counters_convert() == 1
    assert counter_problems() == []
    assert counters_convert() == 0
    [bucket] = counters().find({"kind": "hour"})
    assert bucket["start"] == datetime(2026, 11, 25, 18, 30, tzinfo=UTC)

    # A whole-hour zone after all: its days start at another hour too.
    settings.TIME_ZONE = "Europe/Berlin"
    assert counters_convert() == 1
    assert counters_convert() == 0
    [bucket] = counters().find({"kind": "hour"})
    assert bucket["start"] == datetime(2026, 11, 25, 18, 0, tzinfo=UTC)
    assert counter_problems() == []
