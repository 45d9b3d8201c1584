"""A performance's seat map, whose clicks hold and release seats on the cart.

The shop draws the page: booking reads the map (``booking.selectors.seat_map``)
and owns its partial, the ``#seat-map`` element of ``booking/session.html``;
the shop adds whose cart is looking, where clicks post and the cart's hold
countdown beside the seats. htmx requests get the partial, anything else the
whole page. A hold, release or best-available answers with the map as it
now is and a toast: 200 even for a refusal, since htmx swaps no 4xx and the
redrawn map IS the answer; without JavaScript a refusal redraws the page
with its status and a success redirects back to it.
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from booking.checks import MAX_SEATS_PER_HOLD
from booking.errors import SessionNotFound
from booking.forms import BestAvailableForm, MapRefreshForm, ReleaseSeatsForm, SeatsForm
from booking.selectors import seat_map, seat_map_version
from config.errors import DomainError
from config.http import (
    HtmxHttpRequest,
    answers_refusals,
    not_found,
    render_page_or_partial,
    valid,
)
from shop import errors as say
from shop import events
from shop.identity import owner_of
from shop.selectors.carts import cart_view
from shop.services.tickets import (
    cart_hold_best_available,
    cart_hold_seats,
    cart_release_seats,
)

SEAT_PAGE = "booking/session.html"
SEAT_MAP_PARTIAL = "seat-map"


def _map_context(request, session_id: str, message: str | None, level: str) -> dict:
    """What the seat map template needs, for this shopper: the map with their
    seats, the URLs clicks post to, and the cart's countdown beside it."""
    view = cart_view(owner=owner_of(request))
    try:
        drawn = seat_map(
            session_id=session_id, cart_id=view.cart_id if view is not None else None
        )
    except SessionNotFound as exc:
        raise not_found(exc) from exc
    return {
        "map": drawn,
        "hold_url": reverse("shop:hold_seats", args=[session_id]),
        "release_url": reverse("shop:release_seats", args=[session_id]),
        "best_url": reverse("shop:best_seats", args=[session_id]),
        "can_hold": drawn.is_open,
        "can_release": True,
        "can_best": drawn.is_open,
        "refresh_url": reverse("shop:seat_map", args=[session_id]),
        "counts": range(1, MAX_SEATS_PER_HOLD + 1),
        "best": _best_choice(request),
        "message": message,
        "message_level": level,
        "cart_panel": _cart_panel(request, view),
    }


def _best_choice(request) -> dict:
    """The best-available form's choice as this request carries it (its own
    post, or a poll or click that includes it, or the query after a redirect
    without JavaScript), so the redrawn map keeps it; else 2 seats, any zone."""
    data = request.POST if request.method == "POST" else request.GET
    form = BestAvailableForm(data)
    if not form.is_valid():
        return {"count": 2, "zone": None}
    return {"count": form.cleaned_data["count"], "zone": form.cleaned_data["zone"]}


def _cart_panel(request, view) -> str:
    """The cart's countdown and totals (the same hold the cart page counts
    down), and the header badge out-of-band when htmx redraws the map."""
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


def render_seat_map(
    request,
    *,
    session_id: str,
    message: str | None = None,
    message_level: str = "error",
    status: int = 200,
    partial: bool | None = None,
) -> HttpResponse:
    """The ``#seat-map`` partial (htmx, or ``partial``) or the whole page,
    freshly read, with ``message`` as a toast ("error" or "success")."""
    context = _map_context(request, session_id, message, message_level)
    return render_page_or_partial(
        request,
        SEAT_PAGE,
        SEAT_MAP_PARTIAL,
        context,
        status=status,
        as_partial=bool(request.htmx) if partial is None else partial,
    )


@require_GET
def session_page(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """The seat map page of one performance."""
    return render_seat_map(request, session_id=session_id)


@require_GET
def seat_map_partial(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """The ``#seat-map`` partial an open map polls; 204 when nothing moved."""
    form = MapRefreshForm(request.GET)
    since = form.cleaned_data["since"] if form.is_valid() else None
    if since is not None:
        try:
            unchanged = seat_map_version(session_id=session_id) == since
        except SessionNotFound as exc:
            raise not_found(exc) from exc
        if unchanged:
            return HttpResponse(status=204)
    return render_seat_map(request, session_id=session_id, partial=True)


def _seat_answer(request, session_id: str, *, message="", error="", status=400):
    if request.htmx:
        return render_seat_map(
            request,
            session_id=session_id,
            message=error or message,
            message_level="error" if error else "success",
        )
    if error:
        messages.error(request, error)
        return render_seat_map(
            request, session_id=session_id, status=status, partial=False
        )
    messages.success(request, message)
    back = reverse("shop:session", args=[session_id])
    choice = _best_choice(request)
    if choice["zone"] or choice["count"] != 2:  # keep the form's choice
        back += "?" + urlencode({k: v for k, v in choice.items() if v})
    return redirect(back)


def _seat_refused(request, exc: DomainError, session_id: str):
    if isinstance(exc, SessionNotFound):
        raise Http404(say.NO_SUCH_PERFORMANCE) from None
    return _seat_answer(request, session_id, error=exc.message, status=exc.status)


def _announce(request, owner, hold, *, held: bool) -> None:
    if hold.seats:
        events.seats_changed.send(
            sender=None, request=request, owner=owner, hold=hold, held=held
        )


@require_POST
@answers_refusals(_seat_refused)
def hold_seats(request: HtmxHttpRequest, session_id: str):
    """A click on a free seat (or the list view's "Hold"): hold it."""
    form = valid(SeatsForm(request.POST))
    owner = owner_of(request, create=True)
    held = cart_hold_seats(
        owner=owner, session_id=session_id, seats=form.cleaned_data["seat"]
    )
    _announce(request, owner, held, held=True)
    return _seat_answer(request, session_id, message=say.seats_held(held))


@require_POST
@answers_refusals(_seat_refused)
def release_seats(request: HtmxHttpRequest, session_id: str):
    """A click on one of the shopper's seats: release it (none given: all)."""
    form = valid(ReleaseSeatsForm(request.POST))
    owner = owner_of(request)
    freed = cart_release_seats(
        owner=owner, session_id=session_id, seats=form.cleaned_data["seat"] or None
    )
    _announce(request, owner, freed, held=False)
    return _seat_answer(request, session_id, message=say.seats_released(freed))


@require_POST
@answers_refusals(_seat_refused)
def best_seats(request: HtmxHttpRequest, session_id: str):
    """The "Best available: n seats in zone Z" button."""
    form = valid(BestAvailableForm(request.POST))
    owner = owner_of(request, create=True)
    held = cart_hold_best_available(
        owner=owner, session_id=session_id, **form.cleaned_data
    )
    _announce(request, owner, held, held=True)
    return _seat_answer(request, session_id, message=say.best_seats_found(held))
