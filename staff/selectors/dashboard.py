"""What the dashboard shows; reads only.

Sales figures come from the ``sales_counters`` hour buckets of the last 30
days (summed per local day here), never from the orders. The live carts'
figures are summed by the server; the needs-attention list reads only
bounded sets through indexes: carts in checkout, stuck refunds, SKUs under
the threshold, the next performances.
"""

from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from itertools import pairwise

from django.urls import reverse
from django.utils import timezone

from activity.selectors import Funnel, funnel
from booking.documents import Session
from booking.selectors import COUNT_FIELDS, counts_of
from catalog.selectors.stock import stock_low
from config.mongo import read_in_windows
from shop.cart_state import lease_open, open_filter
from shop.documents import PAID, PENDING, REFUNDING, Cart, Order
from shop.services.common import lease_time
from shop.services.orders import CANCEL_GRACE
from staff.charts import Chart, Series
from staff.documents import AuditEntry
from staff.selectors.counters import FIELDS, add_figures
from staff.services.counters import counters, hour_start
from staff.services.rollups import day_products

SOLD_WELL = 0.9  # a performance this full is worth a look
NEXT_PERFORMANCES = 8


@dataclass
class Tile:
    orders: int = 0
    revenue: int = 0  # pence, net of refunds
    tickets: int = 0
    units: int = 0
    refunds: int = 0

    @property
    def average(self) -> int:
        return self.revenue // self.orders if self.orders else 0


@dataclass
class Attention:
    kind: str
    text: str
    url: str = ""


@dataclass
class Occupancy:
    session_id: str
    show: str
    theater: str
    start: datetime
    seats: int
    sold: int
    held: int

    @property
    def percent(self) -> int:
        return round(100 * (self.sold + self.held) / self.seats) if self.seats else 0


@dataclass
class Dashboard:
    today: Tile
    week: Tile
    live: dict
    attention: list[Attention]
    charts: list[Chart]
    top_products: list[dict]
    occupancy: list[Occupancy]
    recent: list[dict] = field(default_factory=list)
    # Views -> cart adds -> orders (the activity log's daily counts).
    funnel: Funnel | None = None


def _add(tile: Tile, doc: dict) -> None:
    tile.orders += doc.get("orders", 0)
    tile.revenue += doc.get("revenue", 0) - doc.get("refunded", 0)
    tile.tickets += doc.get("tickets", 0) - doc.get("refunded_tickets", 0)
    tile.units += doc.get("units", 0) - doc.get("refunded_units", 0)
    tile.refunds += doc.get("refunds", 0)


# Only the figures: an hour's bucket also lists the orders it counted,
# which the server would otherwise send (and read) for nothing.
_FIGURES = {**dict.fromkeys(FIELDS, 1), "start": 1}
DAYS = 30
TOP_PRODUCT_DAYS = 30


def _hours_since(start: datetime) -> list[dict]:
    """Every hour bucket's figures from ``start`` on: at most 24 per day,
    through the ``(kind, start)`` index."""
    query = {"kind": "hour", "start": {"$gte": start}}
    return list(counters().find(query, _FIGURES))


def _days(hours: list[dict], now: datetime, count: int) -> list[dict]:
    """The last ``count`` local days, oldest first: each the sum of its hours
    (zeros if none), with ``_id`` ``d:YYYY-MM-DD`` and its hours' ids."""
    today = timezone.localdate(now)
    by_day: dict = {}
    for doc in hours:
        by_day.setdefault(timezone.localdate(doc["start"]), []).append(doc)
    days = []
    for k in reversed(range(count)):
        day = today - timedelta(days=k)
        docs = by_day.get(day, [])
        total = dict.fromkeys(FIELDS, 0)
        for doc in docs:
            add_figures(total, doc)
        days.append(
            {"_id": f"d:{day:%Y-%m-%d}", "hours": [d["_id"] for d in docs], **total}
        )
    return days


def _hours_today(hours: list[dict], now: datetime) -> list[tuple[datetime, dict]]:
    """Each hour of today, local midnight to midnight, with its figures: 24
    hours, or 23 and 25 on the days the clocks change. Stepped in UTC, as
    the buckets are: adding hours to a local time counts on the clock face,
    and the day the clocks go back would lose an hour."""
    day = timezone.localdate(now)
    midnight = timezone.make_aware(datetime.combine(day, time.min))
    next_midnight = timezone.make_aware(
        datetime.combine(day + timedelta(days=1), time.min)
    )
    found: dict[datetime, dict] = {}
    for doc in hours:  # an hour's buckets, one per block of order numbers
        if doc["start"] >= midnight:
            add_figures(found.setdefault(doc["start"], dict.fromkeys(FIELDS, 0)), doc)
    today, at = [], hour_start(midnight)
    while at < next_midnight:
        today.append(at)
        # The next local hour: an hour on, except in a zone whose clocks
        # change by half an hour (its hour of the change is 30 minutes).
        at = hour_start(at + timedelta(hours=1))
    return [(timezone.localtime(h), found.get(h, {})) for h in today]


def _first_midnight(now: datetime, count: int) -> datetime:
    day = timezone.localdate(now) - timedelta(days=count - 1)
    return timezone.make_aware(datetime(day.year, day.month, day.day))


def _net(doc: dict) -> float:
    return (doc.get("revenue", 0) - doc.get("refunded", 0)) / 100


def _hour_charts(hours: list[tuple[datetime, dict]]) -> list[Chart]:
    labels = [f"{h:%H}" for h, _ in hours]
    return [
        Chart(
            id="rev-hour",
            title="Revenue per hour, today",
            description="Revenue net of refunds for each hour of today, in pounds.",
            labels=labels,
            series=[Series("Revenue", [_net(d) for _, d in hours])],
            unit="£",
            axis="Hour",
        ),
        Chart(
            id="orders-hour",
            title="Orders per hour, today",
            description="Orders paid in each hour of today.",
            labels=labels,
            series=[Series("Orders", [d.get("orders", 0) for _, d in hours])],
            axis="Hour",
        ),
    ]


def _day_charts(days: list[dict]) -> list[Chart]:
    labels = [d["_id"][7:] for d in days]
    return [
        Chart(
            id="rev-day",
            title="Revenue per day, last 30 days",
            description="Revenue net of refunds for each of the last 30 days, "
            "in pounds.",
            labels=labels,
            series=[Series("Revenue", [_net(d) for d in days])],
            unit="£",
        ),
        Chart(
            id="orders-day",
            title="Orders per day, last 30 days",
            description="Orders paid on each of the last 30 days.",
            labels=labels,
            series=[Series("Orders", [d.get("orders", 0) for d in days])],
        ),
        Chart(
            id="kinds-day",
            title="Tickets and goods, last 30 days",
            description="Revenue from tickets and from goods for each of the last "
            "30 days, in pounds, before refunds.",
            labels=labels,
            series=[
                Series("Tickets", [d.get("ticket_revenue", 0) / 100 for d in days]),
                Series("Goods", [d.get("goods_revenue", 0) / 100 for d in days]),
            ],
            unit="£",
        ),
    ]


def top_products(now: datetime) -> list[dict]:
    """The top products of the last ``TOP_PRODUCT_DAYS`` days, each day's
    sum brought up to its buckets first (what the ``sum_sales_days`` job
    runs, so that a view has only the last minutes' orders to add)."""
    hours = _hours_since(_first_midnight(now, TOP_PRODUCT_DAYS))
    return _top_products(_days(hours, now, TOP_PRODUCT_DAYS))


def _top_products(days: list[dict]) -> list[dict]:
    products = day_products(
        {d["_id"]: (d["hours"], d["orders"] + d["refunds"]) for d in days}
    )
    return sorted(
        (p for p in products.values() if p["qty"] > 0),
        key=lambda p: (-p["revenue"], p["name"]),
    )[:10]


def sales(now: datetime):
    hours = _hours_since(_first_midnight(now, DAYS))
    days = _days(hours, now, DAYS)
    today, week = Tile(), Tile()
    _add(today, days[-1])
    for doc in days[-7:]:
        _add(week, doc)
    charts = _hour_charts(_hours_today(hours, now)) + _day_charts(days)
    return today, week, charts, _top_products(days[-TOP_PRODUCT_DAYS:])


def _checkouts() -> list[dict]:
    """The carts in checkout now: a sale's carts in their last seconds,
    never its thousands of shoppers still choosing."""
    return list(
        Cart.coll().find(
            {"state": PENDING}, {"state": 1, "checkout_at": 1, "lease_until": 1}
        )
    )


# Per cart: its carts (1), units and seats, for $group to sum.
_HELD = {
    "carts": {"$sum": 1},
    "units": {
        "$sum": {
            "$sum": {
                "$map": {"input": {"$ifNull": ["$items", []]}, "in": "$$this.quantity"}
            }
        }
    },
    "seats": {
        "$sum": {
            "$sum": {
                "$map": {
                    "input": {"$ifNull": ["$tickets", []]},
                    "in": {"$size": {"$ifNull": ["$$this.seats", []]}},
                }
            }
        }
    },
}


def live(now: datetime) -> dict:
    """What the carts that hold now hold: active within their hold, and in
    checkout. Summed by the server, one aggregation per state on the
    ``state, expires_at`` index: during a sale tens of thousands of carts
    are live, and reading them here took the dashboard 0.6 s at 20,000
    (``bench/staff_bench.py --live-carts``)."""
    figures = {"active_carts": 0, "checkouts": 0, "units_held": 0, "seats_held": 0}
    for name, match in (
        ("active_carts", open_filter(now)),
        ("checkouts", {"state": PENDING}),
    ):
        for row in Cart.coll().aggregate(
            [{"$match": match}, {"$group": {"_id": None, **_HELD}}]
        ):
            figures[name] = row["carts"]
            figures["units_held"] += row["units"]
            figures["seats_held"] += row["seats"]
    return figures


def occupancy(now: datetime, limit: int = 50) -> list[Occupancy]:
    # The session's counters (booking keeps them in step with its seats).
    found = (
        Session.coll()
        .find(
            {"start": {"$gt": now}},
            {"name": 1, "theater_name": 1, "start": 1, **COUNT_FIELDS},
        )
        .sort([("start", 1), ("_id", 1)])
        .limit(limit)
    )
    return [
        Occupancy(
            session_id=str(doc["_id"]),
            show=doc["name"],
            theater=doc["theater_name"],
            start=doc["start"],
            seats=counts.seats,
            sold=counts.sold,
            held=counts.held,
        )
        for doc in found
        for counts in (counts_of(doc),)
    ]


def _low_stock() -> list[Attention]:
    """SKUs under their threshold (catalog's ``stock_low``: each SKU's own
    threshold or settings.LOW_STOCK_THRESHOLD)."""
    return [
        Attention(
            "stock",
            f"SKU {low.sku}: {low.free} left (under {low.threshold})",
            reverse("staff:stock_sku", args=[low.sku]),
        )
        for low in stock_low(limit=20)
    ]


def needs_attention(
    now: datetime, performances: list[Occupancy], checkouts: list[dict]
) -> list[Attention]:
    """``checkouts``: the carts in checkout (``_checkouts``)."""
    items: list[Attention] = []
    orders = Order.coll()
    stuck = [
        c
        for c in checkouts
        if c.get("checkout_at") and not lease_open(c, now, lease_time())
    ]
    for raw in stuck[:20]:
        items.append(
            Attention("checkout", f"Checkout stuck in pending: cart {raw['_id']}", "")
        )
    for raw in orders.find(
        {"state": REFUNDING, "canceled_at": {"$lt": now - CANCEL_GRACE}},
        {"number": 1},
    ).limit(20):
        items.append(
            Attention(
                "refund", f"Refund not finished: order {raw['number']}", raw["number"]
            )
        )
    items.extend(_low_stock())
    for perf in performances:
        if perf.seats and (perf.sold + perf.held) >= SOLD_WELL * perf.seats:
            items.append(
                Attention(
                    "performance",
                    f"{perf.show}, {timezone.localtime(perf.start):%a %d %b %H:%M}: "
                    f"{perf.percent}% sold or held",
                    reverse("staff:seat_map", args=[perf.session_id]),
                )
            )
    # An order is written paid only while its cart is in checkout (the
    # lock), so only those carts can be left behind a paid order.
    pending_ids = [raw["_id"] for raw in checkouts]
    for raw in orders.find(
        {"cart_id": {"$in": pending_ids}, "state": PAID}, {"number": 1}
    ).limit(20):
        items.append(
            Attention(
                "unfinished",
                f"Order {raw['number']} is paid but its cart is not complete",
                raw["number"],
            )
        )
    return items


# The trail only grows (an entry per paid order, and more), and the server
# reads every entry within an index scan's bounds even under a limit: 137 ms
# for the newest 15 of 100,000 entries. So the newest are read window by
# window back from now (``read_in_windows``), and "recent" ends a month back.
RECENT_WINDOWS = [timedelta(hours=1), timedelta(days=1), timedelta(days=30)]


def recent_audit(now: datetime, limit: int = 15) -> list[dict]:
    """The trail's newest entries of the last month, newest first."""
    edges = [now - width for width in RECENT_WINDOWS]
    windows = [
        {"$gte": edges[0]},  # and any dated after now
        *({"$gte": lower, "$lt": upper} for upper, lower in pairwise(edges)),
    ]
    return read_in_windows(
        AuditEntry.coll(),
        {},
        field="at",
        windows=windows,
        sort=[("at", -1), ("_id", -1)],
        limit=limit,
    )


def dashboard(*, now: datetime | None = None) -> Dashboard:
    now = now or timezone.now()
    today, week, charts, top = sales(now)
    performances = occupancy(now)
    return Dashboard(
        today=today,
        week=week,
        live=live(now),
        attention=needs_attention(now, performances, _checkouts()),
        charts=charts,
        top_products=top,
        occupancy=performances[:NEXT_PERFORMANCES],
        recent=recent_audit(now),
        funnel=funnel(now=now),
    )
