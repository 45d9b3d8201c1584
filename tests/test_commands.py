"""Marquee's commands as a person runs them: real processes, real servers."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.conf import settings

from config.embedded import free_port
from tests.processes import (
    MANAGE,
    command_env,
    kill_tagged,
    manage,
    processes_tagged,
)

# A link's secret, as order links, claims and password resets carry one.
SECRET = "Secret-" + "t" * 30


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_unreachable_mongodb_uri_gives_one_clear_line(tmp_path):
    port = free_port()
    env = command_env(
        tmp_path, MONGODB_URI=f"mongodb://127.0.0.1:{port}/?directConnection=true"
    )

    result = manage("mongo_setup", env=env)

    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert f"MongoDB at mongodb://127.0.0.1:{port}" in line
    assert "unreachable" in line


def test_malformed_mongodb_uri_gives_one_clear_line(tmp_path):
    env = command_env(tmp_path, MONGODB_URI="mongo://nowhere")

    result = manage("serve", "--no-demo", env=env)

    assert result.returncode == 1
    assert "MONGODB_URI is not a valid MongoDB URI" in _one_line(result.stderr)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MARQUEE_HOLD_MINUTES", "half an hour"),
        ("MARQUEE_HOLD_MINUTES", "0"),
        ("MONGODB_POOL_SIZE", "-1"),
        ("MONGODB_TIMEOUT_MS", "0"),
        ("MARQUEE_CART_RETENTION_DAYS", "a week"),
    ],
)
def test_a_setting_that_cannot_work_stops_the_start_naming_it(tmp_path, name, value):
    """Not a traceback ending in "invalid literal for int()" (which of the
    thirty variables?), nor a shop whose carts expire as they fill."""
    env = command_env(tmp_path, **{name: value})

    result = manage("check", env=env)

    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith(f"Marquee cannot start: {name} must be a")
    assert line.endswith(f", not {value!r}.")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EMAIL_URL", "smtpx://shop:s3cret@mail.example.com:587/"),
        ("EMAIL_URL", "smtp://shop:s3cret@:587/"),
        ("EMAIL_URL", "smtp://shop:s3cret@mail.example.com:twenty-five/"),
        ("MARQUEE_SITE_URL", "shop.example.com"),
        ("DJANGO_ALLOWED_HOSTS", " , "),
        ("DATABASE_URL", "postgress://shop:s3cret@db.example.com/marquee"),
    ],
)
def test_an_address_that_cannot_work_stops_the_start_naming_it(tmp_path, name, value):
    """Rather than every email failing in the queue, retried for hours, links
    in emails leading nowhere, or every page answering 400. A mail server's
    password is not repeated."""
    env = command_env(tmp_path, **{name: value})

    result = manage("check", env=env)

    assert result.returncode == 1
    assert _one_line(result.stderr).startswith(f"Marquee cannot start: {name} ")
    assert "s3cret" not in result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [("MARQUEE_TIME_ZONE", "Europe/Londn"), ("MARQUEE_LOG_LEVEL", "verbose")],
)
def test_a_name_that_cannot_work_stops_the_start_naming_it(tmp_path, name, value):
    """Not a traceback ending in "Unable to configure logger 'marquee'"."""
    result = manage("check", env=command_env(tmp_path, **{name: value}))

    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith(f"Marquee cannot start: {name} must be")
    assert value.upper() in line.upper()


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status


def _timed_get(url: str) -> tuple[int, str, float]:
    """Status, body and seconds taken, whatever the status."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            status, body = response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode()
    return status, body, time.monotonic() - started


def _dead(pid: int) -> bool:
    """Exited, reaped or not (a zombie holds no socket any more)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_until_serving(url: str, proc: subprocess.Popen, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            if _get(url) == 200:
                return
        except OSError:
            # Poll interval: waiting on the process returns early if it dies.
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
    pytest.fail(f"{url} did not answer within {within}s")


def test_serve_runs_the_whole_stack_and_stops_leaving_no_process(tmp_path):
    """A first run, as ``make run`` starts on a fresh clone: the demo data
    and the staff account come with it (a small demo catalogue)."""
    port = free_port()
    env = command_env(tmp_path)
    serve = subprocess.Popen(
        [sys.executable, MANAGE, "serve", "--demo-items", "12", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_until_serving(f"http://127.0.0.1:{port}/healthz", serve, within=180)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as home:
            assert 'href="/p/' in home.read().decode()
        # The web server, the qcluster and the database all run.
        assert len(processes_tagged(env["MARQUEE_PROCESS_TAG"])) >= 4

        # A second Marquee on the same data directory refuses, clearly.
        second = manage("serve", "--no-demo", "--port", str(free_port()), env=env)
        assert second.returncode == 1
        assert "owns" in _one_line(second.stderr)

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
    finally:
        if serve.poll() is None:  # failed half-way: leave nothing behind
            serve.kill()
            kill_tagged(env["MARQUEE_PROCESS_TAG"])
    assert processes_tagged(env["MARQUEE_PROCESS_TAG"]) == []
    output = serve.stdout.read()
    assert "loading demo data" in output
    assert "Staff account (shown once): staff@marquee.example" in output
    assert "Marquee stopped" in output


def test_a_first_run_stopped_while_loading_the_demo_loads_it_at_the_next(tmp_path):
    """Ctrl-C while the demo loads leaves part of a catalogue and no staff
    account; the next start must not take that for a shop."""
    env = command_env(tmp_path)

    def serve(port: int, items: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, MANAGE, "serve", "--port", str(port)]
            + ["--demo-items", str(items)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    first = serve(free_port(), 5000)
    try:
        while "loading demo data" not in (line := first.stdout.readline()):
            assert line, "serve ended before loading the demo"
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 0
        assert "Staff account" not in first.stdout.read()

        port = free_port()
        again = serve(port, 12)
        _wait_until_serving(f"http://127.0.0.1:{port}/healthz", again, within=180)
        again.send_signal(signal.SIGTERM)
        assert again.wait(timeout=60) == 0
    finally:
        kill_tagged(env["MARQUEE_PROCESS_TAG"])  # failed half-way: leave nothing
    output = again.stdout.read()
    assert "Staff account (shown once): staff@marquee.example" in output
    assert "catalog: 12 items" in output
    assert "loading demo data (the last start stopped before it was done)" in output


def test_one_sigterm_to_the_group_stops_once_cleanly_with_the_socket_in_var(
    tmp_path,
):
    """``make run`` stopped with one SIGTERM to its process group: serve gets
    it from the group and again from make; it stops once, without a
    traceback. gunicorn's control socket is in var/run, not the user's."""
    port = free_port()
    env = command_env(tmp_path)
    serve = subprocess.Popen(
        [sys.executable, MANAGE, "serve", "--no-demo", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_until_serving(f"http://127.0.0.1:{port}/healthz", serve, within=120)
        assert (tmp_path / "run" / f"gunicorn-{port}.ctl").is_socket()
        site = f"http://127.0.0.1:{port}"
        # Links that are their own key, as gunicorn and Django log them: no
        # such order (Django logs "Not Found: <path>"), a password reset, a
        # claim opened signed out (it comes back as the login's ?next=).
        assert _timed_get(f"{site}/orders/MQ-1/{SECRET}/")[0] == 404
        assert _timed_get(f"{site}/accounts/password/reset/MQ/{SECRET}/")[0] == 200
        assert _timed_get(f"{site}/accounts/claim/MQ/{SECRET}/")[0] == 200

        os.killpg(serve.pid, signal.SIGTERM)
        serve.send_signal(signal.SIGTERM)  # what make passes on
        assert serve.wait(timeout=60) == 0
    finally:
        if serve.poll() is None:  # failed half-way: leave nothing behind
            serve.kill()
            kill_tagged(env["MARQUEE_PROCESS_TAG"])
    output = serve.stdout.read()
    assert "Traceback" not in output, output
    assert "did not stop" not in output, output  # none had to be killed
    assert SECRET not in output, output
    assert '"GET /orders/MQ-1/[hidden]/ HTTP/1.1" 404' in output
    assert "Not Found: /orders/MQ-1/[hidden]/" in output
    assert '"GET /accounts/password/reset/MQ/[hidden]/ HTTP/1.1" 200' in output
    assert "GET /accounts/login/?next=/accounts/claim/MQ/[hidden]/ " in output
    assert output.count("stopping Marquee") == 1
    assert "Marquee stopped" in output
    assert processes_tagged(env["MARQUEE_PROCESS_TAG"]) == []
    assert not (tmp_path / "run" / f"gunicorn-{port}.ctl").exists()


def test_serve_restarts_a_dead_database_and_pages_recover(tmp_path):
    """kill -9 the embedded server under ``serve``: pages say "back in a
    moment" at once while it is down (the embedded URI's short server
    selection timeout, not the driver's 30 s), serve restarts it on the same
    data and port, and the same pages answer again."""
    port = free_port()
    env = command_env(tmp_path)
    serve = subprocess.Popen(
        # A 10 s back-off holds the outage open while both pages are asked
        # for, however slowly a loaded machine answers them (2 x 4 s).
        [sys.executable, MANAGE, "serve", "--no-demo", "--port", str(port)]
        + ["--db-restart-backoff", "10"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    site = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(f"{site}/healthz", serve, within=120)
        assert _get(f"{site}/") == 200
        state_file = tmp_path / "mongo.json"
        before = json.loads(state_file.read_text())

        os.kill(before["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not _dead(before["pid"]):
            assert time.monotonic() < deadline, "the daemon did not die"
            os.sched_yield()

        # Inside the back-off, so the answer is the outage's, and at once:
        # the embedded URI's short server selection, not the driver's 30 s
        # (a loaded CI machine once took 1.02 s to render it).
        status, body, took = _timed_get(f"{site}/")
        assert (status, took < 4.0) == (503, True), (status, took)
        assert "Back in a moment" in body
        status, body, took = _timed_get(f"{site}/healthz")
        assert (status, took < 4.0) == (503, True), (status, took)
        assert json.loads(body)["checks"]["mongodb"].startswith("unreachable")

        _wait_until_serving(f"{site}/", serve, within=60)
        # The state file is rewritten once the new daemon answers, which
        # may be a moment after a page has already been served by it.
        deadline = time.monotonic() + 10
        while (after := json.loads(state_file.read_text()))["pid"] == before["pid"]:
            assert time.monotonic() < deadline, "the state file kept the dead pid"
            os.sched_yield()
        assert after["uri"] == before["uri"]  # same port: workers reconnect
        assert _get(f"{site}/healthz") == 200

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
    finally:
        if serve.poll() is None:  # failed half-way: leave nothing behind
            serve.kill()
            kill_tagged(env["MARQUEE_PROCESS_TAG"])
    output = serve.stdout.read()
    assert "restarting it on the same data" in output
    assert "the embedded MongoDB is back" in output
    assert processes_tagged(env["MARQUEE_PROCESS_TAG"]) == []


def test_serve_points_email_links_where_it_listens():
    """Without MARQUEE_SITE_URL, the web and queue processes serve spawns
    link to serve's own address (a demo on another port gets working
    links)."""
    from config.management.commands.serve import Command

    assert Command._site_url({"host": "127.0.0.1", "port": 8102}) == (
        "http://127.0.0.1:8102"
    )
    assert Command._site_url({"host": "0.0.0.0", "port": 80}) == "http://127.0.0.1:80"
    assert Command._site_url({"host": "::1", "port": 8000}) == "http://[::1]:8000"


@pytest.mark.parametrize(
    ("email_url", "backend", "timeout"),
    [
        ("", "django.core.mail.backends.filebased.EmailBackend", "20"),
        (
            "smtp://u:p@mail.example.com:587/",
            "django.core.mail.backends.smtp.EmailBackend",
            "20",
        ),
        (
            "smtp://u:p@mail.example.com:587/?timeout=5",
            "django.core.mail.backends.smtp.EmailBackend",
            "5",
        ),
    ],
)
def test_email_settings_as_a_process_starts_them(tmp_path, email_url, backend, timeout):
    """Without EMAIL_URL every email is a file (the demo's); with one, SMTP;
    either way a send times out inside the queue's task timeout."""
    env = command_env(tmp_path, EMAIL_URL=email_url)
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os;"
            "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings');"
            "django.setup();"
            "from django.conf import settings;"
            "print(settings.EMAIL_BACKEND, settings.EMAIL_TIMEOUT)",
        ],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert shown.stdout.split() == [backend, timeout]
