"""The signing key: never the public development key. Generated once per
installation under var/ (mode 0600) when DJANGO_SECRET_KEY is unset; a
deployment check fails on the development key; `check --deploy` with
production settings shows only the warnings the README explains."""

import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.secret import DEV_SECRET_KEY, secret_key


def test_a_key_is_made_on_first_run_private_and_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)

    first = secret_key(tmp_path)
    again = secret_key(tmp_path)

    path = tmp_path / "secret_key"
    assert first == again == path.read_text().strip()
    assert len(first) >= 50 and first != DEV_SECRET_KEY
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_key(tmp_path / "other") != first  # each installation its own


def test_concurrent_first_runs_agree_on_one_key(tmp_path, monkeypatch):
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)

    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: secret_key(tmp_path), range(16)))

    assert len(keys) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]


def test_the_environment_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 60)

    assert secret_key(tmp_path) == "x" * 60
    assert not (tmp_path / "secret_key").exists()


def test_marquee_does_not_run_with_the_public_key():
    assert settings.SECRET_KEY != DEV_SECRET_KEY


def test_the_deploy_check_fails_on_the_development_key(settings):
    settings.SECRET_KEY = DEV_SECRET_KEY

    with pytest.raises(SystemCheckError, match="marquee.E001"):
        call_command("check", deploy=True, fail_level="ERROR")


PRODUCTION = {
    "DJANGO_SECRET_KEY": "p" * 20 + "Q7-kZ2x9!r@L0vW" + "s" * 30,
    "DJANGO_ALLOWED_HOSTS": "tickets.example.com",
    "MARQUEE_SECURE_COOKIES": "1",
    "MARQUEE_SSL_REDIRECT": "1",
    "MARQUEE_HSTS_SECONDS": "31536000",
    "MARQUEE_BEHIND_PROXY": "1",
    "EMAIL_URL": "smtp://mailer:secret@mail.example.com:587/?tls=True",
    "MONGODB_URI": "mongodb://127.0.0.1:1/marquee",
}


def test_check_deploy_with_production_settings_shows_only_explained_warnings(
    tmp_path,
):
    env = {**os.environ, **PRODUCTION, "MARQUEE_VAR_DIR": str(tmp_path)}
    env.pop("MARQUEE_DEBUG", None)
    run = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    shown = set(re.findall(r"\(([a-z_]+\.[EW]\d+)\)", run.stdout + run.stderr))
    readme = (settings.BASE_DIR / "README.md").read_text()
    explained = set(re.findall(r"`([a-z_]+\.W\d+)`", readme))
    assert not {s for s in shown if ".E" in s}, run.stderr
    assert shown <= explained, (shown - explained, run.stderr)
    assert run.returncode == (1 if shown else 0), run.stderr
