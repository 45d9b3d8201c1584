"""Items offered beside another page (suggestions): for sale, in stock, and
one SKU a one-click "Add to cart" can post. Reads only."""

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from catalog.documents import ONLINE, Inventory, Item, Price, Variant
from config.decimals import decimal_of


@dataclass(frozen=True)
class ItemOffer:
    item_id: str
    title: str
    category: str
    sku: str  # the first SKU of the item that is priced online and in stock
    price: Decimal


def items_of_skus(*, skus: Iterable[str]) -> dict[str, str]:
    """SKU -> its item id, for the SKUs that exist."""
    found = Variant.coll().find({"_id": {"$in": list(set(skus))}}, {"item_id": 1})
    return {v["_id"]: v["item_id"] for v in found}


def item_titles(*, item_ids: Iterable[str]) -> dict[str, str]:
    """Item id -> title, for the items that exist."""
    found = Item.coll().find({"_id": {"$in": list(set(item_ids))}}, {"title": 1})
    return {i["_id"]: i["title"] for i in found}


def items_for_sale(*, item_ids: Iterable[str]) -> set[str]:
    """The items with at least one SKU priced online (what the web shop
    sells; an item with no such price is no longer for sale)."""
    ids = list(set(item_ids))
    variants = list(Variant.coll().find({"item_id": {"$in": ids}}, {"item_id": 1}))
    price_ids = [f"{v['_id']}_{ONLINE}" for v in variants]
    price_ids += [f"{i}_{ONLINE}" for i in ids]
    priced = {p["_id"] for p in Price.coll().find({"_id": {"$in": price_ids}}, {})}
    return {
        v["item_id"]
        for v in variants
        if f"{v['_id']}_{ONLINE}" in priced or f"{v['item_id']}_{ONLINE}" in priced
    }


def item_offers(*, item_ids: list[str]) -> list[ItemOffer]:
    """The given items that can be bought now, in the order given: each
    with its first SKU (by code) that has an online price and free units.
    Items not for sale, or out of stock, are left out. Four queries."""
    if not item_ids:
        return []
    items = {
        i["_id"]: i
        for i in Item.coll().find(
            {"_id": {"$in": item_ids}}, {"title": 1, "category": 1}
        )
    }
    variants = list(
        Variant.coll()
        .find({"item_id": {"$in": list(items)}}, {"item_id": 1})
        .sort([("item_id", 1), ("_id", 1)])
    )
    skus = [v["_id"] for v in variants]
    free = {
        d["_id"]: d.get("quantity", 0)
        for d in Inventory.coll().find({"_id": {"$in": skus}}, {"quantity": 1})
    }
    ids = [f"{s}_{ONLINE}" for s in skus] + [f"{i}_{ONLINE}" for i in items]
    prices = {
        p["_id"]: decimal_of(p["amount"])
        for p in Price.coll().find({"_id": {"$in": ids}})
    }
    chosen: dict[str, ItemOffer] = {}
    for v in variants:
        item_id, sku = v["item_id"], v["_id"]
        price = prices.get(f"{sku}_{ONLINE}", prices.get(f"{item_id}_{ONLINE}"))
        if item_id in chosen or price is None or free.get(sku, 0) <= 0:
            continue
        item = items[item_id]
        chosen[item_id] = ItemOffer(
            item_id=item_id,
            title=item["title"],
            category=item.get("category", ""),
            sku=sku,
            price=price,
        )
    return [chosen[i] for i in item_ids if i in chosen]
