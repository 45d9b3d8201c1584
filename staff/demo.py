"""The demo's staff account: one Administrator, created once, its password
printed once (the first ``make run`` loads the demo)."""

import secrets

from django.contrib.auth import get_user_model

from staff.roles import ADMINISTRATOR, create_staff

DEMO_EMAIL = "staff@marquee.example"


def load(*, items: int = 0, seed: int = 0, out=None) -> None:
    if get_user_model().objects.filter(username=DEMO_EMAIL).exists():
        return  # created on an earlier run; its password was shown then
    password = secrets.token_urlsafe(12)
    create_staff(email=DEMO_EMAIL, role=ADMINISTRATOR, password=password)
    if out is not None:
        out.write(
            "\n  Staff account (shown once): "
            f"{DEMO_EMAIL} / {password}\n  Sign in at /staff/\n\n"
        )
