from django.apps import AppConfig


class ActivityConfig(AppConfig):
    """The activity log: what shoppers do, in time partitions, and what is
    derived from it (recently viewed, bought together, the funnel)."""

    name = "activity"
    verbose_name = "Activity log"

    def ready(self) -> None:
        # The log follows the catalog's and the shop's announcements; they
        # do not know it listens.
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete

        from activity.services import receivers as r
        from activity.services.privacy import on_user_deleted
        from catalog import events as catalog
        from shop import events as shop

        catalog.searched.connect(r.on_searched, dispatch_uid="activity.search")
        catalog.item_viewed.connect(r.on_item_viewed, dispatch_uid="activity.view")
        shop.cart_line_changed.connect(
            r.on_cart_line_changed, dispatch_uid="activity.cart"
        )
        shop.seats_changed.connect(r.on_seats_changed, dispatch_uid="activity.seats")
        shop.orders_paid.connect(r.on_orders_paid, dispatch_uid="activity.order")
        post_delete.connect(
            on_user_deleted, sender=get_user_model(), dispatch_uid="activity.user"
        )
