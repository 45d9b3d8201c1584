"""Accounts, emails and limits: mail goes to the file backend in a folder of
the test's own, and mail tasks run in the request (django-q2's sync mode)."""

import email
from email import policy

import pytest
from django.contrib.auth.models import User

PASSWORD = "correct-horse-battery-9"


@pytest.fixture(autouse=True)
def mail_dir(settings, tmp_path):
    folder = tmp_path / "mail"
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = folder
    settings.MAIL_SYNC = True
    settings.SITE_URL = "http://testserver"
    # A fast hasher: lockout tests log in many times.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return folder


def sent(folder) -> list[email.message.EmailMessage]:
    """Every email the file backend wrote, in order (one message per file
    here: each send opens a connection of its own)."""
    if not folder.exists():
        return []
    messages = []
    for path in sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns):
        raw = path.read_bytes()
        for chunk in raw.split(b"-" * 79 + b"\n"):
            if chunk.strip():
                messages.append(email.message_from_bytes(chunk, policy=policy.default))
    return messages


@pytest.fixture
def ada():
    return User.objects.create_user("ada@example.com", "ada@example.com", PASSWORD)
