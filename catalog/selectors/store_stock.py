"""Reports over what the stores hold (data for the staff dashboard): their
stock locations' free units (catalog.selectors.stock)."""

from dataclasses import dataclass

from catalog.documents import Item, Store, Variant
from catalog.errors import UnknownItem, UnknownStore
from catalog.selectors.stock import store_free, store_totals


@dataclass(frozen=True)
class VariantTotal:
    sku: str
    item_id: str
    quantity: int
    stores: int  # how many stores hold a line for it (in stock or not)


def _rows(totals: dict[str, tuple[int, int]], item_ids: dict[str, str]):
    return [
        VariantTotal(
            sku=sku, item_id=item_ids.get(sku, ""), quantity=units, stores=stores
        )
        for sku, (units, stores) in sorted(totals.items())
    ]


def item_stock_totals(*, item_id: str) -> list[VariantTotal]:
    """Every variant of an item with its quantity summed over all stores.

    Variants no store holds are listed with zero. Raises UnknownItem.
    """
    if not Item.coll().count_documents({"_id": item_id}, limit=1):
        raise UnknownItem()
    found = store_totals(item_ids=[item_id])
    skus = [v["_id"] for v in Variant.coll().find({"item_id": item_id})]
    return _rows(
        {sku: found.get(sku, (0, 0)) for sku in set(skus) | set(found)},
        dict.fromkeys(set(skus) | set(found), item_id),
    )


def store_stock_totals(*, store_id: str) -> list[VariantTotal]:
    """Every variant one store holds, with its quantity. Raises UnknownStore."""
    if not Store.coll().count_documents({"store_id": store_id}, limit=1):
        raise UnknownStore()
    free = store_free(store_id=store_id)
    items = {
        v["_id"]: v["item_id"]
        for v in Variant.coll().find({"_id": {"$in": list(free)}}, {"item_id": 1})
    }
    return _rows({sku: (n, 1) for sku, n in free.items()}, items)
