"""django-q2 task functions of the shop app: thin, safe to run twice."""

from config.schedules import Job
from shop.services.checkout import checkouts_recover
from shop.services.cleanup import carts_purge
from shop.services.expiry import carts_expire
from shop.services.reconcile import reservations_reconcile

SCHEDULES: list[Job] = [
    Job("expire_carts", "shop.tasks.expire_carts", 1),
    Job("reconcile_reservations", "shop.tasks.reconcile_reservations", 5),
    # A checkout's lease is under a minute: one cut off is resolved within
    # about two (the reconciler also does this, every five).
    Job("recover_checkouts", "shop.tasks.recover_checkouts", 1),
    Job("purge_carts", "shop.tasks.purge_carts", 60),
]


def expire_carts() -> int:
    """Carts past their hold -> expired, units back; returns how many."""
    return carts_expire()


def reconcile_reservations() -> dict:
    """Holds no live cart lists -> released; live carts' holds confirmed."""
    return reservations_reconcile().as_dict()


def recover_checkouts() -> int:
    """Checkouts whose lease lapsed -> finished (charged) or reopened."""
    return checkouts_recover()


def purge_carts() -> int:
    """Ended carts past CART_RETENTION_DAYS -> deleted; returns how many."""
    return carts_purge()
