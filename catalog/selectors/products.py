"""An item as its page shows it: variants, the chosen one's price, stores near."""

from dataclasses import dataclass
from decimal import Decimal

from catalog.documents import Item, Variant, stock_location
from catalog.errors import UnknownItem, UnknownSku
from catalog.selectors.pricing import price_for
from catalog.selectors.stock import stock_free
from catalog.selectors.stores import (
    Location,
    NearbyStore,
    StoreRow,
    store_get,
    stores_list,
    stores_near_with_stock,
)

# At or under this many free units a variant says how many are left.
LOW_STOCK = 5


@dataclass(frozen=True)
class VariantOption:
    sku: str
    attributes: dict
    selected: bool
    # Units free to reserve online: the very figure the add's guard takes
    # from (catalog.selectors.stock.stock_free); 0 without online stock.
    free: int = 0

    @property
    def label(self) -> str:
        return " / ".join(str(v) for v in self.attributes.values())

    @property
    def sold_out(self) -> bool:
        return self.free <= 0

    @property
    def availability(self) -> str:
        """ "Sold out", "Only 2 left" or "In stock"."""
        if self.sold_out:
            return "Sold out"
        if self.free <= LOW_STOCK:
            return f"Only {self.free} left"
        return "In stock"


@dataclass(frozen=True)
class CollectOption:
    """Collect the chosen variant at the chosen store: that store's price and
    the units free at its stock location, the very counter a collect line
    reserves from; when it has none, the nearest other store that has."""

    store: StoreRow
    price: Decimal | None
    free: int
    nearest: NearbyStore | None = None

    @property
    def sold_out(self) -> bool:
        return self.free <= 0 or self.price is None

    @property
    def availability(self) -> str:
        """ "3 left at Leeds", "In stock at Leeds", "Out of stock at Leeds"."""
        where = self.store.name
        if self.sold_out:
            return f"Out of stock at {where}"
        if self.free <= LOW_STOCK:
            return f"{self.free} left at {where}"
        return f"In stock at {where}"


@dataclass(frozen=True)
class ColourRow:
    colour: str | None
    options: list[VariantOption]


@dataclass(frozen=True)
class ItemPage:
    item_id: str
    title: str
    brand: str | None
    description: str
    department: str
    category: str
    rating: float | None
    style: str | None
    attributes: dict
    variants: list[VariantOption]
    chosen: VariantOption | None
    # The chosen variant's price where the shopper shops (None: not for sale).
    price: Decimal | None
    store: StoreRow | None
    stores: list[StoreRow]
    location: Location | None
    # None when no location is known yet; else the nearest stores in stock.
    nearby: list[NearbyStore] | None
    # With a store chosen: delivery at the online price, or collect there.
    online_price: Decimal | None = None
    collect: CollectOption | None = None

    @property
    def rows(self) -> list[ColourRow]:
        """Variants grouped by colour, for a colour-then-size picker."""
        rows: dict[str | None, list[VariantOption]] = {}
        for option in self.variants:
            rows.setdefault(option.attributes.get("colour"), []).append(option)
        return [ColourRow(colour, options) for colour, options in rows.items()]

    @property
    def category_trail(self) -> list[tuple[str, str]]:
        """(path, label) of every ancestor category, the department first."""
        parts = self.category.split("/")
        return [("/".join(parts[: i + 1]), parts[i]) for i in range(len(parts))]


def _variant_options(
    item_id: str, sku: str | None
) -> tuple[list[VariantOption], str | None]:
    """The item's variants by SKU, ``sku`` (else the first) selected.
    Raises UnknownSku when ``sku`` is not one of them."""
    docs = list(Variant.coll().find({"item_id": item_id}).sort("_id"))
    if sku is not None and sku not in {d["_id"] for d in docs}:
        raise UnknownSku()
    chosen_sku = sku or (docs[0]["_id"] if docs else None)
    free = stock_free(skus=[d["_id"] for d in docs])
    variants = [
        VariantOption(
            sku=d["_id"],
            attributes=d.get("attributes") or {},
            selected=d["_id"] == chosen_sku,
            free=max(0, free.get(d["_id"], 0)),
        )
        for d in docs
    ]
    return variants, chosen_sku


def item_page(
    *,
    item_id: str,
    sku: str | None = None,
    store_id: str | None = None,
    location: Location | None = None,
) -> ItemPage:
    """Everything the item page shows for one variant, store and location.

    Without ``sku`` the first variant (by SKU) is chosen. Raises UnknownItem,
    UnknownSku (a SKU of another item too), UnknownStore.
    """
    item = Item.coll().find_one({"_id": item_id})
    if item is None:
        raise UnknownItem()
    store = store_get(store_id=store_id) if store_id else None
    variants, chosen_sku = _variant_options(item_id, sku)
    chosen = next((v for v in variants if v.selected), None)
    price = price_for(item_id=item_id, sku=chosen_sku, store_id=store_id)
    collect = None
    if store is not None and chosen_sku is not None:
        collect = _collect_option(item_id, chosen_sku, store, price)
    nearby = None
    if location is not None and chosen_sku is not None:
        nearby = stores_near_with_stock(
            sku=chosen_sku, lng=location.lng, lat=location.lat
        )
    return ItemPage(
        item_id=item_id,
        title=item["title"],
        brand=item.get("brand"),
        description=item.get("description") or "",
        department=item["department"],
        category=item["category"],
        rating=item.get("rating"),
        style=item.get("style"),
        attributes=item.get("attributes") or {},
        variants=variants,
        chosen=chosen,
        price=price,
        store=store,
        stores=stores_list(),
        location=location,
        nearby=nearby,
        online_price=(
            price_for(item_id=item_id, sku=chosen_sku) if store is not None else price
        ),
        collect=collect,
    )


def _collect_option(
    item_id: str, sku: str, store: StoreRow, price: Decimal | None
) -> CollectOption:
    """The chosen store's offer of ``sku``; out of stock there, the nearest
    other store with units free (from the chosen store's place)."""
    key = stock_location(sku, store.store_id)
    free = max(0, stock_free(skus=[key]).get(key, 0))
    nearest = None
    if free <= 0:
        others = stores_near_with_stock(sku=sku, lng=store.lng, lat=store.lat, limit=2)
        nearest = next((s for s in others if s.store_id != store.store_id), None)
    return CollectOption(store=store, price=price, free=free, nearest=nearest)
