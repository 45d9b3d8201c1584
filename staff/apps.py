from django.apps import AppConfig
from django.db.models.signals import post_migrate


class StaffConfig(AppConfig):
    name = "staff"
    verbose_name = "Staff back office"

    def ready(self):
        # After every migrate (so on every `serve` and every test database) the
        # three roles exist with exactly their permissions.
        post_migrate.connect(_roles_after_migrate, sender=self)
        # A scheduled job's state changes are recorded as done by the job.
        from django_q.signals import post_execute_in_worker, pre_execute

        pre_execute.connect(_job_actor, dispatch_uid="staff.job_actor")
        # Back to the default once the task is done: a task run in-process
        # (sync mode, tests) must not leave its name on what follows.
        post_execute_in_worker.connect(_job_done, dispatch_uid="staff.job_done")
        # The audit trail and the sales counters follow the shop's state
        # changes (the shop announces them; it does not know who listens).
        from shop import events
        from staff.services import trail

        events.order_moved.connect(trail.on_order_moved, dispatch_uid="staff.order")
        events.orders_paid.connect(trail.on_orders_paid, dispatch_uid="staff.paid")
        events.cart_order_moved.connect(
            trail.on_cart_order_moved, dispatch_uid="staff.cart_order"
        )
        events.cart_moved.connect(trail.on_cart_moved, dispatch_uid="staff.cart")
        # A payment the reconciler announces is put on the trail under the
        # actor who took it (a box office clerk), kept with its order's mark.
        from shop.services import settle
        from staff.services.audit import current_actor, set_actor

        settle.keep_context(
            "actor", save=current_actor, restore=lambda kept: set_actor(*kept)
        )
        # A staff login lasts a working day, not a shopper's two weeks.
        from django.contrib.auth.signals import user_logged_in

        user_logged_in.connect(_staff_session_age, dispatch_uid="staff.session_age")


def _staff_session_age(sender, request=None, user=None, **kwargs):
    """A staff account can refund and sell: its session ends after
    STAFF_SESSION_HOURS (a box-office terminal is often shared), where a
    shopper's lasts SESSION_COOKIE_AGE."""
    from django.conf import settings

    if request is not None and getattr(user, "is_staff", False):
        request.session.set_expiry(settings.STAFF_SESSION_HOURS * 3600)


def _roles_after_migrate(sender, using="default", **kwargs):
    from staff.roles import ensure_roles

    ensure_roles(using=using)


def _job_actor(sender, func=None, task=None, **kwargs):
    from staff.services.audit import set_actor

    name = (task or {}).get("group") or str((task or {}).get("func", "job"))
    set_actor(f"job:{name.rsplit('.', 1)[-1]}")


def _job_done(sender, func=None, task=None, **kwargs):
    from staff.services.audit import SHOPPER, set_actor

    set_actor(SHOPPER)
