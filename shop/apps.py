from django.apps import AppConfig


class ShopConfig(AppConfig):
    """Carts, checkout, orders, expiry jobs and the staff overview."""

    name = "shop"
