from config.management.base import MongoCommand
from staff.selectors.counters import counters_convert


class Command(MongoCommand):
    help = (
        "Convert sales counters kept one document per hour to buckets per "
        "block of order numbers, recounted from the orders. Idempotent; run "
        "it with the shop stopped (`convert_data`, which `serve` runs)."
    )

    def handle(self, *args, **options):
        buckets = counters_convert()
        if buckets and options["verbosity"] >= 1:
            self.stdout.write(
                f"sales_counters_convert: counters recounted into {buckets} buckets"
            )
