"""Browse scopes: what one summary adds to the counts of the places it shows.

A *scope* is where a shopper can browse: the whole catalogue (``ALL``), a
department ("Shoes") or a category subtree ("Shoes/Women"). Every scope has
one ``BrowseScope`` document of counts kept by the summary service (the
computed pattern): how many items it holds, how many carry each facet token,
how many sit under each of its children, and how many fall in each *rank
bucket* of every sort order. A browse page with no filter but its scope then
reads its counts from one document instead of counting the scope's summaries,
and the bucket counts bound the page's own query to a window of the sort key
that holds the page.

This module is pure: the vocabulary and the arithmetic, no database.
"""

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

ALL = "*"  # the whole catalogue; no department is called "*"


def scopes_of(department: str, category: str) -> list[str]:
    """Every scope an item of this department and category shows in, widest
    first: the catalogue, the department, then each prefix of the path."""
    scopes = [ALL, department]
    parts = category.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        if prefix not in scopes and prefix.startswith(department + "/"):
            scopes.append(prefix)
    return scopes


def child_in(scope: str, department: str, category: str) -> str | None:
    """The child of ``scope`` an item sits under: its department in the
    catalogue, the next level of its category path below a department or
    category, None when the item's category is the scope itself."""
    if scope == ALL:
        return department
    if not category.startswith(scope + "/"):
        return None
    depth = scope.count("/") + 1
    return "/".join(category.split("/")[: depth + 1])


# Keys of a stored count map are field names: MongoDB reads a "." in one as
# a path, and facet values and category names may hold dots ("size=7.5").
def escape(key: str) -> str:
    return key.replace("%", "%25").replace(".", "%2E").replace("$", "%24")


def unescape(key: str) -> str:
    return key.replace("%24", "$").replace("%2E", ".").replace("%25", "%")


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY = timedelta(days=1)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Rank:
    """The buckets of one sort key: ``bucket`` maps a key to an int, and
    ``bounds(b)`` is a range of keys holding every key of bucket ``b``
    (``low <= key < high``). Buckets are ordered as their keys are."""

    name: str
    field: str

    def bucket(self, value) -> int:
        if self.name == "rating":
            return round(float(value or 0) * 10)
        if self.name == "price":
            return int(value) // 100
        return (_aware(value) - EPOCH) // _DAY

    def bounds(self, bucket: int):
        if self.name == "rating":
            # A half-tenth either side: a float rating rounds into its bucket
            # however it was stored.
            return (bucket - 0.5) / 10, (bucket + 0.5) / 10
        if self.name == "price":
            return bucket * 100, (bucket + 1) * 100
        return EPOCH + bucket * _DAY, EPOCH + (bucket + 1) * _DAY


# Tenths of a star, whole pounds, days: in a department of the demo's
# 10,000-item catalogue a bucket holds up to about a hundred items (the most
# at 5 stars, where the demo's ratings pile up), ten times that at 100,000.
RANKS = {
    "rating": Rank("rating", "rating"),
    "price": Rank("price", "price_cents"),
    "newest": Rank("newest", "created_at"),
}
RANK_OF_FIELD = {rank.field: rank for rank in RANKS.values()}


def contribution(summary: Mapping | None) -> dict[str, Counter]:
    """What ``summary`` adds to each scope's document, as ``$inc`` paths.

    ``n`` counts the item; ``facets.<token>`` each facet value it carries
    (once, however many variants carry it); ``children.<path>`` the child it
    sits under; ``ranks.<sort>.<bucket>`` where it falls in each sort.
    """
    if summary is None:
        return {}
    tokens = dict.fromkeys([*summary.get("attrs", ()), *summary.get("vattrs", ())])
    department, category = summary["department"], summary["category"]
    paths = Counter({"n": 1})
    for token in tokens:
        paths[f"facets.{escape(token)}"] += 1
    for rank in RANKS.values():
        paths[f"ranks.{rank.name}.{rank.bucket(summary[rank.field])}"] += 1
    changes: dict[str, Counter] = {}
    for scope in scopes_of(department, category):
        counts = Counter(paths)
        child = child_in(scope, department, category)
        if child is not None:
            counts[f"children.{escape(child)}"] += 1
        changes[scope] = counts
    return changes


def difference(old: Mapping | None, new: Mapping | None) -> dict[str, dict]:
    """Scope -> the non-zero ``$inc`` that turns ``old``'s counts into
    ``new``'s (either may be None: an insert or a delete)."""
    before, after = contribution(old), contribution(new)
    changes = {}
    for scope in before.keys() | after.keys():
        delta = Counter(after.get(scope, {}))
        delta.subtract(before.get(scope, {}))
        inc = {path: n for path, n in delta.items() if n}
        if inc:
            changes[scope] = inc
    return changes


class Tally:
    """Counts of many summaries summed in memory (a bulk load, a rebuild),
    written as whole scope documents."""

    def __init__(self) -> None:
        self._scopes: dict[str, Counter] = {}

    def add(self, summaries: Iterable[Mapping]) -> None:
        for summary in summaries:
            for scope, counts in contribution(summary).items():
                self._scopes.setdefault(scope, Counter()).update(counts)

    def documents(self) -> list[dict]:
        """One document per scope, shaped as ``BrowseScope`` stores it."""
        docs = []
        for scope, counts in sorted(self._scopes.items()):
            doc: dict = {"_id": scope, "n": 0, "facets": {}, "children": {}}
            doc["ranks"] = {name: {} for name in RANKS}
            for path, n in counts.items():
                if path == "n":
                    doc["n"] = n
                    continue
                *parents, key = path.split(".")
                node = doc
                for part in parents:
                    node = node[part]
                node[key] = n
            docs.append(doc)
        return docs
