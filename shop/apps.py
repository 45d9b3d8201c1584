from django.apps import AppConfig


class ShopConfig(AppConfig):
    """Carts, checkout, orders, expiry jobs and the staff overview."""

    name = "shop"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from shop.signals import merge_cart_on_login

        user_logged_in.connect(merge_cart_on_login, dispatch_uid="shop.merge_cart")
