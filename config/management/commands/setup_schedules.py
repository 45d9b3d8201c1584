from django.core.management.base import BaseCommand

from config import schedules


class Command(BaseCommand):
    help = "Register the django-q2 schedules that Marquee's apps declare (idempotent)."

    def handle(self, *args, **options):
        names = schedules.register()
        if options["verbosity"] >= 1:
            self.stdout.write(f"setup_schedules: {len(names)} schedule(s): {names}")
