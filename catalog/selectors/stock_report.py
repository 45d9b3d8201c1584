"""Stock per SKU for the back office: online levels (free / held / sold /
received, from ``stock_levels``), the low-stock threshold, and what the
stores hold (one store's free units, and the sum over every store: their
stock locations). Reads only.

A search is bounded by its own index: a SKU (exact, or a prefix of the
``_id``), an item id, words of a title (the summaries' keywords), a store's
lines (index on ``store_id``); nothing scans.
"""

from dataclasses import dataclass

from django.conf import settings

from catalog.documents import Item, Summary, Variant
from catalog.facets import keywords_of
from catalog.selectors.stock import (
    StockLevel,
    stock_at_stores,
    stock_levels,
    stock_thresholds,
    store_free,
    store_totals,
)

PAGE = 50


@dataclass(frozen=True)
class StockRow:
    sku: str
    item_id: str
    title: str
    attributes: dict
    online: StockLevel | None  # None: not sold online
    threshold: int
    own_threshold: bool
    store_quantity: int | None  # the chosen store's count (None: no line)
    stores_total: int  # summed over every store
    stores: int  # stores with a line for it

    @property
    def low(self) -> bool:
        return self.online is not None and self.online.free < self.threshold


def _store_lines(store_id: str) -> dict[str, int]:
    return store_free(store_id=store_id)


def _skus(
    q: str,
    items: list[str],
    store_lines: dict[str, int] | None,
    limit: int,
    after: str = "",
) -> list[str]:
    """The SKUs a search names after ``after``, in SKU order (at most
    ``limit``): SKUs that start with ``q``, and the SKUs of ``items``. Each
    source is read in SKU order from ``after`` on, so the first ``limit`` of
    their union are the page's."""
    variants = Variant.coll()
    if store_lines is not None:
        # A store's lines are known whole: the search narrows them.
        store_skus = sorted(sku for sku in store_lines if sku > after)
        if not q or not store_skus:
            return store_skus[:limit]
        of_items = {"_id": {"$in": store_skus}, "item_id": {"$in": items}}
        found = {sku for sku in store_skus if sku.startswith(q)}
        found |= {v["_id"] for v in variants.find(of_items, {"_id": 1})}
        return sorted(found)[:limit]
    past = {"_id": {"$gt": after}} if after else {}
    if not q:
        cursor = variants.find(past, {"_id": 1}).sort("_id").limit(limit)
        return [v["_id"] for v in cursor]
    # A prefix as a range of the _id index (a regex is not index-served on
    # every server).
    prefix = {"_id": {"$gte": q, "$lt": q + "\uffff", **past.get("_id", {})}}
    of_items = {"item_id": {"$in": items}, **past}
    found = set()
    for query in (prefix, of_items):
        cursor = variants.find(query, {"_id": 1}).sort("_id").limit(limit)
        found |= {v["_id"] for v in cursor}
    return sorted(found)[:limit]


# Items a title search reads at most: their SKUs are then paged. A search
# that names more says so (``StockPage.titles_capped_at``): staff add a word.
TITLED_MAX = 1_000


def _titled(q: str) -> tuple[list[str], bool]:
    """Items whose title (or brand, category...) has the words of ``q``, the
    first ``TITLED_MAX`` by id, and whether there were more: the summaries'
    keyword index, so every sellable item; never a scan."""
    words = keywords_of(q)
    if not words:
        return [], False
    hits = Summary.coll().find({"keywords": {"$all": words}}, {"_id": 1})
    # Sorted, so every page of one search reads the same items.
    found = [doc["_id"] for doc in hits.sort("_id").limit(TITLED_MAX + 1)]
    return found[:TITLED_MAX], len(found) > TITLED_MAX


@dataclass(frozen=True)
class StockPage:
    rows: list[StockRow]
    # The SKU the next page starts after; None on the last page.
    next_after: str | None
    # The title's words matched more items than a search reads (TITLED_MAX,
    # as it was): only that many, the first by item id, are listed. None:
    # the search read every item it names.
    titles_capped_at: int | None = None


def stock_report(
    *, q: str = "", store_id: str = "", after: str = "", limit: int | None = None
) -> StockPage:
    """A page of the stock of the SKUs matching ``q`` (SKU or its start,
    item id, words of the title), only those a store has a line for when
    ``store_id`` is given; in SKU order, after the SKU ``after``."""
    q = (q or "").strip()
    limit = limit or PAGE
    store_lines = _store_lines(store_id) if store_id else None
    titled, capped = _titled(q) if q else ([], False)
    # The search's text may itself be an item id.
    items = list({q, *titled})
    skus = _skus(q, items, store_lines, limit + 1, after)
    more = len(skus) > limit
    skus = skus[:limit]
    return StockPage(
        _rows(skus, store_lines),
        skus[-1] if more else None,
        TITLED_MAX if capped else None,
    )


def stock_row(*, sku: str) -> StockRow | None:
    """One SKU's row (None if the catalog has no such SKU)."""
    rows = _rows([sku], None)
    return rows[0] if rows and rows[0].item_id else None


def _rows(skus: list[str], store_lines: dict[str, int] | None) -> list[StockRow]:
    variants = {
        v["_id"]: v
        for v in Variant.coll().find(
            {"_id": {"$in": skus}}, {"item_id": 1, "attributes": 1}
        )
    }
    item_ids = list({v["item_id"] for v in variants.values()})
    titles = {
        i["_id"]: i["title"]
        for i in Item.coll().find({"_id": {"$in": item_ids}}, {"title": 1})
    }
    totals = _store_totals(item_ids)
    levels = stock_levels(skus=skus)
    own = stock_thresholds(skus=skus)
    default = settings.LOW_STOCK_THRESHOLD
    rows = []
    for sku in skus:
        variant = variants.get(sku, {"item_id": "", "attributes": {}})
        total, stores = totals.get(sku, (0, 0))
        rows.append(
            StockRow(
                sku=sku,
                item_id=variant["item_id"],
                title=titles.get(variant["item_id"], ""),
                attributes=variant.get("attributes") or {},
                online=levels.get(sku),
                threshold=own.get(sku, default),
                own_threshold=sku in own,
                store_quantity=None if store_lines is None else store_lines.get(sku),
                stores_total=total,
                stores=stores,
            )
        )
    return rows


def _store_totals(item_ids: list[str]) -> dict[str, tuple[int, int]]:
    """Per SKU of these items: units over every store, and how many stores."""
    return store_totals(item_ids=item_ids)


def sku_store_counts(*, sku: str) -> dict[str, int]:
    """Each store's count of one SKU (stores that do not stock it are absent)."""
    return stock_at_stores(sku=sku)


def sku_exists(*, sku: str) -> bool:
    return bool(Variant.coll().count_documents({"_id": sku}, limit=1))
