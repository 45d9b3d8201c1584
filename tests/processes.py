"""Helpers for tests that run Marquee's commands as real processes."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from django.conf import settings

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")


def command_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """An environment for a child Marquee process, tagged to find its descendants."""
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(
        MARQUEE_VAR_DIR=str(var_dir),
        MARQUEE_PROCESS_TAG=uuid.uuid4().hex,
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def manage(*args: str, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, MANAGE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=settings.BASE_DIR,
    )


def bench_output(script: str, *args: str, timeout: float = 600) -> str:
    """What ``bench/<script>`` printed, run with this interpreter from the
    project's root (on its own embedded server unless MONGODB_URI names
    one); the test fails with everything it printed if it exits non-zero."""
    done = subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=settings.BASE_DIR,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def processes_tagged(tag: str) -> list[int]:
    """PIDs of live processes whose environment carries ``tag``."""
    needle = f"MARQUEE_PROCESS_TAG={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_tagged(tag: str) -> None:
    """SIGKILL every live process carrying ``tag``: a test that failed
    half-way (its serve killed before it could stop its children) leaves no
    database or worker behind for the tests after it."""
    for pid in processes_tagged(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
