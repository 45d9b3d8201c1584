"""Prices: which one applies to a SKU in a store, and what a cart records."""

import time
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

from catalog.documents import ONLINE, Item, Price, Store, Variant
from catalog.errors import NotForSale, UnknownSku, UnknownStore
from config import mongo
from config.decimals import decimal_of


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
    return prices_for([(item_id, sku, store_id)])[0]


def prices_for(
    wanted: list[tuple[str, str | None, str | None]],
) -> list[Decimal | None]:
    """``price_for`` of each (item id, sku, store id), in one ``$in`` query
    for all of them (a checkout re-pricing its lines). Raises UnknownStore."""
    stores = {sid: store_by_id(sid) for sid in {w[2] for w in wanted} if sid}
    orders = [
        price_ids(item_id=item_id, sku=sku, store=stores.get(store_id))
        for item_id, sku, store_id in wanted
    ]
    ids = sorted({price_id for ordered in orders for price_id in ordered})
    # Read with pymongo, not as documents: every cart add and checkout comes
    # here, and MongoEngine's queryset and document building cost as much
    # CPU as the query itself.
    found = {
        doc["_id"]: decimal_of(doc["amount"])
        for doc in Price.coll().find({"_id": {"$in": ids}}, {"amount": 1})
    }
    return [
        next((found[pid] for pid in ordered if pid in found), None)
        for ordered in orders
    ]


@dataclass(frozen=True)
class Sellable:
    """What a cart line records about a SKU at the moment it is added."""

    sku: str
    item_id: str
    name: str
    unit_price: Decimal
    attributes: dict


# A SKU's naming facts (its item, the item's title, the variant's
# attributes) change only when the catalog is edited, and a cart line keeps
# them only to show what was added. A cart add reads them from memory for
# up to NAMES_TTL seconds (its price for up to CART_PRICE_SECONDS, below;
# checkout reads the prices again). Keyed by database; bounded.
NAMES_TTL = 300.0
_NAMES_MAX = 20_000
_names: dict[tuple[str | None, str], tuple[float, str, str, dict]] = {}


def _naming(sku: str) -> tuple[str, str, dict]:
    """(item id, name, attributes) of a SKU, from the cache (read into it
    when missing or older than NAMES_TTL). Raises UnknownSku."""
    key = (mongo.connected_db_name(), sku)
    cached = _names.get(key)
    if cached is None or time.monotonic() - cached[0] >= NAMES_TTL:
        names_warm([sku])
        cached = _names.get(key)
        if cached is None:
            raise UnknownSku()
    return cached[1:]


def names_warm(skus: list[str]) -> int:
    """Read the naming facts of ``skus`` in two queries (variants, then
    their items) into the cache ``sellable`` reads: a process about to sell
    them (a sale's products) need not read them one add at a time. Returns
    how many were cached; unknown SKUs are left out (a cached entry of one
    that has gone is dropped)."""
    db, now = mongo.connected_db_name(), time.monotonic()
    for sku in skus:
        _names.pop((db, sku), None)
    variants = list(
        Variant.coll().find(
            {"_id": {"$in": list(skus)}}, {"item_id": 1, "attributes": 1}
        )
    )
    if not variants:
        return 0
    titles = {
        doc["_id"]: doc["title"]
        for doc in Item.coll().find(
            {"_id": {"$in": sorted({v["item_id"] for v in variants})}}, {"title": 1}
        )
    }
    if len(_names) + len(variants) > _NAMES_MAX:
        _names.clear()
    cached = 0
    for variant in variants:
        title = titles.get(variant["item_id"])
        if title is None:
            continue  # a variant of no item: unknown, as sellable says
        attributes = variant.get("attributes") or {}
        _names[(db, variant["_id"])] = (
            now,
            variant["item_id"],
            _name(title, attributes),
            attributes,
        )
        cached += 1
    return cached


def _name(title: str, attributes: dict) -> str:
    label = " / ".join(str(v) for v in attributes.values())
    return f"{title} ({label})" if label else title


# The price a cart add records on its line (§3.4) shows the shopper what
# they added; what they pay is decided by checkout, which re-prices every
# line from the database and shows a changed price before paying
# (``shop.kinds.products``), and a price may change between an add and its
# checkout in any case. So an add may take a price its process read up to
# ``CART_PRICE_SECONDS`` (60) before: a process reads a SKU's price once a
# minute, not once per add (a sixth of a cart flow's commands,
# bench/RESULTS.md). A price set through ``catalog.services.products`` is
# forgotten at once by the process that set it (``prices_changed``); other
# processes' adds take it within the setting's seconds, as if the shopper
# had added a moment earlier (a store moved to another group too). Keyed by
# database, SKU and store; bounded.
_PRICES_MAX = 20_000
_prices: dict[tuple, tuple[float, Decimal | None]] = {}


def prices_changed() -> None:
    """Forget the prices cart adds took recently (a price was set or
    cleared in this process)."""
    _prices.clear()


def _recent_price(*, item_id: str, sku: str, store_id: str | None) -> Decimal | None:
    """``price_for``, as read at most ``CART_PRICE_SECONDS`` ago."""
    key = (mongo.connected_db_name(), item_id, sku, store_id)
    now = time.monotonic()
    cached = _prices.get(key)
    if cached is not None and now - cached[0] < settings.CART_PRICE_SECONDS:
        return cached[1]
    price = price_for(item_id=item_id, sku=sku, store_id=store_id)
    if len(_prices) >= _PRICES_MAX:
        _prices.clear()
    _prices[key] = (now, price)
    return price


def sellable(*, sku: str, store_id: str | None = None) -> Sellable:
    """A SKU with its name and price, for a cart line about to be added
    (the price as read at most ``CART_PRICE_SECONDS`` ago; checkout
    re-prices).

    Raises UnknownSku, UnknownStore, or NotForSale when no price applies.
    """
    if not isinstance(sku, str):
        raise UnknownSku()
    item_id, name, attributes = _naming(sku)
    price = _recent_price(item_id=item_id, sku=sku, store_id=store_id)
    if price is None:
        raise NotForSale()
    return Sellable(
        sku=sku,
        item_id=item_id,
        name=name,
        unit_price=price,
        attributes=dict(attributes),
    )
