from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="StaffPermission",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
            ],
            options={
                "managed": False,
                "default_permissions": (),
                "permissions": [
                    (
                        "view_dashboard",
                        "See the staff dashboard, its figures and audit trail",
                    ),
                    ("view_orders", "See and search every order"),
                    (
                        "refund_ticket_orders",
                        "Cancel and refund orders holding tickets",
                    ),
                    ("refund_goods_orders", "Cancel and refund orders holding goods"),
                    ("view_carts", "See the live carts"),
                    ("release_carts", "Release a live cart's units and seats"),
                    ("manage_sessions", "Manage performances, holds and check-in"),
                    ("manage_stock", "Manage stock"),
                    ("view_jobs", "See the scheduled jobs"),
                    ("run_jobs", "Run a scheduled job now"),
                    ("manage_staff", "Create staff accounts and give them roles"),
                ],
            },
        ),
    ]
