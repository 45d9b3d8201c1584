"""Orders, only ever for their owner or the holder of their secret link."""

from shop.documents import Order
from shop.errors import OrderNotFound


def order_by_link(*, number: str, token: str) -> Order:
    """The order behind a secret link; both parts are matched in the query."""
    order = Order.objects(number=str(number), token=str(token)).first()
    if order is None:
        raise OrderNotFound()
    return order


def order_of_owner(*, owner: str | None, number: str) -> Order:
    order = Order.objects(number=str(number), owner=owner).first() if owner else None
    if order is None:
        raise OrderNotFound()
    return order


def orders_of_owner(*, owner: str | None, limit: int = 100) -> list[Order]:
    if not owner:
        return []
    return list(Order.objects(owner=owner).order_by("-created_at").limit(limit))
