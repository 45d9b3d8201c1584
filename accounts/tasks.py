"""django-q2 tasks that send email. Each is safe to run twice, at once too
(an order's email is claimed before it is sent, by one insert: only its
claimant sends it) and retries itself: a failed send schedules the next
attempt, waiting twice as long each time, up to ``MAIL_ATTEMPTS`` in all."""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import get_connection
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import schedule
from pymongo.errors import DuplicateKeyError

from accounts.documents import SentEmail
from accounts.mail import account_email, order_email
from shop.selectors.orders import order_by_id

log = logging.getLogger("marquee.accounts.mail")

# A claim whose sender died before saying it sent (or failed) is taken over
# after this long: far longer than a send may take (EMAIL_TIMEOUT, within the
# queue's task timeout). Such an email may go twice; one never sent would be
# worse.
CLAIM_STALE = timedelta(minutes=10)


def _retry(task: str, args: tuple, attempt: int, exc: Exception) -> str:
    if attempt >= settings.MAIL_ATTEMPTS:
        log.error("%s%r: giving up after %d attempts: %s", task, args, attempt, exc)
        return "failed"
    wait = settings.MAIL_RETRY_SECONDS * 2 ** (attempt - 1)
    log.warning(
        "%s%r: attempt %d failed (%s); again in %ss", task, args, attempt, exc, wait
    )
    schedule(
        f"accounts.tasks.{task}",
        *args,
        attempt + 1,
        schedule_type=Schedule.ONCE,
        next_run=timezone.now() + timedelta(seconds=wait),
    )
    return "retrying"


def send_order_email(
    order_id: str, kind: str, attempt: int = 1, *, connection=None
) -> str:
    """Send the order's ``kind`` email once; "sent", "already sent",
    "being sent" (by another run: looked at again once its claim could be
    taken over), "retrying" or "failed". ``connection``: the mail
    connection to send on (a batch's), else one of its own."""
    order = order_by_id(order_id=order_id)
    key = f"{order.number}|{kind}"
    claim = _claim(key, order.email)
    if claim.sent:
        return "already sent"
    if not claim.mine:
        # Should its sender die, no one else would send it: this task looks
        # again once the claim is stale, and then sends it itself.
        schedule(
            "accounts.tasks.send_order_email",
            order_id,
            kind,
            attempt,
            schedule_type=Schedule.ONCE,
            next_run=claim.at + CLAIM_STALE + timedelta(seconds=1),
        )
        return "being sent"
    try:
        message = order_email(order, kind)
        message.connection = connection
        message.send()
    except Exception as exc:  # any failure of the mail server: try again later
        # This run's claim goes (not one a later run took over), so the
        # retry, or a concurrent run, may send it.
        SentEmail.coll().delete_one({"_id": key, "sending": True, "at": claim.at})
        return _retry("send_order_email", (order_id, kind), attempt, exc)
    SentEmail.coll().update_one(
        {"_id": key}, {"$set": {"at": timezone.now()}, "$unset": {"sending": ""}}
    )
    return "sent"


@dataclass(frozen=True)
class _Claim:
    mine: bool  # this run sends it
    sent: bool  # it was sent
    at: datetime  # when its claim was taken (this run's, or the sender's)


def _claim(key: str, to: str) -> _Claim:
    """Whether this run is the one to send ``key``: it inserted the claim,
    or took over a claim whose sender went silent (CLAIM_STALE); else
    whether it was sent, or since when another run is sending it."""
    now = timezone.now()
    claims = SentEmail.coll()
    try:
        claims.insert_one({"_id": key, "to": to, "at": now, "sending": True})
        return _Claim(mine=True, sent=False, at=now)
    except DuplicateKeyError:
        taken = claims.update_one(
            {"_id": key, "sending": True, "at": {"$lt": now - CLAIM_STALE}},
            {"$set": {"at": now}},
        )
        if taken.modified_count:
            return _Claim(mine=True, sent=False, at=now)
    found = claims.find_one({"_id": key}, {"sending": 1, "at": 1})
    if found is None:  # its sender failed and gave it back a moment ago
        return _Claim(mine=False, sent=False, at=now)
    return _Claim(mine=False, sent=not found.get("sending"), at=found["at"])


def send_order_emails(order_ids: list[str], kind: str) -> str:
    """``send_order_email`` of each order (paid orders announced together:
    one task for all, on one mail connection); what each came to, in order.

    Each order's failure is its own: the announcement that queued this task
    is over (its outbox entries are gone), so an order whose email cannot
    be sent now (its read failed, the mail server refused) gets a retry of
    its own and the orders after it are still sent.
    """
    outcomes = []
    connection = get_connection()
    try:
        connection.open()
    except Exception:
        log.warning("mail server unreachable; each email will try on its own")
    try:
        for order_id in order_ids:
            try:
                outcome = send_order_email(order_id, kind, connection=connection)
            except Exception as exc:
                outcome = _retry("send_order_email", (order_id, kind), 1, exc)
            outcomes.append(outcome)
    finally:
        connection.close()
    return ", ".join(outcomes)


def send_account_email(kind: str, user_id: int, *rest) -> str:
    """Send the account's ``kind`` email ("reset", "claim"), its link made
    here (accounts.mail.account_email); "sent", "retrying", "failed" or
    "nothing to send" (the account is gone or may have no such link).

    ``rest``: the attempt's number (1 when absent). A task queued by an
    earlier version also carries the request's site (a dict) before it: it
    is ignored, the link starts with SITE_URL, and the email still goes."""
    numbers = [value for value in rest if isinstance(value, int)]
    attempt = numbers[-1] if numbers else 1
    try:
        message = account_email(kind, user_id)
        if message is None:
            return "nothing to send"
        message.send()
    except Exception as exc:
        return _retry("send_account_email", (kind, user_id), attempt, exc)
    return "sent"
