from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from config.backup import BackupRefused, restore
from config.mongo import MongoUnavailable


class Command(BaseCommand):
    help = (
        "Put back the data of a backup made by `manage.py backup`. Marquee "
        "must be stopped; with --replace, the data there now is kept beside "
        "it (<name>.replaced-<time>), never deleted."
    )

    def add_arguments(self, parser):
        parser.add_argument("archive", type=Path)
        parser.add_argument(
            "--replace",
            action="store_true",
            help="restore over data already there (which is kept aside)",
        )

    def handle(self, *args, archive, replace, **options):
        try:
            restored = restore(archive, now=timezone.now(), replace=replace)
        except (BackupRefused, MongoUnavailable) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"restore: {', '.join(restored)} from {archive}")
