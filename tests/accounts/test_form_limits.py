"""The hourly limits on the account forms anyone may post
(accounts/formlimits.py): sign-up, per client address and per session, and
the password reset request, per client address. Counted before the view
runs and after CSRF's check; over a limit, the form again with 429 and
Retry-After, the typed email kept, nothing made or sent."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from shop.identity import SESSION_KEY
from tests.accounts.conftest import PASSWORD, sent

HOUR = 3600
SIGNUP = "/accounts/signup/"
RESET = "/accounts/password/reset/"


@pytest.fixture(autouse=True)
def mid_hour(monkeypatch):
    """The limits' clock pinned half-way through an hour (a test's requests
    never straddle a window's end), a day ahead (the TTL index must not reap
    the counts while the test runs)."""
    ahead = datetime.now(UTC) + timedelta(days=1)
    fixed = datetime.fromtimestamp(
        int(ahead.timestamp()) // HOUR * HOUR + HOUR // 2, UTC
    )

    class Pinned(datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    monkeypatch.setattr("accounts.formlimits.datetime", Pinned)
    return fixed


def signup(client, email, password=PASSWORD, **extra):
    return client.post(
        SIGNUP, {"email": email, "password1": password, "password2": password, **extra}
    )


def at(moment) -> str:
    return timezone.localtime(moment).strftime("%H:%M")


@pytest.mark.parametrize("limit", [1, 3])
def test_sign_ups_past_the_address_limit_get_the_form_again_with_429(
    settings, limit, mid_hour
):
    settings.SIGNUPS_PER_ADDRESS = limit
    # Each a new browser without a session, as a script would be.
    answers = [signup(Client(), f"u{n}@example.com").status_code for n in range(limit)]

    refused = signup(Client(), "one-more@example.com", "typed-secret-4711")

    assert answers == [302] * limit
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1800"  # what is left of the hour
    page = refused.content.decode()
    assert "too many sign-ups" in page
    retry_at = mid_hour + timedelta(seconds=1800)
    assert f"Please try again in 30 minutes (at {at(retry_at)})." in page
    assert 'value="one-more@example.com"' in page  # what was typed stays
    assert "typed-secret-4711" not in page  # not the password
    assert not User.objects.filter(username="one-more@example.com").exists()
    assert User.objects.count() == limit
    # Another address is counted on its own.
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert signup(other, "other@example.com").status_code == 302


def test_one_browser_is_limited_by_its_session_and_every_refusal_counts(settings, ada):
    settings.SIGNUPS_PER_SESSION = 2
    browser = Client()
    session = browser.session  # a browser with a session: a cart, say
    session[SESSION_KEY] = "a-shoppers-token"
    session.save()

    answers = [signup(browser, ada.email) for _ in range(3)]

    assert [a.status_code for a in answers] == [400, 400, 429]
    assert "exists already" in answers[0].content.decode()
    # Past the limit, nothing more is said about the email.
    assert "exists already" not in answers[2].content.decode()
    assert answers[2]["Retry-After"] == "1800"
    # The address is far from its own limit: another browser signs up.
    assert signup(Client(), "grace@example.com").status_code == 302


def csrf_token(client, path) -> str:
    page = client.get(path).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]


def test_a_forged_sign_up_is_refused_as_forged_and_not_counted(settings):
    settings.SIGNUPS_PER_ADDRESS = 1
    forger = Client(enforce_csrf_checks=True)
    browser = Client(enforce_csrf_checks=True)
    token = csrf_token(browser, SIGNUP)

    forged = [signup(forger, f"bot{n}@example.com").status_code for n in range(3)]
    real = signup(browser, "grace@example.com", csrfmiddlewaretoken=token)
    forged_after = signup(forger, "bot9@example.com")

    assert forged == [403] * 3
    assert real.status_code == 302  # the forged ones took none of the limit
    assert forged_after.status_code == 403  # refused as forged, not as too many
    assert list(User.objects.values_list("username", flat=True)) == [
        "grace@example.com"
    ]


def test_reset_requests_past_the_address_limit_get_the_form_again_with_429(
    settings, ada, mail_dir
):
    settings.RESETS_PER_ADDRESS = 2
    settings.ACCOUNT_EMAILS_PER_HOUR = 10  # the account's own cap is not reached
    answers = [Client().post(RESET, {"email": ada.email}).status_code for _ in "ab"]

    refused = Client().post(RESET, {"email": ada.email})

    assert answers == [302, 302]
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1800"
    page = refused.content.decode()
    assert "too many password reset requests" in page
    assert "No email was sent." in page
    assert f'value="{ada.email}"' in page
    assert len(sent(mail_dir)) == 2
    # Another address is counted on its own.
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert other.post(RESET, {"email": ada.email}).status_code == 302
    assert len(sent(mail_dir)) == 3
