from django.apps import AppConfig


class MarqueeConfig(AppConfig):
    """Project-level commands (serve, mongo_setup, ...) and the Mongo connection."""

    name = "config"
    label = "marquee"
    verbose_name = "Marquee"

    def ready(self) -> None:
        from config import mongo

        # Lazy: no socket is opened here, so forking afterwards stays safe.
        mongo.connect_from_environment()
