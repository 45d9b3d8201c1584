"""What staff do: each action checks nothing about permissions (the views
do) but everything about the object, records who did it and why, and goes
through the shop's own services so every invariant they keep still holds.
"""

from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from config.errors import DomainError
from shop.documents import ACTIVE, PAID, REFUNDING, order_state_label
from shop.errors import OrderNotFound
from shop.services.expiry import cart_release
from shop.services.orders import order_cancel
from staff.selectors.orders import order_detail
from staff.services.audit import acting_as, audit_record


class StaffActionRefused(DomainError):
    """The action cannot be done; the message says why."""


def actor_of(user) -> str:
    return f"staff:{user.get_username()}"


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise StaffActionRefused("Give a reason: it is kept in the audit trail.")
    return reason[:500]


def refundable(state: str) -> bool:
    """Whether staff may refund an order in this state: paid, or a refund
    left half-way (``refunding``), which the request finishes."""
    return state in (PAID, REFUNDING)


def staff_refund_order(*, user, number: str, reason: str, now=None):
    """Cancel and refund a paid order at any time (``order_cancel(staff=True)``).

    Invariant: the same as order_cancel's (money back once, seats and units
    back on sale once); the audit trail gets the staff action and, through
    the shop, each state change, all with this user and reason. Refused
    before anything is recorded when there is nothing to refund (not
    ``refundable``: not paid yet, or canceled or refunded already). The
    request is recorded once per order, so two sent together (a double
    click) leave one entry; a refund the provider failed stays
    ``refunding``, recorded as such, and a later request finishes it.
    """
    reason = _reason(reason)
    now = now or timezone.now()
    found = order_detail(number=number)
    if found is None:
        raise OrderNotFound()
    if not refundable(found.state):
        state = order_state_label(found.state)
        raise StaffActionRefused(f"This order is {state}: there is nothing to refund.")
    with acting_as(actor_of(user), reason):
        audit_record(
            action="staff refund requested",
            object_kind="order",
            object_id=number,
            at=now,
            once_id=f"staff refund|{number}",
        )
        return order_cancel(number=number, staff=True, now=now)


def staff_release_cart(*, user, cart_id: str, reason: str, now=None) -> bool:
    """Release an active cart now through the shop's ``cart_release``, so its
    units and seats go back on sale exactly as when its hold runs out; the
    audit trail gets the staff action and the cart's expiry, with this user
    and reason. Refused if the cart is not active (a cart at checkout is
    never released under its payer).
    """
    reason = _reason(reason)
    now = now or timezone.now()
    with acting_as(actor_of(user), reason):
        if not cart_release(cart_id=cart_id, now=now):
            raise StaffActionRefused(
                "This cart is no longer active (checked out, expired or at checkout)."
            )
        # After the release, not before: a refused release is no staff
        # action, and the trail must not say a cart was released by hand
        # when it was not. (The release's own expiry entry carries this
        # user and reason too.)
        audit_record(
            action="staff released cart",
            object_kind="cart",
            object_id=cart_id,
            before=ACTIVE,
            at=now,
        )
    return True


def staff_run_job(*, user, schedule_id: int, reason: str = "") -> str:
    """Queue a scheduled job's function now (the cluster runs it); return the
    task id. Every job is safe to run twice at once, so no lock is needed."""
    schedule = Schedule.objects.filter(pk=schedule_id).first()
    if schedule is None:
        raise StaffActionRefused("No such job.")
    task_id = async_task(schedule.func, group=schedule.name)
    audit_record(
        action="staff ran job",
        object_kind="job",
        object_id=schedule.name,
        actor=actor_of(user),
        reason=(reason or "").strip()[:500],
        details={"task": task_id},
    )
    return task_id
