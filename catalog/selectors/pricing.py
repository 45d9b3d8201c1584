"""Prices: which one applies to a SKU in a store, and what a cart records."""

from dataclasses import dataclass
from decimal import Decimal

from catalog.documents import ONLINE, Item, Price, Store, Variant
from catalog.errors import NotForSale, UnknownSku, UnknownStore


def price_ids(*, item_id: str, sku: str | None, store: Store | None) -> list[str]:
    """Every price ``_id`` that could apply, most specific first.

    variant+store > variant+group > item+store > item+group > online default
    (variant, then item).
    """
    scopes = [store.store_id, store.group] if store else []
    keys = ([sku] if sku else []) + [item_id]
    ordered = [f"{key}_{scope}" for key in keys for scope in scopes]
    ordered += [f"{key}_{ONLINE}" for key in keys]
    return ordered


def store_by_id(store_id: str) -> Store:
    store = Store.objects(store_id=store_id).first()
    if store is None:
        raise UnknownStore()
    return store


def price_for(
    *, item_id: str, sku: str | None = None, store_id: str | None = None
) -> Decimal | None:
    """The price of an item or one of its SKUs in a store (None: online).

    One ``$in`` query fetches every candidate; the most specific one wins.
    Returns None when nothing applies (the product cannot be sold there).
    """
    store = store_by_id(store_id) if store_id else None
    ordered = price_ids(item_id=item_id, sku=sku, store=store)
    found = {p.price_id: p.amount for p in Price.objects(price_id__in=ordered)}
    for price_id in ordered:
        if price_id in found:
            return found[price_id]
    return None


@dataclass(frozen=True)
class Sellable:
    """What a cart line records about a SKU at the moment it is added."""

    sku: str
    item_id: str
    name: str
    unit_price: Decimal
    attributes: dict


def sellable(*, sku: str, store_id: str | None = None) -> Sellable:
    """A SKU with its name and current price, for a cart or a checkout re-price.

    Raises UnknownSku, UnknownStore, or NotForSale when no price applies.
    """
    variant = Variant.objects(sku=sku).first()
    if variant is None:
        raise UnknownSku()
    item = Item.objects(item_id=variant.item_id).only("title").first()
    if item is None:
        raise UnknownSku()
    price = price_for(item_id=variant.item_id, sku=sku, store_id=store_id)
    if price is None:
        raise NotForSale()
    variant_label = " / ".join(str(v) for v in variant.attributes.values())
    name = f"{item.title} ({variant_label})" if variant_label else item.title
    return Sellable(
        sku=sku,
        item_id=variant.item_id,
        name=name,
        unit_price=price,
        attributes=dict(variant.attributes),
    )
