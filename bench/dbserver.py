"""The database a run talks to: the embedded server, or ``MONGODB_URI``.

Without a URI a SecantusDB daemon is started in a temporary directory with
``--sync-on-commit``, as ``serve`` runs it in production, and stopped at the
end; its PID gives the daemon's peak memory. Each measurement (a level's run,
a search step) gets a daemon of its own (``renew``): on a daemon shared by a
whole invocation, the services level once completed 1 cart flow/s at every
search step after a 400-user overload, against 5 on a fresh daemon, so a
figure depended on the runs before it. Each run also uses a database of its
own (``fresh_name``), dropped afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from config import engine as engines
from config.embedded import EmbeddedServer

# serverStatus opcounters that are data operations (not hello, ping, ...).
DATA_OPS = ("insert", "query", "update", "delete", "getmore")
# /proc counts CPU time in these (1/100 s on most machines).
CPU_TICK = 1 / os.sysconf("SC_CLK_TCK")


class Target:
    """A running MongoDB server for the length of a ``with`` block."""

    def __init__(
        self,
        uri: str | None = None,
        *,
        db_pid: int | None = None,
        sync_on_commit: bool = True,
        oplog: bool = False,
        engine: str | None = None,
    ):
        self.uri = uri
        self.engine = engine
        self.pid = db_pid
        self.sync_on_commit = sync_on_commit
        self.oplog = oplog
        self.description = "the server given by --uri / MONGODB_URI" if uri else ""
        self._server: EmbeddedServer | None = None
        self._home: str | None = None

    def __enter__(self) -> Target:
        if self.uri is None:
            self._start()
        else:
            client = MongoClient(self.uri, serverSelectionTimeoutMS=5000)
            try:
                client.admin.command("ping")
            finally:
                client.close()
        return self

    def renew(self) -> None:
        """A fresh embedded daemon for the next measurement (nothing to do
        for a server given by URI)."""
        if self._server is not None:
            self.__exit__()
            self._start()

    def _start(self) -> None:
        self._home = tempfile.mkdtemp(prefix="marquee-bench-")
        home = Path(self._home)
        self._server = EmbeddedServer(
            home / "data",
            home / "mongo.log",
            sync_on_commit=self.sync_on_commit,
            oplog=self.oplog,
            # The raw and http levels run without Django's settings, so the
            # default is read as settings.py reads it.
            engine=engines.resolve(
                self.engine or os.environ.get("MARQUEE_DB_ENGINE") or "rust"
            ),
        )
        try:
            self.uri = self._server.start()
        except BaseException:
            # __exit__ is not called when __enter__ raises.
            shutil.rmtree(self._home, ignore_errors=True)
            raise
        self.pid = self._server.process.pid
        sync = "--sync-on-commit" if self.sync_on_commit else "NO --sync-on-commit"
        oplog = "with an oplog" if self.oplog else "no oplog"
        self.description = (
            f"embedded SecantusDB, {self._server.engine.name} server, {sync}, {oplog}, "
            "fresh daemon per measurement"
        )

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.stop()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)

    def data_ops(self) -> int | None:
        """Data operations the server has executed so far, from any client."""
        client = MongoClient(self.uri, serverSelectionTimeoutMS=5000)
        try:
            counters = client.admin.command("serverStatus")["opcounters"]
        except (PyMongoError, KeyError):
            return None
        finally:
            client.close()
        return sum(counters.get(name, 0) for name in DATA_OPS)

    def drop(self, name: str) -> None:
        client = MongoClient(self.uri)
        try:
            client.drop_database(name)
        finally:
            client.close()


def fresh_name(level: str, scenario: str) -> str:
    return f"bench_{level}_{scenario.replace('-', '_')}_{uuid.uuid4().hex[:8]}"


def peak_rss_kib(pid: int | None) -> int | None:
    """The process's resident-set high-water mark (VmHWM), if it can be read."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss(pid: int | None) -> bool:
    """Restart the high-water mark at the current RSS (Linux clear_refs 5)."""
    if pid is None:
        return False
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def machine_ticks() -> tuple[int, int, int] | None:
    """The whole machine's CPU ticks since boot from /proc/stat: (busy, idle,
    stolen). Busy is user, nice, system, irq and softirq time; idle counts
    iowait too; stolen is what the host gave other guests while this one
    wanted to run (a virtual machine's neighbours). None off Linux."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, fields[:8])
    return user + nice + system + irq + softirq, idle + iowait, steal


def machine_shares(
    before: tuple[int, int, int] | None, after: tuple[int, int, int] | None
) -> tuple[float, float, float] | None:
    """(busy, idle, stolen) between two ``machine_ticks``, as shares of all
    the machine's CPU time in between (they add up to 1)."""
    if before is None or after is None:
        return None
    spent = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(spent)
    return None if total <= 0 else tuple(part / total for part in spent)


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time the process has used so far, in steps of one
    clock tick (``CPU_TICK``): the kernel charges a tick to whichever process
    it finds running, so a figure of a few ticks is a sample, not a sum."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * CPU_TICK


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """Marquee connected to a scratch database (``<prefix>_<pid>``) on
    ``MONGODB_URI``, or on a fresh embedded server synced on every commit as
    ``serve`` runs it; indexes made, the database dropped at the end.
    Yields the server's URI. For the micro-benchmarks, which run in Django."""
    from config import mongo

    with Target(os.environ.get("MONGODB_URI")) as target:
        name = f"{prefix}_{os.getpid()}"
        mongo.connect(target.uri, db=name)
        try:
            mongo.ensure_indexes()
            yield target.uri
        finally:
            target.drop(name)
