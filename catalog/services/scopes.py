"""Keeping the browse scopes' counts (``BrowseScope``) in step with summaries.

Invariant: each scope document holds the sum of ``catalog.scopes.contribution``
over the summaries in that scope. ``scopes_apply`` keeps it by adding the
difference of each summary write; the write that reports the old summary is
atomic (find-and-replace), so two writes of one item each add the difference
from the summary they actually replaced and the sums telescope. A process
that dies between the summary write and its ``$inc`` leaves the counts off
by that one change; ``browse_scopes_rebuild`` (a scheduled job) recounts
everything from the summaries. Counts only ever steer what browsing shows
and how wide it reads; no stock or money depends on them.
"""

from collections.abc import Mapping

from pymongo import ReplaceOne, UpdateOne

from catalog import scopes
from catalog.documents import BrowseScope, Summary

# What a recount reads of each summary.
_COUNTED = ("department", "category", "attrs", "vattrs")
_COUNTED += tuple(rank.field for rank in scopes.RANKS.values())


def scopes_apply(old: Mapping | None, new: Mapping | None) -> None:
    """Add to every scope the difference between two versions of a summary
    (None for a summary that did not exist, or no longer does)."""
    changes = scopes.difference(old, new)
    if changes:
        BrowseScope._get_collection().bulk_write(
            [
                UpdateOne({"_id": scope}, {"$inc": inc}, upsert=True)
                for scope, inc in sorted(changes.items())
            ],
            ordered=False,
        )


def scopes_write(tally: scopes.Tally) -> int:
    """Replace every scope document with the tally's; returns how many."""
    collection = BrowseScope._get_collection()
    docs = tally.documents()
    if docs:
        collection.bulk_write(
            [ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in docs],
            ordered=False,
        )
    collection.delete_many({"_id": {"$nin": [d["_id"] for d in docs]}})
    return len(docs)


def browse_scopes_rebuild() -> int:
    """Recount every scope from the summaries; returns how many scopes.

    Summaries written while it reads are counted or not depending on when
    the read reached them; the next rebuild settles them.
    """
    tally = scopes.Tally()
    tally.add(Summary._get_collection().find({}, dict.fromkeys(_COUNTED, 1)))
    return scopes_write(tally)
