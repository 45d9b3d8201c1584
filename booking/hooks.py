"""Where the box office pages meet the cart, without importing the shop.

The booking app never imports ``shop`` (DESIGN §1). The seat map still has to
know whose cart is looking at it, where clicks are posted and what the cart
has to say next to the map (its hold countdown): the shop installs all three
at start-up (``ShopConfig.ready`` calls ``install``). Until it does, nobody
has a cart and the map is for viewing only.
"""

from collections.abc import Callable

from django.http import HttpRequest

ACTION_NAMES = ("hold_url", "release_url", "best_url")


def _no_cart(request: HttpRequest) -> str | None:
    return None


def _no_actions(request: HttpRequest, session_id: str) -> dict[str, str | None]:
    return {}


def _no_panel(request: HttpRequest) -> str:
    return ""


_installed: dict[str, Callable] = {
    "cart_id": _no_cart,
    "actions": _no_actions,
    "panel": _no_panel,
}


def install(
    *,
    cart_id: Callable[[HttpRequest], str | None] | None = None,
    action_urls: Callable[[HttpRequest, str], dict[str, str | None]] | None = None,
    cart_panel: Callable[[HttpRequest], str] | None = None,
) -> None:
    """Point the seat map at the shop's cart and hold/release/best-available URLs.

    ``cart_id(request)`` returns the id of the request's cart (or None): a
    string of letters, digits and ``_.:-``, up to 64 long (``checks.cart_id``);
    ``action_urls(request, session_id)`` returns any of ``hold_url``,
    ``release_url`` and ``best_url``; ``cart_panel(request)`` returns safe
    HTML drawn beside the shopper's seats (the cart's hold countdown), redrawn
    with the map. Passing None restores the default.
    """
    _installed["cart_id"] = cart_id or _no_cart
    _installed["actions"] = action_urls or _no_actions
    _installed["panel"] = cart_panel or _no_panel


def installed() -> dict[str, Callable]:
    """The hooks in place, as ``install`` takes them (to restore them later)."""
    return {
        "cart_id": _installed["cart_id"],
        "action_urls": _installed["actions"],
        "cart_panel": _installed["panel"],
    }


def get_cart_id(request: HttpRequest) -> str | None:
    return _installed["cart_id"](request)


def seat_action_urls(request: HttpRequest, session_id: str) -> dict[str, str | None]:
    urls = _installed["actions"](request, session_id) or {}
    return {name: urls.get(name) or None for name in ACTION_NAMES}


def cart_panel(request: HttpRequest) -> str:
    return _installed["panel"](request) or ""
