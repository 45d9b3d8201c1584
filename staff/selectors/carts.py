"""Live carts for staff: active and within their hold, soonest to end first."""

from datetime import datetime

from shop.documents import ACTIVE, PENDING, Cart


def live_carts(*, now: datetime, limit: int = 100) -> list[dict]:
    found = (
        Cart.coll()
        .find({"state": {"$in": [ACTIVE, PENDING]}, "expires_at": {"$gt": now}})
        .sort("expires_at", 1)
        .limit(limit)
    )
    carts = []
    for raw in found:
        left = int((raw["expires_at"] - now).total_seconds())
        carts.append(
            {
                "id": raw["_id"],
                "owner": raw["owner"].split(":", 1)[0],
                "state": raw["state"],
                "items": raw.get("items") or [],
                "tickets": raw.get("tickets") or [],
                "expires_at": raw["expires_at"],
                "minutes_left": left // 60,
                "seconds_left": left % 60,
            }
        )
    return carts
