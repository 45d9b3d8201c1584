from config.management.base import MongoCommand
from staff.selectors.counters import counters_rebuild, unsharded


class Command(MongoCommand):
    help = (
        "Convert sales counters kept one document per hour (an earlier "
        "version's) to the hour's shards, by a rebuild from the orders. "
        "Idempotent: a database whose hours are sharded is left alone. Run "
        "with the shop stopped (`serve` runs it before any worker starts)."
    )

    def handle(self, *args, **options):
        converted = counters_rebuild() if unsharded() else 0
        if options["verbosity"] >= 1:
            self.stdout.write(f"shard_sales_counters: {converted} hour shards")
