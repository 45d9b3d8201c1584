from django.core.management.base import CommandError

from config.management.base import MongoCommand
from staff.services.team import TeamRefused, team_deactivate


class Command(MongoCommand):
    help = (
        "Deactivate a staff account: it may no longer log in, and every "
        "browser logged in as it is logged out for good (createstaff, or the "
        "Staff page's Make staff again, makes it staff again; it then logs "
        "in afresh). The last active Administrator is never deactivated."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--reason", default="", help="kept in the audit trail")

    def handle(self, *args, email, reason, **options):
        try:
            user = team_deactivate(email=email, by="deactivatestaff", reason=reason)
        except TeamRefused as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"staff account {user.username} deactivated")
