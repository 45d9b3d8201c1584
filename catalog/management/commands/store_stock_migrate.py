from catalog.services.store_stock import store_stock_migrate
from config.management.base import MongoCommand


class Command(MongoCommand):
    help = (
        "Convert store stock of the old shape (one document per store and item "
        "with its variants' counts) to the stores' stock locations, which click "
        "& collect reserves. Idempotent; run it once with the shop stopped."
    )

    def handle(self, *args, **options):
        converted, opened = store_stock_migrate()
        if options["verbosity"] >= 1:
            self.stdout.write(
                f"store_stock_migrate: {converted} store stock documents converted, "
                f"{opened} store locations opened with units"
            )
