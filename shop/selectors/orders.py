"""Orders, only ever for their owner or the holder of their secret link."""

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from catalog.errors import UnknownStore
from catalog.selectors.stores import StoreRow, store_get
from shop.documents import PAID, Order
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


def cancel_deadline(order: Order) -> datetime | None:
    """When the owner's right to cancel ends: the earliest performance of the
    order's tickets (None for an order without tickets)."""
    starts = [line.ticket.start for line in order.lines if line.ticket is not None]
    return min(starts) if starts else None


def owner_may_cancel(order: Order, *, now: datetime | None = None) -> bool:
    """Whether the order page offers "Cancel order" (``order_cancel``'s rule)."""
    if order.state != PAID:
        return False
    deadline = cancel_deadline(order)
    return deadline is None or (now or timezone.now()) < deadline


@dataclass(frozen=True)
class TicketGroup:
    """The tickets of one performance in an order, for its page."""

    show: str
    theater: str
    start: datetime
    lines: list


def order_tickets(order: Order) -> list[TicketGroup]:
    """The order's ticket lines grouped by performance, soonest first."""
    groups: dict[str, TicketGroup] = {}
    for line in order.lines:
        if line.ticket is None:
            continue
        ticket = line.ticket
        group = groups.setdefault(
            line.key,
            TicketGroup(
                show=ticket.show, theater=ticket.theater, start=ticket.start, lines=[]
            ),
        )
        group.lines.append(line)
    return sorted(groups.values(), key=lambda g: g.start)


def order_by_id(*, order_id: str) -> Order:
    """The order with this id, for the shop's own jobs and listeners (its
    emails): never for a request, which proves ownership first."""
    from bson import ObjectId
    from bson.errors import InvalidId

    try:
        order = Order.objects(pk=ObjectId(str(order_id))).first()
    except InvalidId:
        order = None
    if order is None:
        raise OrderNotFound()
    return order


def order_collect_points(order: Order) -> list[StoreRow]:
    """The stores where the order's lines are collected, each once, in the
    order's line order (with their address, as the catalog has it now; a
    store closed since is left out: its lines still name it)."""
    store_ids = list(
        dict.fromkeys(line.store_id for line in order.lines if line.store_id)
    )
    points = []
    for store_id in store_ids:
        try:
            points.append(store_get(store_id=store_id))
        except UnknownStore:
            continue
    return points
