"""The audit trail: who did what, when, why, before -> after.

Append-only: this module only ever inserts into ``audit``. The actor and
reason of the code running now come from ``acting_as`` (a context variable),
so shop services need not carry them: a request of a shopper records
``shopper`` (the default), a staff action ``staff:<username>`` with its
reason, a scheduled job ``job:<name>``, a management command changing the
staff ``command:<name>`` (staff/services/team.py).
"""

import contextvars
from contextlib import contextmanager
from datetime import datetime

from django.utils import timezone

from config.mongo import insert_new
from staff.documents import AuditEntry

SHOPPER = "shopper"
_actor: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar(
    "marquee_actor", default=(SHOPPER, "")
)


@contextmanager
def acting_as(actor: str, reason: str = ""):
    token = _actor.set((actor, reason))
    try:
        yield
    finally:
        _actor.reset(token)


def set_actor(actor: str, reason: str = "") -> None:
    """For a worker process between tasks (django-q's pre_execute)."""
    _actor.set((actor, reason))


def current_actor() -> tuple[str, str]:
    return _actor.get()


def audit_record(
    *,
    action: str,
    object_kind: str,
    object_id: str,
    before: str | None = None,
    after: str | None = None,
    at: datetime | None = None,
    reason: str | None = None,
    actor: str | None = None,
    details: dict | None = None,
    once_id: str | None = None,
) -> None:
    """Append one entry; actor and reason default to the current ones.
    ``once_id``: the entry's ``_id``, for a thing that happens once (a
    ledger movement): an entry with that ``_id`` is never added twice."""
    current, current_reason = _actor.get()
    entry = {
        "at": at or timezone.now(),
        "actor": actor or current,
        "action": action,
        "object_kind": object_kind,
        "object_id": object_id,
        "reason": current_reason if reason is None else reason,
        "before": before,
        "after": after,
        "details": details or {},
    }
    if once_id is None:
        AuditEntry.coll().insert_one(entry)
    else:
        insert_new(AuditEntry.coll(), [{"_id": once_id, **entry}])


def audit_once(entries: list[dict], *, actors: list[tuple[str, str] | None]) -> int:
    """Append entries that carry their own ``_id`` (one per thing that
    happens once: an order's payment), in one insert; an entry whose
    ``_id`` is there already is not added again. ``actors``: each entry's
    (actor, reason), as ``current_actor`` gave it where the thing happened;
    None for the current one. Returns how many were added."""
    docs = []
    for entry, acting in zip(entries, actors, strict=True):
        actor, reason = acting or _actor.get()
        docs.append({"actor": actor, "reason": reason, **entry})
    return len(insert_new(AuditEntry.coll(), docs))
