"""django-q2 tasks of the accounts app: the daily clearing of expired
sessions (``clear_sessions``), and the tasks that send email.

Each email task is safe to run twice, at once too (an order's email is
claimed before it is sent, by one insert: only its claimant sends it) and
retries itself: a failed send schedules the next attempt, waiting twice
as long each time, up to ``MAIL_ATTEMPTS`` in all.

Each failed attempt is logged once (``marquee.accounts.mail``: a warning,
an error for the last), with the email's kind, its recipient's id (the
order's or the account's, never the address) and the failure's class and
message, any address or link in it replaced (``failure_reason``)."""

import logging
import re
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
from accounts.sessions import SessionStore
from config.schedules import Job
from shop.selectors.orders import order_by_id

log = logging.getLogger("marquee.accounts.mail")

SCHEDULES: list[Job] = [
    Job("clear_sessions", "accounts.tasks.clear_sessions", 24 * 60),
]


def clear_sessions() -> None:
    """Sessions past their expiry -> deleted (a shopper's after two weeks
    unseen, a staff member's after ``STAFF_SESSION_HOURS``): Django's
    ``clearsessions``, scheduled, so the table keeps the browsers that can
    still use theirs, not every visitor the shop ever had. Django reads an
    expired row as no session, so deleting it changes nothing a browser
    sees."""
    SessionStore.clear_expired()


# A claim whose sender died before saying it sent (or failed) is taken over
# after this long: far longer than a send may take (EMAIL_TIMEOUT, within the
# queue's task timeout). Such an email may go twice; one never sent would be
# worse.
CLAIM_STALE = timedelta(minutes=10)


# What a mail server's refusal may quote back (SMTPRecipientsRefused is a
# dict keyed by the address; a reply may quote a link of the message).
_ADDRESS = re.compile(r"[^\s<>()\[\]{}'\",;:]+@[^\s<>()\[\]{}'\",;:]+")
_LINK = re.compile(r"\w+://\S+")
_REASON_LENGTH = 300


def failure_reason(exc: BaseException) -> str:
    """``exc``'s class and message for the log, any email address and link
    in the message replaced: a mail server's refusal quotes the recipient
    (``SMTPRecipientsRefused``: ``{'ada@example.com': (550, ...)}``), and
    an account email's link is a credential. Cut to a line's length."""
    message = _LINK.sub("[link]", _ADDRESS.sub("[address]", str(exc)))
    message = " ".join(message.split())
    if len(message) > _REASON_LENGTH:
        message = message[: _REASON_LENGTH - 3] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _retry(
    task: str, args: tuple, attempt: int, exc: Exception, *, kind: str, to: str
) -> str:
    """Log why ``task`` failed (once per attempt: a warning, an error at the
    last), naming the email's ``kind`` and its recipient (``to``: "order
    <id>" or "user <id>", never the address), and schedule the next
    attempt; "retrying", or "failed" after the last."""
    reason = failure_reason(exc)
    if attempt >= settings.MAIL_ATTEMPTS:
        log.error(
            "the %s email to %s could not be sent; giving up (attempt %d of %d): %s",
            kind,
            to,
            attempt,
            settings.MAIL_ATTEMPTS,
            reason,
        )
        return "failed"
    wait = settings.MAIL_RETRY_SECONDS * 2 ** (attempt - 1)
    log.warning(
        "the %s email to %s could not be sent (attempt %d of %d): %s; "
        "trying again in %ss",
        kind,
        to,
        attempt,
        settings.MAIL_ATTEMPTS,
        reason,
        wait,
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
        return _retry(
            "send_order_email",
            (order_id, kind),
            attempt,
            exc,
            kind=kind,
            to=f"order {order_id}",
        )
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
    except Exception as exc:
        # Each email then tries on its own, and logs its own failure.
        log.info("mail server unreachable for a batch: %s", failure_reason(exc))
    try:
        for order_id in order_ids:
            try:
                outcome = send_order_email(order_id, kind, connection=connection)
            except Exception as exc:
                outcome = _retry(
                    "send_order_email",
                    (order_id, kind),
                    1,
                    exc,
                    kind=kind,
                    to=f"order {order_id}",
                )
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
        return _retry(
            "send_account_email",
            (kind, user_id),
            attempt,
            exc,
            kind=kind,
            to=f"user {user_id}",
        )
    return "sent"
