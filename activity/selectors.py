"""Reads of the activity log and of what is derived from it.

Every read of the partitions is bounded in time and served by an index
(``{user, ts}`` or ``{item, ts}``), and reads only the partitions its bounds
overlap, newest first, stopping once it has enough.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from activity import kinds
from activity.documents import BoughtTogether, ItemDay
from activity.services.partitions import partition_coll, partitions_for
from catalog.selectors.offers import ItemOffer, item_offers, item_titles

# Two or three weekly partitions at most (the article: partitions large
# enough that a query reads no more than two or three).
RECENT_DAYS = 14


def _recent(field: str, key: str, *, since, until, limit: int, types=None) -> list:
    query: dict = {field: key, "ts": {"$gte": since, "$lt": until}}
    if types:
        query["type"] = {"$in": list(types)}
    found: list[dict] = []
    for name in partitions_for(since, until):
        left = limit - len(found)
        if left <= 0:
            break
        cursor = partition_coll(name).find(query).sort([("ts", -1)]).limit(left)
        found.extend(cursor)
    return found


def shopper_activity(
    *, user: str, since: datetime, until: datetime, limit: int = 100, types=None
) -> list[dict]:
    """A shopper's events in ``[since, until)``, newest first."""
    return _recent("user", user, since=since, until=until, limit=limit, types=types)


def item_activity(
    *, item: str, since: datetime, until: datetime, limit: int = 100, types=None
) -> list[dict]:
    """An item's events in ``[since, until)``, newest first."""
    return _recent("item", item, since=since, until=until, limit=limit, types=types)


def recently_viewed_ids(
    *, user: str | None, now: datetime | None = None, limit: int = 6, exclude=()
) -> list[str]:
    """The items a shopper viewed in the last ``RECENT_DAYS`` days, last
    viewed first, each once."""
    if not user:
        return []
    now = now or timezone.now()
    events = shopper_activity(
        user=user,
        since=now - timedelta(days=RECENT_DAYS),
        until=now + timedelta(seconds=1),
        limit=limit * 5,
        types=(kinds.VIEW,),
    )
    seen = dict.fromkeys(e["item"] for e in events if e["item"] not in exclude)
    return list(seen)[:limit]


def recently_viewed(*, user: str | None, exclude=(), limit: int = 6) -> list[ItemOffer]:
    """Recently viewed items that can still be bought."""
    return item_offers(
        item_ids=recently_viewed_ids(user=user, exclude=exclude, limit=limit)
    )


def partners_of(*, item_ids: list[str]) -> list[str]:
    """The stored partners of the given items, best first, each once."""
    docs = {d["_id"]: d for d in BoughtTogether.coll().find({"_id": {"$in": item_ids}})}
    ranked = sorted(
        (
            (p["n"], p["item"])
            for item in item_ids
            for p in (docs.get(item) or {}).get("partners", [])
        ),
        key=lambda x: (-x[0], x[1]),
    )
    return list(dict.fromkeys(i for _, i in ranked if i not in item_ids))


def bought_together(*, item_ids: list[str], limit: int = 4) -> list[ItemOffer]:
    """Items often bought with these, that are for sale and in stock now."""
    return item_offers(item_ids=partners_of(item_ids=item_ids))[:limit]


@dataclass(frozen=True)
class FunnelRow:
    item: str
    view: int
    add: int
    order: int
    title: str = ""

    def rate(self, a: int, b: int) -> int | None:
        return round(100 * b / a) if a else None

    @property
    def add_rate(self) -> int | None:
        return self.rate(self.view, self.add)

    @property
    def order_rate(self) -> int | None:
        return self.rate(self.add, self.order)


@dataclass(frozen=True)
class Funnel:
    days: int
    total: FunnelRow
    items: list[FunnelRow]


def funnel(*, now: datetime | None = None, days: int = 7, top: int = 10) -> Funnel:
    """Views -> cart adds -> orders over the last ``days`` local days (the
    counting job's figures), in total and for the most viewed items."""
    today = timezone.localdate(now or timezone.now())
    keys = [f"{today - timedelta(days=k):%Y-%m-%d}" for k in range(days)]
    per_item: dict[str, list[int]] = {}
    for doc in ItemDay.coll().find({"day": {"$in": keys}}):
        sums = per_item.setdefault(doc["item"], [0, 0, 0])
        for k, t in enumerate((kinds.VIEW, kinds.CART_ADD, kinds.ORDER)):
            sums[k] += doc.get(t, 0)
    rows = [FunnelRow(i, *s) for i, s in per_item.items()]
    total = FunnelRow("", *(sum(r[k] for r in per_item.values()) for k in range(3)))
    rows.sort(key=lambda r: (-r.view, -r.order, r.item))
    titles = item_titles(item_ids=[r.item for r in rows[:top]])
    top_rows = [
        FunnelRow(r.item, r.view, r.add, r.order, titles.get(r.item, r.item))
        for r in rows[:top]
    ]
    return Funnel(days=days, total=total, items=top_rows)
