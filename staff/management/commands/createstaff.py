import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from config.management.base import MongoCommand
from staff.roles import ROLE_SLUGS, ROLE_SUMMARIES, role_named, role_of
from staff.services.team import (
    TeamRefused,
    is_member,
    team_add,
    team_set_password,
    team_set_role,
)


class Command(MongoCommand):
    help = (
        "Create a staff account, or move one to a role (its password stays "
        "unless --password is given); the Staff page (/staff/team/) does the "
        "same. "
        + "; ".join(
            f"{slug}: {ROLE_SUMMARIES[name]}" for slug, name in ROLE_SLUGS.items()
        )
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--role", required=True, help=", ".join(ROLE_SLUGS))
        parser.add_argument(
            "--password",
            help="default: a new account's is a random one, printed once (the "
            "account's username is its email); an existing account keeps its own",
        )

    def handle(self, *args, email, role, password, **options):
        if "@" not in email:
            raise CommandError(f"{email!r} is not an email address")
        try:
            name = role_named(role)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        email = email.strip().lower()
        existing = get_user_model().objects.filter(username=email).first()
        if password is not None:
            # The rules a signup's password meets (AUTH_PASSWORD_VALIDATORS):
            # a staff account can refund orders and sell seats.
            as_user = get_user_model()(username=email, email=email)
            try:
                validate_password(password, user=as_user)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
        generated = password is None and existing is None
        if generated:
            password = secrets.token_urlsafe(12)
        by = "createstaff"
        try:
            if existing is not None and is_member(existing):
                # On the staff already: moved to the role, its password set
                # only when one is given (the same rules as the page's).
                if role_of(existing) != name:
                    team_set_role(email=email, role=name, by=by)
                if password is not None:
                    team_set_password(email=email, password=password, by=by)
            else:
                team_add(email=email, role=name, by=by, password=password, notify=False)
        except TeamRefused as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"staff account {email} ({name})")
        if generated:
            self.stdout.write(f"password: {password}")
