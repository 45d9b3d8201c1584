"""``manage.py backup`` and ``restore`` as a person runs them: real
processes, the real embedded server and Django's SQLite file."""

import io
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from contextlib import closing

from pymongo import MongoClient

from config.embedded import EmbeddedServer
from tests.processes import command_env, manage


def _server(var_dir):
    return EmbeddedServer(var_dir / "mongo", var_dir / "log" / "mongo.log")


def _shop_with_data(var_dir) -> dict:
    """A staff account in Django's database and an order in the embedded
    one, as a shop would have them; what was written."""
    env = command_env(var_dir)
    assert manage("migrate", env=env).returncode == 0
    made = manage(
        "createstaff", "--email", "ann@example.com", "--role", "box-office", env=env
    )
    assert made.returncode == 0, made.stderr
    server = _server(var_dir)
    try:
        MongoClient(server.start()).marquee.orders.insert_one(
            {"_id": "MQ-1", "total": "12.50"}
        )
    finally:
        server.stop()
    return env


def _backup(env, to) -> str:
    made = manage("backup", "--to", str(to), env=env)
    assert made.returncode == 0, made.stderr
    assert "(mongo, db.sqlite3, secret_key)" in made.stdout
    return made.stdout.split()[1]


def _order(var_dir):
    server = _server(var_dir)
    try:
        return MongoClient(server.start()).marquee.orders.find_one({"_id": "MQ-1"})
    finally:
        server.stop()


def _staff(var_dir, name="db.sqlite3") -> list[str]:
    with closing(sqlite3.connect(var_dir / name)) as db:
        return [row[0] for row in db.execute("select email from auth_user")]


def _crash_after(sqlite, statement: str) -> None:
    """A process that writes to Django's SQLite file as Marquee's processes
    do (write-ahead log) and is killed before it closes it: its log stays
    beside the file, holding the write."""
    script = (
        "import os, sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
        "db.execute('PRAGMA journal_mode=WAL'); db.execute(sys.argv[2]); "
        "db.commit(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", script, str(sqlite), statement], check=True)


def test_a_backup_puts_the_shop_back_after_its_data_is_lost(tmp_path):
    env = _shop_with_data(tmp_path)
    key = (tmp_path / "secret_key").read_text()
    archive = _backup(env, tmp_path / "copies")

    shutil.rmtree(tmp_path / "mongo")
    (tmp_path / "mongo").mkdir()  # an empty directory is no data to keep
    (tmp_path / "db.sqlite3").unlink()
    (tmp_path / "secret_key").unlink()
    restored = manage("restore", archive, env=env)

    assert restored.returncode == 0, restored.stderr
    assert _order(tmp_path) == {"_id": "MQ-1", "total": "12.50"}
    assert _staff(tmp_path) == ["ann@example.com"]
    assert (tmp_path / "secret_key").read_text() == key
    assert not list((tmp_path / "copies").glob("*.part"))


def test_a_restore_over_data_keeps_that_data_aside(tmp_path):
    env = _shop_with_data(tmp_path)
    archive = _backup(env, tmp_path / "copies")

    refused = manage("restore", archive, env=env)
    assert refused.returncode == 1
    assert "already exist: restore with --replace" in refused.stderr

    replaced = manage("restore", archive, "--replace", env=env)
    assert replaced.returncode == 0, replaced.stderr
    kept = sorted(
        path.name.split(".replaced-")[0] for path in tmp_path.glob("*.replaced-*")
    )
    assert kept == ["db.sqlite3", "mongo"]  # the key was the same: not twice
    assert _order(tmp_path)["_id"] == "MQ-1"


def test_a_restore_after_a_crash_puts_back_the_backups_accounts_only(tmp_path):
    """The crashed Marquee's SQLite log is not played onto the restored
    file; what it held is in the copy kept aside."""
    env = _shop_with_data(tmp_path)
    archive = _backup(env, tmp_path / "copies")
    _crash_after(tmp_path / "db.sqlite3", "update auth_user set email = 'late@x.com'")
    assert (tmp_path / "db.sqlite3-wal").exists()

    restored = manage("restore", archive, "--replace", env=env)

    assert restored.returncode == 0, restored.stderr
    assert _staff(tmp_path) == ["ann@example.com"]
    (kept,) = tmp_path.glob("db.sqlite3.replaced-*")
    assert _staff(tmp_path, kept.name) == ["late@x.com"]


def test_both_refuse_while_a_marquee_runs_on_the_data(tmp_path):
    env = _shop_with_data(tmp_path)
    archive = _backup(env, tmp_path / "copies")
    server = _server(tmp_path)
    server.start()
    try:
        for args in (["backup"], ["restore", archive, "--replace"]):
            refused = manage(*args, env=env)
            assert refused.returncode == 1
            assert (
                "owns" in refused.stderr and "stop that Marquee first" in refused.stderr
            )
    finally:
        server.stop()
    assert list((tmp_path / "copies").iterdir()) == [
        tmp_path / "copies" / archive.split("/")[-1]
    ]


def test_an_archive_that_is_no_backup_changes_nothing(tmp_path):
    env = _shop_with_data(tmp_path)
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not an archive")
    # A member that would write outside the directory it is restored in.
    escaping = tmp_path / "escaping.tar.gz"
    with tarfile.open(escaping, "w:gz") as tar:
        member = tarfile.TarInfo("../../outside")
        member.size = 4
        tar.addfile(member, io.BytesIO(b"evil"))

    for archive, why in (
        (garbage, "is not a Marquee backup"),
        (escaping, "is not a Marquee backup"),
    ):
        refused = manage("restore", str(archive), "--replace", env=env)
        assert refused.returncode == 1
        assert why in refused.stderr

    assert not (tmp_path.parent / "outside").exists()
    assert _order(tmp_path)["_id"] == "MQ-1"
    assert _staff(tmp_path) == ["ann@example.com"]
    assert not list(tmp_path.glob("*.replaced-*"))


def test_with_mongodb_uri_the_servers_own_tools_are_named(tmp_path):
    env = command_env(
        tmp_path, MONGODB_URI="mongodb://127.0.0.1:1/?directConnection=true"
    )

    refused = manage("backup", env=env)

    assert refused.returncode == 1
    assert "mongodump" in refused.stderr


def test_a_marquee_started_during_a_backup_says_why_it_cannot(tmp_path):
    """While a backup or a restore holds the data directory, a command that
    would start the embedded server says so (not "another MongoDB")."""
    env = command_env(tmp_path)
    (tmp_path / "mongo").mkdir()

    with EmbeddedServer.hold(tmp_path / "mongo"):
        refused = manage("mongo_setup", env=env)

    assert refused.returncode == 1
    assert "in use by another process (a backup, a restore" in refused.stderr
    assert manage("mongo_setup", env=env).returncode == 0  # once it is done
