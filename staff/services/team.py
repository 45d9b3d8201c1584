"""The staff team: add a member, change a member's role, deactivate one, make
a former member staff again. The Staff page and the ``createstaff`` and
``deactivatestaff`` commands call these same functions, so each rule is
kept here once:

* an email already on the team is not added again (its role is changed);
* an account with staff access but no role (``createsuperuser``'s) can be
  given a role or deactivated, under the same guard rails;
* nobody deactivates or demotes themselves, and the last active
  Administrator is never deactivated nor moved to another role (no shop is
  left without someone who can manage staff);
* a deactivated account has no session (``team_deactivate`` ends them
  all), so reactivating it takes a fresh log-in;
* an invitation is sent again at most ``STAFF_INVITES_PER_MEMBER`` times
  an hour to one member, and ``STAFF_INVITES_PER_MANAGER`` times an hour
  by one sender (``team_invite_again``);
* every change goes on the audit trail (``object_kind`` "staff", the
  account's email), with who did it, why, and the role before -> after.

``by`` is who acts: the logged-in user (the page) or a command's name.
Django's own tables hold the accounts (``staff.roles`` writes them); the
trail is in MongoDB, written once the account's change is committed.
"""

from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils.timezone import localtime

from accounts.mail import queue
from accounts.sessions import end_sessions
from accounts.throttle import hit, when_again
from staff.roles import (
    ADMINISTRATOR,
    create_staff,
    deactivate_staff,
    role_named,
    role_of,
)
from staff.services.actions import StaffActionRefused, actor_of
from staff.services.audit import audit_record

STAFF = "staff"
# What an account was before it joined the team (the trail's "before").
NEW_ACCOUNT = "new account"
SHOPPER = "shopper"
FORMER = "former staff"
ROLELESS = "staff without a role"

INVITES_WINDOW = 3600  # seconds: invitations sent again are limited per hour


class TeamRefused(StaffActionRefused):
    """A team change refused by a rule; ``field``: the form field it is
    about (None: the change itself, as the guard rails refuse it);
    ``retry_after``: when a limit refused it, the seconds until it may be
    tried again."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        status=409,
        retry_after: int | None = None,
    ):
        super().__init__(message)
        self.field = field
        self.status = status
        self.retry_after = retry_after  # seconds, for a limit's 429


def _actor(by) -> str:
    return f"command:{by}" if isinstance(by, str) else actor_of(by)


def _email(value: str) -> str:
    email = (value or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise TeamRefused(
            f"{value!r} is not an email address.", field="email", status=400
        ) from None
    return email


def _role(value: str) -> str:
    try:
        return role_named(value or "")
    except ValueError:
        raise TeamRefused(
            "There is no such role: choose Box office, Shop manager or Administrator.",
            field="role",
            status=400,
        ) from None


def _trail(action: str, email: str, by, *, before=None, after=None, reason="") -> None:
    """The team change's audit entry: the account by its email, who did it
    and why (a reason cut to 500 characters)."""
    audit_record(
        action=action,
        object_kind=STAFF,
        object_id=email,
        before=before,
        after=after,
        actor=_actor(by),
        reason=(reason or "").strip()[:500],
    )


def is_member(user) -> bool:
    return user.is_active and user.is_staff and role_of(user) is not None


def is_roleless(user) -> bool:
    """Staff access without a role: an active account that is staff or
    superuser (``createsuperuser`` makes one, or a flag set by hand) but in
    none of the role groups. The Staff page lists it apart; a role can be
    given to it (``team_set_role``), or it can be deactivated."""
    return (
        user.is_active
        and (user.is_staff or user.is_superuser)
        and role_of(user) is None
    )


def _locked(email: str):
    """The account ``email`` (its row locked until the transaction ends,
    where the database can lock rows), or None."""
    return (
        get_user_model()
        .objects.select_for_update()
        .filter(username=email)
        .prefetch_related("groups")
        .first()
    )


def _other_admins(email: str) -> int:
    """Active Administrators besides ``email``, their rows locked: two
    Administrators demoting each other at once are one after the other,
    and the second sees the first's change."""
    others = (
        get_user_model()
        .objects.select_for_update(of=("self",))
        .filter(groups__name=ADMINISTRATOR, is_active=True, is_staff=True)
        .exclude(username=email)
    )
    return len(list(others.values_list("pk", flat=True)))


def _guard(user, by, *, doing: str) -> None:
    """The guard rails of a change that takes ``user``'s role away
    (``doing``: "deactivate", "demote")."""
    if not isinstance(by, str) and by is not None and by.pk == user.pk:
        raise TeamRefused(
            f"You cannot {doing} yourself: another Administrator can."
            if doing == "deactivate"
            else "You cannot change your own role: another Administrator can."
        )
    if role_of(user) == ADMINISTRATOR and _other_admins(user.username) == 0:
        raise TeamRefused(
            f"{user.username} is the last active Administrator: make someone "
            "else Administrator first, or no one could manage staff."
        )


def _member(email: str, *, roleless: bool = False):
    """The member ``email``, its row locked; ``roleless``: an account with
    staff access but no role will do too."""
    user = _locked(email)
    if user is None or not (is_member(user) or (roleless and is_roleless(user))):
        raise TeamRefused(f"There is no staff account {email} (or no longer).")
    return user


def team_add(
    *,
    email: str,
    role: str,
    by,
    reason: str = "",
    password: str | None = None,
    notify: bool = True,
):
    """Put ``email`` on the team in ``role``.

    A new account has no password (unless ``password``) and is emailed a
    link to choose one; an account that exists (a shopper, a former member)
    becomes staff, keeps its password and is told it has staff access. An
    email already on the team is refused (change its role instead).
    ``notify`` False: no email (a command, which prints what to tell).
    Returns the account and what it was before (NEW_ACCOUNT, SHOPPER or
    FORMER)."""
    email, name = _email(email), _role(role)
    with transaction.atomic():
        user = _locked(email)
        if user is not None and is_member(user):
            raise TeamRefused(
                f"{email} is already on the staff ({role_of(user)}): change "
                "their role in the list instead.",
                field="email",
                status=400,
            )
        if user is None:
            before = NEW_ACCOUNT
        elif is_roleless(user):
            before = ROLELESS
        else:
            before = SHOPPER if user.is_active else FORMER
        user = create_staff(email=email, role=name, password=password)
    action = "staff added" if before != FORMER else "staff reactivated"
    _trail(action, email, by, before=before, after=name, reason=reason)
    if notify:
        queue("send_account_email", "staff", user.pk)
    return user, before


def team_reactivate(*, email: str, role: str, by, reason: str = "", notify=True):
    """Make a former member (a deactivated account) staff again in
    ``role``; it keeps its password and is told by email. Returns the
    account."""
    email, name = _email(email), _role(role)
    with transaction.atomic():
        user = _locked(email)
        if user is None or user.is_active:
            raise TeamRefused(f"{email} is not a former member of the staff.")
    user, _ = team_add(email=email, role=name, by=by, reason=reason, notify=notify)
    return user


def team_set_role(*, email: str, role: str, by, reason: str = ""):
    """Move the member ``email`` to ``role``, or give one to an account
    with staff access but no role (a superuser then has that role's
    permissions and no more); return the account. Refused for oneself and
    for the last active Administrator."""
    email, name = _email(email), _role(role)
    with transaction.atomic():
        user = _member(email, roleless=True)
        before = role_of(user) or ROLELESS
        if before == name:
            raise TeamRefused(f"{email} is {name} already.", field="role", status=400)
        _guard(user, by, doing="demote")
        user = create_staff(email=email, role=name)
    _trail("staff role changed", email, by, before=before, after=name, reason=reason)
    return user


def team_set_password(*, email: str, password: str, by):
    """Set a member's password (``createstaff --password``): audited, the
    password itself never."""
    email = _email(email)
    with transaction.atomic():
        user = _member(email)
        user.set_password(password)
        user.save(update_fields=["password"])
    _trail("staff password set", email, by)
    return user


def team_deactivate(*, email: str, by, reason: str = ""):
    """The member ``email`` (or an account with staff access but no role)
    may no longer log in and has no role, nor staff or superuser flag;
    ``team_reactivate`` undoes it. Refused for oneself and for the last
    active Administrator.

    Invariant: a deactivated account has no session. Every browser logged
    in as it is logged out for good, so making it staff again takes a fresh
    log-in."""
    email = _email(email)
    with transaction.atomic():
        user = _member(email, roleless=True)
        before = role_of(user) or ROLELESS
        _guard(user, by, doing="deactivate")
        user = deactivate_staff(email=email)
        # Django only refuses an inactive account's session while it is
        # inactive: kept, the session would be logged in again once the
        # account is reactivated (staff sessions last STAFF_SESSION_HOURS).
        # Deleted with the change, in its transaction, so neither is without
        # the other.
        end_sessions(user)
    _trail("staff deactivated", email, by, before=before, after=FORMER, reason=reason)
    return user


def _invites_refusal(user, by, now: datetime) -> str | None:
    """Count one invitation sent again against whoever sends it (at most
    ``STAFF_INVITES_PER_MANAGER`` an hour, whoever they are to), then
    against the member (``STAFF_INVITES_PER_MEMBER`` an hour); None when
    both were under their limits, else what the refusal says of the limit
    reached. The throttle's counts (``hit``: one upsert guarded on the
    limit, shared by every worker), so two managers pressing at once never
    send more than the limit between them. Every attempt counts, a refused
    one too, as the form limits count; a sender over their own limit is
    not counted against the member, so one careless manager does not spend
    another's invitations to them."""
    sender = settings.STAFF_INVITES_PER_MANAGER
    if not hit(
        f"staff-invite:by:{_actor(by)}", limit=sender, window=INVITES_WINDOW, now=now
    ):
        return f"you have sent {sender} invitation{pluralize(sender)} this hour"
    member = settings.STAFF_INVITES_PER_MEMBER
    if not hit(
        f"staff-invite:member:{user.pk}", limit=member, window=INVITES_WINDOW, now=now
    ):
        return (
            f"{user.username} has been sent {member} invitation{pluralize(member)} "
            "this hour"
        )
    return None


def team_invite_again(*, email: str, by, now: datetime | None = None):
    """Email the member who has not chosen a password yet a new link (the
    first one lasts a day, and the log-in page's reset sends none to an
    account without a password).

    Limited per member and per sender, in windows of an hour: nothing
    else stops a careless (or hostile) manager pressing the button a
    hundred times at one inbox. Counted here, not in the view, so every
    way of sending one (the Staff page, a command, a shell) is held to
    the same limit, kept in this one place. Over a limit: refused (429,
    ``retry_after`` the seconds left of the hour), nothing sent and no
    entry on the trail, as for every refused team change."""
    email = _email(email)
    now = now or datetime.now(UTC)
    with transaction.atomic():
        user = _member(email)
    if user.has_usable_password():
        raise TeamRefused(
            f"{email} has chosen a password already: they can log in, or use "
            "the log-in page's Forgot your password?"
        )
    reached = _invites_refusal(user, by, now)
    if reached is not None:
        again = when_again(INVITES_WINDOW, now)
        minutes = again["minutes"]
        at = localtime(again["retry_at"]).strftime("%H:%M")
        raise TeamRefused(
            f"No email was sent: {reached}, as many as may be sent. Try again "
            f"in {minutes} minute{pluralize(minutes)} (at {at}).",
            status=429,
            retry_after=again["seconds"],
        )
    queue("send_account_email", "staff", user.pk)
    _trail("staff invitation sent", email, by, after=role_of(user))
    return user
