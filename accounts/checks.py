"""Deployment checks (shown by ``manage.py check --deploy``)."""

from django.conf import settings
from django.core.checks import Error, Tags, register

from config.secret import DEV_SECRET_KEY


@register(Tags.security, deploy=True)
def public_secret_key(app_configs, **kwargs):
    """The key Marquee once shipped with is public: signing with it lets
    anyone forge sessions, reset links and messages."""
    if settings.SECRET_KEY.strip() == DEV_SECRET_KEY:
        return [
            Error(
                "SECRET_KEY is the development key published in Marquee's repository.",
                hint="Unset DJANGO_SECRET_KEY to use this installation's own "
                "key (var/secret_key), or set it to a long random value.",
                id="marquee.E001",
            )
        ]
    return []
