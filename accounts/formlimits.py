"""The limits on the account forms anyone may post: sign-up and the
password reset request.

Sign-up creates an account, and its form says when an email has one
already (it must, to say why it makes no other): unlimited, a script could
make accounts without end from one address, or learn which of a list of
emails are customers'. A reset request sends an email to the account it
names: each account gets at most ``ACCOUNT_EMAILS_PER_HOUR``
(``accounts/mail.py``), but a script could name every account in turn.

So each POST of either form is counted before its view runs, as the
throttle counts (``throttle.counted``: one upsert guarded on the limit per key, shared
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

from datetime import UTC, datetime

from django.conf import settings
from django.shortcuts import render

from accounts.forms import QueuedPasswordResetForm, SignUpForm
from accounts.throttle import counted, when_again
from accounts.views import signup_page

# The POSTs limited here (url names).
SIGNUP = "accounts:signup"
RESET = "password_reset"

WINDOW = 3600  # seconds: the limits are per hour


def _again(form_class, request):
    """An unbound ``form_class`` showing the email the POST held: no check
    of it runs (none could say whether it has an account), and no password
    is ever shown back."""
    longest = form_class.base_fields["email"].max_length
    return form_class(initial={"email": request.POST.get("email", "")[:longest]})


def signup_refusal(request):
    """The sign-up form again with 429 when the address or the session is
    over its limit, or None (counted)."""
    now = datetime.now(UTC)
    if counted(
        request,
        prefix="signup:",
        per_address=settings.SIGNUPS_PER_ADDRESS,
        per_session=settings.SIGNUPS_PER_SESSION,
        window=WINDOW,
        now=now,
    ):
        return None
    limited = when_again(WINDOW, now)
    response = signup_page(
        request, _again(SignUpForm, request), status=429, limited=limited
    )
    response["Retry-After"] = str(limited["seconds"])
    return response


def reset_refusal(request):
    """The reset request's form again with 429 when the address is over its
    limit, or None (counted)."""
    now = datetime.now(UTC)
    if counted(
        request,
        prefix="reset:",
        per_address=settings.RESETS_PER_ADDRESS,
        per_session=None,
        window=WINDOW,
        now=now,
    ):
        return None
    limited = when_again(WINDOW, now)
    context = {"form": _again(QueuedPasswordResetForm, request), "limited": limited}
    response = render(
        request, "registration/password_reset_form.html", context, status=429
    )
    response["Retry-After"] = str(limited["seconds"])
    return response
