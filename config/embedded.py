"""The embedded MongoDB-compatible server (SecantusDB) as a child process.

It runs as its own process, never inside a Django process: one daemon owns
one data directory and serves every web worker, the qcluster and management
commands alike. The owner holds an exclusive lock beside the data directory
for as long as the daemon runs, and writes a small state file so that other
processes on the machine (``manage.py shell``, ``check_invariants``) can find
and share the running server instead of starting a second one.
"""

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from config.mongo import MongoUnavailable

DAEMON = "secantusd-py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedServer:
    """Start, find and stop one SecantusDB daemon for one data directory."""

    def __init__(self, data_dir: Path, log_file: Path, *, sync_on_commit=True):
        self.data_dir = Path(data_dir)
        self.log_file = Path(log_file)
        self.sync_on_commit = sync_on_commit
        self.process: subprocess.Popen | None = None
        self.uri: str | None = None
        self._lock_fd: int | None = None

    @staticmethod
    def _lock_path(data_dir: Path) -> Path:
        return Path(data_dir).with_name(Path(data_dir).name + ".lock")

    @staticmethod
    def _state_path(data_dir: Path) -> Path:
        return Path(data_dir).with_name(Path(data_dir).name + ".json")

    @classmethod
    def running_uri(cls, data_dir: Path) -> str | None:
        """The URI of a live daemon serving ``data_dir``, if there is one."""
        try:
            state = json.loads(cls._state_path(data_dir).read_text())
        except (OSError, ValueError):
            return None
        if not _pid_alive(state.get("pid", -1)):
            return None
        return state.get("uri")

    def _executable(self) -> str:
        # The daemon is installed beside the interpreter running Marquee.
        candidate = Path(sys.executable).with_name(DAEMON)
        found = str(candidate) if candidate.exists() else shutil.which(DAEMON)
        if not found:
            raise MongoUnavailable(
                f"{DAEMON} is not installed; run the README's setup or set MONGODB_URI"
            )
        return found

    def _take_lock(self) -> None:
        lock_path = self._lock_path(self.data_dir)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            owner = self.running_uri(self.data_dir) or "unknown address"
            raise MongoUnavailable(
                f"another embedded MongoDB ({owner}) owns {self.data_dir}; stop that "
                "Marquee first, or set MONGODB_URI to share its server"
            ) from None
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def start(self, *, timeout: float = 60.0) -> str:
        """Start the daemon on a free loopback port and wait until it answers."""
        self._take_lock()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            port = free_port()
            args = [
                self._executable(),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--storage-path",
                str(self.data_dir),
                "--log-level",
                "WARNING",
            ]
            if self.sync_on_commit:
                # Without it a kill -9 loses the last acknowledged writes.
                args.append("--sync-on-commit")
            with open(self.log_file, "ab") as log:
                # Its own session: a Ctrl-C in the terminal reaches the owner,
                # which stops the web tier before the database.
                self.process = subprocess.Popen(
                    args,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            self.uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
            self._wait_ready(timeout)
            self._state_path(self.data_dir).write_text(
                json.dumps({"pid": self.process.pid, "port": port, "uri": self.uri})
            )
            return self.uri
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        client = MongoClient(self.uri, serverSelectionTimeoutMS=250, connect=False)
        try:
            while True:
                if self.process.poll() is not None:
                    raise MongoUnavailable(
                        f"the embedded MongoDB exited at start "
                        f"(code {self.process.returncode}); see {self.log_file}"
                    )
                try:
                    client.admin.command("ping")
                    return
                except PyMongoError:
                    if time.monotonic() > deadline:
                        raise MongoUnavailable(
                            "the embedded MongoDB did not answer within "
                            f"{timeout:.0f}s; see {self.log_file}"
                        ) from None
        finally:
            client.close()

    def stop(self, *, timeout: float = 20.0) -> None:
        """Stop the daemon cleanly (SIGTERM checkpoints WiredTiger), then unlock."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._state_path(self.data_dir).unlink(missing_ok=True)
        self._release_lock()
        self.process = None
