from config.management.base import MongoCommand
from shop.services.stock_lines_migrate import stock_lines_migrate


class Command(MongoCommand):
    help = (
        "Move what carts held of each stock location in an earlier version's "
        "shape (hold documents, or reservation entries inside each inventory) "
        "into the carts' lines, settling every move left in flight. "
        "Idempotent; run it with the shop stopped (`convert_data`, which "
        "`serve` runs)."
    )

    def handle(self, *args, **options):
        converted, freed = stock_lines_migrate()
        if converted and options["verbosity"] >= 1:
            self.stdout.write(
                f"stock_lines_migrate: {converted} holds moved into their lines, "
                f"{freed} units they held beyond their lines freed"
            )
