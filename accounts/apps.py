from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Sign-up and the account pages, the shop's emails, abuse limits and
    the deployment checks. Sits above the shop: it listens to
    ``shop/events.py`` and the shop never imports it."""

    name = "accounts"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        from accounts import checks, declines, receivers  # noqa: F401
        from shop import events

        events.order_moved.connect(
            receivers.order_moved, dispatch_uid="accounts.order_emails"
        )
        events.orders_paid.connect(
            receivers.orders_paid, dispatch_uid="accounts.paid_emails"
        )
        events.card_declined.connect(
            declines.card_declined, dispatch_uid="accounts.declines"
        )
        user_logged_out.connect(receivers.logged_out, dispatch_uid="accounts.bye")
