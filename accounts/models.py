"""The browser sessions (Django's ORM, not MongoDB).

Django's ``db`` session engine, with one more column: the account a
session is logged in as. Django documents this way of extending its
engine ("Extending database-backed session engines"); the engine is
``accounts/sessions.py``.
"""

from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models


class BrowserSession(AbstractBaseSession):
    """A browser's session, a shopper's or a member's of the staff, and
    the account it is logged in as (None: nobody). Written on every save of
    the session, so a key rotated after logging in (a password change) is
    tagged as well; the column lets every session of one account be found
    by one indexed query, without decoding anyone else's."""

    account_id = models.IntegerField(null=True, db_index=True)

    class Meta(AbstractBaseSession.Meta):
        verbose_name = "browser session"
        verbose_name_plural = "browser sessions"

    @classmethod
    def get_session_store_class(cls):
        from accounts.sessions import SessionStore

        return SessionStore
