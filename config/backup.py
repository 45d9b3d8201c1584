"""A copy of the shop's data, and putting it back: ``manage.py backup`` and
``manage.py restore``.

What a shop on the embedded database keeps, in one ``.tar.gz``:

* ``mongo/``: the embedded database's directory (catalog, stock, carts,
  orders, performances, the back office's records);
* ``db.sqlite3``: Django's database (accounts, sessions, the scheduled
  jobs), when it is the default SQLite file;
* ``secret_key``: the signing key, when it lives in the var directory
  (order links and password resets are signed with it).

Taken with Marquee stopped, always. A copy read collection by collection
while the shop sells is no state the shop was ever in: a unit read on the
counter before a hold took it and in the hold after counts twice, which no
crash can leave and the reconciler does not repair. With the daemon
stopped, its files are a checkpoint WiredTiger opens as it would after a
clean shutdown. The data directory's lock (``EmbeddedServer.hold``) says
whether a Marquee runs on it.

With ``MONGODB_URI`` the database is another server's: back it up with its
own tools (``mongodump``, snapshots); these commands refuse.
"""

from __future__ import annotations

import shutil
import sqlite3
import tarfile
import tempfile
from contextlib import closing
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connections

from config.embedded import EmbeddedServer
from config.secret import KEY_FILE as SECRET

MONGO = "mongo"
SQLITE = "db.sqlite3"


class BackupRefused(Exception):
    """The backup or restore cannot be done now; the message says why."""


def _check_embedded() -> None:
    if settings.MONGODB_URI:
        raise BackupRefused(
            "MONGODB_URI is set: back that server up with its own tools "
            "(mongodump, snapshots); this command copies the embedded database"
        )


def _sqlite_path() -> Path | None:
    """Django's database file, when it is SQLite."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        return None
    return Path(database["NAME"])


def _secret_path() -> Path:
    return Path(settings.VAR_DIR) / SECRET


def backup(to: Path, *, now: datetime) -> tuple[Path, list[str]]:
    """Write ``marquee-backup-<time>.tar.gz`` into the directory ``to``;
    returns its path and what it holds. Raises BackupRefused while a
    Marquee runs on the data."""
    _check_embedded()
    data = Path(settings.MONGO_EMBEDDED_DIR)
    if not data.is_dir():
        raise BackupRefused(f"there is no embedded database in {data} to back up")
    to.mkdir(parents=True, exist_ok=True)
    archive = to / f"marquee-backup-{now:%Y%m%d-%H%M%S}.tar.gz"
    with EmbeddedServer.hold(data), tempfile.TemporaryDirectory() as work:
        held = [MONGO]
        part = archive.with_name(archive.name + ".part")
        try:
            held += _write(part, data, Path(work))
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        # Renamed when complete: a backup cut short is never taken for one.
        part.rename(archive)
    return archive, held


def _write(part: Path, data: Path, work: Path) -> list[str]:
    """The archive's parts into ``part``; what it holds besides the
    database."""
    held = []
    with tarfile.open(part, "w:gz") as tar:
        tar.add(data, arcname=MONGO)
        sqlite = _sqlite_path()
        if sqlite is not None and sqlite.exists():
            # SQLite's own backup: one consistent file, whatever its
            # write-ahead log holds.
            copy = work / SQLITE
            connections["default"].close()
            with sqlite3.connect(sqlite) as source, sqlite3.connect(copy) as dest:
                source.backup(dest)
            tar.add(copy, arcname=SQLITE)
            held.append(SQLITE)
        if _secret_path().exists():
            tar.add(_secret_path(), arcname=SECRET)
            held.append(SECRET)
    return held


def restore(archive: Path, *, now: datetime, replace: bool = False) -> list[str]:
    """Put the data of ``archive`` back; returns what it restored. What is
    there already is kept beside it (``<name>.replaced-<time>``) with
    ``replace``, else the restore refuses. Raises BackupRefused while a
    Marquee runs on the data."""
    _check_embedded()
    if not archive.is_file():
        raise BackupRefused(f"{archive} is not a file")
    data = Path(settings.MONGO_EMBEDDED_DIR)
    targets = {MONGO: data, SECRET: _secret_path()}
    sqlite = _sqlite_path()
    if sqlite is not None:
        targets[SQLITE] = sqlite
    with (
        EmbeddedServer.hold(data),
        tempfile.TemporaryDirectory(dir=data.parent) as work,
    ):
        try:
            with tarfile.open(archive, "r:gz") as tar:
                # The "data" filter refuses absolute paths, links out of the
                # directory and device files: an archive cannot write
                # anywhere else.
                tar.extractall(work, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise BackupRefused(f"{archive} is not a Marquee backup: {exc}") from None
        found = [name for name in targets if (Path(work) / name).exists()]
        if MONGO not in found:
            raise BackupRefused(f"{archive} holds no embedded database")
        # The signing key is not asked about: any Django process (this one
        # included) makes a new one when it finds none, and the restored
        # data's links were signed with the backup's. A different one there
        # is kept aside like the rest.
        present = [n for n in found if n != SECRET and _present(targets[n])]
        if present and not replace:
            raise BackupRefused(
                f"{', '.join(str(targets[name]) for name in present)} already "
                "exist: restore with --replace (they are kept beside it)"
            )
        connections["default"].close()
        if sqlite is not None and sqlite.exists():
            _fold_log(sqlite)
        for name in found:
            target = targets[name]
            if _present(target) and not _same(target, Path(work) / name):
                kept = f"{target.name}.replaced-{now:%Y%m%d-%H%M%S}"
                target.rename(target.with_name(kept))
            elif target.is_file():
                target.unlink()
            elif target.is_dir():
                target.rmdir()  # empty (else it is present, and kept aside)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(Path(work) / name, target)
    return found


def _fold_log(sqlite: Path) -> None:
    """Write what SQLite's write-ahead log holds into its database file, and
    remove the log. A Marquee that was killed (a crash, the reason for many
    a restore) leaves its log beside the file: kept there, it would be
    played onto the restored file (accounts and sessions of after the
    backup, or a corrupt file), and the data kept aside would lack it."""
    with closing(sqlite3.connect(sqlite)) as database:
        database.execute("PRAGMA journal_mode=DELETE")


def _present(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def _same(path: Path, other: Path) -> bool:
    """Two files with the same bytes (never a directory)."""
    return (
        path.is_file() and other.is_file() and path.read_bytes() == other.read_bytes()
    )
