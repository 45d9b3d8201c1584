"""The one MongoDB connection of a Marquee process, and its indexes.

Every process (web worker, qcluster worker, management command, test) connects
once, lazily, through ``connect``. The client is created with ``connect=False``
so that no socket or monitor thread exists before gunicorn or django-q2 forks;
``reset_after_fork`` drops whatever a parent did create, so each child opens
its own pool on first use.
"""

from __future__ import annotations

import importlib
import logging
import os
import time
from collections.abc import Iterable

import mongoengine
from django.apps import apps
from django.conf import settings
from pymongo import IndexModel, MongoClient
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import (
    BulkWriteError,
    ConfigurationError,
    InvalidURI,
    PyMongoError,
)
from pymongo.uri_parser import parse_uri

log = logging.getLogger("marquee.mongo")

ALIAS = mongoengine.DEFAULT_CONNECTION_NAME
# The Django apps whose documents Marquee owns (and so indexes).
DOMAIN_APPS = ("catalog", "shop", "booking", "staff", "activity", "accounts")


class MongoUnavailable(Exception):
    """MongoDB cannot be used; the message is one line a person can act on."""


def _client_options(uri: str, timeout_ms: int | None = None) -> dict:
    options = {
        "tz_aware": True,
        "uuidRepresentation": "standard",
        # Acknowledged by a majority of a replica set before a reservation is
        # reported; on a standalone server this is the same as w=1.
        "w": "majority",
    }
    stated = _uri_options(uri)
    # A timeout the URI states wins over the setting (the embedded server's
    # URI states a short one; see config/embedded.py).
    if timeout_ms or "serverselectiontimeoutms" not in stated:
        options["serverSelectionTimeoutMS"] = (
            timeout_ms or settings.MONGODB_SERVER_SELECTION_MS
        )
    if "maxpoolsize" not in stated:
        options["maxPoolSize"] = settings.MONGODB_POOL_SIZE
    return options


def _uri_options(uri: str) -> dict:
    try:
        return {k.lower(): v for k, v in parse_uri(uri)["options"].items()}
    except (InvalidURI, ConfigurationError, ValueError):
        return {}


def database_name(uri: str) -> str:
    try:
        return parse_uri(uri).get("database") or settings.MONGODB_DB
    except (InvalidURI, ConfigurationError, ValueError) as exc:
        raise MongoUnavailable(
            f"MONGODB_URI is not a valid MongoDB URI: {exc}"
        ) from exc


def connect(uri: str, *, db: str | None = None) -> None:
    """(Re)bind the default MongoEngine alias to ``uri`` without opening sockets."""
    name = db or database_name(uri)
    mongoengine.disconnect(ALIAS)
    mongoengine.connect(
        db=name, host=uri, alias=ALIAS, connect=False, **_client_options(uri)
    )
    _state["uri"], _state["db"] = uri, name


_state: dict[str, str | None] = {"uri": None, "db": None}


def connected_uri() -> str | None:
    return _state["uri"]


def connected_db_name() -> str | None:
    """The database this process is bound to (what per-process caches of
    database facts key on: a test's database is not the next one's)."""
    return _state["db"]


def reset_after_fork() -> None:
    """Forget the parent's client in a forked child; the next use reconnects."""
    if _state["uri"]:
        connect(_state["uri"], db=_state["db"])


os.register_at_fork(after_in_child=reset_after_fork)


def db() -> Database:
    return mongoengine.get_db(ALIAS)


def check(uri: str, *, timeout_ms: int = 3000) -> None:
    """Raise MongoUnavailable unless a server at ``uri`` answers a ping."""
    database_name(uri)  # validates the URI first, with its own message
    try:
        client = MongoClient(uri, connect=False, **_client_options(uri, timeout_ms))
    except (InvalidURI, ConfigurationError, ValueError) as exc:
        raise MongoUnavailable(
            f"MONGODB_URI is not a valid MongoDB URI: {exc}"
        ) from exc
    try:
        client.admin.command("ping")
    except PyMongoError as exc:
        reason = str(exc).split(",")[0].split("\n")[0]
        raise MongoUnavailable(
            f"MongoDB at {_redact(uri)} is unreachable: {reason}"
        ) from exc
    finally:
        client.close()


def ping() -> str | None:
    """None when the connected server answers, else a one-line reason."""
    if down := known_down():
        return f"unreachable: {down}"
    try:
        db().command("ping")
    except mongoengine.ConnectionFailure:
        return "no MongoDB connection is configured"
    except PyMongoError as exc:
        return f"unreachable: {str(exc).split(',')[0]}"
    return None


def warm_up(*, within: float = 10.0) -> None:
    """Open this process's connection now, trying for up to ``within``
    seconds, so that its first real request does not pay for it. A server
    still down after that is left to the pages to report (503)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            # Asks the server itself (not known_down, which answers at once):
            # each try waits up to the server selection timeout.
            db().command("ping")
            return
        except mongoengine.ConnectionFailure:
            return  # no MongoDB configured for this process: nothing to open
        except PyMongoError:
            continue


def known_down() -> str | None:
    """The last error, when every server this process's client knows has
    failed its last check; None otherwise (up, or not asked yet).

    Reads the driver's own view of the topology, which its monitor keeps
    current: no round trip, no wait. A client that has not connected yet
    knows of no failure, so a cold process is never turned away by this.
    """
    try:
        client = mongoengine.get_connection(ALIAS)
    except mongoengine.ConnectionFailure:
        return None
    servers = client.topology_description.server_descriptions().values()
    errors = [sd.error for sd in servers]
    if errors and all(errors):
        return str(errors[0]).split(",")[0]
    return None


def _redact(uri: str) -> str:
    """Hide a password in a URI shown in an error message."""
    scheme, sep, rest = uri.partition("://")
    if "@" in rest:
        creds, _, hosts = rest.rpartition("@")
        user = creds.split(":", 1)[0]
        return f"{scheme}{sep}{user}:***@{hosts}"
    return uri


# --- Indexes -------------------------------------------------------------


def domain_documents() -> list[type[mongoengine.Document]]:
    """Every concrete MongoEngine document defined by Marquee's apps."""
    for app in DOMAIN_APPS:
        if apps.is_installed(app):
            importlib.import_module(f"{app}.documents")
    found = []
    for cls in mongoengine.base._document_registry.values():
        if (
            issubclass(cls, mongoengine.Document)
            and not cls._meta.get("abstract")
            and cls.__module__.split(".")[0] in DOMAIN_APPS
        ):
            found.append(cls)
    return sorted(found, key=lambda c: c._get_collection_name())


def ensure_indexes(
    documents: Iterable[type[mongoengine.Document]] | None = None,
) -> list[str]:
    """Create every index the documents declare that the database lacks.

    Idempotent by comparing key patterns rather than asking the server to
    re-create: both SecantusDB servers reject a repeated 2dsphere
    ``createIndexes`` that MongoDB itself would accept as a no-op
    (config/compat.py). An index whose uniqueness the documents changed is
    dropped and created anew. An index a document lists in its
    ``retired_indexes`` (one an earlier version declared: every write would
    still pay for it) is dropped. A collection's missing indexes are created
    in one command (a fresh database, as every test makes, has them all
    missing). Returns the names of the indexes created.
    """
    created = []
    for cls in documents if documents is not None else domain_documents():
        collection = cls._get_collection()
        information = collection.index_information()
        for name in cls._meta.get("retired_indexes") or ():
            if name in information:
                collection.drop_index(name)
                del information[name]
        existing = {
            tuple(tuple(k) for k in info["key"]): (name, bool(info.get("unique")))
            for name, info in information.items()
        }
        missing = {}
        for spec in cls._meta.get("index_specs") or []:
            spec = dict(spec)
            keys = tuple(tuple(k) for k in spec.pop("fields"))
            if keys in existing:
                name, unique = existing[keys]
                if unique == bool(spec.get("unique")) or name == "_id_":
                    continue
                collection.drop_index(name)
            spec.pop("cls", None)
            missing[keys] = IndexModel(list(keys), background=False, **spec)
        if missing:
            names = collection.create_indexes(list(missing.values()))
            created.extend(f"{collection.name}.{name}" for name in names)
    return created


def is_empty() -> bool:
    """True when no domain collection holds a document (a first run)."""
    database = db()
    return not any(
        database[name].estimated_document_count()
        for name in database.list_collection_names()
        if not name.startswith("system.")
    )


DUPLICATE_KEY = 11000


def only_duplicates(exc: BulkWriteError) -> bool:
    """Whether a bulk write failed on duplicate keys alone. A write concern
    not met (a replica set's step-down) is no duplicate: the caller must not
    count those writes as done."""
    return not exc.details.get("writeConcernErrors") and all(
        e.get("code") == DUPLICATE_KEY for e in exc.details.get("writeErrors", [])
    )


def insert_new(collection: Collection, documents: list[dict]) -> list[int]:
    """Insert, in one unordered command, the documents whose ``_id`` is not
    there yet; the positions of those inserted. Any error but a duplicate
    key is raised."""
    if not documents:
        return []
    try:
        collection.insert_many(documents, ordered=False)
    except BulkWriteError as exc:
        if not only_duplicates(exc):
            raise
        duplicates = {e["index"] for e in exc.details["writeErrors"]}
        return [i for i in range(len(documents)) if i not in duplicates]
    return list(range(len(documents)))


def read_in_windows(
    collection: Collection,
    query: dict,
    *,
    field: str,
    windows: Iterable[dict],
    sort: list[tuple[str, int]],
    limit: int,
    projection: dict | None = None,
) -> list[dict]:
    """The first ``limit`` documents of ``query`` in ``sort`` order, read
    window by window of ``field``: ``windows`` are its bounds (``{"$gte":
    ..., "$lt": ...}``), adjacent, in the sort's order; the next is read only
    while fewer than ``limit`` were found.

    For lists over collections that grow (orders, the audit trail, the
    carts of a sale): the embedded server reads every entry within an index
    scan's bounds even under a limit, so one sorted query for the newest
    page reads them all, where a narrow window first reads a handful."""
    found: list[dict] = []
    for bounds in windows:
        if len(found) >= limit:
            break
        found += (
            collection.find({**query, field: bounds}, projection)
            .sort(sort)
            .limit(limit - len(found))
        )
    return found
