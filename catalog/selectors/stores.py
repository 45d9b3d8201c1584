"""Stores: the list, a shopper's location, and the nearest ones with stock."""

import re
from dataclasses import dataclass

from catalog.documents import Store, Variant
from catalog.errors import UnknownSku, UnknownStore
from catalog.places import place_lookup
from catalog.selectors.stock import stock_at_stores

NEAREST = 10
# A store this close counts as "near"; a farther one is listed with how far.
NEAR_KM = 40


@dataclass(frozen=True)
class StoreRow:
    store_id: str
    name: str
    group: str
    region: str
    city: str
    zip: str
    lng: float
    lat: float


@dataclass(frozen=True)
class Location:
    """A point the shopper gave, and how to show it back."""

    lng: float
    lat: float
    label: str


@dataclass(frozen=True)
class NearbyStore:
    store_id: str
    name: str
    city: str
    distance_km: float
    quantity: int

    @property
    def near(self) -> bool:
        return self.distance_km <= NEAR_KM

    @property
    def distance(self) -> str:
        """ "800 m", "12.3 km", "345 km": what the shopper reads."""
        if self.distance_km < 1:
            return f"{round(self.distance_km * 1000, -1):.0f} m"
        if self.distance_km < 100:
            return f"{self.distance_km:.1f} km"
        return f"{self.distance_km:.0f} km"


def _row(doc: dict) -> StoreRow:
    address = doc.get("address") or {}
    lng, lat = doc["location"]["coordinates"]
    return StoreRow(
        store_id=doc["store_id"],
        name=doc["name"],
        group=doc["group"],
        region=doc.get("region") or "",
        city=address.get("city") or "",
        zip=address.get("zip") or "",
        lng=lng,
        lat=lat,
    )


def stores_list() -> list[StoreRow]:
    """Every store, by region then name (a few dozen: no paging)."""
    docs = Store.coll().find({}, {"_id": 0})
    return sorted((_row(d) for d in docs), key=lambda s: (s.region, s.name))


def store_get(*, store_id: str) -> StoreRow:
    doc = Store.coll().find_one({"store_id": store_id}, {"_id": 0})
    if doc is None:
        raise UnknownStore()
    return _row(doc)


def location_lookup(*, text: str) -> Location | None:
    """Where a typed postcode, postcode district ("LS1") or town is, or None.

    First among the stores' addresses (a shopper near a store types what is
    on its address), then any UK postcode district or town, offline
    (``catalog.places``). Every pattern is built from escaped text.
    """
    found = _store_place(text)
    if found is None:
        place = place_lookup(text)
        if place is not None:
            found = Location(lng=place.lng, lat=place.lat, label=place.label)
    return found


def _store_place(text: str) -> Location | None:
    text = " ".join(text.split())
    if not text:
        return None
    stores = Store.coll()
    zip_code = text.upper()
    doc = stores.find_one({"address.zip": zip_code}) or stores.find_one(
        {"address.zip": {"$regex": "^" + re.escape(zip_code) + " "}},
        sort=[("address.zip", 1)],
    )
    label = zip_code
    if doc is None:
        doc = stores.find_one(
            {"address.city": {"$regex": "^" + re.escape(text) + "$", "$options": "i"}},
            sort=[("store_id", 1)],
        )
        label = ((doc or {}).get("address") or {}).get("city") or text
    if doc is None:
        return None
    lng, lat = doc["location"]["coordinates"]
    return Location(lng=lng, lat=lat, label=label)


def stores_by_distance_pipeline(
    *, lng: float, lat: float, store_ids: list[str], limit: int
) -> list[dict]:
    return [
        {
            "$geoNear": {
                "near": {"type": "Point", "coordinates": [lng, lat]},
                "key": "location",
                "spherical": True,
                "distanceField": "distance",
                "query": {"store_id": {"$in": store_ids}},
            }
        },
        {"$limit": limit},
        {
            "$project": {
                "_id": 0,
                "store_id": 1,
                "name": 1,
                "address.city": 1,
                "distance": 1,
            }
        },
    ]


def stores_near_with_stock(
    *, sku: str, lng: float, lat: float, limit: int = NEAREST
) -> list[NearbyStore]:
    """The ``limit`` stores nearest to (lng, lat) holding ``sku``, nearest first.

    Two index-served steps: the SKU's store locations with units free (at
    most one per store: the very counters a collect line reserves from,
    catalog.selectors.stock), then ``$geoNear`` over those stores. (Store
    stock once kept a copy of its store's location, and a single
    ``$geoNear`` over it gave the same answer on MongoDB; a server without
    compound geo indexes scanned every stock document for it.) Raises
    UnknownSku.
    """
    if not Variant.coll().count_documents({"_id": sku}, limit=1):
        raise UnknownSku()
    quantities = {
        store_id: free
        for store_id, free in stock_at_stores(sku=sku).items()
        if free > 0
    }
    if not quantities:
        return []
    stores = Store.coll().aggregate(
        stores_by_distance_pipeline(
            lng=lng, lat=lat, store_ids=sorted(quantities), limit=limit
        )
    )
    return [
        NearbyStore(
            store_id=row["store_id"],
            name=row["name"],
            city=(row.get("address") or {}).get("city", ""),
            distance_km=row["distance"] / 1000,
            quantity=quantities[row["store_id"]],
        )
        for row in stores
    ]
