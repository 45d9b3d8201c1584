"""Keeping the browse scopes' counts (``BrowseScope``) in step with summaries.

Invariant: each scope document holds the sum of ``catalog.scopes.contribution``
over the summaries in that scope. ``scopes_apply`` keeps it by adding the
difference of each summary write; each write is a compare-and-swap on the
summary's ``rev`` (``catalog.services.summaries``), so two writes of one item
each add the difference from the summary they actually replaced and the sums
telescope. A process that dies between the summary write and its ``$inc``
leaves the counts off by that one change; ``browse_scopes_rebuild`` (a
scheduled job) recounts everything from the summaries. Counts only ever
steer what browsing shows and how wide it reads; no stock or money depends
on them.

Each scope document also carries a version, ``(epoch, v)``: every summary
write bumps ``v`` on every scope the summary showed or shows in, and a scope
document made anew (after it was emptied and dropped) gets a new ``epoch``.
A department's document also logs the ids of its last ``CHANGE_LOG``
written items, in the same update as the bump, so ``changed[-k:]`` are the
items behind its last ``k`` versions. The in-memory browse index
(``catalog.selectors.browse_index``) serves a scope only while its version
is no newer than the index's, and reads the log to catch up.
"""

from collections.abc import Mapping

from bson import ObjectId
from pymongo import UpdateOne

from catalog import scopes
from catalog.documents import BrowseScope, Summary

# Item ids a department's document remembers: how many writes an index may
# fall behind and still catch up without being built anew.
CHANGE_LOG = 256

# What a recount reads of each summary.
_COUNTED = ("department", "category", "attrs", "vattrs")
_COUNTED += tuple(rank.field for rank in scopes.RANKS.values())


def scopes_apply(old: Mapping | None, new: Mapping | None) -> None:
    """Add to every scope the difference between two versions of a summary
    (None for a summary that did not exist, or no longer does), and bump
    the version of every scope either shows in, changed counts or not (a
    new price moves an item within its price bucket)."""
    changes = scopes.difference(old, new)
    departments = set()
    for summary in (old, new):
        if summary is not None:
            departments.add(summary["department"])
            for scope in scopes.scopes_of(summary["department"], summary["category"]):
                changes.setdefault(scope, {})["v"] = 1
    if not changes:
        return
    item_id = (new or old)["_id"]
    log = {"changed": {"$each": [item_id], "$slice": -CHANGE_LOG}}
    BrowseScope.coll().bulk_write(
        [
            UpdateOne(
                {"_id": scope},
                {
                    "$inc": inc,
                    "$setOnInsert": {"epoch": ObjectId()},
                    **({"$push": log} if scope in departments else {}),
                },
                upsert=True,
            )
            for scope, inc in sorted(changes.items())
        ],
        ordered=False,
    )


def scopes_write(tally: scopes.Tally) -> int:
    """Replace every scope's counts with the tally's; returns how many
    scopes. Versions and change logs stay: a recount changes no summary, so
    an index built on the summaries is as good as before (a new scope
    document starts a new epoch)."""
    collection = BrowseScope.coll()
    docs = tally.documents()
    ids = [d["_id"] for d in docs]
    if docs:
        collection.bulk_write(
            [
                UpdateOne(
                    {"_id": d.pop("_id")},
                    {"$set": d, "$setOnInsert": {"epoch": ObjectId()}},
                    upsert=True,
                )
                for d in docs
            ],
            ordered=False,
        )
    collection.delete_many({"_id": {"$nin": ids}})
    return len(ids)


def browse_scopes_rebuild() -> int:
    """Recount every scope from the summaries; returns how many scopes.

    Summaries written while it reads are counted or not depending on when
    the read reached them; the next rebuild settles them.
    """
    tally = scopes.Tally()
    tally.add(Summary.coll().find({}, dict.fromkeys(_COUNTED, 1)))
    return scopes_write(tally)
