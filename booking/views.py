"""Thin views of the booking app: call a selector, render.

A performance's seat map page is drawn by the shop (``shop.views.seats``):
its clicks hold seats on the shopper's cart. Booking owns the map's reading
(``selectors.seat_map``) and its partial template.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from booking import selectors


@require_GET
def shows(request: HttpRequest) -> HttpResponse:
    """What's on: upcoming performances by show and date, with seats left."""
    return render(
        request, "booking/shows.html", {"listings": selectors.upcoming_sessions()}
    )
