from django.apps import AppConfig
from django.conf import settings


class MarqueeConfig(AppConfig):
    """Project-level commands (serve, mongo_setup, ...) and the Mongo connection."""

    name = "config"
    label = "marquee"
    verbose_name = "Marquee"

    def ready(self) -> None:
        # Lazy: no socket is opened here, so forking afterwards stays safe.
        connect_from_environment()


def connect_from_environment() -> bool:
    """Connect if this process was told where MongoDB is; True when it was.

    ``MONGODB_URI`` wins; otherwise a running embedded server (started by
    ``serve``) is found through its state file. Nothing is started here: a
    web worker must never spawn a database of its own. (Here, above both
    ``config.mongo`` and ``config.embedded``: the embedded server reports
    ``mongo``'s errors, so ``mongo`` does not know it.)
    """
    from config import mongo
    from config.embedded import EmbeddedServer

    uri = settings.MONGODB_URI or EmbeddedServer.running_uri(
        settings.MONGO_EMBEDDED_DIR
    )
    if not uri:
        return False
    try:
        mongo.connect(uri)
    except mongo.MongoUnavailable:
        # A malformed URI: left for the first command or check to report in
        # one line, rather than as a traceback out of Django's start-up.
        return False
    return True
