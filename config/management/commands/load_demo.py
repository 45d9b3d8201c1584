import importlib

from config.management.base import MongoCommand

# Order matters: the shop's demo data may refer to catalog and booking data.
LOADERS = ("catalog.demo", "booking.demo", "staff.demo")


class Command(MongoCommand):
    help = "Load Marquee's demo data (deterministic for a given --seed)."

    def add_arguments(self, parser):
        parser.add_argument("--items", type=int, default=1000, help="catalog items")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, items, seed, **options):
        for name in LOADERS:
            importlib.import_module(name).load(items=items, seed=seed, out=self.stderr)
