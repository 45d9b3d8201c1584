from config import mongo
from config.management.base import MongoCommand


class Command(MongoCommand):
    help = "Create every MongoDB index Marquee's documents declare (idempotent)."

    def handle(self, *args, **options):
        created = mongo.ensure_indexes()
        if options["verbosity"] >= 1:
            for name in created:
                self.stdout.write(f"created index {name}")
            self.stdout.write(f"mongo_setup: {len(created)} index(es) created")
