"""What the shop installs into the box office pages (``booking.hooks``).

The seat map belongs to booking, which never imports the shop; at start-up
``ShopConfig.ready`` hands it these three functions: whose cart is looking,
where clicks post, and the cart's hold countdown drawn beside the seats.
"""

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse

from shop.identity import owner_of
from shop.selectors.carts import CartView, cart_view

# Where one drawing of the map keeps the shopper's cart: both hooks below need
# it, and the map is drawn once any change the request makes is done.
_VIEW = "_shop_cart_view"


def _cart_view(request: HttpRequest) -> CartView | None:
    if not hasattr(request, _VIEW):
        setattr(request, _VIEW, cart_view(owner=owner_of(request)))
    return getattr(request, _VIEW)


def cart_id(request: HttpRequest) -> str | None:
    view = _cart_view(request)
    return view.cart_id if view is not None else None


def action_urls(request: HttpRequest, session_id: str) -> dict[str, str]:
    return {
        "hold_url": reverse("shop:hold_seats", args=[session_id]),
        "release_url": reverse("shop:release_seats", args=[session_id]),
        "best_url": reverse("shop:best_seats", args=[session_id]),
    }


def cart_panel(request: HttpRequest) -> str:
    """The cart's countdown and totals (the same hold the cart page counts
    down), and the header badge out-of-band when htmx redraws the map."""
    view = _cart_view(request)
    return render_to_string(
        "shop/_seat_map_cart.html",
        {
            "view": view,
            "oob": bool(getattr(request, "htmx", False)),
            # The badge's count from the view at hand (spares its query).
            "cart_units": view.units if view is not None else 0,
        },
        request=request,
    )


def install() -> None:
    from booking import hooks

    hooks.install(cart_id=cart_id, action_urls=action_urls, cart_panel=cart_panel)
