"""Faceted browse over the summaries: every read bounded by an index.

Facet counts are *disjunctive*: each facet is counted under every other
active selection but not its own, so ticking a second brand widens the
results and the brand counts stay put. What a page reads depends on what
it filters by (``browse_pipelines``):

* Its scope only (a department's or category's landing page, the usual
  case): the counts come from the scope's ``BrowseScope`` document (kept by
  the summary service, see ``catalog.scopes``) and the page from a window of
  the sort key that the scope's bucket counts say holds it. A page reads one
  counts document and the summaries of the buckets it spans, not the scope.
* Facets, words or a price range: one ``$facet`` aggregation over the
  summaries that match everything (the page, total, unselected facets and
  categories), and counts per selected facet over the summaries that
  match everything but that facet (with one facet selected and no words or
  prices, its counts are the scope's own). Each is read through an index
  on its rarest selection; a single ``$facet`` for all would read their
  union, which no index bounds: the whole scope.

Before either, a page without search words is answered by the in-memory
facet index of its department, or of every department for the whole
catalogue (``catalog.selectors.browse_index``), when they are up to date:
the same counts and page from arrays, plus one read of the page's
summaries. The aggregations below serve everything else, and
every page while an index is being built.

Every aggregation opens with two ``$match`` stages. The first holds only
what an index can bound on any server (equalities, then at most one range
or ``$in``); the second holds the exact rules (anchored regexes, ``$all``).
MongoDB merges adjacent ``$match`` stages, so this costs it nothing; a
simpler planner (the embedded server, which reads every document an index
range holds before it sorts or limits) uses the index for the first instead
of scanning the collection.

Paging is by keyset: the sort key, then ``_id`` in the same direction as a
tie-break, so pages never skip or repeat an item however many share a price.
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from catalog import facets, scopes
from catalog.documents import BrowseScope, Summary
from catalog.selectors import browse_index
from config.decimals import decimal_of

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


# --- the pipelines -----------------------------------------------------------


def _prefix_range(prefix: str) -> dict:
    """Index bounds holding every string that starts with ``prefix``."""
    return {"$gte": prefix, "$lt": prefix[:-1] + chr(ord(prefix[-1]) + 1)}


def _narrowing(
    selected: dict[str, tuple[str, ...]], counted: dict | None
) -> tuple[str, dict] | None:
    """The selection an index bounds: the facet whose selected values the
    scope's counts say the fewest items carry, or without counts the first
    selected item facet (a brand is usually rarer than a size)."""
    options = []
    for order, name in enumerate((*facets.ITEM_FACETS, *facets.VARIANT_FACETS)):
        if not selected.get(name):
            continue
        tokens = [facets.token(name, v) for v in selected[name]]
        field = "attrs" if name in facets.ITEM_FACETS else "vars.attrs"
        held = order
        if counted is not None:
            stored = counted.get("facets") or {}
            held = sum(stored.get(scopes.escape(t), 0) for t in tokens)
        options.append((held, order, field, tokens))
    if not options:
        return None
    _held, _order, field, tokens = min(options)
    return field, {"$in": tokens}


def _subtree(category: str) -> tuple[dict, dict]:
    """(index range, exact regex) of a category and anything below it, never
    a sibling that merely starts with the same letters ("Shoes/Womenswear").
    The range ("/" sorts just before "0") is a superset the regex makes
    exact."""
    return (
        {"$gte": category, "$lt": category + "0"},
        {"$regex": "^" + re.escape(category) + "(/|$)"},
    )


def _price_range(query: BrowseQuery) -> dict:
    price: dict = {}
    if query.min_cents is not None:
        price["$gte"] = query.min_cents
    if query.max_cents is not None:
        price["$lte"] = query.max_cents
    return price


def _filters(
    query: BrowseQuery,
    selected: dict[str, tuple[str, ...]],
    counted: dict | None = None,
) -> tuple[dict, dict]:
    """(index part, exact part) of the documents a count or page reads: the
    query's scope, words and price range, and the facet ``selected``.

    The index part is the department plus the first of these that applies,
    each served by a ``department + <field> + _id`` index: a whole search
    word, a facet selection, a half-typed word (a prefix range), the category
    subtree (a range), the price range. The exact part repeats or refines
    them all.
    """
    indexed: dict = {}
    exact: list[dict] = []
    bounds: list[tuple[str, object]] = []
    if query.department:
        indexed["department"] = query.department
    words = query.keywords
    if words:
        *whole, last = words
        if whole:
            bounds.append(("keywords", whole[0]))
            exact.append({"keywords": {"$all": whole}})
    narrowing = _narrowing(selected, counted) if query.department else None
    if narrowing:
        bounds.append(narrowing)
    if words:
        bounds.append(("keywords", _prefix_range(last)))
        # The last word may be half typed: it matches as a prefix. The regex
        # is built from escaped text, as a string (never a compiled pattern).
        exact.append({"keywords": {"$regex": "^" + re.escape(last)}})
    if query.category and query.category != query.department:
        bound, regex = _subtree(query.category)
        bounds.append(("category", bound))
        exact.append({"category": regex})
    price = _price_range(query)
    if price:
        bounds.append(("price_cents", price))
        exact.append({"price_cents": price})
    selection = _selection_filter(selected)
    if selection:
        exact.append(selection)
    if bounds:
        name, bound = bounds[0]
        indexed[name] = bound
    if len(exact) > 1:
        return indexed, {"$and": exact}
    return indexed, exact[0] if exact else {}


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


def _others(selected: dict, name: str) -> dict:
    return {other: values for other, values in selected.items() if other != name}


def _facet_stages(selected: dict, name: str) -> list[dict]:
    """Count facet ``name``'s values over summaries that match every
    selection but its own (disjunctive: ticking a second brand widens the
    results, and the brand counts stay put).

    A variant facet counted while another variant facet is selected counts
    only the variants that satisfy the other selection ("sizes in red"),
    and an item once per value however many of its variants carry it.
    """
    if name in facets.ITEM_FACETS:
        return _group_tokens("$attrs")
    others = [
        {"vars.attrs": {"$in": [facets.token(other, v) for v in selected[other]]}}
        for other in facets.VARIANT_FACETS
        if other != name and selected.get(other)
    ]
    if not others:
        return _group_tokens("$vattrs")
    return [
        {"$unwind": "$vars"},
        {"$match": others[0] if len(others) == 1 else {"$and": others}},
        {"$unwind": "$vars.attrs"},
        {"$group": {"_id": {"t": "$vars.attrs", "i": "$_id"}}},
        {"$group": {"_id": "$_id.t", "n": {"$sum": 1}}},
    ]


def _group_tokens(array) -> list[dict]:
    return [
        {"$project": {"t": array}},
        {"$unwind": "$t"},
        {"$group": {"_id": "$t", "n": {"$sum": 1}}},
    ]


def sort_spec(query: BrowseQuery) -> tuple[str, int]:
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


def _page_stages(query: BrowseQuery) -> list[dict]:
    """After the cursor, in sort order, one more than a page (whether a next
    page exists, without a count), only what a card shows."""
    key, direction = sort_spec(query)
    stages = []
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
    return [
        *stages,
        {"$sort": {key: direction, "_id": direction}},
        {"$limit": query.per_page + 1},
        {"$project": dict.fromkeys(CARD_FIELDS, 1)},
    ]


def _hits(query: BrowseQuery) -> list[dict]:
    key, _direction = sort_spec(query)
    stages = []
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
    return [*stages, *_page_stages(query)]


def _window(query: BrowseQuery, counted: dict) -> dict | None:
    """Bounds on the sort key that hold the next page, from the scope's
    bucket counts: the buckets past the cursor's own, in sort order, until
    they hold more than a page. None: the rest of the scope is that small.

    The cursor's bucket is read but not counted (part of it came before).
    """
    key, direction = sort_spec(query)
    rank = scopes.RANK_OF_FIELD[key]
    start = None
    if query.after is not None:
        start = rank.bucket(_cursor_value(query, query.after.value))
    stored = (counted.get("ranks") or {}).get(rank.name) or {}
    # Walking in sort order, direction * bucket only grows.
    ahead = sorted(
        (direction * int(bucket), n)
        for bucket, n in stored.items()
        if start is None or direction * int(bucket) > direction * start
    )
    held = 0
    for signed, n in ahead:
        held += n
        if held > query.per_page:
            low, high = rank.bounds(direction * signed)
            return {"$gte": low} if direction == -1 else {"$lt": high}
    return None


def _landing_hits(query: BrowseQuery, window: dict | None) -> list[dict]:
    """A landing page's hits, read from the sort key's ``window`` if any."""
    first = {"scopes": _scope(query)}
    if window is not None:
        first[sort_spec(query)[0]] = window
    return [{"$match": first}, *_page_stages(query)]


def browse_pipelines(query: BrowseQuery, counted: dict | None) -> dict[str, list[dict]]:
    """The aggregations behind one browse page when no index serves it, by
    name. ``counted`` is the scope's ``BrowseScope`` document when the query
    filters by nothing but its scope and facets (``scope_counts``).

    * Nothing selected and ``counted``: only ``hits``, the page itself, read
      from the sort key's window the scope's bucket counts give (the counts
      all come from ``counted``).
    * Otherwise ``page``: one ``$facet`` over the summaries that match
      every filter (hits, total, the unselected facets' and the categories'
      counts); and per selected facet, ``facet:<name>`` over the summaries
      that match every filter but that facet. Each opens with a ``$match``
      an index bounds on the selection the scope's counts say is rarest:
      "Marlow, size 7, green" reads the Marlow summaries for the page, the
      sizes and the colours, and the green ones for the brands. With one
      facet selected and ``counted``, its counts are the scope's own.
    """
    selected = {name: values for name, values in query.selected.items() if values}
    if counted is not None and not selected:
        return {"hits": _landing_hits(query, _window(query, counted))}

    indexed, exact = _filters(query, selected, counted)
    branches: dict[str, list[dict]] = {
        "hits": _hits(query),
        "total": [{"$count": "n"}],
        # Every facet with no selection of its own is counted here (a size
        # under a chosen colour has a branch of its own, below).
        "shared": _group_tokens({"$concatArrays": ["$attrs", "$vattrs"]}),
        "categories": [{"$group": {"_id": "$category", "n": {"$sum": 1}}}],
    }
    if not query.department:
        branches["departments"] = [{"$group": {"_id": "$department", "n": {"$sum": 1}}}]
    for name in facets.VARIANT_FACETS:
        if name not in selected and any(n in selected for n in facets.VARIANT_FACETS):
            # Sizes under a chosen colour count only the variants in it.
            branches[f"facet:{name}"] = _facet_stages(selected, name)
    # No $project before the $facet: MongoDB reads only the fields the
    # pipeline uses anyway, and on the embedded server an early projection
    # of every matching summary costs more than it saves.
    pipelines = {"page": [*_match(indexed), *_match(exact), {"$facet": branches}]}
    if counted is None or len(selected) > 1:
        for name in selected:
            f_indexed, f_exact = _filters(query, _others(selected, name), counted)
            pipelines[f"facet:{name}"] = [
                *_match(f_indexed),
                *_match(f_exact),
                *_facet_stages(selected, name),
            ]
    return pipelines


def _scope(query: BrowseQuery) -> str:
    return query.category or query.department or scopes.ALL


def scope_document(query: BrowseQuery) -> dict | None:
    """The scope's ``BrowseScope`` document (counts and version) unless the
    query searches words, which neither the counts nor the index cover;
    None too when the scope has none (no items, or counts not built yet)."""
    if query.keywords:
        return None
    return BrowseScope.coll().find_one({"_id": _scope(query)})


def _counted(query: BrowseQuery, scope_doc: dict | None) -> dict | None:
    """The scope's counts when they are the query's: it filters by nothing
    but its scope and facets (a price range is not counted ahead)."""
    if query.min_cents is not None or query.max_cents is not None:
        return None
    return scope_doc


def scope_counts(query: BrowseQuery) -> dict | None:
    """The scope's ``BrowseScope`` document, when the query filters by
    nothing but its scope and facets; None otherwise, or when the scope has
    none (a scope with no items, or counts not built yet: the aggregations
    count instead)."""
    return _counted(query, scope_document(query))


# --- reading the result ------------------------------------------------------


def _counts(rows: list[dict]) -> Counter:
    return Counter({row["_id"]: row["n"] for row in rows})


def _facet_counts(result: dict) -> dict[str, Counter]:
    """Facet name -> value -> count, each from the branch that counts it."""
    per_facet: dict[str, Counter] = {name: Counter() for name in facets.FACETS}
    sources = {name: result["shared"] for name in facets.FACETS}
    for key, rows in result.items():
        kind, _, name = key.partition(":")
        if kind == "facet":
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
        price=decimal_of(doc["price"]),
        rating=doc.get("rating") or 0.0,
        category=doc["category"],
        department=doc["department"],
    )


def _next_cursor(query: BrowseQuery, hits: list[dict]) -> Cursor | None:
    if len(hits) <= query.per_page:
        return None
    last = hits[query.per_page - 1]
    key, _direction = sort_spec(query)
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
    indexed, exact = _filters(scope, {})
    found = Summary.coll().aggregate(
        [*_match(indexed), *_match(exact), {"$limit": 1}, {"$project": {"_id": 1}}]
    )
    return any(True for _ in found)


def _rows(counts: dict) -> list[dict]:
    """A stored count map as the rows a ``$group`` returns (zeros dropped:
    what a scope no longer holds)."""
    return [{"_id": scopes.unescape(k), "n": n} for k, n in counts.items() if n > 0]


def _run_indexed(
    query: BrowseQuery, indexes: list[browse_index.DepartmentIndex]
) -> dict[str, list]:
    """Every branch's rows from the departments' indexes, and the page's
    summaries read by ``_id``."""
    result = browse_index.evaluate(indexes, query, sort_spec(query))
    ids = result.pop("ids")
    found = Summary.coll().find({"_id": {"$in": ids}}, dict.fromkeys(CARD_FIELDS, 1))
    by_id = {doc["_id"]: doc for doc in found}
    result["hits"] = [by_id[item_id] for item_id in ids if item_id in by_id]
    return result


def _run(query: BrowseQuery, counted: dict | None) -> dict[str, list]:
    """Every branch's rows, from the aggregations and the scope's counts."""
    summaries = Summary.coll()
    pipelines = browse_pipelines(query, counted)
    found = {name: list(summaries.aggregate(p)) for name, p in pipelines.items()}
    if "page" in found:
        result = found.pop("page")[0]
        result.update(found)
        for name, values in query.selected.items():
            if values and f"facet:{name}" not in result:
                # The only selection: its counts are the scope's own.
                result[f"facet:{name}"] = _rows(counted["facets"])
        return result
    hits = found["hits"]
    if len(hits) <= query.per_page:
        # Fewer than a window holds: the window was the rest of the scope,
        # or the counts are behind the summaries (a repair is due). Read
        # without a window to be sure.
        unbounded = _landing_hits(query, None)
        if unbounded != pipelines["hits"]:
            hits = list(summaries.aggregate(unbounded))
    children = _rows(counted.get("children") or {})
    return {
        "hits": hits,
        "total": [{"n": counted.get("n", 0)}],
        "shared": _rows(counted.get("facets") or {}),
        "categories": children,
        "departments": children if not query.department else [],
    }


def _facet_list(query: BrowseQuery, result: dict) -> list[Facet]:
    """Every facet with a count or a selection, its values in their order."""
    selected = {name: values for name, values in query.selected.items() if values}
    per_facet = _facet_counts(result)
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
    return facet_list


def browse(query: BrowseQuery) -> BrowsePage:
    """One page of summaries with its facet counts and category counts."""
    if query.text.strip() and not query.keywords:
        # Nothing searchable was typed (only punctuation): nothing matches.
        return BrowsePage(query, [], 0, [], [], [], None, exists=True)
    scope_doc = scope_document(query)
    indexes = browse_index.indexes_for(query, scope_doc)
    if indexes is not None:
        result = _run_indexed(query, indexes)
    else:
        result = _run(query, _counted(query, scope_doc))
    hits = result.get("hits", [])
    facet_list = _facet_list(query, result)
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
