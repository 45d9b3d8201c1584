"""The session engine (``SESSION_ENGINE``): Django's ``db`` engine, its
rows tagged with the account they are logged in as
(``accounts.models.BrowserSession``), so that an account's sessions can be
ended without reading every shopper's.

A session is tagged each time Django saves it (logging in, a key rotated by
a password change), from what it holds: the account id Django's
``login()`` put there, nothing else.
"""

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DBStore


def _account_of(data) -> int | None:
    try:
        return int(data.get(SESSION_KEY))
    except (TypeError, ValueError):
        return None


class SessionStore(DBStore):
    @classmethod
    def get_model_class(cls):
        # Imported here: settings name this module before the apps are ready.
        from accounts.models import BrowserSession

        return BrowserSession

    def create_model_instance(self, data):
        row = super().create_model_instance(data)
        row.account_id = _account_of(data)
        return row

    async def acreate_model_instance(self, data):
        row = await super().acreate_model_instance(data)
        row.account_id = _account_of(data)
        return row


def end_sessions(user) -> int:
    """End every session logged in as ``user``: one indexed delete. A
    browser that held one is a stranger at its next request, and a request
    of it under way when the rows go cannot save its session back (Django's
    engine refuses to update a deleted row: ``SessionInterrupted``).
    Returns how many were ended."""
    ended, _ = (
        SessionStore.get_model_class().objects.filter(account_id=user.pk).delete()
    )
    return ended
