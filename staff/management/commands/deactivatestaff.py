from django.core.management.base import BaseCommand, CommandError

from staff.roles import deactivate_staff


class Command(BaseCommand):
    help = (
        "Deactivate a staff account: it may no longer log in, and a browser "
        "logged in as it is logged out at its next page (createstaff makes it "
        "staff again)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)

    def handle(self, *args, email, **options):
        try:
            user = deactivate_staff(email=email)
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"staff account {user.username} deactivated")
