"""The staff permissions (Django's ORM, not MongoDB).

Django's permissions hang off a model; the domain lives in MongoDB, so one
unmanaged placeholder model carries them and no table is ever created.
"""

from django.db import models

PERMISSIONS = [
    ("view_dashboard", "See the staff dashboard, its figures and audit trail"),
    ("view_orders", "See and search every order"),
    ("refund_ticket_orders", "Cancel and refund orders holding tickets"),
    ("refund_goods_orders", "Cancel and refund orders holding goods"),
    ("view_carts", "See the live carts"),
    ("release_carts", "Release a live cart's units and seats"),
    ("manage_sessions", "Manage performances, holds and check-in"),
    ("manage_stock", "Manage stock"),
    ("view_jobs", "See the scheduled jobs"),
    ("run_jobs", "Run a scheduled job now"),
    ("manage_staff", "Create staff accounts and give them roles"),
]


class StaffPermission(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        permissions = PERMISSIONS

    def __str__(self) -> str:
        return "staff permissions"
