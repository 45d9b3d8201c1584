"""reconcile_reservations, check_invariants and the scheduled jobs."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, result

from catalog.selectors.stock import stock_hold, stock_level
from catalog.services.stock import stock_reserve
from config import schedules
from shop.documents import COMPLETE, EXPIRED
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item
from shop.services.reconcile import reservations_reconcile
from tests.processes import command_env, manage
from tests.shop.factories import make_product

ALICE = "anon:alice"


def test_an_entry_whose_cart_does_not_exist_is_released(mongo_db, product, now):
    stock_reserve(sku=product, cart_id="ghost", quantity=4, now=now)
    assert [p.key for p in invariant_problems()] == [product]

    report = reservations_reconcile(now=now + timedelta(minutes=5))

    assert report.released == 1
    assert stock_level(sku=product).free == 100
    assert invariant_problems() == []


def test_an_entry_of_a_finished_cart_is_released(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    mongo_db.carts.update_one({"_id": cart.cart_id}, {"$set": {"state": COMPLETE}})

    reservations_reconcile(now=now + timedelta(minutes=5))

    assert stock_hold(sku=product, cart_id=cart.cart_id) is None
    assert stock_level(sku=product).free == 100


def test_an_entry_the_active_cart_no_longer_lists_is_released(mongo_db, product, now):
    hat = make_product(sku="HAT-1")
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    stock_reserve(sku=hat, cart_id=cart.cart_id, quantity=1, now=now)

    reservations_reconcile(now=now + timedelta(minutes=5))

    assert stock_hold(sku=hat, cart_id=cart.cart_id) is None
    assert stock_hold(sku=product, cart_id=cart.cart_id).quantity == 2
    assert invariant_problems() == []


def test_a_surplus_hold_is_trimmed_to_the_cart_line(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    mongo_db.inventories.update_one({"_id": product}, {"$inc": {"quantity": -3}})
    mongo_db.stock_holds.update_one(
        {"sku": product, "cart_id": cart.cart_id}, {"$inc": {"quantity": 3}}
    )
    assert invariant_problems()

    report = reservations_reconcile(now=now + timedelta(minutes=5))

    assert report.fitted == 1
    assert stock_hold(sku=product, cart_id=cart.cart_id).quantity == 2
    assert stock_level(sku=product).free == 98
    assert invariant_problems() == []


def test_live_entries_are_confirmed_and_restamped(mongo_db, product, now):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    at = now + timedelta(minutes=5)

    report = reservations_reconcile(now=at)

    assert report.refreshed == 1
    hold = stock_hold(sku=product, cart_id=cart.cart_id)
    # Confirmed as seen now; ``at`` stays the last change (the stale-holder
    # lookup reads it).
    assert (hold.quantity, hold.at) == (2, now)
    doc = mongo_db.stock_holds.find_one({"cart_id": cart.cart_id})
    assert doc["seen_at"] == at


def test_entries_younger_than_the_grace_period_are_left_alone(mongo_db, product, now):
    stock_reserve(sku=product, cart_id="in-flight", quantity=1, now=now)

    report = reservations_reconcile(now=now + timedelta(seconds=20))

    assert report.released == 0
    assert stock_hold(sku=product, cart_id="in-flight").quantity == 1


def test_a_stale_cart_met_by_the_reconciler_is_expired(mongo_db, product, now, later):
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    report = reservations_reconcile(now=later)

    assert report.expired == 1
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == EXPIRED
    assert stock_level(sku=product).free == 100


def test_reconciling_twice_changes_nothing_more(mongo_db, product, now):
    stock_reserve(sku=product, cart_id="ghost", quantity=4, now=now)
    at = now + timedelta(minutes=5)

    reservations_reconcile(now=at)
    again = reservations_reconcile(now=at)

    assert again.released == 0
    assert stock_level(sku=product).free == 100


def test_check_invariants_passes_on_a_consistent_database(product, now, capsys):
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    call_command("check_invariants")

    assert "every invariant holds" in capsys.readouterr().out


def test_check_invariants_fails_naming_the_offending_skus(mongo_db, product, now):
    make_product(sku="HAT-1")
    stock_reserve(sku=product, cart_id="ghost", quantity=1, now=now)
    mongo_db.inventories.update_one({"_id": "HAT-1"}, {"$inc": {"quantity": -1}})

    with pytest.raises(CommandError) as failed:
        call_command("check_invariants")

    assert str(failed.value) == f"invariants broken for: HAT-1, {product}"


@pytest.mark.django_db
def test_setup_schedules_registers_the_shop_jobs_once():
    call_command("setup_schedules", verbosity=0)
    call_command("setup_schedules", verbosity=0)

    shop_jobs = Schedule.objects.filter(func__startswith="shop.tasks.")
    assert sorted((s.name, s.func, s.minutes) for s in shop_jobs) == [
        ("expire_carts", "shop.tasks.expire_carts", 1),
        ("purge_carts", "shop.tasks.purge_carts", 60),
        ("reconcile_reservations", "shop.tasks.reconcile_reservations", 5),
        ("recover_checkouts", "shop.tasks.recover_checkouts", 1),
    ]
    assert {s.schedule_type for s in shop_jobs} == {Schedule.MINUTES}
    names = [job.name for job in schedules.declared_jobs()]
    assert len(names) == len(set(names))


@pytest.mark.django_db
def test_setup_schedules_drops_a_job_no_app_declares_any_more():
    """A job removed from the code stops being scheduled; schedules staff
    made by hand for other functions, and a task's one-off later attempt,
    are left alone."""
    for name, func in [("gone", "staff.tasks.gone"), ("mine", "mysite.tasks.report")]:
        Schedule.objects.create(
            name=name, func=func, schedule_type=Schedule.MINUTES, minutes=5
        )
    # An email's retry: a one-off schedule of an app's task, not a job.
    Schedule.objects.create(
        name="retry",
        func="accounts.tasks.send_order_email",
        args="('o-1', 'paid', 2)",
        schedule_type=Schedule.ONCE,
    )

    call_command("setup_schedules", verbosity=0)

    names = set(Schedule.objects.values_list("name", flat=True))
    assert "gone" not in names and "mine" in names and "retry" in names
    assert {job.name for job in schedules.declared_jobs()} <= names


@pytest.mark.django_db
def test_the_jobs_run_through_django_q(mongo_db, product, settings):
    # The jobs read the real clock. A hold of 0 minutes: the cart is past its
    # hold as soon as it is made; the orphan entry is older than the grace.
    settings.CART_HOLD_MINUTES = 0
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2)
    stock_reserve(
        sku=product,
        cart_id="ghost",
        quantity=1,
        now=timezone.now() - timedelta(minutes=5),
    )

    expired = async_task("shop.tasks.expire_carts", sync=True)
    reconciled = async_task("shop.tasks.reconcile_reservations", sync=True)

    assert result(expired) == 1
    assert result(reconciled)["released"] == 1
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == EXPIRED
    assert stock_level(sku=product).free == 100


def test_a_stale_cart_and_an_entry_it_does_not_list_are_both_released(
    mongo_db, product, now, later
):
    hat = make_product(sku="HAT-1")
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    stock_reserve(sku=hat, cart_id=cart.cart_id, quantity=1, now=now)

    reservations_reconcile(now=later)

    assert stock_level(sku=product).free == 100
    assert stock_level(sku=hat).free == 100
    assert invariant_problems() == []


def test_check_invariants_as_a_process_exits_non_zero_naming_the_sku(
    tmp_path, mongo_uri, mongo_db, product, now
):
    stock_reserve(sku=product, cart_id="ghost", quantity=1, now=now)
    base, _, options = mongo_uri.partition("?")
    env = command_env(
        tmp_path, MONGODB_URI=f"{base.rstrip('/')}/{mongo_db.name}?{options}"
    )

    broken = manage("check_invariants", env=env)

    assert broken.returncode == 1
    assert f"invariants broken for: {product}" in broken.stderr
    assert "held by missing cart ghost" in broken.stdout

    reservations_reconcile(now=now + timedelta(minutes=5))
    fixed = manage("check_invariants", env=env)
    assert fixed.returncode == 0, fixed.stderr
