from config.management.base import MongoCommand
from staff.services.recount import counters_convert


class Command(MongoCommand):
    help = (
        "Convert sales counters of an earlier shape: one document per hour "
        "becomes buckets per block of order numbers, recounted from the "
        "orders; buckets that summed each product lose that map (the day "
        "rollups sum the orders). Idempotent; run it with the shop stopped "
        "(`convert_data`, which `serve` runs)."
    )

    def handle(self, *args, **options):
        buckets = counters_convert()
        if buckets and options["verbosity"] >= 1:
            self.stdout.write(f"sales_counters_convert: {buckets} buckets converted")
