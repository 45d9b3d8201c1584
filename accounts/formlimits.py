"""The limits on the account forms anyone may post: sign-up and the
password reset request.

Sign-up creates an account, and its form says when an email has one
already (it must, to say why it makes no other): unlimited, a script could
make accounts without end from one address, or learn which of a list of
emails are customers'. A reset request sends an email to the account it
names: each account gets at most ``ACCOUNT_EMAILS_PER_HOUR``
(``accounts/mail.py``), but a script could name every account in turn.

So each POST of either form is counted before its view runs, as the
throttle counts (``throttle.hit``: one upsert guarded on the limit, shared
by every worker), in fixed windows of an hour: a sign-up per client
address (``SIGNUPS_PER_ADDRESS``) and per session when the browser has one
(``SIGNUPS_PER_SESSION``), a reset request per client address
(``RESETS_PER_ADDRESS``). Every POST counts, a refused one too: a refusal
is what an enumeration reads. Over a limit: 429 with ``Retry-After`` (what
is left of the hour) and the form again, with what was typed in its email
field (never a password), saying when to try again; nothing is made or
sent.

Run by ``accounts/middleware.py``, after CSRF's check: a forged POST is
refused as forged and is not counted.
"""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.shortcuts import render

from accounts.forms import QueuedPasswordResetForm, SignUpForm
from accounts.throttle import client_ip, hit, window_left
from accounts.views import signup_page

# The POSTs limited here (url names).
SIGNUP = "accounts:signup"
RESET = "password_reset"

WINDOW = 3600  # seconds: the limits are per hour


def within(
    request, kind: str, *, per_address: int, per_session: int | None, now: datetime
) -> bool:
    """Count this POST of ``kind`` against the request's address, and its
    session's when it has one and ``per_session`` is given; whether both
    were under their limits."""
    ok = hit(
        f"{kind}:ip:{client_ip(request)}", limit=per_address, window=WINDOW, now=now
    )
    session = getattr(request, "session", None)
    if per_session is not None and session is not None and session.session_key:
        key = f"{kind}:session:{session.session_key}"
        ok = hit(key, limit=per_session, window=WINDOW, now=now) and ok
    return ok


def _again(form_class, request):
    """An unbound ``form_class`` showing the email the POST held: no check
    of it runs (none could say whether it has an account), and no password
    is ever shown back."""
    longest = form_class.base_fields["email"].max_length
    return form_class(initial={"email": request.POST.get("email", "")[:longest]})


def _limited(now: datetime) -> tuple[int, dict]:
    """Seconds left of the window, and what the page says of them."""
    seconds = window_left(WINDOW, now)
    return seconds, {
        "minutes": -(-seconds // 60),
        "retry_at": now + timedelta(seconds=seconds),
    }


def signup_refusal(request):
    """The sign-up form again with 429 when the address or the session is
    over its limit, or None (counted)."""
    now = datetime.now(UTC)
    if within(
        request,
        "signup",
        per_address=settings.SIGNUPS_PER_ADDRESS,
        per_session=settings.SIGNUPS_PER_SESSION,
        now=now,
    ):
        return None
    seconds, limited = _limited(now)
    response = signup_page(
        request, _again(SignUpForm, request), status=429, limited=limited
    )
    response["Retry-After"] = str(seconds)
    return response


def reset_refusal(request):
    """The reset request's form again with 429 when the address is over its
    limit, or None (counted)."""
    now = datetime.now(UTC)
    if within(
        request,
        "reset",
        per_address=settings.RESETS_PER_ADDRESS,
        per_session=None,
        now=now,
    ):
        return None
    seconds, limited = _limited(now)
    context = {"form": _again(QueuedPasswordResetForm, request), "limited": limited}
    response = render(
        request, "registration/password_reset_form.html", context, status=429
    )
    response["Retry-After"] = str(seconds)
    return response
