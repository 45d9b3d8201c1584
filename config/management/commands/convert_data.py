from django.core.management import call_command

from config.management.base import MongoCommand

# Every conversion of data kept in an earlier version's shape, oldest first.
# Each is idempotent and finds nothing to do on a current database.
CONVERSIONS = (
    "stock_lines_migrate",
    "convert_sessions",
    "store_stock_migrate",
    "sales_counters_convert",
    "outbox_convert",
)


class Command(MongoCommand):
    help = (
        "Convert data of an earlier version's shape (stock holds, sessions, "
        "store stock, sales counters, the payments' outbox) to this "
        "version's. Idempotent; `serve` runs it before any worker starts, so "
        "an upgraded database is converted with the shop stopped."
    )

    def handle(self, *args, **options):
        for conversion in CONVERSIONS:
            call_command(conversion, verbosity=options["verbosity"])
