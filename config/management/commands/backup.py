from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from config.backup import BackupRefused, backup
from config.mongo import MongoUnavailable


class Command(BaseCommand):
    help = (
        "Copy the shop's data (the embedded database, Django's SQLite "
        "database, the signing key) into one .tar.gz. Marquee must be stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--to",
            type=Path,
            default=None,
            help="the directory to write it in (default: <var>/backups)",
        )

    def handle(self, *args, to, **options):
        to = to or Path(settings.VAR_DIR) / "backups"
        try:
            archive, held = backup(to, now=timezone.now())
        except (BackupRefused, MongoUnavailable) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"backup: {archive} ({', '.join(held)})")
