"""Thin views of the booking app: parse with a form, call a selector, render.

The seat map is one template, ``booking/session.html``, whose ``seat-map``
partial is the ``#seat-map`` element: htmx requests get the partial, anything
else the full page. Holding and releasing seats are cart operations, posted
to the shop's URLs (see ``booking.hooks``); the shop answers an htmx post
with ``render_seat_map``.
"""

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from booking import hooks, selectors
from booking.checks import MAX_SEATS_PER_HOLD
from booking.errors import SessionNotFound
from booking.forms import MapRefreshForm
from booking.values import SeatMap

SEAT_MAP = "booking/session.html"
SEAT_MAP_PARTIAL = "booking/session.html#seat-map"


def seat_map_context(
    request: HttpRequest,
    seat_map: SeatMap,
    *,
    message: str | None = None,
    message_level: str = "error",
) -> dict:
    """What the seat map template needs, for this shopper.

    ``message`` is shown as a toast (htmx) next to the redrawn map;
    ``message_level`` is "error" or "success".
    """
    urls = hooks.seat_action_urls(request, seat_map.session_id)
    return {
        "map": seat_map,
        **urls,
        "can_hold": bool(urls["hold_url"]) and seat_map.is_open,
        "can_release": bool(urls["release_url"]),
        "can_best": bool(urls["best_url"]) and seat_map.is_open,
        "refresh_url": reverse("booking:seat_map", args=[seat_map.session_id]),
        "counts": range(1, MAX_SEATS_PER_HOLD + 1),
        "message": message,
        "message_level": message_level,
        "cart_panel": hooks.cart_panel(request),
    }


def render_seat_map(
    request: HttpRequest,
    *,
    session_id: str,
    message: str | None = None,
    message_level: str = "error",
    status: int = 200,
    partial: bool | None = None,
) -> HttpResponse:
    """The ``#seat-map`` partial (htmx) or the whole page, freshly read.

    For the shop's hold/release/best-available views: after the service call
    they answer with the map as it now is, plus a message (e.g. "Row F,
    seat 12 was just taken"). Answer htmx with 200 even for a refusal: htmx
    does not swap a 4xx response, and the redrawn map IS the answer.
    """
    try:
        seat_map = selectors.seat_map(
            session_id=session_id, cart_id=hooks.get_cart_id(request)
        )
    except SessionNotFound as exc:
        raise Http404(exc.message) from exc
    partial = bool(request.htmx) if partial is None else partial
    template = SEAT_MAP_PARTIAL if partial else SEAT_MAP
    context = seat_map_context(
        request, seat_map, message=message, message_level=message_level
    )
    return render(request, template, context, status=status)


@require_GET
def shows(request: HttpRequest) -> HttpResponse:
    """What's on: upcoming performances by show and date, with seats left."""
    return render(
        request, "booking/shows.html", {"listings": selectors.upcoming_sessions()}
    )


@require_GET
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    """The seat map page of one performance."""
    return render_seat_map(request, session_id=session_id)


@require_GET
def seat_map(request: HttpRequest, session_id: str) -> HttpResponse:
    """The ``#seat-map`` partial an open map polls; 204 when nothing moved."""
    form = MapRefreshForm(request.GET)
    since = form.cleaned_data["since"] if form.is_valid() else None
    if since is not None:
        try:
            unchanged = selectors.seat_map_version(session_id=session_id) == since
        except SessionNotFound as exc:
            raise Http404(exc.message) from exc
        if unchanged:
            return HttpResponse(status=204)
    return render_seat_map(request, session_id=session_id, partial=True)
