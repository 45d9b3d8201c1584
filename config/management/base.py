"""Base class for management commands that talk to MongoDB."""

from contextlib import contextmanager

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config import mongo
from config.embedded import EmbeddedServer


@contextmanager
def mongo_for_command():
    """Use this process's MongoDB, or run the embedded one for this command only.

    Any failure becomes a one-line CommandError: a person running a command
    needs the reason, not a traceback.
    """
    server = None
    try:
        uri = mongo.connected_uri() or settings.MONGODB_URI
        if uri is None:
            server = EmbeddedServer(
                settings.MONGO_EMBEDDED_DIR,
                settings.MONGO_EMBEDDED_LOG,
                cache_size=settings.MONGO_EMBEDDED_CACHE,
            )
            uri = server.start()
        mongo.check(uri)
        if mongo.connected_uri() != uri:
            mongo.connect(uri)
        yield uri
    except mongo.MongoUnavailable as exc:
        raise CommandError(str(exc)) from None
    finally:
        if server is not None:
            server.stop()


class MongoCommand(BaseCommand):
    """A command whose ``handle`` needs a reachable MongoDB."""

    def execute(self, *args, **options):
        with mongo_for_command():
            return super().execute(*args, **options)
