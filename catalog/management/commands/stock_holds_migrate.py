from catalog.services.stock import stock_holds_migrate
from config.management.base import MongoCommand


class Command(MongoCommand):
    help = (
        "Convert online stock of the old shape (reservation entries inside each "
        "inventory) to one hold document per cart and SKU. Idempotent; run it "
        "once with the shop stopped, before starting this version."
    )

    def handle(self, *args, **options):
        moved, converted = stock_holds_migrate()
        if options["verbosity"] >= 1:
            self.stdout.write(
                f"stock_holds_migrate: {moved} reservations moved to their own "
                f"documents, {converted} inventories converted"
            )
