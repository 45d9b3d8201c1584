import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from staff.roles import ROLE_SLUGS, ROLE_SUMMARIES, create_staff, role_named


class Command(BaseCommand):
    help = (
        "Create a staff account, or move one to a role (its password stays "
        "unless --password is given): "
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
        users = get_user_model().objects
        generated = (
            password is None
            and not users.filter(username=email.strip().lower()).exists()
        )
        if password is not None:
            # The rules a signup's password meets (AUTH_PASSWORD_VALIDATORS):
            # a staff account can refund orders and sell seats.
            as_user = get_user_model()(username=email, email=email)
            try:
                validate_password(password, user=as_user)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
        if generated:
            password = secrets.token_urlsafe(12)
        user = create_staff(email=email, role=name, password=password)
        self.stdout.write(f"staff account {user.username} ({name})")
        if generated:
            self.stdout.write(f"password: {password}")
