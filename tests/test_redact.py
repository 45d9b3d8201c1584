"""A link's secret never reaches a log line (config/redact.py).

The whole path through ``serve`` (gunicorn's access log and Django's
request log) is tested in tests/test_commands.py; these cover the rule on
every kind of link that carries one."""

import logging

import pytest
from django.urls import reverse

from config.gunicorn import AccessLog
from config.redact import HIDDEN, RedactPaths, redact_path, redact_request_line

TOKEN = "Zq3-x_9" + "k" * 25
SESSION = "0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("shop:order_link", {"number": "MQ-7", "token": TOKEN}),
        ("shop:order_link_cancel", {"number": "MQ-7", "token": TOKEN}),
        ("shop:order_link_pdf", {"number": "MQ-7", "token": TOKEN}),
        (
            "shop:order_link_ics",
            {"number": "MQ-7", "token": TOKEN, "session_id": SESSION},
        ),
        ("accounts:claim", {"uidb64": "MQ", "token": TOKEN}),
        ("password_reset_confirm", {"uidb64": "MQ", "token": TOKEN}),
    ],
)
def test_every_link_that_is_its_own_key_is_logged_without_it(name, kwargs):
    path = reverse(name, kwargs=kwargs)

    logged = redact_path(path)

    assert TOKEN not in logged
    assert logged == path.replace(TOKEN, HIDDEN)


@pytest.mark.parametrize(
    "path",
    [
        "/orders/MQ-7/",  # the shopper's own order: no secret in it
        "/orders/MQ-7/cancel/",
        "/p/" + TOKEN + "/",  # an item id as long as a token is no secret
        "/staff/orders/MQ-7/",
        "/no/such/page/" + TOKEN + "/",  # matches nothing: as it came
        "/",
    ],
)
def test_paths_without_a_secret_are_logged_as_they_came(path):
    assert redact_path(path) == path


def test_a_link_opened_signed_out_comes_back_as_the_login_pages_next():
    path = "/accounts/login/?next=" + reverse(
        "accounts:claim", kwargs={"uidb64": "MQ", "token": TOKEN}
    ).replace("/", "%2F")

    assert redact_path(path) == f"/accounts/login/?next=/accounts/claim/MQ/{HIDDEN}/"


def test_a_percent_encoded_secret_and_the_query_string():
    encoded = "%5A" + TOKEN[1:]  # "Z" written as %5A reaches the same view
    path = f"/orders/MQ-7/{encoded}/?from=email&x={TOKEN[:4]}"

    assert redact_path(path) == f"/orders/MQ-7/{HIDDEN}/?from=email&x={TOKEN[:4]}"


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        # An address in the query is no absolute form of the target.
        (
            f"/orders/MQ-7/{TOKEN}/?u=https://x.example/a",
            f"/orders/MQ-7/{HIDDEN}/?u=https://x.example/a",
        ),
        # A ?next= whose own path has a query string.
        (
            f"/accounts/login/?next=%2Faccounts%2Fclaim%2FMQ%2F{TOKEN}%2F%3Futm%3Dx",
            f"/accounts/login/?next=/accounts/claim/MQ/{HIDDEN}/%3Futm%3Dx",
        ),
        # Without its slash: Django redirects it to the link, so it is one.
        (f"/orders/MQ-7/{TOKEN}", f"/orders/MQ-7/{HIDDEN}"),
        # A slash written %2F reaches the same view.
        (f"/orders/MQ-7%2F{TOKEN}/", f"/orders/{HIDDEN}/"),
    ],
)
def test_the_ways_round_the_rule(path, logged):
    assert redact_path(path) == logged


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        (
            f"GET /orders/MQ-7/{TOKEN}/tickets.pdf HTTP/1.1",
            f"GET /orders/MQ-7/{HIDDEN}/tickets.pdf HTTP/1.1",
        ),
        (
            f"GET http://shop.example/orders/MQ-7/{TOKEN}/ HTTP/1.1",
            f"GET http://shop.example/orders/MQ-7/{HIDDEN}/ HTTP/1.1",
        ),
        ("GET /p/item-1/ HTTP/1.1", "GET /p/item-1/ HTTP/1.1"),
        ("garbage", "garbage"),
    ],
)
def test_the_request_line(line, logged):
    assert redact_request_line(line) == logged


def test_gunicorn_access_log_atoms_hide_the_secret():
    class Response:
        status = "200 OK"
        sent = 10
        headers = []

    class Elapsed:
        seconds, microseconds = 0, 1500

    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": f"/orders/MQ-7/{TOKEN}/",
        "PATH_INFO": f"/orders/MQ-7/{TOKEN}/",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
    }
    logger = AccessLog.__new__(AccessLog)  # atoms() reads no configuration

    atoms = logger.atoms(Response(), [], environ, Elapsed())

    assert atoms["r"] == f"GET /orders/MQ-7/{HIDDEN}/ HTTP/1.1"
    assert atoms["U"] == f"/orders/MQ-7/{HIDDEN}/"


def test_gunicorn_error_log_hides_the_secret(caplog):
    logger = AccessLog.__new__(AccessLog)
    logger.error_log = logging.getLogger("gunicorn.error.test")

    with caplog.at_level(logging.ERROR, logger="gunicorn.error.test"):
        logger.error("Error handling request %s", f"/orders/MQ-7/{TOKEN}/")

    assert caplog.messages == [f"Error handling request /orders/MQ-7/{HIDDEN}/"]


def test_runserver_request_lines_hide_the_secret():
    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        (f"GET /orders/MQ-7/{TOKEN}/ HTTP/1.1", "200", "512"),
        None,
    )

    RedactPaths().filter(record)

    assert record.getMessage() == f'"GET /orders/MQ-7/{HIDDEN}/ HTTP/1.1" 200 512'


def test_django_request_log_records_hide_the_secret():
    record = logging.LogRecord(
        "django.request",
        logging.WARNING,
        __file__,
        1,
        "%s: %s",
        ("Not Found", f"/orders/MQ-7/{TOKEN}/cancel/"),
        None,
    )

    assert RedactPaths().filter(record)

    assert record.getMessage() == f"Not Found: /orders/MQ-7/{HIDDEN}/cancel/"


def test_a_refused_staff_page_is_logged_in_one_line_without_a_traceback(db):
    """A 403 is the permission check doing its job: one line in the log,
    not a screenful of PermissionDenied's traceback."""
    import io

    from django.contrib.auth import get_user_model
    from django.test import Client

    (console,) = [
        h for h in logging.getLogger("django").handlers if h.name == "console"
    ]
    written = io.StringIO()
    before = console.setStream(written)
    try:
        get_user_model().objects.create_user("s@example.com", "s@example.com", "pw")
        client = Client()
        client.login(username="s@example.com", password="pw")
        assert client.get("/staff/").status_code == 403
    finally:
        console.setStream(before)

    lines = written.getvalue().splitlines()
    assert any("Forbidden (Permission denied): /staff/" in line for line in lines)
    assert "Traceback" not in written.getvalue()


def test_a_request_for_another_host_is_logged_in_one_line_without_a_traceback():
    """Scanners ask for the site under any name: one line each, naming the
    host, not a screenful of DisallowedHost's traceback."""
    import io

    from django.test import Client

    (console,) = [
        h for h in logging.getLogger("django").handlers if h.name == "console"
    ]
    written = io.StringIO()
    before = console.setStream(written)
    try:
        assert Client(HTTP_HOST="scanner.example").get("/").status_code == 400
    finally:
        console.setStream(before)

    assert "Invalid HTTP_HOST header: 'scanner.example'" in written.getvalue()
    assert "Traceback" not in written.getvalue()
