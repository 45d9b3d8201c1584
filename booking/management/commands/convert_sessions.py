from booking.services.convert import sessions_convert
from config.management.base import MongoCommand


class Command(MongoCommand):
    help = (
        "Convert sessions of the older shape (a copy of the hall's layout, one "
        "entry per held or sold seat inside the session) to the compact one "
        "(the hall's layout version, a tag per held or sold seat, one SeatHolds "
        "document per cart). Idempotent; run it with the shop stopped, after "
        "mongo_setup."
    )

    def handle(self, *args, **options):
        converted = sessions_convert()
        if options["verbosity"] >= 1:
            self.stdout.write(f"convert_sessions: {converted}")
