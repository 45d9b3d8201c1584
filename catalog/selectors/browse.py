"""Faceted browse over the summaries: one aggregation per page.

The page, its total and every facet's counts come from one ``$facet``
aggregation over the documents the department / category / keyword / price
filters select. Facet counts are *disjunctive*: each facet is counted under
every other active selection but not its own, so ticking a second brand
widens the results and the brand counts stay put.

Two ``$match`` stages open the pipeline. The first holds only what an index
can bound on any server (equalities, then at most one range or ``$in``);
the second holds the exact rules (anchored regexes, ``$all``). MongoDB
merges adjacent ``$match`` stages, so this costs it nothing; a simpler
planner (the embedded server) uses the index for the first instead of
scanning the collection.

Paging is by keyset: the sort key, then ``_id`` in the same direction as a
tie-break, so pages never skip or repeat an item however many share a price.
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from catalog import facets
from catalog.documents import Summary

SORTS = {
    "relevance": "Best match",
    "price_asc": "Price: low to high",
    "price_desc": "Price: high to low",
    "rating": "Top rated",
    "newest": "Newest",
}
DEFAULT_SORT = "relevance"
# What a card and the next-page cursor need of a summary.
CARD_FIELDS = (
    "title", "brand", "price", "price_cents", "rating", "created_at",
    "category", "department", "score",
)  # fmt: skip
PER_PAGE = 24
MAX_PER_PAGE = 96


@dataclass(frozen=True)
class Cursor:
    """Where the next page starts: after this sort value and this ``_id``."""

    value: float | int
    item_id: str


@dataclass(frozen=True)
class BrowseQuery:
    department: str | None = None
    # A category path prefix ("Shoes/Women"); it starts with the department.
    category: str | None = None
    text: str = ""
    # Facet name -> selected values (whitelisted facet names only).
    selected: dict[str, tuple[str, ...]] = field(default_factory=dict)
    min_cents: int | None = None
    max_cents: int | None = None
    sort: str = DEFAULT_SORT
    per_page: int = PER_PAGE
    after: Cursor | None = None

    @property
    def keywords(self) -> list[str]:
        return facets.keywords_of(self.text)


@dataclass(frozen=True)
class Card:
    item_id: str
    title: str
    brand: str | None
    price: Decimal
    rating: float
    category: str
    department: str


@dataclass(frozen=True)
class FacetValue:
    value: str
    label: str
    count: int
    selected: bool


@dataclass(frozen=True)
class Facet:
    name: str
    label: str
    values: list[FacetValue]


@dataclass(frozen=True)
class CategoryCount:
    path: str
    label: str
    count: int


@dataclass(frozen=True)
class BrowsePage:
    query: BrowseQuery
    cards: list[Card]
    total: int
    facets: list[Facet]
    # Children of the current category (or the department's top level),
    # counted under every active filter.
    categories: list[CategoryCount]
    # Departments with counts, when no department is chosen.
    departments: list[CategoryCount]
    next_cursor: Cursor | None
    # False when the department / category itself holds nothing at all.
    exists: bool = True


# --- the pipeline ------------------------------------------------------------


def _prefix_range(prefix: str) -> dict:
    """Index bounds holding every string that starts with ``prefix``."""
    return {"$gte": prefix, "$lt": prefix[:-1] + chr(ord(prefix[-1]) + 1)}


def _scope_filters(query: BrowseQuery) -> tuple[dict, dict]:
    """(index part, exact part) of the filters every count shares.

    The index part is the department plus the first of these that applies,
    each served by a ``department + <field> + _id`` index: a whole search
    word, a half-typed one (a prefix range), the category subtree (a range),
    the price range. The exact part repeats or refines them all.
    """
    indexed: dict = {}
    exact: dict = {}
    bounds: list[tuple[str, object]] = []
    if query.department:
        indexed["department"] = query.department
    words = query.keywords
    if words:
        *whole, last = words
        if whole:
            bounds.append(("keywords", whole[0]))
            exact["keywords"] = {"$all": whole}
        bounds.append(("keywords", _prefix_range(last)))
        # The last word may be half typed: it matches as a prefix. The regex
        # is built from escaped text, as a string (never a compiled pattern).
        exact["$and"] = [{"keywords": {"$regex": "^" + re.escape(last)}}]
    if query.category and query.category != query.department:
        # The category itself or anything below it, never a sibling that
        # merely starts with the same letters ("Shoes/Womenswear"). The range
        # ("/" sorts just before "0") is a superset the regex makes exact.
        bounds.append(
            ("category", {"$gte": query.category, "$lt": query.category + "0"})
        )
        exact["category"] = {"$regex": "^" + re.escape(query.category) + "(/|$)"}
    price: dict = {}
    if query.min_cents is not None:
        price["$gte"] = query.min_cents
    if query.max_cents is not None:
        price["$lte"] = query.max_cents
    if price:
        bounds.append(("price_cents", price))
        exact["price_cents"] = price
    if bounds:
        name, bound = bounds[0]
        indexed[name] = bound
    return indexed, exact


def _selection_filter(
    selected: dict[str, tuple[str, ...]], exclude: str | None = None
) -> dict:
    """Facet selections as a filter: OR within a facet, AND across facets.

    Variant facets must hold on the same variant ("size 6 in red").
    """
    clauses = []
    for name in facets.ITEM_FACETS:
        if name != exclude and selected.get(name):
            clauses.append(
                {"attrs": {"$in": [facets.token(name, v) for v in selected[name]]}}
            )
    on_variant = [
        {"attrs": {"$in": [facets.token(name, v) for v in selected[name]]}}
        for name in facets.VARIANT_FACETS
        if name != exclude and selected.get(name)
    ]
    if on_variant:
        # A field first, the rest under $and: an $elemMatch that opens with
        # an operator reads as a condition on values on some servers.
        condition = dict(on_variant[0])
        if len(on_variant) > 1:
            condition["$and"] = on_variant[1:]
        clauses.append({"vars": {"$elemMatch": condition}})
    if not clauses:
        return {}
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _match(filter_: dict) -> list[dict]:
    return [{"$match": filter_}] if filter_ else []


def _variant_values(selected: dict[str, tuple[str, ...]], name: str) -> list[dict]:
    """Count a variant facet when another variant facet is selected too.

    Only the variants that satisfy the other variant selections count, and
    an item counts once per value however many of its variants carry it.
    """
    others = [
        {"vars.attrs": {"$in": [facets.token(other, v) for v in selected[other]]}}
        for other in facets.VARIANT_FACETS
        if other != name and selected.get(other)
    ]
    return [
        *_match(_selection_filter(selected, exclude=name)),
        {"$unwind": "$vars"},
        *_match(others[0] if len(others) == 1 else {"$and": others}),
        {"$unwind": "$vars.attrs"},
        {"$group": {"_id": {"t": "$vars.attrs", "i": "$_id"}}},
        {"$group": {"_id": "$_id.t", "n": {"$sum": 1}}},
    ]


def _group_tokens(selected: dict, exclude: str | None, array: str) -> list[dict]:
    return [
        *_match(_selection_filter(selected, exclude=exclude)),
        {"$project": {"t": array}},
        {"$unwind": "$t"},
        {"$group": {"_id": "$t", "n": {"$sum": 1}}},
    ]


def _sort_spec(query: BrowseQuery) -> tuple[str, int]:
    """(sort field, direction); ``_id`` breaks ties in the same direction."""
    if query.sort == "price_asc":
        return "price_cents", 1
    if query.sort == "price_desc":
        return "price_cents", -1
    if query.sort == "newest":
        return "created_at", -1
    if query.sort == "relevance" and query.keywords:
        return "score", -1
    return "rating", -1


def _cursor_value(query: BrowseQuery, value):
    if query.sort == "newest":
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return value


def _hits_pipeline(query: BrowseQuery) -> list[dict]:
    key, direction = _sort_spec(query)
    stages = [*_match(_selection_filter(query.selected))]
    if key == "score":
        # Words found in the title weigh most; the rating orders the rest.
        # Each term adds 10 and a rating is at most 5, so they never mix.
        title_hits = [
            {
                "$cond": [
                    {
                        "$regexMatch": {
                            "input": "$title",
                            "regex": r"(^|\W)" + re.escape(word),
                            "options": "i",
                        }
                    },
                    10,
                    0,
                ]
            }
            for word in query.keywords
        ]
        stages.append({"$addFields": {"score": {"$add": [*title_hits, "$rating"]}}})
    if query.after is not None:
        value = _cursor_value(query, query.after.value)
        beyond = "$gt" if direction == 1 else "$lt"
        stages.append(
            {
                "$match": {
                    "$or": [
                        {key: {beyond: value}},
                        {key: value, "_id": {beyond: query.after.item_id}},
                    ]
                }
            }
        )
    stages += [
        {"$sort": {key: direction, "_id": direction}},
        # One more than a page: whether a next page exists, without a count.
        {"$limit": query.per_page + 1},
        {"$project": dict.fromkeys(CARD_FIELDS, 1)},
    ]
    return stages


def browse_pipeline(query: BrowseQuery) -> list[dict]:
    """The whole aggregation behind one browse page (also used by the bench)."""
    indexed, exact = _scope_filters(query)
    selected = {name: values for name, values in query.selected.items() if values}
    variant_selected = [n for n in facets.VARIANT_FACETS if selected.get(n)]

    branches: dict[str, list[dict]] = {
        "hits": _hits_pipeline(query),
        "total": [*_match(_selection_filter(selected)), {"$count": "n"}],
        # Every facet with no selection of its own shares this count.
        "shared": _group_tokens(
            selected, None, {"$concatArrays": ["$attrs", "$vattrs"]}
        ),
        "categories": [
            *_match(_selection_filter(selected)),
            {"$group": {"_id": "$category", "n": {"$sum": 1}}},
        ],
    }
    for name in facets.ITEM_FACETS:
        if selected.get(name):
            branches[f"item:{name}"] = _group_tokens(selected, name, "$attrs")
    for name in facets.VARIANT_FACETS:
        others = [n for n in variant_selected if n != name]
        if others:
            branches[f"variant:{name}"] = _variant_values(selected, name)
        elif selected.get(name):
            branches[f"variant:{name}"] = _group_tokens(selected, name, "$vattrs")
    if not query.department:
        branches["departments"] = [
            *_match(_selection_filter(selected)),
            {"$group": {"_id": "$department", "n": {"$sum": 1}}},
        ]

    # No $project before the $facet: MongoDB reads only the fields the
    # pipeline uses anyway, and on the embedded server an early projection
    # of every matching summary costs more than it saves.
    return [*_match(indexed), *_match(exact), {"$facet": branches}]


# --- reading the result ------------------------------------------------------


def _counts(rows: list[dict]) -> Counter:
    return Counter({row["_id"]: row["n"] for row in rows})


def _facet_counts(result: dict, selected: dict) -> dict[str, Counter]:
    """Facet name -> value -> count, each from the branch that counts it."""
    per_facet: dict[str, Counter] = {name: Counter() for name in facets.FACETS}
    sources = {name: result["shared"] for name in facets.FACETS}
    for key, rows in result.items():
        kind, _, name = key.partition(":")
        if kind in ("item", "variant"):
            sources[name] = rows
    for name, rows in sources.items():
        for tok, n in _counts(rows).items():
            facet, value = facets.split_token(tok)
            if facet == name:
                per_facet[name][value] = n
    return per_facet


def _children(rows: list[dict], prefix: str) -> list[CategoryCount]:
    """Counts of the next level of the category tree under ``prefix``."""
    depth = prefix.count("/") + 1
    counts: Counter = Counter()
    for row in rows:
        path = row["_id"] or ""
        if path.startswith(prefix + "/"):
            parts = path.split("/")
            counts["/".join(parts[: depth + 1])] += row["n"]
    return [
        CategoryCount(path=path, label=path.rsplit("/", 1)[-1], count=n)
        for path, n in sorted(counts.items())
    ]


def _card(doc: dict) -> Card:
    return Card(
        item_id=doc["_id"],
        title=doc["title"],
        brand=doc.get("brand"),
        price=doc["price"].to_decimal(),
        rating=doc.get("rating") or 0.0,
        category=doc["category"],
        department=doc["department"],
    )


def _next_cursor(query: BrowseQuery, hits: list[dict]) -> Cursor | None:
    if len(hits) <= query.per_page:
        return None
    last = hits[query.per_page - 1]
    key, _direction = _sort_spec(query)
    value = last.get(key)
    if isinstance(value, datetime):
        value = int(value.replace(tzinfo=value.tzinfo or UTC).timestamp() * 1000)
    return Cursor(value=value, item_id=last["_id"])


def _scope_exists(query: BrowseQuery) -> bool:
    """Whether the department / category holds anything at all, whatever
    the search and filters (only asked when a page comes back empty)."""
    if not query.department:
        return True
    scope = BrowseQuery(department=query.department, category=query.category)
    indexed, exact = _scope_filters(scope)
    found = Summary._get_collection().aggregate(
        [*_match(indexed), *_match(exact), {"$limit": 1}, {"$project": {"_id": 1}}]
    )
    return any(True for _ in found)


def browse(query: BrowseQuery) -> BrowsePage:
    """One page of summaries with its facet counts and category counts."""
    if query.text.strip() and not query.keywords:
        # Nothing searchable was typed (only punctuation): nothing matches.
        return BrowsePage(query, [], 0, [], [], [], None, exists=True)
    rows = list(Summary._get_collection().aggregate(browse_pipeline(query)))
    result = rows[0] if rows else {}
    selected = {name: values for name, values in query.selected.items() if values}
    hits = result.get("hits", [])
    per_facet = _facet_counts(result, selected)
    facet_list = []
    for name in facets.FACETS:
        chosen = set(selected.get(name, ()))
        counts = per_facet[name]
        values = set(counts) | chosen
        if not values:
            continue
        facet_list.append(
            Facet(
                name=name,
                label=facets.FACET_LABELS[name],
                values=[
                    FacetValue(
                        value=value,
                        label=facets.value_label(name, value),
                        count=counts.get(value, 0),
                        selected=value in chosen,
                    )
                    for value in sorted(
                        values, key=lambda v: facets.value_sort_key(name, v)
                    )
                ],
            )
        )
    prefix = query.category or query.department
    categories = _children(result.get("categories", []), prefix) if prefix else []
    departments = [
        CategoryCount(path=row["_id"], label=row["_id"], count=row["n"])
        for row in sorted(result.get("departments", []), key=lambda r: r["_id"] or "")
        if row["_id"]
    ]
    total = result["total"][0]["n"] if result.get("total") else 0
    exists = bool(total) or _scope_exists(query)
    return BrowsePage(
        query=query,
        cards=[_card(doc) for doc in hits[: query.per_page]],
        total=total,
        facets=facet_list,
        categories=categories,
        departments=departments,
        next_cursor=_next_cursor(query, hits),
        exists=exists,
    )
