"""reconcile_reservations, check_invariants and the scheduled jobs."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, result

from catalog.documents import hold_id
from catalog.selectors.stock import stock_level
from catalog.services import counters
from config import schedules
from shop.documents import EXPIRED
from shop.selectors.invariants import invariant_problems
from shop.services.carts import cart_add_item
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile
from tests.processes import command_env, manage
from tests.shop.factories import make_product

ALICE = "anon:alice"


def ghost_take(product, at, units=4):
    """What a crash between the counter's take and the cart's write leaves."""
    counters.take(product, hold_id(product, "ghost"), units, at)


def test_a_take_no_cart_recorded_is_undone_after_the_grace(mongo_db, product, now):
    ghost_take(product, now)
    # In flight: counted held, nothing broken.
    assert stock_level(sku=product).free == 96
    assert invariant_problems() == []

    report = reservations_reconcile(now=now + timedelta(minutes=5))

    assert report.moves == 1
    assert stock_level(sku=product).free == 100
    assert invariant_problems() == []


def test_moves_younger_than_the_grace_period_are_left_alone(mongo_db, product, now):
    ghost_take(product, now, units=1)

    report = reservations_reconcile(now=now + timedelta(seconds=20))

    assert report.moves == 0
    assert stock_level(sku=product).free == 99


def test_reconciling_twice_changes_nothing_more(mongo_db, product, now):
    ghost_take(product, now)
    at = now + timedelta(minutes=5)

    reservations_reconcile(now=at)
    again = reservations_reconcile(now=at)

    assert again.moves == 0
    assert stock_level(sku=product).free == 100


def test_check_invariants_passes_on_a_consistent_database(product, now, capsys):
    cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)

    call_command("check_invariants")

    assert "every invariant holds" in capsys.readouterr().out


def test_check_invariants_fails_naming_the_offending_skus(mongo_db, product, now):
    make_product(sku="HAT-1")
    for sku in (product, "HAT-1"):  # a unit lost: neither free, held nor sold
        mongo_db.inventories.update_one({"_id": sku}, {"$inc": {"quantity": -1}})

    with pytest.raises(CommandError) as failed:
        call_command("check_invariants")

    said, _, skus = str(failed.value).partition(": ")
    assert (said, sorted(skus.split(", "))) == (
        "invariants broken for",
        ["HAT-1", product],
    )


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
    # hold as soon as it is made; the take no cart recorded is older than
    # the grace.
    settings.CART_HOLD_MINUTES = 0
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2)
    ghost_take(product, timezone.now() - timedelta(minutes=5), units=1)

    expired = async_task("shop.tasks.expire_carts", sync=True)
    reconciled = async_task("shop.tasks.reconcile_reservations", sync=True)

    assert result(expired) == 1
    assert result(reconciled)["moves"] == 1
    assert mongo_db.carts.find_one({"_id": cart.cart_id})["state"] == EXPIRED
    assert stock_level(sku=product).free == 100


def test_a_stale_cart_and_a_take_it_never_recorded_are_both_released(
    mongo_db, product, now, later
):
    hat = make_product(sku="HAT-1")
    cart = cart_add_item(owner=ALICE, sku=product, quantity=2, now=now)
    counters.take(hat, hold_id(hat, cart.cart_id), 1, now)

    carts_expire(now=later)
    reservations_reconcile(now=later)

    assert stock_level(sku=product).free == 100
    assert stock_level(sku=hat).free == 100
    assert invariant_problems() == []


def test_check_invariants_as_a_process_exits_non_zero_naming_the_sku(
    tmp_path, mongo_uri, mongo_db, product, now
):
    lost = {"_id": product}, {"$inc": {"quantity": -1}}
    mongo_db.inventories.update_one(*lost)
    base, _, options = mongo_uri.partition("?")
    env = command_env(
        tmp_path, MONGODB_URI=f"{base.rstrip('/')}/{mongo_db.name}?{options}"
    )

    broken = manage("check_invariants", env=env)

    assert broken.returncode == 1
    assert f"invariants broken for: {product}" in broken.stderr
    assert "free 99 + held 0 + sold 0 != received 100" in broken.stdout

    mongo_db.inventories.update_one({"_id": product}, {"$inc": {"quantity": 1}})
    fixed = manage("check_invariants", env=env)
    assert fixed.returncode == 0, fixed.stderr
