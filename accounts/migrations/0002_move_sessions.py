"""The sessions of Django's own table move to the engine's
(``accounts.sessions``), so changing ``SESSION_ENGINE`` logs nobody out and
loses no anonymous cart. Each one is decoded once, here, to tag it with its
account; expired ones are not moved (the old table is emptied).
Backwards: the live sessions go back, untagged."""

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import migrations
from django.utils import timezone

BATCH = 1000


def _account_of(session_data: str) -> int | None:
    # Decoded as Django's db engine decodes (SECRET_KEY and its fallbacks,
    # salted with the store's class name); one that does not decode is
    # empty, so it is nobody's.
    try:
        return int(SessionStore().decode(session_data).get(SESSION_KEY))
    except (TypeError, ValueError):
        return None


def _move(source, target, *, tag: bool) -> None:
    live = source.objects.filter(expire_date__gt=timezone.now())
    rows = []
    for row in live.iterator(chunk_size=BATCH):
        moved = target(
            session_key=row.session_key,
            session_data=row.session_data,
            expire_date=row.expire_date,
        )
        if tag:
            moved.account_id = _account_of(row.session_data)
        rows.append(moved)
        if len(rows) == BATCH:
            target.objects.bulk_create(rows, ignore_conflicts=True)
            rows = []
    target.objects.bulk_create(rows, ignore_conflicts=True)
    source.objects.all().delete()


def forwards(apps, schema_editor):
    _move(
        apps.get_model("sessions", "Session"),
        apps.get_model("accounts", "BrowserSession"),
        tag=True,
    )


def backwards(apps, schema_editor):
    _move(
        apps.get_model("accounts", "BrowserSession"),
        apps.get_model("sessions", "Session"),
        tag=False,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
