from django.apps import AppConfig


class CatalogConfig(AppConfig):
    """Products, variants, prices, stores, stock and its reservations."""

    name = "catalog"
