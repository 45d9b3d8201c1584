"""Writes to stores."""

from catalog.documents import Address, Store
from catalog.errors import InvalidStore


def store_save(
    *,
    store_id: str,
    name: str,
    group: str,
    lng: float,
    lat: float,
    region: str | None = None,
    address: Address | None = None,
) -> Store:
    """Create or update a store.

    The store's place lives here only (its stock locations name the store;
    nearest-store queries read the place from the stores). Raises
    InvalidStore for coordinates off the globe.
    """
    if not (-180 <= lng <= 180 and -90 <= lat <= 90):
        raise InvalidStore("Longitude is within ±180 and latitude within ±90.")
    point = {"type": "Point", "coordinates": [float(lng), float(lat)]}
    fields = {
        "name": name,
        "group": group,
        "region": region,
        "address": address.to_mongo().to_dict() if address else None,
        "location": point,
    }
    Store.coll().update_one({"store_id": store_id}, {"$set": fields}, upsert=True)
    return Store.objects.get(store_id=store_id)
