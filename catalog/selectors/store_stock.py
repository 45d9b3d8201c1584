"""Reports over what the stores hold (data for the staff dashboard)."""

from dataclasses import dataclass

from catalog.documents import Item, Store, StoreStock, Variant
from catalog.errors import UnknownItem, UnknownStore


@dataclass(frozen=True)
class VariantTotal:
    sku: str
    item_id: str
    quantity: int
    stores: int  # how many stores hold a line for it (in stock or not)


def _totals(match: dict) -> list[VariantTotal]:
    rows = StoreStock.coll().aggregate(
        [
            {"$match": match},
            {"$unwind": "$vars"},
            {
                "$group": {
                    "_id": "$vars.sku",
                    "item_id": {"$first": "$item_id"},
                    "quantity": {"$sum": "$vars.quantity"},
                    "stores": {"$sum": 1},
                }
            },
            {"$sort": {"_id": 1}},
        ]
    )
    return [
        VariantTotal(
            sku=r["_id"],
            item_id=r["item_id"],
            quantity=r["quantity"],
            stores=r["stores"],
        )
        for r in rows
    ]


def item_stock_totals(*, item_id: str) -> list[VariantTotal]:
    """Every variant of an item with its quantity summed over all stores.

    Variants no store holds are listed with zero. Raises UnknownItem.
    """
    if not Item.coll().count_documents({"_id": item_id}, limit=1):
        raise UnknownItem()
    found = {t.sku: t for t in _totals({"item_id": item_id})}
    skus = [v["_id"] for v in Variant.coll().find({"item_id": item_id})]
    return [
        found.get(sku, VariantTotal(sku=sku, item_id=item_id, quantity=0, stores=0))
        for sku in sorted(set(skus) | set(found))
    ]


def store_stock_totals(*, store_id: str) -> list[VariantTotal]:
    """Every variant one store holds, with its quantity. Raises UnknownStore."""
    if not Store.coll().count_documents({"store_id": store_id}, limit=1):
        raise UnknownStore()
    return _totals({"store_id": store_id})
