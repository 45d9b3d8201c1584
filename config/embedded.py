"""The embedded MongoDB-compatible server (SecantusDB) as a child process.

It runs as its own process, never inside a Django process: one daemon owns
one data directory and serves every web worker, the qcluster and management
commands alike. The owner holds an exclusive lock beside the data directory
for as long as the daemon runs (restarts included), and writes a small state
file so that other processes on the machine (``manage.py shell``,
``check_invariants``) can find and share the running server instead of
starting a second one. Which server binary runs is config/engine.py's choice.
"""

import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from config import engine as engines
from config.mongo import MongoUnavailable

# Options of the URI handed to every process that talks to the embedded
# server, tuned for one node on loopback, where the only network failure is
# the server itself being down (and ``serve`` restarting it):
# * a failed operation is not retried (retryReads / retryWrites off): the
#   retry would wait for a server that is not there, where a page should
#   say "back in a moment" at once (config.middleware). Retryable writes
#   exist to survive a replica set's failover, which a single node never
#   has, and each one costs the server a record to keep and prune;
# * the driver checks a failed server every half second (heartbeat), so
#   pages know at once that it is down, and within half a second that it
#   is back.
# How long an operation waits for a server is the process's own setting:
# short for web workers (config/gunicorn.py), patient elsewhere.
URI_OPTIONS = (
    "directConnection=true&heartbeatFrequencyMS=500&retryReads=false&retryWrites=false"
)


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

    def __init__(
        self,
        data_dir: Path,
        log_file: Path,
        *,
        sync_on_commit=True,
        engine: engines.Engine | None = None,
        cache_size: str | None = None,
        oplog: bool = False,
    ):
        self.data_dir = Path(data_dir)
        self.log_file = Path(log_file)
        self.sync_on_commit = sync_on_commit
        self.engine = engine or engines.resolve()
        self.cache_size = cache_size
        self.oplog = oplog
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
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
        if not self.engine.executable:
            raise MongoUnavailable(
                f"SecantusDB's {self.engine.name} server is not installed; run the "
                "README's setup or set MONGODB_URI"
            )
        return self.engine.executable

    def _take_lock(self) -> None:
        lock_path = self._lock_path(self.data_dir)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            owner = self.running_uri(self.data_dir)
            if owner is None:
                # Held, and no server answers for it: a backup or a restore
                # (``hold``), or a Marquee still starting its server.
                raise MongoUnavailable(
                    f"{self.data_dir} is in use by another process (a backup, a "
                    "restore, or a Marquee starting); try again when it is done"
                ) from None
            raise MongoUnavailable(
                f"another embedded MongoDB ({owner}) owns {self.data_dir}; stop that "
                "Marquee first, or set MONGODB_URI to share its server"
            ) from None
        self._lock_fd = fd

    @classmethod
    @contextmanager
    def hold(cls, data_dir: Path) -> Iterator[None]:
        """Hold ``data_dir``'s lock for the block, as a running daemon's
        owner does, so no Marquee starts on it meanwhile (a backup, a
        restore). Raises MongoUnavailable when one runs on it now."""
        # A server that is never started: only its lock is taken.
        idle = cls(
            Path(data_dir), Path(os.devnull), engine=engines.Engine("idle", None)
        )
        idle._take_lock()
        try:
            yield
        finally:
            idle._release_lock()

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
            self.port = free_port()
            self.uri = f"mongodb://127.0.0.1:{self.port}/?{URI_OPTIONS}"
            self._launch(timeout)
            return self.uri
        except BaseException:
            self.stop()
            raise

    def restart(self, *, timeout: float = 60.0) -> None:
        """Start the daemon again on the same data and the same port, so every
        process holding the URI reconnects by itself (``serve``'s supervisor).
        The lock stays held throughout: no one else may open the data
        meanwhile. WiredTiger recovers from its log after a crash."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._launch(timeout)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _args(self) -> list[str]:
        args = [
            self._executable(),
            # Every setting is a flag; this file (empty) stops the server
            # from picking up a secantusd.toml lying around the machine.
            "--config",
            str(self._config_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--storage-path",
            str(self.data_dir),
            "--log-level",
            "WARNING",
        ]
        if self.cache_size:
            args += ["--cache-size", self.cache_size]
        if self.sync_on_commit:
            # Without it a kill -9 loses the last acknowledged writes.
            args.append("--sync-on-commit")
        return args

    def _environment(self) -> dict[str, str]:
        """The daemon's environment: this process's, without the oplog.

        The oplog is a replica set's feed (secondaries, change streams,
        point-in-time restores). Marquee's embedded server is one node that
        none of them reads: nothing in Marquee watches a change stream,
        backups copy the stopped data directory (config/backup.py), and
        durability is WiredTiger's journal, synced on every commit. Writing
        an entry per document written cost the Rust server about a seventh
        of its CPU per write under concurrent writers (bench/RESULTS.md,
        "Without the oplog"). The switch is the Rust server's
        (``SECANTUS_DISABLE_OPLOG``); the Python server offers none and keeps
        writing its oplog, pruned after an hour. A real MongoDB
        (``MONGODB_URI``) keeps its own.
        """
        env = dict(os.environ)
        env.pop("SECANTUS_DISABLE_OPLOG", None)
        if not self.oplog:
            env["SECANTUS_DISABLE_OPLOG"] = "1"
        return env

    def _config_path(self) -> Path:
        path = self.data_dir.with_name(self.data_dir.name + ".toml")
        if not path.exists():
            path.write_text(
                "# Marquee passes every setting of the embedded server as a flag.\n"
            )
        return path

    def _launch(self, timeout: float) -> None:
        with open(self.log_file, "ab") as log:
            # Its own session: a Ctrl-C in the terminal reaches the owner,
            # which stops the web tier before the database.
            self.process = subprocess.Popen(
                self._args(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._environment(),
                start_new_session=True,
            )
        self._wait_ready(timeout)
        state = {
            "pid": self.process.pid,
            "port": self.port,
            "uri": self.uri,
            "engine": self.engine.name,
        }
        # Replaced whole, never seen half-written by a process looking for
        # the server.
        path = self._state_path(self.data_dir)
        partial = path.with_suffix(".json.new")
        partial.write_text(json.dumps(state))
        os.replace(partial, path)

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


class Supervisor:
    """Keeps one embedded server running for ``serve``.

    ``check`` is called from serve's main loop. When the daemon has died it
    is restarted on the same data and port after a back-off that doubles
    (``backoff``, 2x, 4x, ...); a daemon that then stays up for
    ``stable_after`` seconds earns its full budget of restarts back. When
    the budget is spent, ``check`` raises MongoUnavailable with one line,
    and serve stops cleanly. Meanwhile every page answers 503 (see
    config/middleware.py), and the web workers reconnect by themselves once
    the server answers again on the same port.
    """

    def __init__(
        self,
        server: EmbeddedServer,
        *,
        log,
        backoff: float = 0.5,
        max_restarts: int = 5,
        stable_after: float = 60.0,
    ):
        self.server, self.log = server, log
        self.backoff, self.max_restarts = backoff, max_restarts
        self.stable_after = stable_after
        self.restarts = 0
        self._restart_at: float | None = None
        self._up_since = time.monotonic()

    def check(self) -> None:
        now = time.monotonic()
        if self.server.alive():
            if self.restarts and now - self._up_since >= self.stable_after:
                self.restarts = 0
            return
        if self._restart_at is None:
            if self.restarts >= self.max_restarts:
                raise MongoUnavailable(
                    f"the embedded MongoDB exited {self.restarts + 1} times in a "
                    f"row; see {self.server.log_file}"
                )
            delay = self.backoff * 2**self.restarts
            self.log(
                f"the embedded MongoDB exited (code {self.server.process.returncode});"
                f" restarting it on the same data in {delay:g}s "
                f"(restart {self.restarts + 1} of {self.max_restarts})"
            )
            self._restart_at = now + delay
        if now >= self._restart_at:
            self._restart_at = None
            self.restarts += 1
            try:
                self.server.restart()
            except MongoUnavailable as exc:
                # Counted as a restart; the next check backs off further.
                self.log(f"the restart failed: {exc}")
                return
            self._up_since = time.monotonic()
            self.log(f"the embedded MongoDB is back ({self.server.uri})")
