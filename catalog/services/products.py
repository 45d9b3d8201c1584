"""Writes to items, variants and prices; each one rebuilds the item's summary."""

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from bson import Decimal128
from pymongo.errors import DuplicateKeyError

from catalog import facets
from catalog.documents import ONLINE, Item, Price, Store, Variant
from catalog.errors import (
    InvalidProduct,
    SkuTaken,
    UnknownItem,
    UnknownSku,
    UnknownStore,
)
from catalog.selectors.pricing import prices_changed
from catalog.services.summaries import summary_rebuild

MAX_PRICE = Decimal("1000000")


def _bump(item_id: str) -> None:
    """Mark the item changed, so that its next summary wins over older ones."""
    result = Item.coll().update_one({"_id": item_id}, {"$inc": {"version": 1}})
    if result.matched_count == 0:
        raise UnknownItem()


def _clean_category(department: str, category: str) -> str:
    parts = [part.strip() for part in category.split("/")]
    if not department.strip() or any(not part for part in parts):
        raise InvalidProduct("A category is a path such as Shoes/Women/Pumps.")
    if parts[0] != department.strip():
        raise InvalidProduct("A category path starts with its department.")
    return "/".join(parts)


def item_keywords(*, title: str, brand: str | None, style: str | None) -> list[str]:
    """The item's own search tokens (the summary adds its variants' words)."""
    return facets.keywords_of(" ".join([title, brand or "", style or ""]))


def item_save(
    *,
    item_id: str,
    department: str,
    category: str,
    title: str,
    brand: str | None = None,
    description: str = "",
    style: str | None = None,
    rating: float | None = None,
    attributes: dict[str, str] | None = None,
    created_at: datetime | None = None,
) -> Item:
    """Create or update an item, then rebuild its summary.

    Invariants: the category path starts with the department and has no
    empty segment; keywords are derived here, never supplied. Raises
    InvalidProduct.
    """
    if not item_id or not title.strip():
        raise InvalidProduct("A product needs an id and a title.")
    if rating is not None and not 0 <= rating <= 5:
        raise InvalidProduct("A rating is between 0 and 5.")
    category = _clean_category(department, category)
    keywords = item_keywords(title=title, brand=brand, style=style)
    fields = {
        "department": department.strip(),
        "category": category,
        "title": title.strip(),
        "brand": brand,
        "description": description,
        "style": style,
        "rating": rating,
        "keywords": keywords,
        "attributes": {str(k): str(v) for k, v in (attributes or {}).items()},
    }
    Item.coll().update_one(
        {"_id": item_id},
        {
            "$set": fields,
            "$setOnInsert": {"created_at": created_at or datetime.now(UTC)},
            "$inc": {"version": 1},
        },
        upsert=True,
    )
    summary_rebuild(item_id=item_id)
    return Item.objects.get(item_id=item_id)


def variant_save(*, sku: str, item_id: str, attributes: dict[str, str]) -> Variant:
    """Create or update a variant of an existing item, then rebuild the summary.

    Invariant: a SKU belongs to one item for good (its prices and stock are
    keyed by it). Raises UnknownItem, SkuTaken, InvalidProduct.
    """
    if not sku:
        raise InvalidProduct("A variant needs a SKU.")
    if not Item.coll().count_documents({"_id": item_id}, limit=1):
        raise UnknownItem()
    clean = {str(k): str(v) for k, v in attributes.items()}
    # The filter pins the owner: an update never moves a SKU between items,
    # and an insert of a SKU some other item owns fails on _id.
    result = Variant.coll().update_one(
        {"_id": sku, "item_id": item_id},
        {"$set": {"attributes": clean}},
    )
    if result.matched_count == 0:
        try:
            Variant.coll().insert_one(
                {"_id": sku, "item_id": item_id, "attributes": clean}
            )
        except DuplicateKeyError:
            raise SkuTaken() from None
    _bump(item_id)
    summary_rebuild(item_id=item_id)
    return Variant.objects.get(sku=sku)


def _scope_exists(scope: str) -> bool:
    if scope == ONLINE:
        return True
    stores = Store.coll()
    return bool(
        stores.count_documents({"store_id": scope}, limit=1)
        or stores.count_documents({"group": scope}, limit=1)
    )


def _clean_amount(amount: Decimal) -> Decimal:
    try:
        amount = Decimal(amount)
        if not amount.is_finite() or not 0 <= amount <= MAX_PRICE:
            raise InvalidOperation
        quantized = amount.quantize(Decimal("0.01"))
    except (InvalidOperation, TypeError, ValueError):
        raise InvalidProduct("A price is an amount between 0 and 1,000,000.") from None
    if quantized != amount:
        raise InvalidProduct("A price has at most two decimal places.")
    return quantized


def _price_key(item_id: str, sku: str | None) -> str:
    if not Item.coll().count_documents({"_id": item_id}, limit=1):
        raise UnknownItem()
    if sku is None:
        return item_id
    if not Variant.coll().count_documents({"_id": sku, "item_id": item_id}, limit=1):
        raise UnknownSku()
    return sku


def price_set(
    *, item_id: str, scope: str, amount: Decimal, sku: str | None = None
) -> Price:
    """Set the price of an item (or one SKU of it) online, in a store or group.

    The price ``_id`` is ``<sku or item>_<scope>``, as ``price_for`` reads it.
    Raises UnknownItem, UnknownSku, UnknownStore (scope is neither "online",
    a store id nor a store group), InvalidProduct (amount).
    """
    amount = _clean_amount(amount)
    key = _price_key(item_id, sku)
    if not _scope_exists(scope):
        raise UnknownStore()
    price_id = f"{key}_{scope}"
    Price.coll().replace_one(
        {"_id": price_id}, {"_id": price_id, "amount": Decimal128(amount)}, upsert=True
    )
    prices_changed()
    _bump(item_id)
    summary_rebuild(item_id=item_id)
    return Price.objects.get(price_id=price_id)


def price_clear(*, item_id: str, scope: str, sku: str | None = None) -> bool:
    """Remove a price so that a less specific one applies; True if one existed.

    Raises UnknownItem, UnknownSku.
    """
    key = _price_key(item_id, sku)
    deleted = Price.coll().delete_one({"_id": f"{key}_{scope}"})
    prices_changed()
    _bump(item_id)
    summary_rebuild(item_id=item_id)
    return bool(deleted.deleted_count)
