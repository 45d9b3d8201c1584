"""Fixtures every Marquee test stands on: a real MongoDB-compatible server.

The embedded SecantusDB daemon runs as a separate process for the whole test
session, one per pytest-xdist worker (or ``MONGODB_URI`` names a server to
use instead); every test gets a database of its own, with every index
created, dropped afterwards. Which embedded server runs is
``MARQUEE_DB_ENGINE``'s choice (config/engine.py): the Rust server by
default, the Python one for the fallback's conformance run; the report's
header names it.
"""

import os
import uuid

import mongoengine
import pytest
from pymongo import MongoClient

from config import engine, mongo
from config.embedded import EmbeddedServer


def pytest_report_header(config):
    if os.environ.get("MONGODB_URI"):
        return "MongoDB: the server MONGODB_URI names"
    chosen = engine.resolve()
    lines = [
        f"MongoDB: embedded SecantusDB's {chosen.name} server, {chosen.executable}"
    ]
    if chosen.fallback_reason:
        lines.append(chosen.fallback_reason)
    return lines


@pytest.fixture(scope="session")
def mongo_uri(tmp_path_factory):
    uri = os.environ.get("MONGODB_URI")
    if uri:
        mongo.check(uri)
        yield uri
        return
    home = tmp_path_factory.mktemp("mongo")
    server = EmbeddedServer(home / "data", home / "mongo.log")
    yield server.start()
    server.stop()


@pytest.fixture(scope="session")
def mongo_admin(mongo_uri):
    """A client of the fixtures' own, unaffected by what a test connects to."""
    client = MongoClient(mongo_uri, tz_aware=True)
    yield client
    client.close()


@pytest.fixture(autouse=True)
def mongo_db(mongo_uri, mongo_admin):
    """A clean database for this test, indexes included, dropped after it."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    mongo.connect(mongo_uri, db=name)
    mongo.ensure_indexes()
    yield mongo_admin[name]
    mongo_admin.drop_database(name)


@pytest.fixture
def listen(mongo_uri, mongo_db):
    """``listen(listener)``: Marquee's connection to the test's database
    made again with a pymongo command listener, which then sees every
    command the code under test sends; the usual connection after the
    test."""

    def connect(listener):
        mongoengine.disconnect(mongo.ALIAS)
        mongoengine.connect(
            db=mongo_db.name,
            host=mongo_uri,
            alias=mongo.ALIAS,
            tz_aware=True,
            uuidRepresentation="standard",
            event_listeners=[listener],
        )
        return listener

    yield connect
    mongo.connect(mongo_uri, db=mongo_db.name)


@pytest.fixture
def race(mongo_uri, mongo_db):
    """``race(work, args_list)``: one process per args, released together
    on this test's database (tests/concurrency/cart_processes.py)."""
    from tests.concurrency.cart_processes import run_together

    def run(work, args_list):
        return run_together(work, args_list, uri=mongo_uri, db_name=mongo_db.name)

    return run


@pytest.fixture(autouse=True)
def activity_written(mongo_db):
    """The activity a test's pages logged is written to that test's database
    before it is dropped, never into the next test's (activity/)."""
    from activity.services import writer

    writer.writer().discard()
    yield
    writer.flush()


@pytest.fixture(autouse=True)
def payments_announced_at_once(settings):
    """A checkout announces its payment itself (audit entry, counters,
    email), so a test sees them when the checkout returns; the settler's
    batches have tests of their own (tests/shop/test_settle.py), and so
    has the paid carts' claims' release that follows the same setting
    (tests/shop/test_claim_release.py): what a batch test left queued is
    dropped, never written after its database is gone."""
    from shop.services import tidy

    settings.SHOP_SETTLE_SYNC = True
    yield
    tidy.discard()


@pytest.fixture(autouse=True)
def browse_index_at_once(settings):
    """Browse indexes are built within the request that needs them, so a
    test sees the index's answer, never a race with a background build
    (tests that compare it with the aggregations switch it off)."""
    settings.BROWSE_INDEX = "sync"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Passwords hashed with a fast hasher in tests: the default hasher's
    hundreds of thousands of rounds are the point in production and cost
    about a third of a second per user made here. Hashes made elsewhere
    (a ``createstaff`` process) still verify: the defaults stay listed."""
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        *settings.PASSWORD_HASHERS,
    ]


def pytest_collection_modifyitems(items):
    """Sessions are server-side, in the Django database: any test may open
    a page, so every test may use that database (in a transaction rolled
    back after it). Browser tests bring their own transactional one; races
    between processes do not use it."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "transactional_db" in names or "live_server" in names:
            continue
        if item.get_closest_marker("concurrency") or item.get_closest_marker(
            "django_db"
        ):
            continue
        item.add_marker(pytest.mark.django_db)
