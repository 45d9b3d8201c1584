"""Live carts for staff: active and within their hold, soonest to end first."""

from datetime import datetime

from shop.cart_state import is_live_filter
from shop.documents import Cart


def live_carts(*, now: datetime, limit: int = 100) -> list[dict]:
    found = Cart.coll().find(is_live_filter(now)).sort("expires_at", 1).limit(limit)
    carts = []
    for raw in found:
        # A cart in checkout is live past its hold time: none left to show.
        left = max(0, int((raw["expires_at"] - now).total_seconds()))
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
