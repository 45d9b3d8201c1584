from config.management.base import MongoCommand
from shop.services.settle import outbox_convert


class Command(MongoCommand):
    help = (
        "Move the payments an earlier version left to announce in its "
        "outbox collection onto their orders' mark, and drop that "
        "collection. Idempotent; run it with the shop stopped "
        "(`convert_data`, which `serve` runs)."
    )

    def handle(self, *args, **options):
        marked = outbox_convert()
        if marked and options["verbosity"] >= 1:
            self.stdout.write(f"outbox_convert: {marked} payments to announce moved")
