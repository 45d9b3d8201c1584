"""Browse summaries: one derived document per sellable item.

``summary_of`` is a pure function from an item, its variants and its online
prices to the summary document; ``summary_rebuild`` reads those sources and
stores its result. The demo loader calls ``summary_of`` in bulk, the write
services call ``summary_rebuild`` after every change: one code path, so a
loaded catalog and an edited one look the same to browsing.
"""

from collections.abc import Iterable, Mapping
from decimal import Decimal

from bson import Decimal128
from pymongo.errors import DuplicateKeyError

from catalog import facets, scopes
from catalog.documents import ONLINE, Item, Price, Summary, Variant
from catalog.services.scopes import scopes_apply
from config.decimals import decimal_of


def online_price_ids(item_id: str, skus: Iterable[str]) -> list[str]:
    return [f"{item_id}_{ONLINE}", *(f"{sku}_{ONLINE}" for sku in skus)]


def _lowest_online_price(
    item_id: str, variants: list[Mapping], prices: Mapping[str, Decimal]
) -> Decimal | None:
    """The lowest online price of the item's variants (a variant without its
    own takes the item's), or None when nothing of it is priced online."""
    item_price = prices.get(f"{item_id}_{ONLINE}")
    if variants:
        candidates = [prices.get(f"{v['_id']}_{ONLINE}", item_price) for v in variants]
    else:
        candidates = [item_price]
    priced = [amount for amount in candidates if amount is not None]
    return min(priced) if priced else None


def _variants_of(variants: list[Mapping]) -> tuple[list[dict], dict, list[str]]:
    """The summary's variants (facet tokens and other attributes), every
    variant facet token once, and the variants' searchable words."""
    summary_vars, vattrs, variant_words = [], {}, []
    for variant in variants:
        tokens, extra = [], {}
        for name, value in (variant.get("attributes") or {}).items():
            value = str(value)
            if name in facets.VARIANT_FACETS:
                tokens.append(facets.token(name, value))
            else:
                extra[name] = value
            if name != "size":
                variant_words.append(value)
        summary_vars.append({"sku": variant["_id"], "attrs": tokens, "sattrs": extra})
        vattrs.update(dict.fromkeys(tokens))
    return summary_vars, vattrs, variant_words


def _keywords(item: Mapping, sattrs: dict, variant_words: list[str]) -> list[str]:
    """The item's own keywords, then the words of its title, brand, category
    and attributes, each once."""
    words = facets.keywords_of(
        " ".join(
            [
                item.get("title", ""),
                item.get("brand") or "",
                item.get("category", "").replace("/", " "),
                *[str(v) for v in sattrs.values()],
                *variant_words,
            ]
        )
    )
    return list(dict.fromkeys([*(item.get("keywords") or []), *words]))


def summary_of(
    *, item: Mapping, variants: list[Mapping], prices: Mapping[str, Decimal]
) -> dict | None:
    """The summary document of ``item`` (raw documents in, raw document out).

    ``variants`` are the item's variant documents sorted by SKU; ``prices``
    maps price ids to amounts and must hold the item's and its SKUs' online
    prices where they exist. Returns None when nothing of the item has an
    online price: it cannot be sold online, so it is not browsable.
    """
    item_id = item["_id"]
    price = _lowest_online_price(item_id, variants, prices)
    if price is None:
        return None
    price_cents = facets.cents(price)

    attrs = [facets.token("price", facets.price_band(price_cents).key)]
    if item.get("brand"):
        attrs.insert(0, facets.token("brand", item["brand"]))
    sattrs = dict(item.get("attributes") or {})
    if item.get("style"):
        sattrs["style"] = item["style"]

    summary_vars, vattrs, variant_words = _variants_of(variants)

    keywords = _keywords(item, sattrs, variant_words)

    return {
        "_id": item_id,
        "title": item["title"],
        "department": item["department"],
        "category": item["category"],
        "brand": item.get("brand"),
        # Sort keys are never null: paging compares them with a cursor.
        "rating": float(item.get("rating") or 0.0),
        "created_at": item.get("created_at") or scopes.EPOCH,
        "price": Decimal128(price),
        "price_cents": price_cents,
        "attrs": attrs,
        "sattrs": sattrs,
        "vars": summary_vars,
        "vattrs": list(vattrs),
        "keywords": keywords,
        "scopes": scopes.scopes_of(item["department"], item["category"]),
        "version": item.get("version", 0),
    }


def summary_rebuild(*, item_id: str) -> dict | None:
    """Rebuild the summary of one item from its item, variants and prices.

    Invariant: a summary only ever moves forward. Every write service bumps
    the item's ``version`` before calling this, and the summary is replaced
    only by one built from a version at least as new, so two rebuilds racing
    cannot leave the older state behind. Deletes the summary when the item
    is gone or has no online price. The browse scopes' counts follow each
    write (``_store``). Raises nothing.
    """
    item = Item.coll().find_one({"_id": item_id})
    if item is None:
        return _store(item_id, None, version=None)
    variants = list(Variant.coll().find({"item_id": item_id}).sort("_id"))
    ids = online_price_ids(item_id, (v["_id"] for v in variants))
    prices = {
        p["_id"]: decimal_of(p["amount"])
        for p in Price.coll().find({"_id": {"$in": ids}})
    }
    summary = summary_of(item=item, variants=variants, prices=prices)
    return _store(item_id, summary, version=item.get("version", 0))


def _store(item_id: str, summary: dict | None, *, version: int | None) -> dict | None:
    """Write (or, for None, delete) the summary, and move the browse scopes'
    counts by exactly the difference from the summary it replaces.

    A compare-and-swap on the summary's ``rev``: read it, write only if its
    ``rev`` is still the one read, else read again. Each write thus knows
    the summary it really replaced, and the counts' differences add up
    however many writers race. (A find-and-replace would say so in one round
    trip on MongoDB, but the embedded server can hand two concurrent callers
    the same "before" document.) ``version`` None: the item is gone, any
    summary goes.
    """
    summaries = Summary.coll()
    while True:
        old = summaries.find_one({"_id": item_id})
        if old is not None and version is not None and old.get("version", 0) > version:
            return None  # a rebuild from a newer version got there first
        if summary is None:
            if old is None:
                return None
            if summaries.delete_one(
                {"_id": item_id, "rev": old.get("rev")}
            ).deleted_count:
                scopes_apply(old, None)
                return None
            continue
        new = {**summary, "rev": (old or {}).get("rev", 0) + 1}
        if old is None:
            try:
                summaries.insert_one(new)
            except DuplicateKeyError:
                continue
        elif not summaries.replace_one(
            {"_id": item_id, "rev": old.get("rev")}, new
        ).matched_count:
            continue
        scopes_apply(old, new)
        return new


def summaries_rescope() -> int:
    """Give every summary the browse scopes of its department and category
    (summaries stored before they carried them); returns how many changed.
    One update per category, each touching only the summaries that differ."""
    summaries = Summary.coll()
    changed = 0
    pairs = summaries.aggregate(
        [{"$group": {"_id": {"d": "$department", "c": "$category"}}}]
    )
    for pair in pairs:
        department, category = pair["_id"]["d"], pair["_id"]["c"]
        expected = scopes.scopes_of(department, category)
        stale = {"department": department, "category": category}
        stale["scopes"] = {"$ne": expected}
        result = summaries.update_many(stale, {"$set": {"scopes": expected}})
        changed += result.modified_count
    return changed
