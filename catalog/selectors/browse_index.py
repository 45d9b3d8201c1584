"""An in-memory facet index of one department, for faceted pages.

Counting facet values under filters means reading every summary that
matches: a ``$facet`` over a brand's 2,000 summaries, and one more per
selected facet. MongoDB does that quickly; the embedded server spends about
0.2 ms a summary, so a three-facet page of a 100,000-item catalogue takes
seconds. This index holds what counting and ordering need of a department's
summaries (each item's facet tokens, its variants' tokens, its category and
sort keys) as arrays, so a faceted page costs one read of the scope's counts
document, array arithmetic, and one read of the page's own summaries by
``_id``.

It is a cache of the summaries, never a source, and it answers only when it
is up to date. Every summary write bumps the version (``epoch``, ``v``) of
each scope document it touches and logs the item on its department's
document (``catalog.services.scopes``); an index remembers the versions it
was built under, read *before* the summaries, and serves a query only while
its scope's version is no newer. A stale index is brought up to date within
the request: the log names the items written since, and only those are read
again. When the log no longer reaches back, browse aggregates as before
while the index is built anew: in a background
thread in a server (``BROWSE_INDEX = "background"``), at once in tests
(``"sync"``), never with ``"off"``. Staleness can cost time, never a wrong
count. (An index is also built anew behind the pages it serves once an
hour: the one change no version announces is a write whose process died
between the summary and the bump.)
"""

import bisect
import copy
import heapq
import itertools
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import numpy as np
from django.conf import settings

from catalog import facets, scopes
from catalog.documents import BrowseScope, Summary

log = logging.getLogger("marquee.catalog")

# What the index reads of a summary.
_FIELDS = {
    "category": 1, "rating": 1, "price_cents": 1, "created_at": 1,
    "attrs": 1, "vattrs": 1, "vars.attrs": 1,
}  # fmt: skip
# Indexes kept per process (one per department and database).
_KEPT = 32
# Dead entries an index may carry before it is built anew (or a quarter of
# its items, if more).
_DEAD_ALLOWED = 256
# Seconds after which an index serving pages is built anew behind them: a
# process that died between a summary write and its version bump left a
# change no version announces (see ``catalog.services.scopes``).
_REBUILT_AFTER = 3600


def _ms(moment: datetime) -> int:
    """A date as the browse cursor carries it: whole milliseconds."""
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp() * 1000)


def _version(scope_doc: Mapping) -> tuple:
    return scope_doc.get("epoch"), scope_doc.get("v", 0)


class DepartmentIndex:
    """The browse-relevant arrays of one department's summaries.

    Items are numbered in the order they were added, and variants in item
    order, so the items of any run of variants come sorted. ``item_tokens``
    and ``vattr_tokens`` map a facet token to the items carrying it on the
    item or on any variant, ``variant_tokens`` to the variants carrying it.
    An item that changed is added again under a new number and its old
    number is marked dead (``alive``); every count starts from ``alive``.

    An index is never changed once it serves pages (``load`` and
    ``refreshed`` return new ones), so a thread reading it needs no lock.
    """

    def __init__(self, department: str, versions: Mapping) -> None:
        self.department = department
        self.versions = dict(versions)
        self.built_at = time.monotonic()  # of the read it started from
        self.ids: list[str] = []
        self.number: dict[str, int] = {}  # item id -> its live number
        self.alive = np.zeros(0, dtype=bool)
        self.dead = 0
        self.category_names: list[str] = []
        self.category = np.zeros(0, dtype=np.int32)
        self.keys = {
            "rating": np.zeros(0, dtype=np.float64),
            "price_cents": np.zeros(0, dtype=np.int64),
            "created_at": np.zeros(0, dtype=np.int64),
        }
        self.variant_item = np.zeros(0, dtype=np.int64)
        self.item_tokens: dict[str, np.ndarray] = {}
        self.vattr_tokens: dict[str, np.ndarray] = {}
        self.variant_tokens: dict[str, np.ndarray] = {}
        # Sort field -> the (key, _id) pairs ascending and the item numbers
        # in that order.
        self._orders: dict[str, tuple[list[tuple], np.ndarray]] = {}

    @property
    def n(self) -> int:
        return len(self.ids)

    @classmethod
    def load(cls, department: str) -> "DepartmentIndex":
        """Read the department's scope versions, then its summaries: a write
        landing in between leaves the versions older than the data, so the
        index is refreshed once more, never trusted past a change it missed."""
        versions, _changed = _versions(department)
        index = cls(department, versions)
        index._add(
            Summary.coll().find({"department": department}, _FIELDS, batch_size=5000)
        )
        return index

    def refreshed(self) -> "DepartmentIndex | None":
        """A new index: this one with the items written since it was built
        read again (the department's change log, ``catalog.services.scopes``
        says which). None when the log no longer reaches back that far, the
        department's document was made anew, or dead entries pile up: build
        anew."""
        versions, changed = _versions(self.department)
        (epoch, v), (new_epoch, new_v) = (
            self.versions.get(self.department, (None, 0)),
            versions.get(self.department, (None, 0)),
        )
        gap = new_v - v
        if new_epoch != epoch or not 0 <= gap <= len(changed):
            return None
        ids = set(changed[len(changed) - gap :]) if gap else set()
        if self.dead + len(ids) > max(_DEAD_ALLOWED, self.n // 4):
            return None
        index = self._copy(versions)
        for item_id in ids:
            number = index.number.pop(item_id, None)
            if number is not None:
                index.alive[number] = False
                index.dead += 1
        if ids:
            index._add(
                Summary.coll().find(
                    {"_id": {"$in": sorted(ids)}, "department": self.department},
                    _FIELDS,
                )
            )
        return index

    def fresh_for(self, scope_doc: Mapping) -> bool:
        """Whether the index holds every write the scope document counts
        (one built after the document was read holds more: fine)."""
        epoch, v = _version(scope_doc)
        built = self.versions.get(scope_doc["_id"])
        return built is not None and built[0] == epoch and built[1] >= v

    def _copy(self, versions: Mapping) -> "DepartmentIndex":
        """A copy that ``_add`` and dead marks may change without touching
        this index (arrays are replaced, never written in place, but for
        ``alive``, copied here)."""
        index = copy.copy(self)
        index.versions = dict(versions)
        index.ids = list(self.ids)
        index.number = dict(self.number)
        index.alive = self.alive.copy()
        index.category_names = list(self.category_names)
        index.keys = dict(self.keys)
        index.item_tokens = dict(self.item_tokens)
        index.vattr_tokens = dict(self.vattr_tokens)
        index.variant_tokens = dict(self.variant_tokens)
        index._orders = dict(self._orders)
        return index

    def _add(self, summaries: Iterable[Mapping]) -> None:
        """Number and append ``summaries`` (only on an index no one reads
        yet)."""
        first = self.n
        new = self._columns(summaries, first)
        added = np.arange(first, self.n)
        self.alive = np.concatenate([self.alive, np.ones(len(added), dtype=bool)])
        self.category = np.concatenate(
            [self.category, np.array(new["categories"], dtype=np.int32)]
        )
        for name, values in new["keys"].items():
            self.keys[name] = np.concatenate(
                [self.keys[name], np.array(values, dtype=self.keys[name].dtype)]
            )
        self.variant_item = np.concatenate(
            [self.variant_item, np.array(new["variant_item"], dtype=np.int64)]
        )
        for postings, tokens in (
            (self.item_tokens, new["item_tokens"]),
            (self.vattr_tokens, new["vattr_tokens"]),
            (self.variant_tokens, new["variant_tokens"]),
        ):
            for token, numbers in tokens.items():
                postings[token] = np.concatenate(
                    [postings.get(token, _NONE), np.array(numbers, dtype=np.int64)]
                )
        for name in self.keys:
            pairs = self._pairs(name, added)
            if first == 0:
                self._orders[name] = (
                    [(value, item_id) for value, item_id, _ in pairs],
                    np.array([number for *_, number in pairs], dtype=np.int64),
                )
            else:
                self._orders[name] = _inserted(*self._orders[name], pairs)

    def _columns(self, summaries: Iterable[Mapping], first: int) -> dict:
        """Number ``summaries`` from ``first`` (their ids and categories join
        the index) and gather their new columns and postings as lists."""
        codes = {name: code for code, name in enumerate(self.category_names)}
        first_variant = len(self.variant_item)
        new: dict = {
            "categories": [],
            "variant_item": [],
            "keys": {name: [] for name in self.keys},
            "item_tokens": {},
            "vattr_tokens": {},
            "variant_tokens": {},
        }
        for number, summary in enumerate(summaries, start=first):
            self.ids.append(summary["_id"])
            self.number[summary["_id"]] = number
            category = summary["category"]
            if category not in codes:
                codes[category] = len(self.category_names)
                self.category_names.append(category)
            new["categories"].append(codes[category])
            new["keys"]["rating"].append(float(summary.get("rating") or 0.0))
            new["keys"]["price_cents"].append(int(summary["price_cents"]))
            new["keys"]["created_at"].append(_ms(summary["created_at"]))
            for token in summary.get("attrs") or ():
                new["item_tokens"].setdefault(token, []).append(number)
            for token in summary.get("vattrs") or ():
                new["vattr_tokens"].setdefault(token, []).append(number)
            for variant in summary.get("vars") or ():
                variant_number = first_variant + len(new["variant_item"])
                for token in variant.get("attrs") or ():
                    new["variant_tokens"].setdefault(token, []).append(variant_number)
                new["variant_item"].append(number)
        return new

    def _pairs(self, name: str, numbers: np.ndarray) -> list[tuple]:
        """(key, _id, number) of the items ``numbers``, ascending."""
        values = self.keys[name][numbers].tolist()
        return sorted(
            zip(values, (self.ids[i] for i in numbers), numbers.tolist(), strict=True)
        )

    # --- one page --------------------------------------------------------------

    def _evaluate(self, query, sort: tuple[str, int]) -> dict:
        """The rows a browse page needs, shaped as the aggregations return
        them (``catalog.selectors.browse``): ``total``, ``shared``,
        ``categories``, ``facet:<name>``, and ``keyed``, the page's (sort
        key, item id) pairs in order with one more when a next page exists.
        ``sort`` is the sort field and direction (1 or -1).

        The same rules as the aggregations: OR within a facet, AND across
        facets, variant facets held by one variant, and each selected facet
        counted under every selection but its own.
        """
        selected = {name: values for name, values in query.selected.items() if values}
        base = self._scope_mask(query)
        on_item = {
            name: self._items_with(self.item_tokens, name, values)
            for name, values in selected.items()
            if name in facets.ITEM_FACETS
        }
        on_variant = {
            name: self._variants_with(name, values)
            for name, values in selected.items()
            if name in facets.VARIANT_FACETS
        }

        def matching(excluded: str | None) -> tuple[np.ndarray, np.ndarray | None]:
            return self._matching(base, on_item, on_variant, excluded)

        page, variants = matching(None)
        result = {
            "total": [{"n": int(page.sum())}],
            "shared": [
                *self._count(self.item_tokens, facets.ITEM_FACETS, page),
                *self._count(self.vattr_tokens, facets.VARIANT_FACETS, page),
            ],
            "categories": self._categories(page),
        }
        if variants is not None:
            for name in facets.VARIANT_FACETS:
                if name not in selected:
                    # Sizes under a chosen colour count only the variants in it.
                    result[f"facet:{name}"] = self._count_variants(name, variants, page)
        for name in selected:
            result[f"facet:{name}"] = self._count_selected(name, *matching(name))
        result["keyed"] = self._page(query, sort, page)
        return result

    def _count_selected(
        self, name: str, mask: np.ndarray, others: np.ndarray | None
    ) -> list[dict]:
        """A selected facet's counts, under every selection but its own."""
        if name in facets.ITEM_FACETS:
            return self._count(self.item_tokens, (name,), mask)
        if others is None:
            return self._count(self.vattr_tokens, (name,), mask)
        return self._count_variants(name, others, mask)

    def _matching(
        self, base: np.ndarray, on_item: dict, on_variant: dict, excluded: str | None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Items matching every selection but ``excluded``, and the variants
        satisfying the variant selections but ``excluded``."""
        mask = base.copy()
        for name, items in on_item.items():
            if name != excluded:
                mask &= items
        variants = None
        for name, chosen in on_variant.items():
            if name != excluded:
                variants = chosen if variants is None else variants & chosen
        if variants is not None:
            mask &= self._items_of(variants)
        return mask, variants

    def _scope_mask(self, query) -> np.ndarray:
        mask = self.alive.copy()
        category = query.category
        if category and category != self.department:
            inside = [
                code
                for code, path in enumerate(self.category_names)
                if path == category or path.startswith(category + "/")
            ]
            mask &= np.isin(self.category, inside)
        prices = self.keys["price_cents"]
        if query.min_cents is not None:
            mask &= prices >= query.min_cents
        if query.max_cents is not None:
            mask &= prices <= query.max_cents
        return mask

    def _items_with(self, postings, name: str, values) -> np.ndarray:
        mask = np.zeros(self.n, dtype=bool)
        for value in values:
            mask[postings.get(facets.token(name, value), _NONE)] = True
        return mask

    def _variants_with(self, name: str, values) -> np.ndarray:
        mask = np.zeros(len(self.variant_item), dtype=bool)
        for value in values:
            mask[self.variant_tokens.get(facets.token(name, value), _NONE)] = True
        return mask

    def _items_of(self, variants: np.ndarray) -> np.ndarray:
        mask = np.zeros(self.n, dtype=bool)
        mask[self.variant_item[variants]] = True
        return mask

    def _count(self, postings, names: Iterable[str], mask: np.ndarray) -> list[dict]:
        """Items of ``mask`` carrying each token of the facets ``names``."""
        rows = []
        for tok, items in postings.items():
            if facets.split_token(tok)[0] in names:
                n = int(mask[items].sum())
                if n:
                    rows.append({"_id": tok, "n": n})
        return rows

    def _count_variants(
        self, name: str, variants: np.ndarray, mask: np.ndarray
    ) -> list[dict]:
        """Items of ``mask`` with a variant among ``variants`` carrying each
        token of facet ``name``, an item once however many such variants."""
        rows = []
        for tok, carriers in self.variant_tokens.items():
            if facets.split_token(tok)[0] != name:
                continue
            kept = carriers[variants[carriers]]
            items = self.variant_item[kept]
            items = items[mask[items]]
            # Variants are numbered in item order: the items come sorted.
            n = int(np.count_nonzero(np.diff(items))) + 1 if len(items) else 0
            if n:
                rows.append({"_id": tok, "n": n})
        return rows

    def _categories(self, mask: np.ndarray) -> list[dict]:
        counts = np.bincount(self.category[mask], minlength=len(self.category_names))
        return [
            {"_id": path, "n": int(n)}
            for path, n in zip(self.category_names, counts, strict=True)
            if n
        ]

    def _page(self, query, sort: tuple[str, int], mask: np.ndarray) -> list[tuple]:
        """The page's (key, id) pairs after the cursor, in sort order, one
        more than a page when there is more: the keyset paging of the
        aggregations, ``_id`` breaking ties in the sort's direction."""
        key, direction = sort
        pairs, order = self._orders[key]
        in_order = mask[order]
        wanted = query.per_page + 1
        after = query.after
        if direction == 1:
            start = 0 if after is None else bisect.bisect_right(pairs, _mark(after))
            positions = np.flatnonzero(in_order[start:])[:wanted] + start
        else:
            end = (
                len(pairs) if after is None else bisect.bisect_left(pairs, _mark(after))
            )
            positions = np.flatnonzero(in_order[:end])[::-1][:wanted]
        return [pairs[position] for position in positions.tolist()]


_NONE = np.array([], dtype=np.int64)


def evaluate(indexes: list[DepartmentIndex], query, sort: tuple[str, int]) -> dict:
    """The rows of one browse page (``DepartmentIndex._evaluate``) from one
    department's index, or from every department's for the catalogue: the
    departments hold disjoint items, so counts add up, and the page is the
    first of the departments' pages merged in sort order. ``ids`` holds the
    page's item ids, one more when a next page exists."""
    parts = [index._evaluate(query, sort) for index in indexes]
    if len(parts) == 1:
        result = parts[0]
        keyed = result.pop("keyed")
    else:
        result = {}
        for name in {name for part in parts for name in part} - {"keyed"}:
            counts = Counter()
            for part in parts:
                for row in part.get(name, ()):
                    counts[row.get("_id")] += row["n"]
            result[name] = [{"_id": key, "n": n} for key, n in counts.items()]
        merged = heapq.merge(*(part["keyed"] for part in parts), reverse=sort[1] == -1)
        keyed = list(itertools.islice(merged, query.per_page + 1))
    if not query.department:
        result["departments"] = [
            {"_id": index.department, "n": part["total"][0]["n"]}
            for index, part in zip(indexes, parts, strict=True)
            if part["total"][0]["n"]
        ]
    result["ids"] = [item_id for _key, item_id in keyed]
    return result


def _mark(cursor) -> tuple:
    return (cursor.value, cursor.item_id)


def _inserted(
    pairs: list[tuple], order: np.ndarray, new: list[tuple]
) -> tuple[list[tuple], np.ndarray]:
    """A sort order with the ascending (key, _id, number) triples ``new``
    merged in (new lists: the old order may be serving a page)."""
    at = [bisect.bisect_left(pairs, (value, item_id)) for value, item_id, _ in new]
    merged = list(pairs)
    # From the end, so that each position still counts in the old list.
    for position, (value, item_id, _number) in zip(
        reversed(at), reversed(new), strict=True
    ):
        merged.insert(position, (value, item_id))
    return merged, np.insert(order, at, [number for *_, number in new])


def _versions(department: str) -> tuple[dict, list[str]]:
    """The version of every scope in the department (the department and
    its categories), and the department's log of changed item ids."""
    scope_docs = BrowseScope.coll()
    versions, changed = {}, []
    for subtree in (
        {"_id": department},
        {"_id": {"$gte": department + "/", "$lt": department + "0"}},
    ):
        for doc in scope_docs.find(subtree, {"epoch": 1, "v": 1, "changed": 1}):
            versions[doc["_id"]] = _version(doc)
            if doc["_id"] == department:
                changed = doc.get("changed") or []
    return versions, changed


# --- the indexes of this process ----------------------------------------------------

_indexes: OrderedDict[tuple[str, str], DepartmentIndex] = OrderedDict()
_building: dict[tuple[str, str], threading.Thread] = {}
_lock = threading.Lock()


def indexes_for(query, scope_doc: Mapping | None) -> list[DepartmentIndex] | None:
    """Indexes up to date for the query's scope: its department's, or every
    department's for the whole catalogue; None when one is missing or too
    stale (the caller aggregates; builds start as ``BROWSE_INDEX`` says).
    ``scope_doc`` is the query's scope document, None when the query
    searches words (no index covers them)."""
    if settings.BROWSE_INDEX == "off" or scope_doc is None:
        return None
    if query.department:
        index = _ready(query.department, scope_doc)
        return None if index is None else [index]
    departments = [
        doc
        for doc in BrowseScope.coll().find({}, {"epoch": 1, "v": 1})
        if doc["_id"] != scopes.ALL and "/" not in doc["_id"]
    ]
    ready = [_ready(doc["_id"], doc) for doc in departments]  # starts every build
    return None if None in ready else ready


def _ready(department: str, scope_doc: Mapping) -> DepartmentIndex | None:
    """The department's index if it holds every write ``scope_doc`` (one of
    the department's scope documents) counts: as kept, or caught up from the
    change log within the request (a few reads); else None, with a build
    started or, in ``"sync"`` mode, done."""
    key = (Summary.coll().database.name, department)
    with _lock:
        index = _indexes.get(key)
        if index is not None:
            _indexes.move_to_end(key)
    if index is not None and index.fresh_for(scope_doc):
        if time.monotonic() - index.built_at > _REBUILT_AFTER:
            _build_behind(key)
        return index
    if index is not None:
        index = index.refreshed()
        if index is not None:
            _keep(key, index)
            return index if index.fresh_for(scope_doc) else None
    if settings.BROWSE_INDEX == "sync":
        index = _build(key)
        return index if index.fresh_for(scope_doc) else None
    _build_behind(key)
    return None


def _build_behind(key: tuple[str, str]) -> None:
    """Start building the department's index in a thread, unless one is."""
    with _lock:
        if key in _building:
            return
        thread = threading.Thread(target=_build_in_background, args=(key,), daemon=True)
        _building[key] = thread
    thread.start()


def _keep(key: tuple[str, str], index: DepartmentIndex) -> None:
    with _lock:
        _indexes[key] = index
        _indexes.move_to_end(key)
        while len(_indexes) > _KEPT:
            _indexes.popitem(last=False)


def _build(key: tuple[str, str]) -> DepartmentIndex:
    index = DepartmentIndex.load(key[1])
    _keep(key, index)
    return index


def _build_in_background(key: tuple[str, str]) -> None:
    try:
        _build(key)
    except Exception:  # a failed build leaves browsing on the aggregations
        log.exception("building the browse index of %s failed", key[1])
    finally:
        with _lock:
            _building.pop(key, None)


def builds_finish(timeout: float | None = None) -> bool:
    """Wait for the background builds under way; False if one is still
    running after ``timeout`` seconds. For whoever must read an index that
    is certain to be built (a test of it, a measurement of it), without
    sleeping."""
    with _lock:
        threads = list(_building.values())
    for thread in threads:
        thread.join(timeout)
    return not any(thread.is_alive() for thread in threads)
